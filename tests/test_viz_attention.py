"""Figures of lessons 5-8: right shapes, titles, token labels, and the trace's own values."""
import numpy as np
import pytest

from tfviz.analysis import attention as att
from tfviz.analysis import coref
from tfviz.analysis import heads as hd
from tfviz.analysis import scaling as sc
from tfviz.bundle import Bundle
from tfviz.config import preset
from tfviz.experiments.peeking import peek_experiment
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz import attention as attv
from tfviz.viz import scaling as scv
from tfviz.viz.arrows import arrows_figure
from tfviz.viz.style import token_labels


@pytest.fixture(scope="module")
def gpt():
    """A fresh gpt-tiny on the characters of "the cat sat" (the same with or without trained
    assets), as (model holder, trace)."""
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    return b, b.trace("the cat sat")


@pytest.fixture(scope="module")
def walk(gpt):
    return att.query_walkthrough(gpt[1], 1, 2, 5)


def test_arrows_one_line_per_visible_key(gpt, walk):
    _, tr = gpt
    fig = arrows_figure(walk.weights, tr.tokens, 5, allowed=walk.allowed, title="Where it looks")
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 6  # keys 0..5; the 5 later keys are masked
    assert all(t.x == (0, 1) and t.y[0] == 5 for t in lines)
    widths = np.array([t.line.width for t in lines])
    assert (np.argsort(widths) == np.argsort(walk.weights[:6])).all()  # thicker = more weight
    keys = next(t for t in fig.data if t.name == "keys")
    labels = token_labels(tr.tokens, escape=True)
    assert keys.text[0] == f"{labels[0]}  {walk.weights[0]:.2f}"
    assert keys.text[9] == f"{labels[9]}  (masked)"
    assert fig.layout.title.text == "Where it looks"


def test_arrows_worked_example_and_escaping():
    fig = arrows_figure(np.array([0.88, 0.12]), ["<pad>", "Machines"], 0, title="t")
    widths = [t.line.width for t in fig.data if t.mode == "lines"]
    assert widths[0] > 5 * widths[1]
    queries = next(t for t in fig.data if t.name == "queries")
    assert queries.text[0] == "0 &lt;pad&gt;"  # escaped once for plotly's label markup


def test_score_steps_show_each_stage(gpt, walk):
    fig = attv.score_steps_figure(walk)
    bars = list(fig.data)
    assert len(bars) == 4
    np.testing.assert_allclose(bars[0].y, walk.raw)
    np.testing.assert_allclose(bars[1].y, walk.scaled)
    np.testing.assert_allclose(bars[3].y, walk.weights)
    assert bars[2].text[6] == "−∞" and bars[2].text[0] == ""
    assert list(fig.layout.xaxis4.ticktext) == token_labels(gpt[1].tokens, escape=True)
    assert "layer 1, head 2" in fig.layout.title.text


def test_weighted_sum_rows_end_with_z(walk):
    fig = attv.weighted_sum_figure(walk, keep=[1, 3])
    z = np.asarray(fig.data[0].z)
    assert z.shape == (4, walk.d_k)  # two kept keys, "others", z
    np.testing.assert_allclose(z[-1], walk.z, atol=1e-6)
    np.testing.assert_allclose(z[0], walk.weights[1] * walk.v[1], atol=1e-6)
    np.testing.assert_allclose(z[:3].sum(axis=0), walk.z, atol=1e-5)
    assert fig.layout.yaxis.ticktext[-1] == "z = Σ α_j v_j"


def test_maps_side_by_side_and_head_grid(gpt):
    _, tr = gpt
    p = tr["pattern", 0]
    fig = attv.maps_side_by_side([p[0], p[1]], [tr.tokens, tr.tokens], ["a", "b"], title="T")
    assert len(fig.data) == 2 and fig.layout.title.text == "T"
    np.testing.assert_array_equal(fig.data[1].z, p[1])
    assert list(fig.layout.xaxis.ticktext) == token_labels(tr.tokens, escape=True)
    grid = attv.head_grid(p, tr.tokens, layer=0, names=["x", "y", "z", "w"])
    assert len(grid.data) == 4
    np.testing.assert_array_equal(grid.data[3].z, p[3])
    assert [a.text for a in grid.layout.annotations][:4] == ["head 0: x", "head 1: y",
                                                             "head 2: z", "head 3: w"]


def test_head_contribution_bars(gpt):
    b, tr = gpt
    contrib = hd.head_contributions(tr["z", 0][2], hd.output_weights(b.weights(), 0)[0])
    spec = attv.head_contribution_bars(contrib, query="2 <e>", highlight=1).to_dict()
    rows = next(iter(spec["datasets"].values()))
    np.testing.assert_allclose([r["length"] for r in rows], np.linalg.norm(contrib, axis=1))
    assert [r["head"] for r in rows] == ["head 0", "head 1", "head 2", "head 3"]
    assert [r["chosen"] for r in rows] == ["other heads", "chosen head", "other heads", "other heads"]
    assert spec["title"] == "How much each head adds to the output for 2 <e>"  # shown as typed


def test_coref_figure_shows_both_nouns():
    w = np.zeros((2, 2, 2))
    w[1, 0] = [0.7, 0.1]
    fig = attv.coref_figure(w, ["animal", "<street>"], best=(1, 0), probe="8 it")
    assert [t.name for t in fig.data] == ["animal", "&lt;street&gt;"]
    assert fig.layout.title.text == "How much 8 it attends to each noun, head by head"
    assert list(fig.data[0].x) == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]
    np.testing.assert_allclose(fig.data[0].y, [0, 0, 0.7, 0])
    assert fig.layout.annotations[0].x == "L1 H0"


def test_masked_scores_figure_blanks_minus_infinity(gpt):
    _, tr = gpt
    masked = tr["attn_scores", 0][0]
    fig = attv.masked_scores_figure(masked, tr.tokens, title="M")
    shown, overlay = np.asarray(fig.data[0].z, dtype=float), np.asarray(fig.data[1].z, dtype=float)
    assert np.isnan(shown[0, 1]) and overlay[0, 1] == 1.0
    assert shown[3, 2] == pytest.approx(masked[3, 2]) and np.isnan(overlay[3, 2])
    assert fig.data[1].texttemplate == "%{text}"
    assert fig.data[1].text[0][1] == "−∞" and fig.data[1].text[3][2] == ""  # only masked cells


def test_logit_change_figure(gpt):
    b, tr = gpt
    result = peek_experiment(b.model, tr.ids, 4, tr.ids[0])
    fig = attv.logit_change_figure(result.change, tr.tokens, 4)
    np.testing.assert_allclose(fig.data[0].y, result.change)
    # "0" needs exact zeros: a dense decoder, same shapes in both runs (see test_model_masks)
    assert list(fig.data[0].text[:4]) == ["0"] * 4 and fig.data[0].text[5] == ""
    assert list(fig.layout.xaxis.ticktext) == token_labels(tr.tokens, escape=True)


def test_scaling_charts_carry_the_experiment():
    rows = sc.dot_product_variance([1, 4, 16], n_samples=500, seed=0)
    spec = scv.variance_chart(rows).to_dict()
    values = spec["datasets"][next(iter(spec["datasets"]))]
    assert len(values) == 6
    assert {v["scores"] for v in values} == {scv.WITHOUT, scv.WITH}
    assert [v["variance"] for v in values if v["scores"] == scv.WITHOUT] == [r.var_raw for r in rows]
    assert "d_k" in spec["title"]["text"] if isinstance(spec["title"], dict) else "d_k" in spec["title"]
    sat = scv.saturation_chart(sc.saturation([1, 64], seed=0, n_rows=20)).to_dict()
    assert len(sat["hconcat"]) == 3
    raw, p0, p1 = sc.example_row(16, n_keys=4)
    ex = scv.example_row_chart(raw, p0, p1, 16).to_dict()
    assert "d_k = 16" in ex["title"]
    ent = scv.entropy_chart(np.array([0.0, 1.0]), np.array([0.0, 0.5]), ["a", "<b>"]).to_dict()
    data = ent["datasets"][next(iter(ent["datasets"]))]
    assert [d["query"] for d in data] == ["0 a", "1 <b>"] * 2  # altair shows text as typed
    assert [d["entropy (bits)"] for d in data] == [0.0, 1.0, 0.0, 0.5]
