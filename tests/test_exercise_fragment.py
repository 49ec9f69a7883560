"""Issue #44: pressing Check on an exercise reruns the answer boxes alone, not the page, unless
the check changes what the rest of the page draws; then the whole page runs.

AppTest always runs the whole script, so this drives a real server over Streamlit's own
protocol (``bench.headless.Session``), which sends a fragment's rerun as a browser does.
"""
from __future__ import annotations

import asyncio

import pytest

from tests.support.serve import in_own_thread, streamlit_server
from tfviz.exercises.fmt import fmt_values
from tfviz.exercises.registry import make_instance
from tfviz.viz.exercises import engine_agreement

pytestmark = pytest.mark.slow

EXERCISE = "flying-arrows"  # the exercises page opens on it; the engine panel shows its rows


async def _check(s, label: str, text: str):
    box = next(w for w in s.page_widgets() if w.kind == "text_input" and w.label == label)
    checks = [w for w in s.page_widgets() if w.kind == "button" and w.label == "Check"]
    labels = [w.label for w in s.page_widgets() if w.kind == "text_input"
              and w.label in {f.label for f in make_instance(EXERCISE).answer_fields}]
    box.value = text
    check = checks[labels.index(label)]
    assert check.fragment_id, "the Check button sits in a fragment"
    return await s.rerun(fragment_id=check.fragment_id, trigger=check)


def test_a_check_reruns_the_boxes_alone_unless_the_page_must_change(tmp_path):
    from bench.headless import Session

    inst = make_instance(EXERCISE)
    watched = {b for row in engine_agreement(inst).answers for b in row}
    quiet = next(f for f in inst.answer_fields if f.name not in watched)  # e.g. the scores
    loud = next(f for f in inst.answer_fields if f.name in watched)  # its engine row appears

    async def visit(url):
        s, first = await Session.open(url, "exercises", timeout=120)
        alone = await _check(s, quiet.label, fmt_values(quiet.expected))
        whole = await _check(s, loud.label, fmt_values(loud.expected))
        await s.close()
        return first, alone, whole

    env = {"STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}
    with streamlit_server(env=env, log_path=tmp_path / "streamlit.log") as (url, _, _):
        first, alone, whole = in_own_thread(asyncio.run, visit(url))

    for run in (first, alone, whole):
        assert run.error is None, run.error
    assert any(t == "h1" and "Worked exercises" in b for t, b in first.headings)
    # The quiet box: its verdict, and nothing of the rest of the page (no title, no tables).
    assert any(t.startswith("✓") for t in alone.texts), alone.texts
    assert not any(t == "h1" for t, _ in alone.headings), alone.headings
    assert alone.elements < first.elements / 2, (alone.elements, first.elements)
    # The watched box: the engine's row for it may show now, so the whole page ran again.
    assert any(t == "h1" and "Worked exercises" in b for t, b in whole.headings)
    assert any(t.startswith("✓") for t in whole.texts), whole.texts


def test_a_table_is_cached_by_everything_it_shows():
    """show_table's cache key: equal frames give equal keys; a value changed in its last bit,
    a label, or a dtype gives another key (a hit would otherwise replay the wrong table)."""
    import numpy as np
    import pandas as pd

    from tfviz.ui.exercise_widgets import _frame_key

    a = pd.DataFrame({"q·k": [0.1, 2.0], "w": ["x", "y"]}, index=["time", "flies"])
    assert _frame_key(a) == _frame_key(a.copy())
    nudged = a.copy()
    nudged.iloc[0, 0] = np.nextafter(0.1, 1.0)
    relabelled = a.rename(index={"flies": "bees"})
    retyped = a.astype({"q·k": "float32"})
    assert len({_frame_key(f) for f in (a, nudged, relabelled, retyped)}) == 4
