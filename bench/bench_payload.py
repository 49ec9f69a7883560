"""What a lesson sends to the browser for one text on a given model: the bytes of its charts,
tables and HTML, as Streamlit's messages carry them (each element's protobuf size).

    python -m bench.bench_payload --model FOLDER [PAGE ...]   # e.g. 05_self_attention.py

Runs each page once with AppTest (no browser), on the model folder (listed as a sidebar model
for the run) and the 64-token text of ``bench.make_gpt2_folder``, and prints one row a page:
seconds to run, bytes in all, and the largest element. A learner's browser receives these
bytes when the text or model changes; view changes (layer, head, token) cost nothing more.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["01_tour.py", "03_embeddings.py", "04_lookup.py", "05_self_attention.py",
         "06_scaling.py", "07_multihead.py", "08_masking.py", "09_layernorm.py", "10_ffn.py",
         "12_forward.py", "14_decoding.py", "16_kv_cache.py", "17_long_sequences.py"]
KINDS = ("vega_lite_chart", "arrow_vega_lite_chart", "plotly_chart", "html", "arrow_data_frame",
         "table", "imgs")


def page_bytes(at) -> list[tuple[str, int]]:
    return [(kind, el.proto.ByteSize()) for kind in KINDS for el in at.get(kind)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a Hugging Face model folder")
    parser.add_argument("pages", nargs="*", default=PAGES)
    args = parser.parse_args()
    os.environ.setdefault("TFVIZ_STORE", "sqlite:///" + str(Path(os.environ.get("TMPDIR", "/tmp"))
                                                            / "bench-payload.sqlite3"))
    from streamlit.testing.v1 import AppTest

    import tfviz.ui.cache as cache
    import tfviz.ui.live as live
    import tfviz.ui.sidebar as sidebar
    from bench.make_gpt2_folder import TEXT_64

    folder = str(Path(args.model).resolve())
    listed = cache.model_names
    for module in (cache, sidebar, live):
        module.model_names = lambda: [*listed(), folder]
    print(f"{folder}, the 64-token text; bytes of each page's elements as sent\n")
    print("| page | s to run | kB in all | largest element kB | result |")
    print("|---|---:|---:|---:|---|")
    for page in args.pages:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.query_params["model"] = folder
        at.query_params["text"] = TEXT_64
        at.run()
        start = time.perf_counter()
        at.switch_page(f"lessons/{page}").run()
        seconds = time.perf_counter() - start
        sizes = page_bytes(at)
        total = sum(s for _, s in sizes)
        largest = max((s for _, s in sizes), default=0)
        result = "exception" if at.exception else "ok"
        print(f"| {page} | {seconds:.1f} | {total / 1e3:,.0f} | {largest / 1e3:,.0f} | {result} |",
              flush=True)


if __name__ == "__main__":
    main()
