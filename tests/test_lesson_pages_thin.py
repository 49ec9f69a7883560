"""Pages only describe the UI: a lesson reads the learner's model and text through
``lesson_context()`` and calls cached computations that live in tfviz/ui, instead of copying
its own header and defining its own caches; and it does no maths of its own, so it never
imports numpy (the numbers come from tfviz, where they are tested)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

LESSONS = sorted((Path(__file__).resolve().parents[1] / "lessons").glob("*.py"))
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
