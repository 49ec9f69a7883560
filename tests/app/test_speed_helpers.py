"""What the multi-head page sends, and the server's warm-up: right values, built once."""
from __future__ import annotations

import json

import numpy as np

from tests.app.specs import instant_charts, param_values, unpacked
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT


def test_multihead_page_draws_exactly_what_the_trace_holds(app_page):
    """The instant charts carry every layer's and head's map and open on the link's view."""
    import tfviz
    from tfviz.analysis import heads as hd
    from tfviz.analysis.coref import find_coref_positions

    at = app_page("07_multihead.py", layer="1", head="2")
    trace = tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT)
    (maps, maps_data), (bars, bars_data), (nouns, nouns_data) = instant_charts(at)
    assert param_values(maps)["layer"] == 1 and param_values(maps)["head"] == 2
    n = len(trace.tokens)
    for row in maps_data["maps"].itertuples():
        np.testing.assert_allclose(unpacked(row.v).reshape(n, n),
                                   trace["pattern", row.layer][row.head], atol=6e-5)  # 4 decimals
    stats = [hd.head_stats(trace["pattern", layer]) for layer in range(3)]
    # the role labels follow the sentence: they ride in the data (the spec is length-free)
    assert maps_data["maps"]["s_names"][0].split("\x1f") == [s.label for row in stats for s in row]
    # The table of head kinds: every layer's statistics, every share shown with three decimals.
    (table,) = at.dataframe
    # shares of float32 weights from the page's own trace (another thread): a float32 tolerance
    np.testing.assert_allclose(table.value["→ previous token"],
                               [s.previous for row in stats for s in row], atol=1e-5)
    assert list(table.value["label"]) == [s.label for row in stats for s in row]
    assert list(table.value["layer"]) == [layer for layer in range(3) for _ in range(4)]
    formats = {name: c["type_config"]["format"]
               for name, c in json.loads(table.proto.columns).items() if "type_config" in c}
    assert formats == dict.fromkeys(["→ previous token", "→ same token", "→ first token",
                                     "spread (0 focused … 1 uniform)", "→ favourite",
                                     "→ rarest token"], "%.3f")
    # The bars of section 3: each head's share, opening on the coreference probe "it".
    probe = find_coref_positions(trace.tokens).probe
    # opens on "it": the slider says -1 (the sentence's own query), which rides in the data
    assert param_values(bars)["query"] == -1 and bars_data["shares"]["dq"][0] == probe
    assert param_values(bars)["layer"] == 1
    shown = bars_data["shares"]
    W_O, _ = hd.output_weights(tfviz.load(DEFAULT_MODEL).weights(), 1)
    lengths = np.linalg.norm(hd.head_contributions(trace["z", 1][probe], W_O), axis=1)
    chosen = shown[(shown["layer"] == 1) & (shown["q"] == probe)].sort_values("head")
    np.testing.assert_allclose(chosen["v"], lengths, atol=6e-5)
    # Section 4: the weight of "it" on each noun's tokens, summed straight from the trace.
    from tfviz.analysis.coref import coref_spans

    it, *noun_spans = coref_spans(trace.tokens, probe="it")
    drawn = nouns_data["rows"]
    for span, noun in zip(noun_spans, nouns["layer"][0]["encoding"]["color"]["scale"]["domain"]):
        expected = [trace["pattern", layer][head, it[-1], list(span)].sum()
                    for layer in range(3) for head in range(4)]
        np.testing.assert_allclose(drawn[drawn["noun"] == noun]["weight"], expected, atol=1e-5)


def test_warm_up_fills_the_caches_a_first_page_reads(monkeypatch):
    import server  # the start-up hook: tfviz.ui.warmup.warm_up with the collector paused
    from tfviz.bundle import Bundle
    from tfviz.ui import cache
    from tfviz.ui.cache import get_bundle, get_trace, model_names

    cache._trace.clear()
    traced = []
    real = Bundle.trace
    monkeypatch.setattr(Bundle, "trace", lambda self, *a, **k: traced.append(a) or real(self, *a, **k))
    took = server._warm_up()
    assert took > 0 and traced == [(get_bundle(DEFAULT_MODEL).read(DEFAULT_TEXT),)]
    trace = get_trace(DEFAULT_MODEL, DEFAULT_TEXT)  # answered from the cache: no new forward pass
    assert len(traced) == 1
    # the same model, text and shapes in one process: the same kernels, the same bits
    np.testing.assert_array_equal(trace.logits, real(get_bundle(DEFAULT_MODEL), DEFAULT_TEXT).logits)
    assert all(get_bundle(n) is get_bundle(n) for n in model_names())
    # Everything loaded so far is frozen out of the collector, so its full passes stay short,
    # and the collector is on again.
    import gc

    assert gc.isenabled()
    try:
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def test_a_drawn_spec_is_the_charts_own_spec_computed_once():
    """A chart's spec is built once per input, its named datasets sent as Arrow bytes with the
    same numbers; a chart whose rows sit inside its views (the tour's) is drawn as it is."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    from tfviz.analysis.pipeline import rnn_vs_transformer
    from tfviz.ui.drawing import drawn
    from tfviz.viz.kit.charts import chart, q, view
    from tfviz.viz.pipeline import rnn_vs_transformer_chart

    calls = []

    def builder(rows):
        calls.append(len(rows))
        return chart(view("line", x=q("n"), y=q("value")), rows=rows, description="Lines.")

    rows = rnn_vs_transformer(range(2, 9))
    spec = drawn("test.rnn", (rows,), {}, _builder=builder)[0]
    again = drawn("test.rnn", (rows,), {}, _builder=builder)[0]
    assert calls == [len(rows)] and spec == again and spec is not again  # each caller a copy
    direct = builder(rows)
    assert spec["datasets"].keys() == direct["datasets"].keys() == {"rows"}
    shown = convert_arrow_bytes_to_pandas_df(spec["datasets"]["rows"])  # sent as they are
    assert shown.to_dict("records") == rows
    assert shown["value"].max() == 8  # an RNN's 8 steps at n = 8
    tour = drawn("test.tour", (rows,), {"shown": 6}, _builder=rnn_vs_transformer_chart)[0]
    assert tour == rnn_vs_transformer_chart(rows, shown=6) and "datasets" not in tour

def test_the_server_runs_torch_on_one_thread_per_op(app_page):
    """A tiny model's ops are too small to share between threads; the extra OpenMP threads
    only spin and take the core the learner's browser draws on (BENCHMARKS.md)."""
    import threading

    import torch

    import server

    def in_a_new_thread() -> int:  # what a page's next run sees: Streamlit runs each in a new thread
        seen = []
        t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        t.start()
        t.join()
        return seen[0]

    try:
        torch.set_num_threads(2)
        assert in_a_new_thread() == 2
        app_page("05_self_attention.py")  # the frame, as `streamlit run app.py` serves it
        assert in_a_new_thread() == 1
        torch.set_num_threads(2)
        server._warm_up()  # what `streamlit run server.py` does before any learner comes
        assert in_a_new_thread() == 1
    finally:
        torch.set_num_threads(1)
        import gc

        gc.unfreeze()


def test_run_log_times_a_run_only_when_asked(monkeypatch, caplog):
    import logging

    from tfviz.ui import runlog

    with caplog.at_level(logging.INFO, logger="tfviz.runs"):
        monkeypatch.setattr(runlog, "ENABLED", False)
        with runlog.timed_run("masking"):
            pass
        assert runlog.parse(r.getMessage() for r in caplog.records) == []
        monkeypatch.setattr(runlog, "ENABLED", True)
        with runlog.timed_run("masking"):
            sum(range(10_000))
    (page, ms), = runlog.parse(r.getMessage() for r in caplog.records)
    assert page == "masking" and 0 < ms < 60_000
