"""Figures of lessons 9-12: right data, titles, axis titles and token-string labels.

The FFN, MoE and forward-walk pages draw instant charts, tested in tests/test_viz_instant_*.py."""
import numpy as np
import pytest

import tfviz
from tfviz.analysis import forward as fw
from tfviz.analysis import layernorm as lna
from tfviz.viz import forward as fwv
from tfviz.viz import layernorm as lnv
from tfviz.viz.style import token_labels

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


def test_params_chart():
    groups = fw.grouped_params(tfviz.load("gpt-tiny").config)
    chart = fwv.params_chart(groups, title="params")
    rows = _rows(chart)
    assert {r["part"]: r["parameters"] for r in rows} == groups
    assert _title(chart) == "params"
