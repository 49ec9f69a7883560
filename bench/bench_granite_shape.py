"""A random GraniteMoe folder of granite-3.1-1b-a400m's full shape: opened, traced, and lesson 11
(mixture of experts) drawn on it.

    python -m bench.bench_granite_shape               # makes the folder in a temporary directory
    python -m bench.bench_granite_shape --keep DIR    # makes it in DIR and keeps it (reused)
    python -m bench.bench_granite_shape --layers 2    # the same shape with 2 layers: a quick try

granite-3.1-1b-a400m, as its config.json on the hub has it: 24 layers, d = 1,024, 16 query heads
over 8 key/value heads (64 each), in every layer 32 SwiGLU experts of 512 hidden units with each
token sent to 8 of them by Granite's rule (the 8 largest router logits, then a softmax over those
8), 49,155 ids, the unembedding tied, RoPE base 1.5e6, and Granite's multipliers (embeddings x 12,
scores x 1/64, sublayers x 0.22, logits / 6). That is 1.33 billion parameters: 5.3 GB as float32,
which every model here runs in, and 2.7 GB of bfloat16 on disk, as the hub's file holds them.

The folder is transformers' own (``GraniteMoeForCausalLM``, a dev-only dependency) with its own
init, made straight in bfloat16, beside a small byte-level tokenizer trained on our stories
(tests/support/llama_folders.py): its 49,155 embedding rows outnumber the tokenizer's tokens, as
a padded vocabulary's do. Nothing is downloaded.

Three fresh processes, one after another, each reading its own resident set and peak from /proc
(as bench/bench_folder_memory.py does): one makes and saves the folder; one opens it with
``tfviz.load`` and traces 32 tokens; one runs lesson 11 in AppTest with the folder in the
sidebar (TFVIZ_MODELS), on a 32-token text, as a server's first learner would, and checks that
the page names Granite's rule and prints the two rules' difference.

It is a benchmark, not a test: it needs several GB and minutes. Before making anything it counts
the parameters on torch's meta device (no memory) and refuses in words when this machine's
available memory (``MemAvailable``) is under what the largest step needs, ``NEEDS`` times the
float32 weights. The app's own sidebar asks for ``tfviz.hf.memory.OPEN_FACTOR`` times; where that
check would refuse the folder, the lesson step says so and lifts it for the measurement.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: granite-3.1-1b-a400m's config.json (the instruct model's; the base model's has 49,152 ids)
GRANITE_1B_A400M = dict(layers=24, d=1024, heads=16, kv_heads=8, d_ff=512, experts=32, top_k=8,
                        vocab_size=49155, positions=131072, rope_theta=1500000.0,
                        embedding_multiplier=12.0, attention_multiplier=0.015625,
                        residual_multiplier=0.22, logits_scaling=6.0, tie_word_embeddings=True)
NEEDS = 2.0  # x the float32 weights: the largest step's peak was measured at 1.49-1.51 x (BENCHMARKS.md)
TOKENS = 32
# 32 tokens of the folder's tokenizer (checked in the lesson step): the sidebar's text
TEXT = ("The animal didn't cross the street because it was too tired. The robot is dancing near "
        "the river, and two birds jumped over")


def shape() -> dict:
    """GRANITE_1B_A400M, or with BENCH_GRANITE_LAYERS layers (``--layers``, passed on to the
    child processes)."""
    import os

    return {**GRANITE_1B_A400M, "layers": int(os.environ.get("BENCH_GRANITE_LAYERS", GRANITE_1B_A400M["layers"]))}


def hf_config(shape: dict | None = None):
    """transformers' GraniteMoeConfig of ``shape`` (default: :func:`shape`), with the
    tokenizer's special ids."""
    import transformers

    from tests.support.llama_folders import SPECIALS, train_tokenizer

    tok = train_tokenizer("qwen")
    eos = tok.token_to_id(SPECIALS["qwen"][0])
    s = dict(shape or globals()["shape"]())
    return transformers.GraniteMoeConfig(
        vocab_size=s.pop("vocab_size"), hidden_size=s.pop("d"), intermediate_size=s.pop("d_ff"),
        num_hidden_layers=s.pop("layers"), num_attention_heads=s.pop("heads"),
        num_key_value_heads=s.pop("kv_heads"), num_local_experts=s.pop("experts"),
        num_experts_per_tok=s.pop("top_k"), max_position_embeddings=s.pop("positions"),
        rope_parameters={"rope_type": "default", "rope_theta": s.pop("rope_theta")},
        bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, **s)


def count_parameters() -> int:
    """transformers' own count, on the meta device: no memory is taken."""
    import torch
    import transformers

    with torch.device("meta"):
        model = transformers.GraniteMoeForCausalLM(hf_config())
    return model.num_parameters()


STATUS = r"""
from pathlib import Path
def status():
    got = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            got[key] = int(value.split()[0]) * 1024
    return got["VmRSS"], got["VmHWM"]
Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from here
"""

MAKE = STATUS + r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from bench.bench_granite_shape import hf_config
from tests.support.llama_folders import train_tokenizer, tokenizer_config
import transformers
base = status()
folder = Path(sys.argv[1])
folder.mkdir(parents=True, exist_ok=True)
t0 = time.perf_counter()
torch.manual_seed(0)
model = transformers.AutoModelForCausalLM.from_config(hf_config(), dtype=torch.bfloat16).eval()
t1 = time.perf_counter()
model.save_pretrained(folder, safe_serialization=True)
train_tokenizer("qwen").save(str(folder / "tokenizer.json"))
(folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config("qwen")))
t2 = time.perf_counter()
print(json.dumps({"build": t1 - t0, "save": t2 - t1, "base": base, "end": status(),
                  "params": model.num_parameters()}))
"""

OPEN = STATUS + r"""
import json, sys, time
import torch
torch.set_num_threads(1)
import tfviz
from bench.bench_granite_shape import TEXT, TOKENS
base = status()
t0 = time.perf_counter()
bundle = tfviz.load(sys.argv[1])
t1 = time.perf_counter()
loaded = status()
ids = bundle.encode(TEXT)
assert len(ids) == TOKENS, len(ids)
t2 = time.perf_counter()
trace = bundle.trace(TEXT)
t3 = time.perf_counter()
traced = status()
cfg = bundle.config
chosen = trace["blocks.0.mlp.hook_expert_indices"]
print(json.dumps({"load": t1 - t0, "trace": t3 - t2, "base": base, "loaded": loaded, "traced": traced,
                  "params": sum(p.numel() for p in bundle.model.parameters()),
                  "router": cfg.moe_router, "k": cfg.moe_top_k, "experts": cfg.n_experts,
                  "chosen": list(chosen.shape)}))
"""

LESSON = STATUS + r"""
import json, os, sys, time
os.environ["TFVIZ_RAISE"] = "1"
import torch
torch.set_num_threads(1)
from streamlit.testing.v1 import AppTest
import tfviz.ui.checkpoints as checkpoints
from tfviz.hf import describe
from tfviz.hf.memory import available_bytes, opening_cost
from bench.bench_granite_shape import TEXT
folder = Path(sys.argv[1])
app = str(Path(sys.argv[2]) / "app.py")
cost, free = opening_cost(describe(folder).memory_bytes), available_bytes()
lifted = free is not None and cost > free
if lifted:  # the sidebar would refuse it: lifted, to measure what the page really takes
    checkpoints.available_bytes = lambda: None
base = status()
t0 = time.perf_counter()
at = AppTest.from_file(app, default_timeout=1800)
at.query_params["model"] = folder.name
at.query_params["text"] = TEXT
at.run()
assert not at.exception, at.exception
assert at.session_state["model"] == folder.name, at.session_state["model"]
t1 = time.perf_counter()
at.switch_page("lessons/11_moe.py").run()
t2 = time.perf_counter()
assert not at.exception, at.exception
first = status()
at.run()  # a rerun: every cache warm
t3 = time.perf_counter()
words = [m.value for m in at.markdown] + [s.value for s in at.success] + [c.value for c in at.caption]
rule = next(w for w in words if " routes by " in w)
same = next(w for w in words if "**The same experts**" in w)
charts = len(at.get("vega_lite_chart"))
print(json.dumps({"tour": t1 - t0, "lesson": t2 - t1, "rerun": t3 - t2, "base": base, "first": first,
                  "end": status(), "rule": rule, "same": same, "charts": charts, "lifted": lifted,
                  "cost": cost, "free": free}))
"""


def child(code: str, *args: str, env: dict | None = None) -> dict:
    import os

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True,
                         cwd=root, env={**os.environ, "PYTHONPATH": str(root), **(env or {})})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="make the folder here and keep it (reused if there)")
    parser.add_argument("--layers", type=int, help="fewer layers than granite's 24, for a quick try")
    args = parser.parse_args()
    import os

    if args.layers:
        os.environ["BENCH_GRANITE_LAYERS"] = str(args.layers)
    from tfviz.decoding.memory import human_bytes
    from tfviz.hf.memory import OPEN_FACTOR, available_bytes

    n = count_parameters()
    weights = 4 * n
    need, free = int(NEEDS * weights), available_bytes()
    gb = 1e9
    layers = shape()["layers"]
    print(f"granite-3.1-1b-a400m's shape{'' if layers == 24 else f' with {layers} layers'}: {n:,} "
          f"parameters, {weights / gb:.2f} GB as float32")
    if free is not None and free < need:
        print(f"Refused: this benchmark needs about {human_bytes(need)} of free memory ({NEEDS:g} x the "
              f"float32 weights, its largest step), and this machine has {human_bytes(free)} available "
              "now. Nothing was made.")
        return
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        parent = args.keep or Path(tmp)
        folder = parent / "granite-1b-a400m-random"
        if (folder / "model.safetensors").exists() or (folder / "model.safetensors.index.json").exists():
            print(f"reusing {folder}")
            made = None
        else:
            made = child(MAKE, str(folder))
        disk = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
        opened = child(OPEN, str(folder))
        env = {"TFVIZ_MODELS": str(parent), "HF_HUB_CACHE": str(Path(tmp) / "no-hub")}
        drawn = child(LESSON, str(folder), str(root), env=env)
    rows = []
    if made:
        rows.append(("make it in bfloat16 and save it (transformers)", made["build"] + made["save"],
                     made["end"][1] - made["base"][1]))
    rows += [("tfviz.load (bfloat16 widened to float32)", opened["load"], opened["loaded"][1] - opened["base"][1]),
             (f"one trace of {TOKENS} tokens, every activation", opened["trace"],
              opened["traced"][1] - opened["base"][1]),
             ("app start, the folder opened by the sidebar (tour page)", drawn["tour"], None),
             ("lesson 11, first run (its trace, the sample sentences' traces, every chart)", drawn["lesson"],
              drawn["first"][1] - drawn["base"][1]),
             ("lesson 11, a rerun (every cache warm)", drawn["rerun"], drawn["end"][1] - drawn["base"][1])]
    print(f"{disk / gb:.2f} GB on disk; loaded: {opened['params']:,} parameters "
          f"({'as many as transformers counts' if opened['params'] == n else 'transformers counts ' + format(n, ',')}), "
          f"{opened['experts']} experts a layer, top-{opened['k']} by {opened['router']}\n")
    print("| step, each process fresh | seconds | peak grew, GB (x the float32 weights) |")
    print("|---|---:|---:|")
    for what, seconds, peak in rows:
        grew = "" if peak is None else f"{peak / gb:.2f} ({peak / weights:.2f} x)"
        print(f"| {what} | {seconds:.1f} | {grew} |")
    print(f"\nlesson 11 drew {drawn['charts']} charts and says: {drawn['rule'][:160]}")
    print(f"and: {drawn['same'].splitlines()[0][:200]}")
    print(f"\nthe sidebar asks for {human_bytes(drawn['cost'])} ({OPEN_FACTOR:g} x the float32 weights); "
          f"{human_bytes(drawn['free'])} was available"
          + ("; its check would have refused the folder, and was lifted for this measurement."
             if drawn["lifted"] else "."))


if __name__ == "__main__":
    main()
