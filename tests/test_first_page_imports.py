"""The first page a learner opens (the tour) must not need pandas, altair or pyarrow's pandas:
on a fresh server every import shares one GIL with the warm-up, and these made the first page
0.7 s slower (tfviz.ui.warmup, BENCHMARKS.md "first lesson"). And the race that deferring them
could open stays closed: every module that imports altair imports pandas first.

Nor torch: the tour's default sentence is drawn from numbers stored with the model
(tfviz.analysis.tour_numbers), and the warm-up imports torch once that first page has run, so
that its import does not take the CPU the learner's browser is loading Streamlit's frontend on."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _loaded_after(code: str) -> str:
    """Which of pandas, altair and pyarrow a fresh interpreter holds after running ``code``."""
    code += "\nprint(sorted(m for m in ('pandas', 'altair', 'pyarrow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_frame_and_the_tour_import_no_pandas_and_no_altair():
    imports = set()
    for path in (ROOT / "app.py", ROOT / "lessons" / "01_tour.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tfviz"):
                imports.add(node.module)
            elif isinstance(node, ast.Import):
                imports.update(a.name for a in node.names if a.name.startswith("tfviz"))
    assert "tfviz.viz.pipeline" in imports and "tfviz.ui.drawing" in imports
    assert _loaded_after("import streamlit\n" + "".join(f"import {m}\n" for m in sorted(imports))) == "[]"


def test_the_tours_charts_keep_their_rows_out_of_arrow():
    """Streamlit turns top-level chart data into Arrow, and pyarrow imports pandas for it."""
    code = ("from tfviz.analysis.pipeline import rnn_vs_transformer\n"
            "from tfviz.viz.pipeline import predictions_chart, rnn_vs_transformer_chart\n"
            "import streamlit.elements.vega_charts as vc\n"
            "from streamlit.proto.VegaLiteChart_pb2 import VegaLiteChart\n"
            "for spec in (predictions_chart([(1, 'a', 0.5)], title='t'),\n"
            "             rnn_vs_transformer_chart(rnn_vs_transformer(range(2, 5)), shown=4)):\n"
            "    proto = VegaLiteChart()\n"
            "    vc._marshall_chart_data(proto, dict(spec))\n"
            "    assert not proto.datasets and not proto.HasField('data'), spec")
    assert _loaded_after(code) == "[]"


def test_every_module_that_imports_altair_imports_pandas_before_it():
    for path in sorted((ROOT / "tfviz").rglob("*.py")):
        names = []
        for node in ast.parse(path.read_text()).body:  # module-level imports, in order
            if isinstance(node, ast.Import):
                names += [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module.split(".")[0])
        if "altair" in names:
            assert "pandas" in names[:names.index("altair")], path


def test_the_home_page_and_the_tour_on_the_default_sentence_run_without_torch(tmp_path):
    """The frame, the home page and the tour run in a fresh interpreter (AppTest, as the
    server runs them), and torch is still not imported; the tour shows the stored numbers."""
    code = f"""
import os, sys
os.environ["TFVIZ_RAISE"] = "1"
os.environ["HF_HUB_CACHE"] = {str(tmp_path / "no-hub-cache")!r}
os.environ["TFVIZ_STORE"] = "sqlite:///" + {str(tmp_path / "live.sqlite3")!r}
os.environ.pop("TFVIZ_MODELS", None)
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({str(ROOT / "app.py")!r}, default_timeout=120)
at.run()
assert not at.exception, at.exception
home = "torch" in sys.modules
at.switch_page("lessons/01_tour.py").run()
assert not at.exception, at.exception
print(at.get("vega_lite_chart")[0].proto.spec.count('"probability"') > 0,
      any("13 token ids" in str(m.value) for m in at.get("html")), home, "torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "False", "False"], out.stdout


def test_the_navigation_goes_out_before_the_frame_imports_numpy():
    """app.py sends the navigation first and imports the rest of the frame after it, so that
    the browser draws the sidebar's links while a fresh server imports numpy and tfviz.ui
    (BENCHMARKS.md, "First page"). What comes before ``st.navigation`` imports no numpy."""
    tree = ast.parse((ROOT / "app.py").read_text())
    navigation = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                      and ast.unparse(n.func) == "st.navigation")
    before = [n.module for n in tree.body if isinstance(n, ast.ImportFrom)
              and n.module.startswith("tfviz") and n.lineno < navigation]
    after = [n.module for n in tree.body if isinstance(n, ast.ImportFrom)
             and n.module.startswith("tfviz") and n.lineno > navigation]
    assert "tfviz.ui.lessons" in before and "tfviz.ui.cache" in after, (before, after)
    code = "import sys, streamlit\n" + "".join(f"import {m}\n" for m in before)
    code += "print('numpy' in sys.modules, 'tfviz.ui.cache' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["False", "False"], out.stdout
