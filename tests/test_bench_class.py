"""The headless class benchmark drives a real server: two learners at a fast pace for 15 s.

No timing is asserted (speed lives in BENCHMARKS.md); what is checked is that the headless
learners really use the app: they act, nothing fails, the sentence a learner types reaches
the page's content, a sidebar click draws that lesson's title, and the summary line parses.
"""
from __future__ import annotations

import asyncio
import re

import pytest

from bench.bench_class import run_class, summary_line
from tests.support.serve import streamlit_server, in_own_thread
from tfviz.ui.lessons import by_url

pytestmark = pytest.mark.slow


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    # No file watching: an edit to the repo during the run would reload modules under the
    # running server, and values cached before the reload then fail to unpickle.
    env = {"STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}
    with streamlit_server(env=env, log_path=log) as (url, proc, _):
        r = in_own_thread(asyncio.run, run_class(url, 2, 15, seed=3, pace=(0.4, 1.2),
                                                  server_pids=[proc.pid]))
        assert proc.poll() is None, f"server died; log:\n{log.read_text()[-3000:]}"
    return r


def test_learners_act_without_errors(result):
    assert {a.learner for a in result.actions} == {0, 1}
    assert [a.kind for a in result.actions if a.learner == 0][:2] == ["load", "type"]
    assert len(result.actions) > 10
    assert [a.error for a in result.errors] == []
    assert {"open", "type"} <= {a.kind for a in result.actions}


def test_typed_sentence_reaches_the_page(result):
    first = [next(a for a in result.actions if a.learner == i and a.kind == "type") for i in (0, 1)]
    assert first[0].label != first[1].label  # each learner its own sentence
    for a in first:  # on the lesson it opened, with gpt-tiny: its new words are in the charts
        assert a.words_seen is not None and a.words_seen >= 0.5, (a.label, a.page, a.words_seen)


def test_page_switch_draws_that_lessons_title(result):
    opened = [a for a in result.actions if a.kind in ("load", "open")]
    assert len(opened) >= 3
    for a in opened:  # "5 · Self-attention step by step" -> h1 "Self-attention, step by step"
        title = by_url(a.page).title
        assert len(words(title) & words(a.h1)) >= len(words(title)) / 2, (a.page, title, a.h1)


def test_summary_line_parses(result):
    line = summary_line(result)
    m = re.fullmatch(r"learners=(\d+) actions=(\d+) errors=(\d+) p50_ms=(\d+) p95_ms=(\d+)", line)
    assert m, line
    learners, actions, errors, p50, p95 = map(int, m.groups())
    assert (learners, actions, errors) == (2, len(result.actions), 0)
    assert 0 < p50 <= p95
    assert result.cpu_s > 0 and result.peak_mb > 100  # the server's own process was measured


def test_a_failing_page_counts_as_an_error(tmp_path):
    """The error check itself: a page forced to fail (TFVIZ_FAULT_PAGE) is an error."""
    from bench.headless import Session

    async def visit(url):
        s, run = await Session.open(url, "masking", timeout=60)
        other = await s.goto("tokenizer")
        await s.close()
        return run, other

    env = {"STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none", "TFVIZ_FAULT_PAGE": "masking"}
    with streamlit_server(env=env, log_path=tmp_path / "streamlit.log") as (url, _, _):
        failed, fine = in_own_thread(asyncio.run, visit(url))
    assert failed.status == "FINISHED_SUCCESSFULLY"  # the frame caught it and said sorry
    assert failed.error is not None and "Sorry, something went wrong" in failed.error
    assert fine.error is None and any(t == "h1" and "Tokenizer" in b for t, b in fine.headings)
