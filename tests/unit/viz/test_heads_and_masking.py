"""Figures of lessons 5-8: right shapes, titles, token labels, and the trace's own values."""
import numpy as np
import pytest

from tfviz.analysis import scaling as sc
from tfviz.bundle import Bundle
from tfviz.config import preset
from tfviz.experiments.peeking import peek_experiment
from tfviz.model import Transformer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.viz import heads as attv
from tfviz.viz import masking as masv
from tfviz.viz import scaling as scv
from tfviz.viz.kit.style import token_labels

from tests.support.charts import rows_of


@pytest.fixture(scope="module")
def gpt():
    """A fresh gpt-tiny on the characters of "the cat sat" (the same with or without trained
    assets), as (model holder, trace)."""
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)
    return b, b.trace("the cat sat")


def test_coref_figure_shows_both_nouns():
    w = np.zeros((2, 2, 2))
    w[1, 0] = [0.7, 0.1]
    spec = attv.coref_figure(w, ["animal", "<street>"], best=(1, 0), probe="8 it")
    bars = spec["layer"][0]["encoding"]
    assert bars["color"]["scale"]["domain"] == ["animal", "<street>"]
    assert spec["title"] == "How much 8 it attends to each noun, head by head"
    assert bars["x"]["sort"] == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]
    animal = [r["weight"] for r in rows_of(spec) if r["noun"] == "animal"]
    np.testing.assert_allclose(animal, [0, 0, 0.7, 0])
    assert [r["head"] for r in rows_of(spec) if r["noun"] == "animal"] == bars["x"]["sort"]
    assert rows_of(spec, "best") == [{"head": "L1 H0", "weight": 0.7, "text": "biggest gap ↓"}]


def test_logit_change_figure(gpt):
    b, tr = gpt
    result = peek_experiment(b.model, tr.ids, 4, tr.ids[0])
    spec = masv.logit_change_figure(result.change, tr.tokens, 4)
    rows = rows_of(spec)
    np.testing.assert_allclose([r["change"] for r in rows], result.change)
    # "0" needs exact zeros: a dense decoder, same shapes in both runs (see test_model_masks)
    assert [r["label"] for r in rows[:4]] == ["0"] * 4 and rows[5]["label"] == ""
    assert [r["where"] for r in rows[3:6]] == ["earlier", "edited", "later"]
    assert next(p["value"] for p in spec["params"] if p["name"] == "tokens") == token_labels(tr.tokens)


def test_scaling_charts_carry_the_experiment():
    rows = sc.dot_product_variance([1, 4, 16], n_samples=500, seed=0)
    spec = scv.variance_chart(rows)
    values = rows_of(spec)
    assert len(values) == 6
    assert {v["scores"] for v in values} == {scv.WITHOUT, scv.WITH}
    assert [v["variance"] for v in values if v["scores"] == scv.WITHOUT] == [r.var_raw for r in rows]
    assert [v["variance"] for v in values if v["scores"] == scv.WITH] == [r.var_scaled for r in rows]
    assert [v["theory"] for v in values] == [1, 4, 16, 1, 1, 1]  # d_k without the scale, 1 with it
    assert "d_k" in spec["title"]
    assert [layer["encoding"]["y"]["field"] for layer in spec["layer"]] == ["theory", "variance"]
    sat_rows = sc.saturation([1, 64], seed=0, n_rows=20)
    sat = scv.saturation_chart(sat_rows)
    assert [p["encoding"]["y"]["field"] for p in sat["hconcat"]] == list(scv.MEASURES)
    assert [r["largest gradient"] for r in rows_of(sat)] == [r.max_grad for r in sat_rows]
    raw, p0, p1 = sc.example_row(16, n_keys=4)
    ex = scv.example_row_chart(raw, p0, p1, 16)
    assert "d_k = 16" in ex["title"]
    drawn = rows_of(ex)
    np.testing.assert_array_equal([d["weight"] for d in drawn], np.concatenate([p0, p1]))
    assert [d["raw score"] for d in drawn] == list(raw) * 2
    # with the scale the row is softmax(raw / 4), d_k = 16, checked by an independent softmax
    # (float64 draws and float64 maths on both sides)
    np.testing.assert_allclose(p1, np.exp(raw / 4) / np.exp(raw / 4).sum(), rtol=1e-6)
