"""A model folder's results are cached apart from the bundled models', in caches that keep
only ``LARGE_MODEL_ENTRIES`` each (``tfviz.ui.cache.per_model``): a GPT-2 small trace is
65 MB, so the bundled models' 512 entries would hold 33 GB of them."""
from __future__ import annotations

import streamlit as st

from tfviz.ui import cache


def test_a_model_folders_calls_keep_only_a_few_entries(monkeypatch):
    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "big" else None)
    calls = []

    @cache.per_model(st.cache_data(max_entries=512, show_spinner=False))
    def work(model: str, i: int) -> tuple[str, int]:
        calls.append((model, i))
        return model, i

    work.clear()
    n = cache.LARGE_MODEL_ENTRIES + 2
    for model in ("gpt-tiny", "big"):
        for i in range(n):
            assert work(model, i) == (model, i)
        work(model, 0)  # the first again: a small model still has it, a folder's cache does not
    assert calls.count(("gpt-tiny", 0)) == 1
    assert calls.count(("big", 0)) == 2
    assert sum(m == "big" for m, _ in calls) == n + 1
    work.clear()
    work("gpt-tiny", 1)
    work("big", 1)
    assert calls[-2:] == [("gpt-tiny", 1), ("big", 1)]  # clear() empties both caches


def test_a_model_folder_is_told_apart_from_our_corpus(monkeypatch):
    """Our word lists and "it" sentences were written for our own models: for a folder's model
    the sidebar and the "it" lessons say so instead of naming words it "never read"."""
    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "gpt2" else None)
    cache.vocabulary_notice.clear()
    cache.coref_gap_notice.clear()
    note = cache.vocabulary_notice("gpt2", "The zorblax sat.")
    assert note.startswith("gpt2 was trained by others") and "own tokenizer" in note
    assert "written for the models we trained" in cache.coref_gap_notice("gpt2", "it was tired")
    ours = cache.vocabulary_notice("gpt-tiny", "The zorblax sat.")
    assert ours is not None and "zorblax" in ours  # the bundled model still names the word


def test_a_model_folders_charts_keep_only_a_few_entries(monkeypatch):
    """Charts drawn on a page whose sidebar model is a folder go to a cache of their own that
    keeps ``FOLDER_CHARTS`` (one layer of a GPT-2 small chart is megabytes); a bundled model's
    page keeps its 256, and each caller still gets its own copy of the same drawing."""
    from tfviz.ui import widgets

    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "big" else None)
    built = []

    def chart(i: int) -> dict:
        built.append(i)
        return {"description": f"chart {i}", "mark": "point", "datasets": {"rows": [{"i": i}]}}

    def draw_all(model: str) -> None:
        monkeypatch.setattr(st, "session_state", {"model": model})
        assert widgets._on_a_folder() == (model == "big")
        for i in range(n):
            spec = widgets._vega_spec("test.chart", (i,), {}, _builder=chart)
            assert spec["description"] == f"chart {i}" and isinstance(spec["datasets"]["rows"], bytes)
        widgets._vega_spec("test.chart", (0,), {}, _builder=chart)  # the first again

    widgets._vega_drawn.clear()
    widgets._vega_drawn_for_folder.clear()
    n = widgets.FOLDER_CHARTS + 2
    draw_all("gpt-tiny")
    assert built == list(range(n))  # all kept: the first was not built again
    built.clear()
    draw_all("big")
    assert built == [*range(n), 0]  # a folder's page kept the last FOLDER_CHARTS only
    one = widgets._vega_spec("test.chart", (1,), {}, _builder=chart)
    one["description"] = "changed by a caller"
    assert widgets._vega_spec("test.chart", (1,), {}, _builder=chart)["description"] == "chart 1"
    widgets._vega_drawn.clear()
    widgets._vega_drawn_for_folder.clear()
