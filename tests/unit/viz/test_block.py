"""Figures of lessons 9-12: right data, titles, axis titles and token-string labels.

The FFN, MoE and forward-walk pages draw instant charts, tested in the files beside this one."""
import numpy as np
import pytest

import tfviz
from tfviz.analysis import forward as fw
from tfviz.analysis import layernorm as lna
from tfviz.viz import forward as fwv
from tests.support.charts import rows_of
from tfviz.viz import block as lnv

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


def _matrix(spec: dict) -> np.ndarray:
    """The matrix a heatmap of ``instant_matrix.matrix_chart`` carries, as numbers (4 decimals)."""
    return np.array([float(v) for v in spec["datasets"]["matrix"][0]["v"].split(",")])


def test_gamma_beta_heatmap(gpt):
    b, _ = gpt
    params = lna.gamma_beta(b.weights())
    spec = lnv.gamma_beta_heatmap(params, which="beta")
    beta = np.stack([p[1] for p in params.values()])
    np.testing.assert_allclose(_matrix(spec).reshape(beta.shape), beta, atol=5e-5)  # 4 decimals
    labels = {p["name"]: p["value"] for p in spec["params"]}
    assert labels["ylabels"] == list(params)
    rect = spec["layer"][0]["encoding"]
    assert rect["x"]["axis"]["title"] == "dimension" and "β" in spec["title"]
    bound = float(np.abs(beta).max())
    assert rect["color"]["scale"]["domain"] == [-bound, bound]  # red and blue around 0
    gamma = lnv.gamma_beta_heatmap(params, which="gamma")
    assert "γ" in gamma["title"]
    g = np.stack([p[0] for p in params.values()])
    assert gamma["layer"][0]["encoding"]["color"]["scale"]["domain"] == [float(g.min()), float(g.max())]


def test_residual_norm_chart(gpt):
    _, tr = gpt
    series = {"model": lna.residual_norms(tr), "other": [("embed", 1.0), ("L0 attn", 2.0)]}
    spec = lnv.residual_norm_chart(series, title="size")
    rows = rows_of(spec)
    assert len(rows) == len(series["model"]) + 2
    assert [r["mean L2 norm"] for r in rows if r["model"] == "model"] == [v for _, v in series["model"]]
    assert {r["model"] for r in rows} == {"model", "other"}
    assert spec["encoding"]["x"]["sort"][:3] == ["embed", "L0 attn", "L0 ffn"]
    assert spec["title"] == "size"


def test_params_chart():
    groups = fw.grouped_params(tfviz.load("gpt-tiny").config)
    spec = fwv.params_chart(groups, title="params")
    assert {r["part"]: r["parameters"] for r in rows_of(spec)} == groups
    assert spec["title"] == "params"
    assert spec["layer"][0]["encoding"]["y"]["sort"] == list(groups)  # the parts in the model's order
