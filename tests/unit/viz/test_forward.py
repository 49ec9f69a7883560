"""Lesson 12's instant chart: every step of the forward walk, for every head, in one valid spec.

The numbers sent must be each step's own values (``forward_steps`` for that head), the words
must be the step's explanation and its formula in plain text, and the step and head must be
parameters bound to labelled range inputs that start where the link says.
"""
import base64
import io
import json
import re

import numpy as np
import pytest
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import forward as fw
from tfviz.viz.kit import instant as iv
from tfviz.viz.kit import instant_pictures as ipic
from tfviz.viz import forward as ifw

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


def sentence(spec) -> dict:
    """What the walk carries of the sentence in its first data row (``walk_sentence``), read
    back: every head's titles, every step's row and column labels, every step's colour range."""
    first = spec["datasets"]["numbers"][0]
    steps = len(first["s_edges"].split(","))
    titles = first["s_titles"].split("\x1f")
    return {"titles": [titles[h * steps:(h + 1) * steps] for h in range(len(titles) // steps)],
            "rows": [r.split("\x1f") for r in first["s_rows_all"].split("\x1e")],
            "cols": [c.split("\x1f") for c in first["s_cols_all"].split("\x1e")],
            "edge": [float(e) for e in first["s_edges"].split(",")]}


def pixels(url: str) -> np.ndarray:
    """A picture's (rows, cols, 3) RGB values."""
    from PIL import Image

    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def check_diverging(rgb: np.ndarray, values: np.ndarray, bound: float) -> None:
    """One pixel per value, red for positive and blue for negative, white at 0 and the end
    colours at ±bound (checked independently of how the picture interpolates)."""
    assert rgb.shape == (*values.shape, 3)
    redness = rgb[..., 0].astype(int) - rgb[..., 2].astype(int)
    assert (np.sign(redness[np.abs(values) > 0.05 * bound]) ==
            np.sign(values[np.abs(values) > 0.05 * bound])).all()
    assert np.corrcoef(redness.ravel(), values.ravel())[0, 1] > 0.9
    ends = {True: (0x67, 0x00, 0x1F), False: (0x05, 0x30, 0x61)}  # RdBu's darkest red and blue
    top = np.unravel_index(np.argmax(np.abs(values)), values.shape)
    if abs(abs(values[top]) - bound) < 1e-3:
        assert tuple(rgb[top]) == ends[bool(values[top] > 0)]


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
    carried = sentence(spec)
    assert carried["titles"] == [[s.title for s in per_head] for per_head in steps]
    assert carried["rows"] == [list(s.rows) for s in steps[0]]
    assert carried["cols"] == [list(s.cols) for s in steps[0]]
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
            assert r["pic"] == (want.size > ipic.PICTURE_CELLS and r["kind"] in ("seq", "div"))
            if not r["pic"]:
                np.testing.assert_allclose(decode(r["v"]).reshape(want.shape), want, atol=TOL)
            elif r["kind"] == "seq":  # weights: instant's own cividis picture of the values
                assert r["img"] == ipic.picture(want)
            else:
                check_diverging(pixels(r["img"]), want, carried["edge"][i])
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
    edge = sentence(spec)["edge"]  # a diverging map's colour range is symmetric about 0
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
    assert back == spec
    labels = " ".join(sentence(back)["rows"][1])  # the embeddings' rows: every token
    assert "1 <" in labels and "7 >" in labels and "12 '" in labels  # as typed, not escaped


def test_a_long_text_travels_as_pictures():
    """68 tokens: every residual, attention and hidden-unit map is a picture, small enough to
    send (the packed numbers were 0.7 MB), and the image layer draws it across the map."""
    text = " ".join(["the animal did not cross the street because it was too tired and the dog ran"] * 4)
    steps = walk("gpt-tiny", text)
    spec = ifw.walk_chart(steps, step=6)
    validate_jsonschema(spec, SCHEMA)
    rows = spec["datasets"]["numbers"]
    kinds = params(spec)["kinds"]["value"]
    pictured = {r["step"] for r in rows if r["pic"]}
    assert pictured == {i for i, k in enumerate(kinds) if k in ("seq", "div")
                        and steps[0][i].values.size > ipic.PICTURE_CELLS}
    assert len(json.dumps(spec["datasets"])) < 400_000
    hidden = next(r for r in rows if r["step"] == 5)  # block 0's hidden units, 68 x 256
    check_diverging(pixels(hidden["img"]), steps[0][5].values, sentence(spec)["edge"][5])


def test_walk_chart_is_length_free():
    """Sentences of 3-16 tokens share one spec (a new one swaps the data), each carrying its
    own numbers: every head's attention map is torch's softmax of the model's recorded scores,
    the softmax step is torch's softmax of the logits, and the labels and the last title name
    the sentence's own tokens."""
    import torch

    from tests.support.length_free import check_length_free
    from tfviz.bundle import Bundle
    from tfviz.config import preset
    from tfviz.model import Transformer
    from tfviz.tokenizer.byte import ByteTokenizer
    from tfviz.viz.kit.style import token_labels

    torch.manual_seed(0)
    cfg = preset("gpt-tiny")
    b = Bundle(cfg.name, Transformer(cfg).eval(), ByteTokenizer(), cfg)

    def build(n):
        trace = b.trace("abcdefghijklmnopqrstuvwxyz"[:n])  # a byte a token
        steps = [fw.forward_steps(trace, head=h, token_strings=b.token_strings)
                 for h in range(cfg.n_heads)]
        chart = ifw.walk_chart(steps, step=4, head=1)
        labels = token_labels(trace.tokens)
        carried = sentence(chart)
        titles = carried["titles"]
        assert titles[1][3] == "Block 0 · self-attention (head 1)"
        assert titles[0][-1] == f"Top-5 prediction at {labels[-1]}"
        assert carried["rows"][1] == labels and carried["cols"][0] == labels
        sent = {(r["step"], r["head"]): r for r in chart["datasets"]["numbers"]}
        for h in range(cfg.n_heads):  # step 4: block 0's attention, a map per head
            scores = torch.as_tensor(trace["attn_scores", 0][h], dtype=torch.float64)
            want = torch.softmax(scores, dim=-1).numpy()  # the mask is in the scores (−∞)
            np.testing.assert_allclose(decode(sent[3, h]["v"]).reshape(n, n), want,
                                       atol=TOL + 1e-6)  # float32 scores, 4 decimals sent
        soft = titles[0].index("Softmax")
        logits = torch.as_tensor(trace["logits"], dtype=torch.float64)
        best = [int(c.rsplit("(", 1)[1].rstrip(")")) for c in carried["cols"][soft]]
        want = torch.softmax(logits, dim=-1)[:, best].numpy()
        shown = sent[soft, -1]  # n x 8 cells: numbers, not a picture
        assert not shown["pic"]
        np.testing.assert_allclose(decode(shown["v"]).reshape(want.shape), want, atol=TOL + 1e-6)
        return chart, labels

    built = check_length_free(build)
    assert params(built[13])["step"]["bind"]["max"] == len(sentence(built[13])["edge"])
    heat = built[13]["vconcat"][1]
    assert heat["height"] == {"step": 26} and built[24]["vconcat"][1]["height"] == {"step": 25}


@pytest.mark.parametrize("cols, bands", [(768, 96), (3072, 96), (64, 64), (100, 50), (97, 97)])
def test_a_wide_pictures_axis_keeps_one_column_in_a_band(cols, bands):
    """A pictured map's x axis: the hidden points (evaluated here as Vega's ``sequence(start,
    stop, step)``, Python's ``range``) make ``bands`` equal bands across the picture, and the
    column each band is labelled with lies inside the stretch of the picture that band covers,
    so a label names a column drawn under it."""
    values = np.random.default_rng(0).normal(size=(40, cols))
    wide = fw.Step("wide", "x", "(40, c)", values, "", rows=tuple(map(str, range(40))),
                   cols=tuple(f"d{j}" for j in range(cols)))
    spec = ifw.walk_chart([[wide]])
    validate_jsonschema(spec, SCHEMA)
    row = spec["datasets"]["numbers"][0]
    assert row["pic"] and row["c"] == cols
    skeleton = next(layer for layer in spec["vconcat"][1]["layer"]
                    if layer["mark"]["type"] == "point"
                    and "x" in layer["encoding"])["transform"][1]["calculate"]
    assert skeleton.startswith("sequence(")
    as_python = (skeleton.replace("sequence", "").replace("floor(", "int(")  # all positive
                 .replace("datum.s", str(row["s"])).replace("datum.c", str(cols)))
    start, stop, stride = eval(as_python)  # our own expression, numbers only
    kept = list(range(start, stop, stride))
    assert len(kept) == bands
    width = cols / len(kept)  # columns of the picture under one band
    assert all(j * width <= c < (j + 1) * width for j, c in enumerate(kept))
