"""Lessons 6 and 8 send every layer's and head's maps once and open on a shared link's view
(issue #15): what reaches the browser, decoded and compared with fresh traces."""
import numpy as np

import tfviz
from tests.app.specs import instant_charts, param_values, unpacked
from tfviz.config import RunOptions
from tfviz.experiments.padding import padding_demo
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

TOL = 6e-5  # four decimals sent (tfviz.viz.kit.instant.DIGITS) plus float printing


def _instant(at) -> list[tuple[dict, dict]]:
    """The instant charts (those with a layer parameter), not the page's plain altair charts."""
    return [c for c in instant_charts(at) if "layer" in param_values(c[0])]


def _stacked(trace, name: str, pick=lambda a: a) -> np.ndarray:
    return np.stack([pick(trace[name, layer]) for layer in range(trace.config.n_layers)])


def _check(table, want: np.ndarray, *names: str) -> None:
    """Every packed row decodes to ``want`` at its (layer, head) index; masked (−∞) = empty."""
    assert sorted(tuple(getattr(r, k) for k in names) for r in table.itertuples()) == list(
        np.ndindex(*want.shape[:len(names)]))
    for r in table.itertuples():
        expected = want[tuple(getattr(r, k) for k in names)].ravel()
        got = unpacked(r.v)
        assert (np.isnan(got) == np.isneginf(expected)).all()
        finite = np.isfinite(expected)
        np.testing.assert_allclose(got[finite], expected[finite], atol=TOL)


def test_masking_charts_carry_every_view_and_open_on_the_link(app_page):
    at = app_page("08_masking.py", layer="1", head="2")
    bundle = tfviz.load(DEFAULT_MODEL)
    runs = {c: bundle.trace(DEFAULT_TEXT, options=RunOptions(causal=c)) for c in (False, True)}
    charts = _instant(at)
    assert len(charts) == 3
    for spec, _ in charts:  # every chart opens on the link's view
        assert (param_values(spec)["layer"], param_values(spec)["head"]) == (1, 2)
    (_, triangle), (_, masks), (_, padded) = charts
    scores = _stacked(runs[True], "attn_scores")
    _check(triangle["scores"], scores, "layer", "head")
    _check(masks["bidirectional"], _stacked(runs[False], "pattern"), "layer", "head")
    _check(masks["causal"], _stacked(runs[True], "pattern"), "layer", "head")
    n = len(runs[True].tokens)
    caption = next(c.value for c in at.caption if "cells are −∞" in c.value)
    assert caption.startswith(f"{n * (n - 1) // 2} of {n * n} cells")
    # the padded batch of the two default sentences, run here independently
    sentences = [at.text_input(key=k).value for k in ("mk_pad_a", "mk_pad_b")]
    ids = [bundle.encode(s) for s in sentences]
    demo = padding_demo(bundle.model, ids, [bundle.token_strings(i) for i in ids])
    patterns = _stacked(demo.trace, "pattern")  # (layers, 2, heads, T, T)
    _check(padded["s1"], patterns[:, 0], "layer", "head")
    _check(padded["s2"], patterns[:, 1], "layer", "head")
    _check(padded["s2_scores"], _stacked(demo.trace, "attn_scores", lambda a: a[1]), "layer", "head")


def test_masking_with_a_long_text_sends_pictures(app_page):
    """Past 24 tokens the maps travel as one picture each (far quicker to switch in the
    browser); a 64-token text's charts stay well under a megabyte each."""
    text = " ".join(["the cat rested near the lake and the dog jumped over the boat"] * 6)
    at = app_page("08_masking.py", text=text)
    n = len(tfviz.load(DEFAULT_MODEL).trace(at.session_state["text"]).tokens)
    assert n >= 64
    for spec, data in _instant(at):
        sent = sum(len(table.to_json()) for table in data.values()) + len(str(spec))
        assert sent < 1_000_000, (spec["description"], sent)
    (_, triangle), _, _ = _instant(at)
    # labels and the colour range ride in row 0
    assert list(triangle["scores"].columns) == ["layer", "head", "img", "tokens", "s_bound"]
    assert triangle["scores"]["img"].str.startswith("data:image/png;base64,").all()


def test_scaling_charts_carry_both_runs(app_page):
    at = app_page("06_scaling.py", head="3")
    bundle = tfviz.load(DEFAULT_MODEL)
    (spec, data), = _instant(at)
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (0, 3)
    for name, scale in (("on", True), ("off", False)):
        trace = bundle.trace(DEFAULT_TEXT, options=RunOptions(scale=scale))
        _check(data[name], _stacked(trace, "pattern"), "layer", "head")
    entropy = data["entropy"]
    assert len(entropy) == 2 * 3 * 4 * len(bundle.trace(DEFAULT_TEXT).tokens)
