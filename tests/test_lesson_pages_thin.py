"""Pages only describe the UI: a lesson reads the learner's model and text through
``lesson_context()`` and calls cached computations that live in tfviz/ui, instead of copying
its own header and defining its own caches; and it does no maths of its own, so it never
imports numpy (the numbers come from tfviz, where they are tested), and it neither reduces,
sorts nor rounds data: totals, extremes, rankings and the rounded rows of a table are the
result types' (their tests check them against references)."""
from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "lessons").glob("*.py"))
NUMPY = re.compile(r"^\s*(import numpy|from numpy)\b", re.MULTILINE)
READS_SIDEBAR = re.compile(r"""session_state\[["'](model|text)["']\](?!\s*=[^=])""")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_a_page_defines_no_cache_and_reads_the_sidebar_through_lesson_context(path):
    text = path.read_text()
    assert not re.search(r"st\.cache_(data|resource)", text), "cached functions live in tfviz/ui"
    assert not READS_SIDEBAR.search(text), "read the model and text with lesson_context()"


def test_the_check_sees_a_copied_header_but_not_a_button_that_sets_the_text():
    assert READS_SIDEBAR.search('name, text = st.session_state["model"], st.session_state["text"]')
    assert not READS_SIDEBAR.search('    st.session_state["text"] = EXAMPLES[example]')


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_a_page_does_no_maths_of_its_own(path):
    assert not NUMPY.search(path.read_text()), (
        "a lesson imports no numpy: put the computation in tfviz (analysis, decoding, ui/*) and "
        "call it from the page")


def test_the_check_sees_numpy_imported_at_any_depth():
    assert NUMPY.search("import numpy as np\n")
    assert NUMPY.search("def f():\n    from numpy import stack\n")
    assert not NUMPY.search('st.caption("numpy arrays")\n')


def _bare_values(source: str) -> list[str]:
    """Statements that are a value on their own line (not a call, not a docstring): what
    Streamlit's "magic" would have drawn with st.write."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for body in (getattr(node, name, None) for name in ("body", "orelse", "finalbody")):
            for i, stmt in enumerate(body if isinstance(body, list) else []):
                if not isinstance(stmt, ast.Expr) or isinstance(stmt.value, (ast.Call, ast.Await)):
                    continue
                docstring = (i == 0 and isinstance(stmt.value, ast.Constant)
                             and isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)))
                if not docstring:
                    found.append(f"line {stmt.lineno}: {ast.unparse(stmt)[:60]}")
    return found


@pytest.mark.parametrize("path", [*LESSONS, ROOT / "app.py"], ids=lambda p: p.name)
def test_a_page_draws_only_through_calls(path):
    """Streamlit's "magic" is off (.streamlit/config.toml: it parsed every page's source on
    its first run, 11 ms for the tour), so a value alone on a line draws nothing: say st.write."""
    magic = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["runner"]
    assert magic["magicEnabled"] is False
    assert not _bare_values(path.read_text()), "draw it with st.write(...) or st.markdown(...)"


def test_the_check_sees_a_bare_value_but_not_a_docstring_or_a_call():
    assert _bare_values('"""Doc."""\nx = 1\nx\nwith st.sidebar:\n    "a note"\n') == [
        "line 3: x", "line 5: 'a note'"]
    assert _bare_values('"""Doc."""\ndef f():\n    """Doc."""\n    st.write(1)\n') == []


#: Builtins that reduce, rank or round: on a page they would compute a number no test sees.
AGGREGATING_CALLS = frozenset({"sum", "min", "max", "sorted", "round", "abs", "divmod", "pow"})
#: Methods of numpy arrays (and tensors) that reduce, rank or round the same way.
AGGREGATING_METHODS = frozenset({"sum", "mean", "max", "min", "std", "var", "median", "prod",
                                 "cumsum", "argmax", "argmin", "argsort", "sort", "round", "topk"})
#: Modules whose functions are arithmetic on data.
MATHS_MODULES = frozenset({"math", "statistics", "numpy", "np", "torch"})


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _is_clamp(call: ast.Call) -> bool:
    """The allow-list, one entry: ``min``/``max`` of two values, one of them a number written
    in the page (``max(room, 2)``, ``min(12, most)``): a widget's bound or default kept in range,
    not a reduction over data, which takes a collection or a ``key``."""
    return (isinstance(call.func, ast.Name) and call.func.id in ("min", "max")
            and len(call.args) == 2 and not call.keywords and any(map(_is_number, call.args)))


def aggregations(source: str) -> list[str]:
    """Where a page reduces, ranks or rounds data (see the constants above), or imports a
    maths module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"line {node.lineno}: import {n}" for n in names
                      if n and n.partition(".")[0] in MATHS_MODULES]
        if not isinstance(node, ast.Call) or _is_clamp(node):
            continue
        f = node.func
        if (isinstance(f, ast.Name) and f.id in AGGREGATING_CALLS) or (
                isinstance(f, ast.Attribute) and (f.attr in AGGREGATING_METHODS or (
                    isinstance(f.value, ast.Name) and f.value.id in MATHS_MODULES))):
            found.append(f"line {node.lineno}: {ast.unparse(node)[:70]}")
    return found


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_a_page_neither_reduces_nor_rounds_data(path):
    found = aggregations(path.read_text())
    assert not found, (f"{path.name} computes on data (" + "; ".join(found) + "): return the "
                       "rows and totals from a tfviz result type, tested there")


def test_the_check_sees_reductions_rankings_and_rounding_but_not_a_clamp():
    assert aggregations("total = sum(s.ms for s in steps)\n") == [
        "line 1: sum((s.ms for s in steps))"]
    assert aggregations("w = max(range(n), key=losses.__getitem__)\nx = a.mean()\n"
                        "y = round(v, 3)\nz = sorted(set(u))\nimport math\n") == [
        "line 5: import math", "line 1: max(range(n), key=losses.__getitem__)",
        "line 2: a.mean()", "line 3: round(v, 3)", "line 4: sorted(set(u))"]
    assert aggregations("k = st.slider('k', 1, max(room, 2))\nj = min(12, most)\n"
                        "n = len(tokens)\nf = max(-1, x)\n") == []
    assert aggregations("m = max(a, b)\n") == ["line 1: max(a, b)"]  # two data values
