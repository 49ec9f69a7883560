"""Figures of lessons 9-12: right data, titles, axis titles and token-string labels."""
import numpy as np
import pytest

import tfviz
from tfviz.analysis import ffn as fa
from tfviz.analysis import forward as fw
from tfviz.analysis import layernorm as lna
from tfviz.analysis import moe as ma
from tfviz.config import RunOptions
from tfviz.viz import ffn as fv
from tfviz.viz import forward as fwv
from tfviz.viz import layernorm as lnv
from tfviz.viz import moe as mv
from tfviz.viz.style import safe_label, token_labels

TEXT = "the cat sat."


def _rows(chart) -> list[dict]:
    """Every data row an altair chart carries (inline datasets, all layers)."""
    spec = chart.to_dict()
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def _title(chart) -> str:
    spec = chart.to_dict()
    title = spec.get("title")
    return title if isinstance(title, str) else title["text"]


@pytest.fixture(scope="module")
def gpt():
    b = tfviz.load("gpt-tiny")
    return b, b.trace(TEXT)


def test_token_stats_chart(gpt):
    _, tr = gpt
    labels = token_labels(tr.tokens)
    s = lna.token_stats(tr, 0, "ln1")
    chart = lnv.token_stats_chart(tr.tokens, s.mean_before, s.std_before, s.mean_after, s.std_after,
                                  title="μ and σ")
    rows = _rows(chart)
    assert _title(chart) == "μ and σ" and len(rows) == 4 * len(tr.tokens)
    got = {(r["token"], r["statistic"]): r["value"] for r in rows}
    assert got[(labels[3], "σ before")] == pytest.approx(float(s.std_before[3]))
    spec = chart.to_dict()
    assert spec["encoding"]["x"]["sort"] == labels and spec["encoding"]["x"]["title"] == "token"


def test_gamma_beta_heatmap(gpt):
    b, _ = gpt
    params = lna.gamma_beta(b.weights())
    fig = lnv.gamma_beta_heatmap(params, which="beta")
    np.testing.assert_allclose(fig.data[0].z, np.stack([p[1] for p in params.values()]))
    assert list(fig.layout.yaxis.ticktext) == list(params)
    assert fig.layout.xaxis.title.text == "dimension" and "β" in fig.layout.title.text
    assert "γ" in lnv.gamma_beta_heatmap(params, which="gamma").layout.title.text


def test_residual_norm_chart(gpt):
    _, tr = gpt
    series = {"model": lna.residual_norms(tr), "other": [("embed", 1.0), ("L0 attn", 2.0)]}
    chart = lnv.residual_norm_chart(series, title="size")
    rows = _rows(chart)
    assert len(rows) == len(series["model"]) + 2
    assert {r["model"] for r in rows} == {"model", "other"}
    assert chart.to_dict()["encoding"]["x"]["sort"][:3] == ["embed", "L0 attn", "L0 ffn"]


def test_neuron_heatmap_and_active_chart(gpt):
    _, tr = gpt
    labels = token_labels(tr.tokens)
    acts = fa.neuron_acts(tr, 0)
    top = fa.top_neurons(acts, 6)
    fig = fv.neuron_heatmap(acts, tr.tokens, top, title="neurons")
    np.testing.assert_allclose(fig.data[0].z, acts[:, top])
    assert list(fig.layout.xaxis.ticktext) == [f"n{j}" for j in top]
    assert list(fig.layout.yaxis.ticktext) == labels
    assert fig.layout.xaxis.title.text == "neuron" and fig.layout.title.text == "neurons"
    chart = fv.active_chart(tr.tokens, fa.fraction_active(acts), title="active")
    rows = _rows(chart)
    assert [r["token"] for r in rows] == labels
    np.testing.assert_allclose([r["share active"] for r in rows], (acts > 0).mean(1))


def test_mixing_chart_holds_the_weighted_values_and_z(gpt):
    _, tr = gpt
    labels = token_labels(tr.tokens)
    mix = fa.attention_mixing(tr, 0, 1, 4)
    chart = fv.mixing_chart(mix.values, mix.weights, mix.z, tr.tokens, title="mix")
    rows = _rows(chart)
    zs = [r for r in rows if r.get("key") == "z (the mix)"]
    np.testing.assert_allclose([r["value"] for r in zs], mix.z)
    ticks = [r for r in rows if r.get("key") != "z (the mix)"]
    assert {r["key"] for r in ticks} == set(labels[:5])  # causal: only keys 0..4 carry weight
    assert len(ticks) == 5 * mix.values.shape[1]


def test_routing_heatmap_load_chart_and_class_table():
    b = tfviz.load("moe-tiny")
    tr = b.trace(TEXT, options=RunOptions(moe_top_k=2))
    r = ma.routing(tr, 0)
    labels = token_labels(tr.tokens)
    fig = mv.routing_heatmap(r.probs, r.chosen_mask(), r.dropped_mask(), tr.tokens, title="gates")
    np.testing.assert_allclose(fig.data[0].z, r.probs)
    assert list(fig.layout.yaxis.ticktext) == labels
    assert list(fig.layout.xaxis.ticktext) == [f"expert {e}" for e in range(4)]
    text = np.array(fig.data[0].text)
    e = int(r.indices[0, 0])
    assert text[0][e].endswith("✓") and text[0][e].startswith(f"{r.probs[0, e]:.2f}")
    assert sum(cell.endswith(("✓", "✗")) for row in text for cell in row) == 2 * len(tr.tokens)
    served = r.chosen_mask() & ~r.dropped_mask()
    assert fig.data[1].name == "chosen" and len(fig.data[1].x) == served.sum()
    np.testing.assert_array_equal(fig.data[1].y, np.nonzero(served)[0])

    chart = mv.load_chart(np.array([3, 1, 0, 2]), np.array([1, 0, 0, 0]), 3, title="load")
    rows = _rows(chart)
    served = {r["expert"]: r["tokens"] for r in rows if r.get("kind") == "served"}
    assert served == {"expert 0": 3, "expert 1": 1, "expert 2": 0, "expert 3": 2}
    assert {"capacity": 3} in rows and _title(chart) == "load"
    assert all("capacity" not in r for r in _rows(mv.load_chart(np.ones(4), np.zeros(4), None, title="x")))

    counts = np.array([[3, 1], [0, 2]])
    fig = mv.class_expert_heatmap(["noun", "verb"], [0, 1], ma.row_shares(counts), counts, title="classes")
    np.testing.assert_allclose(fig.data[0].z, [[0.75, 0.25], [0, 1]])
    assert list(fig.layout.yaxis.ticktext) == ["noun", "verb"] and fig.data[0].text[0][0] == "75% (3)"


def test_step_figures(gpt):
    b, tr = gpt
    labels = token_labels(tr.tokens)
    steps = fw.forward_steps(tr, head=1, token_strings=b.token_strings)
    attn = fwv.step_figure(steps[3])
    np.testing.assert_allclose(attn.data[0].z, tr["pattern", 0][1])
    assert list(attn.layout.xaxis.ticktext) == labels and attn.layout.title.text == steps[3].title
    assert attn.layout.xaxis.title.text == "key (attended to)"
    assert attn.data[0].zmin == 0 and attn.data[0].zmax == 1
    table = fwv.step_figure(steps[0])
    assert table.data[0].type == "table"
    assert list(table.data[0].cells.values[1]) == list(tr.tokens)
    assert list(table.data[0].cells.values[2]) == tr.ids.tolist()
    bars = fwv.step_figure(steps[-1])
    assert bars.data[0].type == "bar"
    assert list(bars.data[0].x) == [safe_label(c) for c in steps[-1].cols]
    np.testing.assert_allclose(bars.data[0].y, steps[-1].values[0])
    assert bars.layout.yaxis.title.text == "probability"


def test_params_chart():
    groups = fw.grouped_params(tfviz.load("gpt-tiny").config)
    chart = fwv.params_chart(groups, title="params")
    rows = _rows(chart)
    assert {r["part"]: r["parameters"] for r in rows} == groups
    assert _title(chart) == "params"


def test_learner_text_is_escaped_for_plotly_and_plain_for_altair():
    from tfviz.analysis.forward import Step
    tokens = ("<b>", "x")
    step = Step("Top-2 prediction at 0 <b>", "f", "(2,)", np.array([[0.6, 0.4]]), "e",
                rows=("P",), cols=tokens, kind="bars")
    bars = fwv.step_figure(step)
    assert list(bars.data[0].x) == ["&lt;b&gt;", "x"] and "&lt;b&gt;" in bars.layout.title.text
    table = fwv.step_figure(Step("Tokens", "f", "(2,)", np.array([[5, 6]]), "e", rows=("id",),
                                 cols=("0 <b>", "1 x"), kind="table"))
    assert list(table.data[0].cells.values[1]) == ["&lt;b&gt;", "x"]
    heat = fwv.step_figure(Step("h", "f", "(2, 2)", np.eye(2), "e", rows=("0 <b>", "1 x"),
                                cols=("0 <b>", "1 x")))
    assert list(heat.layout.yaxis.ticktext) == ["0 &lt;b&gt;", "1 x"]
    rows = _rows(fv.active_chart(tokens, np.array([0.5, 0.25]), title="a"))
    assert [r["token"] for r in rows] == ["0 <b>", "1 x"]  # altair shows text as typed
