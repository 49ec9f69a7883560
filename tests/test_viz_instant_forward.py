"""Lesson 12's instant chart: every step of the forward walk, for every head, in one valid spec.

The numbers sent must be each step's own values (``forward_steps`` for that head), the words
must be the step's explanation and its formula in plain text, and the step and head must be
parameters bound to labelled range inputs that start where the link says.
"""
import json
import re

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import forward as fw
from tfviz.viz import instant as iv
from tfviz.viz import instant_forward as ifw

SCHEMA = load_schema()
TOL = 0.5 * 10 ** -iv.DIGITS + 1e-9


def walk(model: str, text: str = "the cat sat"):
    b = tfviz.load(model)
    trace = b.trace(text)
    return [fw.forward_steps(trace, head=h, token_strings=b.token_strings)
            for h in range(b.config.n_heads)]


@pytest.fixture(scope="module", params=["gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec"])
def steps(request):
    return walk(request.param)


def decode(packed: str) -> np.ndarray:
    return np.array([np.nan if x == "" else float(x) for x in packed.split(",")])


def params(spec) -> dict:
    return {p["name"]: p for p in spec["params"]}


def test_every_formula_reads_as_plain_text(steps):
    for step in steps[0]:
        plain = ifw.plain_formula(step.formula)
        assert not re.search(r"[\\{}]", plain), (step.formula, plain)
        assert plain.count("(") == plain.count(")"), plain
        assert "mathrm" not in plain and "text" not in plain.replace("text →", ""), plain


@pytest.mark.parametrize("latex, plain", [
    (r"x \leftarrow x + \mathrm{SelfAttn}\big(\mathrm{LN}(x)\big)", "x ← x + SelfAttn(LN(x))"),
    (r"\alpha = \mathrm{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}}\Big),\quad z = \alpha V",
     "α = softmax(QKᵀ / √d_k),   z = α V"),
    (r"p = \mathrm{softmax}(W_r x),\quad y = \sum_{i \in \mathcal{T}} p_i E_i(x)",
     "p = softmax(W_r x),   y = Σ_(i ∈ 𝒯) p_i E_i(x)"),
    (r"x_t = E[\text{id}_t] + PE(t),\quad PE(t,2i) = \sin\!\big(t / 10000^{2i/d}\big)",
     "x_t = E[id_t] + PE(t),   PE(t,2i) = sin(t / 10000^(2i/d))"),
])
def test_plain_formula_golden(latex, plain):
    assert ifw.plain_formula(latex) == plain


def test_walk_chart_carries_every_step_for_every_head(steps):
    n_heads, n_steps = len(steps), len(steps[0])
    spec = ifw.walk_chart(steps, step=4, head=n_heads - 1)
    validate_jsonschema(spec, SCHEMA)
    json.dumps(spec)
    p = params(spec)
    assert p["step"]["value"] == 4
    assert p["step"]["bind"] == {"input": "range", "min": 1, "max": n_steps, "step": 1, "name": "Step "}
    assert p["head"]["value"] == n_heads - 1 and p["head"]["bind"]["max"] == n_heads - 1
    assert p["titles"]["value"] == [[s.title for s in per_head] for per_head in steps]
    assert p["rows"]["value"] == [list(s.rows) for s in steps[0]]
    assert p["cols"]["value"] == [list(s.cols) for s in steps[0]]
    rows = spec["datasets"]["numbers"]
    sent = {(r["step"], r["head"]): r for r in rows}
    for i in range(n_steps):
        differs = any(not np.array_equal(s[i].values, steps[0][i].values) for s in steps)
        heads = range(n_heads) if differs else [-1]
        assert sorted(h for (j, h) in sent if j == i) == list(heads)
        for h in heads:
            want = np.asarray(steps[max(h, 0)][i].values, dtype=float)
            r = sent[i, h]
            assert r["c"] == want.shape[1]
            np.testing.assert_allclose(decode(r["v"]).reshape(want.shape), want, atol=TOL)
    attention = [i for i, s in enumerate(steps[0]) if "attention (head" in s.title]
    assert attention and all((i, 0) in sent and (i, -1) not in sent for i in attention)
    notes = spec["datasets"]["notes"]
    for i, step in enumerate(steps[-1]):
        mine = [n for n in notes if n["step"] == i and n["head"] in (-1, n_heads - 1)]
        words = " ".join(n["text"] for n in mine if n["kind"] == "text")
        assert words == " ".join(step.explanation.split())
        assert [n["text"] for n in mine if n["kind"] == "formula"] == [ifw.plain_formula(step.formula)]
        assert any(step.shape in n["text"] for n in mine if n["kind"] == "shape")


def test_step_kinds_and_colour_scales():
    steps = walk("gpt-tiny")
    spec = ifw.walk_chart(steps)
    kinds = params(spec)["kinds"]["value"]
    titles = [s.title for s in steps[0]]
    assert kinds[0] == "ids" and kinds[-1] == "bars"
    assert kinds[titles.index("Softmax")] == "seq" and kinds[titles.index("Logits")] == "div"
    assert all(kinds[i] == "seq" for i, t in enumerate(titles) if "attention" in t)
    edge = params(spec)["edge"]["value"]  # a diverging map's colour range is symmetric about 0
    logits = titles.index("Logits")
    assert edge[logits] == pytest.approx(np.abs(steps[0][logits].values).max(), abs=1e-4)
    assert params(spec)["step"]["value"] == 1 and params(spec)["head"]["value"] == 0
    # out-of-range starting views are clamped: never an empty chart
    clamped = params(ifw.walk_chart(steps, step=999, head=99))
    assert clamped["step"]["value"] == len(titles) and clamped["head"]["value"] == 3
    assert params(ifw.walk_chart(steps, step=0))["step"]["value"] == 1


def test_hostile_text_stays_data():
    hostile = walk("gpt-tiny", "<script>alert('x')</script> \"quotes\" \\ مرحبا 👩‍💻")
    spec = ifw.walk_chart(hostile)
    validate_jsonschema(spec, SCHEMA)
    back = json.loads(json.dumps(spec))
    assert back["params"] == spec["params"]
    labels = " ".join(params(back)["rows"]["value"][1])  # the embeddings' rows: every token
    assert "1 <" in labels and "7 >" in labels and "12 '" in labels  # as typed, not escaped
