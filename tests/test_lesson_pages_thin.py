"""Pages only describe the UI: a lesson reads the learner's model and text through
``lesson_context()`` and calls cached computations that live in tfviz/ui, instead of copying
its own header and defining its own caches; and it does no maths of its own, so it never
imports numpy (the numbers come from tfviz, where they are tested)."""
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
