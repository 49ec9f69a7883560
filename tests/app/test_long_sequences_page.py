"""Lesson 17 (/long-sequences) in AppTest: every model, the pattern sliders, hostile text, and
the numbers the page shows (measured memory, the what-if's losses and answers) against an
independent computation."""
import dataclasses
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.model.masks import sparse_pattern
from tfviz.model.transformer import Transformer

from tests.app.specs import instant_charts, param_values, static_rows, unpacked

PAGE = "17_long_sequences.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("model", ["gpt-tiny", "bert-tiny", "moe-tiny", "reverse-encdec"])
def test_page_runs_for_every_model(app_page, model):
    at = _ok(app_page(PAGE, model=model))
    assert at.title[0].value == "Long sequences"


def _powers(kind, n, causal, layers=6, **pattern):
    """(L, n, n) bool: who has read whom after 1..L layers, by integer matrix powers in numpy of
    the mask (with numpy's own lower triangle for a decoder)."""
    m = sparse_pattern(kind, n, **pattern).astype(np.int64)
    if causal:
        m = m * np.tri(n, dtype=np.int64)
    return np.stack([np.linalg.matrix_power(m, layer) > 0 for layer in range(1, layers + 1)])


SLIDERS = dict(window=2, dilation=2, n_global=1, n_random=2, stride=4, seed=0)  # the defaults
DECODER = "a decoder reads it (causal)"


def test_reach_table_counts_positions_read_both_ways(app_page):
    at = app_page(PAGE)
    at.slider(key="ls_w").set_value(3)
    at.slider(key="ls_n").set_value(64)
    _ok(at.run())
    pattern = dict(SLIDERS, window=3)
    table = _frame(at, "L·w")
    assert list(table["farthest away"]) == [3 * L for L in range(1, 7)]  # L·w, far from the start
    assert list(table["positions read (of 64)"]) == list(
        _powers("sliding", 64, False, **pattern)[:, 63].sum(1)) == [3 * L + 1 for L in range(1, 7)]
    at.radio(key="ls_query").set_value("the middle token")
    _ok(at.run())  # an encoder's middle token: L·w on each side
    assert list(_frame(at, "L·w")["positions read (of 64)"]) == list(
        _powers("sliding", 64, False, **pattern)[:, 32].sum(1)) == [6 * L + 1 for L in range(1, 7)]
    at.radio(key="ls_query").set_value("the last token")
    at.selectbox(key="ls_kind").set_value("global (Longformer)")
    _ok(at.run())
    enc = _frame(at, "L·w")
    assert list(enc["positions read (of 64)"]) == list(
        _powers("global", 64, False, **pattern)[:, 63].sum(1)) == [5] + [64] * 5
    assert list(enc["farthest away"]) == [63] * 6  # position 0 is global
    at.radio(key="ls_read").set_value(DECODER)
    _ok(at.run())
    dec = _frame(at, "L·w")
    assert list(dec["positions read (of 64)"]) == list(
        _powers("global", 64, True, **pattern)[:, 63].sum(1)) == [3 * L + 2 for L in range(1, 7)]
    assert list(dec["farthest away"]) == [63] * 6  # the same distance, far fewer positions


def test_every_pair_is_joined_by_an_encoders_global_token_in_two_layers(app_page):
    at = app_page(PAGE)
    at.selectbox(key="ls_kind").set_value("global (Longformer)")
    _ok(at.run())
    pairs = _frame(at, "pairs joined, encoder (of 1024)")
    assert list(pairs["pairs joined, encoder (of 1024)"]) == [
        int(m.sum()) for m in _powers("global", 32, False, **SLIDERS)] == [212] + [1024] * 5
    assert list(pairs["pairs joined, decoder (of 528)"]) == [
        int(m.sum()) for m in _powers("global", 32, True, **SLIDERS)]
    assert any("as an encoder reads global (Longformer), after 2 layers; as a decoder reads "
               "it, not within 6 layers" in c.value for c in at.caption)


def test_pattern_sizes_and_random_keys_both_ways(app_page):
    at = _ok(app_page(PAGE))
    sizes = _frame(at, "pairs, encoder")
    for _, row in sizes.iterrows():
        assert row["pairs, encoder"] == _powers(row["pattern"], 32, False, 1, **SLIDERS).sum()
        assert row["pairs, decoder"] == _powers(row["pattern"], 32, True, 1, **SLIDERS).sum()
    # the random cells: BigBird's pairs outside the window (|i - j| <= 2) and position 0
    big = sparse_pattern("bigbird", 32, **SLIDERS)
    extra = [(i, j) for i in range(32) for j in range(32)
             if big[i, j] and abs(i - j) > 2 and 0 not in (i, j)]
    added, kept = len(extra), sum(j <= i for i, j in extra)
    assert (added, kept) == (50, 26)
    assert any(f"add {added} pairs" in c.value and f"{kept} of them survive" in c.value
               for c in at.caption)
    assert any("the papers draw" in c.value for c in at.caption)  # the encoder's reading first


@pytest.mark.parametrize("text", ["", "A" * 100_000, "<script>alert(1)</script> it 😀",
                                  "שלום עולם it was tired"])
def test_hostile_text(app_page, text):
    at = app_page(PAGE, text=text)
    _ok(at)
    at.slider(key="ls_k").set_value(1)
    _ok(at.run())


PROBE = "The animal didn't cross the street because it was too wide. It refers to the"
DEFAULTS = dict(window=2, dilation=2, n_global=1, n_random=2, stride=4, pattern_seed=0)  # the sliders'


def _frame(at, column):
    return [d.value for d in at.dataframe if column in d.value.columns][0]


def _direct(kind, text):
    """(loss, answer word, probability) of gpt-tiny built with ``kind``, run by plain torch; its
    context is the text's length, so it draws its pattern over the text's positions as the
    explorer does (sine positions do not depend on the context length)."""
    b = tfviz.load("gpt-tiny")
    ids = b.encode(text)
    model = Transformer(dataclasses.replace(b.config, attn_pattern=kind, max_seq_len=len(ids),
                                            **DEFAULTS)).eval()
    model.load_state_dict(b.model.state_dict())
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0].double()
    p = torch.softmax(logits[-1], -1)
    loss = float(F.cross_entropy(logits[:-1], torch.tensor(ids[1:])))
    return loss, b.tokenizer.id_to_token(int(p.argmax())).lstrip("␣"), float(p.max())


def _whatif(at) -> list[dict]:
    """The what-if table, an HTML table (it follows the sentence), as the learner reads it."""
    return static_rows(at, "next-token loss (nats)")


def test_whatif_table_is_the_model_run_directly(app_page):
    at = _ok(app_page(PAGE, text=PROBE))
    table = _whatif(at)
    assert [r["pattern"] for r in table] == ["full", "sliding", "dilated", "global", "bigbird", "strided",
                                                "block"]
    for row in table:
        loss, word, prob = _direct(row["pattern"], PROBE)
        assert float(row["next-token loss (nats)"]) == pytest.approx(loss, abs=1e-3)
        assert row['"it" refers to the …'] == word
        assert float(row["probability"]) == pytest.approx(prob, abs=1e-3)
    assert table[0]['"it" refers to the …'] == "street"
    # the maps: every layer and head of both runs travel at once (the sliders are the chart's)
    spec, data = next((s, d) for s, d in instant_charts(at) if "sparse" in d)
    b = tfviz.load("gpt-tiny")
    tr = b.trace(b.read(PROBE))
    n = len(tr.tokens)
    assert len(data["full"]) == len(data["sparse"]) == b.config.n_layers * b.config.n_heads
    assert param_values(spec)["layer"] == b.config.n_layers - 1 and param_values(spec)["head"] == 0
    allowed = sparse_pattern("sliding", n, **SLIDERS) & np.tri(n, dtype=bool)  # the default pattern, read causally
    for layer, head in ((0, 3), (2, 1)):
        full = data["full"].query(f"layer == {layer} and head == {head}")["v"].iloc[0]
        sparse = data["sparse"].query(f"layer == {layer} and head == {head}")["v"].iloc[0]
        np.testing.assert_allclose(unpacked(full).reshape(n, n), tr["pattern", layer][head],
                                   atol=5e-5 + 1e-5)  # 4 decimals, of the page's float32 trace
        shown = unpacked(sparse).reshape(n, n)
        assert (shown[~allowed] == 0).all()  # forbidden keys get no weight
        np.testing.assert_allclose(shown.sum(1), 1, atol=n * 5e-5)  # each row still sums to 1


def test_default_text_says_how_to_get_the_answer(app_page):
    at = _ok(app_page(PAGE))
    table = _whatif(at)
    assert '"it" refers to the …' not in table[0]
    text = at.session_state["text"]
    assert float(table[0]["next-token loss (nats)"]) == pytest.approx(_direct("full", text)[0], abs=1e-3)
    assert any('end it with "It refers to the"' in c.value for c in at.caption)


def test_one_token_has_no_loss(app_page):
    at = _ok(app_page(PAGE, text="it"))
    assert [r["next-token loss (nats)"] for r in _whatif(at)] == ["None"] * 7  # as the caption says
    assert any("single token" in c.value for c in at.caption)


def test_measured_memory_is_shown_and_grows_as_n_squared(app_page):
    at = _ok(app_page(PAGE))
    table = _frame(at, "full memory (MB)")
    full, window, ns = table["full memory (MB)"], table["window memory (MB)"], table["n"]
    for n, f in zip(ns, full):  # the n×n float32 scores, at most twice them and n×32 outputs
        assert n * n * 4 / 2**20 <= f <= (2 * n * n + 4 * n * 32) * 4 / 2**20 + 5e-4
    assert full.iloc[-1] / full.iloc[-2] == pytest.approx(4, rel=0.05)
    assert window.iloc[-1] / window.iloc[-2] == pytest.approx(2, rel=0.05)


def test_linformer_line_is_mean_pooling_against_numpy(app_page):
    at = _ok(app_page(PAGE))
    spec, data = next((s, d) for s, d in instant_charts(at) if "errors" in d)
    b = tfviz.load("gpt-tiny")
    tr = b.trace(b.read(at.session_state["text"]))
    n = len(tr.tokens)
    k = int(data["chosen"]["k"].iloc[0])
    assert k == n // 2  # the k slider's default
    assert len(data["maps"]) == b.config.n_layers * b.config.n_heads

    def softmax(s):
        e = np.exp(s - s.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    errors = data["errors"]
    at_k = param_values(spec)["at"]  # what the title says at k, for each layer
    for layer in range(b.config.n_layers):
        q, kk, v = (tr[nm, layer] for nm in ("q", "k", "v"))
        _, H, dh = q.shape
        P = np.zeros((k, n))
        for r in range(k):  # k runs of neighbouring positions, as even as they can be
            lo, hi = r * n // k, (r + 1) * n // k
            P[r, lo:hi] = 1 / (hi - lo)
        num = den = 0.0
        for h in range(H):
            exact = softmax(q[:, h] @ kk[:, h].T / np.sqrt(dh)) @ v[:, h]
            approx = softmax(q[:, h] @ (P @ kk[:, h]).T / np.sqrt(dh)) @ (P @ v[:, h])
            num, den = num + ((approx - exact) ** 2).sum(), den + (exact ** 2).sum()
        pooled = errors[(errors["layer"] == layer) & (errors["k"] == k)
                        & errors["method"].str.startswith("mean-pooled")]["error"].iloc[0]
        # the page's float32 q, k, v (its own thread) against numpy's float32 q·kᵀ here
        assert pooled == pytest.approx(np.sqrt(num / den), abs=5e-5 + 1e-5)  # sent to 4 decimals
        assert at_k[layer][0] == pytest.approx(np.sqrt(num / den), abs=1e-5)
        assert pooled < 1  # better than an output of zeros
        closest = errors[(errors["layer"] == layer) & errors["method"].str.startswith("closest")]
        assert closest["error"].iloc[-1] == pytest.approx(0, abs=1e-4)  # rank n: the map itself
    page = " ".join(str(e.value) for e in [*at.markdown, *at.caption])
    assert "orange" not in page and "random projection (" not in page


def test_each_pattern_is_defined_in_prose(app_page):
    at = _ok(app_page(PAGE))
    prose = " ".join(m.value for m in at.markdown)
    for words in ("|i − j| ≤ w", "Our w\n  counts one side only",
                  "Longformer's w = 4 is 2 on each side", "the [CLS]", "every token of the question",
                  "r random keys", "g global tokens", "ITC (internal transformer construction)",
                  "ETC (extended transformer construction)", "Half of them read locally",
                  "the positions a multiple of 4 away", "key j when ⌊j/N⌋ = ⌊i/N⌋",
                  "N = the stride,\n  4 here",
                  "Here the first 1 position(s)"):
        assert words in prose, words
    at.slider(key="ls_g").set_value(0)
    _ok(at.run())
    assert "Here none: the Global tokens slider is at 0." in " ".join(m.value for m in at.markdown)
