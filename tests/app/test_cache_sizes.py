"""A model folder's results are cached apart from the bundled models', in caches that keep
only ``LARGE_MODEL_ENTRIES`` each (``tfviz.ui.cache.per_model``): a GPT-2 small trace is
65 MB, so the bundled models' 512 entries would hold 33 GB of them."""
from __future__ import annotations

import streamlit as st

from tfviz.ui import cache, large_models


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
    keeps ``LARGE_MODEL_CHARTS`` (one layer of a GPT-2 small chart is megabytes); a bundled
    model's page keeps its 256, and each caller still gets its own copy of the same drawing."""
    from tfviz.ui import drawing

    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "big" else None)
    built = []

    def chart(i: int) -> dict:
        built.append(i)
        return {"description": f"chart {i}", "mark": "point", "datasets": {"rows": [{"i": i}]}}

    def spec_of(i: int) -> dict:
        return drawing.drawn("test.chart", (i,), {}, _builder=chart)[0]

    def draw_all(model: str) -> None:
        monkeypatch.setattr(st, "session_state", {"model": model})
        for i in range(n):
            spec = spec_of(i)
            assert spec["description"] == f"chart {i}" and isinstance(spec["datasets"]["rows"], bytes)
        spec_of(0)  # the first again

    drawing._vega_drawn.clear()
    drawing._vega_drawn_for_large.clear()
    n = large_models.LARGE_MODEL_CHARTS + 2
    draw_all("gpt-tiny")
    assert built == list(range(n))  # all kept: the first was not built again
    built.clear()
    draw_all("big")
    assert built == [*range(n), 0]  # a folder's page kept the last LARGE_MODEL_CHARTS only
    one = spec_of(1)
    one["description"] = "changed by a caller"
    assert spec_of(1)["description"] == "chart 1"
    drawing._vega_drawn.clear()
    drawing._vega_drawn_for_large.clear()


def test_one_policy_says_which_models_are_large(monkeypatch):
    """The results' caches (``cache.per_model``) and the charts' (``drawing.drawn``) ask one
    function which model is large: a folder found on the server, and nothing else, whatever
    it is called (a bundled model, a lab run's name, no model yet)."""
    from tfviz.lab.opened import RUN_PREFIX, is_run_name

    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "big" else None)
    assert large_models.is_large("big")
    run = f"{RUN_PREFIX}1: sort"
    assert is_run_name(run)
    for small in ("gpt-tiny", "bert-tiny", run, None, 3):
        assert not large_models.is_large(small), small
    assert cache.is_large is large_models.is_large
    from tfviz.ui import drawing

    assert drawing.is_large is large_models.is_large


def test_a_model_folders_results_keep_within_a_byte_budget(monkeypatch):
    """A trace grows with the square of the text's length (a 512-token BERT-base trace is
    1 GB): a folder's cache keeps at most ``LARGE_MODEL_BYTES`` of results, least recently used
    forgotten first, one too big for the budget not kept at all; each caller gets a copy."""
    import numpy as np

    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "big" else None)
    monkeypatch.setattr(cache, "LARGE_MODEL_BYTES", 10_000)
    calls = []

    @cache.per_model(st.cache_data(max_entries=512, show_spinner=False))
    def work(model: str, i: int, size: int = 4_000) -> np.ndarray:
        calls.append(i)
        return np.full(size // 8, float(i))  # size bytes of float64 (and a little object overhead)

    work.clear()
    for i in range(3):
        assert work("big", i)[0] == i
    assert calls == [0, 1, 2]
    work("big", 2)
    work("big", 1)  # still kept: the two latest fit in 10,000 bytes, three do not
    assert calls == [0, 1, 2]
    work("big", 0)
    assert calls == [0, 1, 2, 0]  # forgotten to make room
    mine = work("big", 0)
    mine[:] = -1  # a caller's copy: the kept result is untouched
    assert (work("big", 0) == 0).all() and calls == [0, 1, 2, 0]
    work("big", 9, size=20_000)
    work("big", 9, size=20_000)
    assert calls[-2:] == [9, 9]  # larger than the budget: computed each time, never kept
    assert (work("big", 0) == 0).all() and calls[-1] == 9  # and it evicted nothing
    work.clear()


def test_held_bytes_counts_a_trace_as_its_pickle_does():
    """The byte budget's measure, against an independent one: a trace's pickle holds its arrays
    once plus a little framing, and held_bytes may count a little more, never much less."""
    import pickle

    import tfviz

    trace = tfviz.load("gpt-tiny").trace("the animal did not cross the street")
    pickled = len(pickle.dumps(trace, protocol=5))
    assert 0.95 * pickled <= cache.held_bytes(trace) <= 1.25 * pickled


def test_a_model_folders_twins_are_built_one_at_a_time_and_not_kept(monkeypatch):
    """Lesson 9's fresh post-LN and pre-LN twins are as big as the model: a folder's are built,
    read and let go one after the other (never both alive, never in the shared resource
    cache), and their stream sizes are those of the twins built the usual way."""
    import gc
    import weakref

    import tfviz
    from tfviz.analysis import layernorm as lna
    from tfviz.experiments import wiring
    from tfviz.ui import experiments_cache as ec

    bundle = tfviz.load("gpt-tiny")  # stands in for the folder's model
    monkeypatch.setattr(cache.checkpoints, "found", lambda name: object() if name == "big" else None)
    monkeypatch.setattr(ec, "get_bundle", lambda name: bundle)
    monkeypatch.setattr(ec, "wiring_variants", lambda name: (_ for _ in ()).throw(AssertionError("kept")))
    alive, most = [], []

    def tracked(*args):
        twin = fresh(*args)
        gc.collect()
        most.append(sum(r() is not None for r in alive) + 1)
        alive.append(weakref.ref(twin))
        return twin

    fresh = wiring.fresh_twin
    monkeypatch.setattr(wiring, "fresh_twin", tracked)
    text = "the cat sat on the mat"
    ec.twin_norms.clear()
    got = ec.twin_norms("big", text)
    assert most == [1, 1]  # the second twin was built after the first was gone
    want = {k: lna.residual_norms(t.trace(text)) for k, t in wiring.wiring_variants(bundle).items()}
    assert got.keys() == want.keys() == {"fresh post-LN", "fresh pre-LN"}
    assert got == want  # same seeded weights, same text, same process: equal by construction
    assert [stage for stage, _ in got["fresh pre-LN"]][:2] == ["embed", "L0 attn"]
    ec.twin_norms.clear()
