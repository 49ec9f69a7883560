"""Lesson 5's static and contextual vectors, and attention with no projections, against
torch's own functions on the bundled models' recorded activations."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.analysis import contextual as cx

TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."


@pytest.fixture(scope="module")
def bert():
    return tfviz.load("bert-tiny")


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def torch_cos(a, b) -> float:
    return float(F.cosine_similarity(torch.tensor(a, dtype=torch.float64),
                                     torch.tensor(b, dtype=torch.float64), dim=0))


def test_word_pairs_match_tokens_by_id_and_skip_specials():
    pairs = cx.word_pairs([1, 5, 9, 5, 2], ["<bos>", "␣a", "␣b", "␣a", "<eos>"],
                          [1, 9, 5, 2], ["<bos>", "␣b", "␣a", "<eos>"], skip={"<bos>", "<eos>"})
    assert [(p.word, p.pos_a, p.pos_b) for p in pairs] == [("a", 1, 2), ("b", 2, 1)]
    alone = cx.word_pairs([1, 5, 9, 5, 5], ["<bos>", "␣a", "␣b", "␣a", "␣a"], skip={"<bos>"})
    assert [(p.word, p.pos_a, p.pos_b) for p in alone] == [("a", 1, 3)]  # one pair per token
    assert cx.word_pairs([3, 4], ["x", "y"], [5, 6], ["z", "w"]) == []


def test_partner_text_swaps_the_notes_deciding_word_keeping_its_case():
    assert cx.partner_text(TIRED) == WIDE and cx.partner_text(WIDE) == TIRED
    assert cx.partner_text("Tired it was") == "Wide it was"
    assert cx.partner_text("tiredness") == "tiredness"  # a whole word only


def test_every_stage_is_the_models_vector_and_its_cosine_torchs(bert):
    a, b = bert.trace(TIRED), bert.trace(WIDE)
    (pair,) = [p for p in cx.word_pairs(a.ids, a.tokens, b.ids, b.tokens) if p.word == "it"]
    same = cx.same_word(a, pair.pos_a, b, pair.pos_b)
    assert [s.name for s in same.stages] == ["token embedding", "into block 0", "after block 0",
                                           "after block 1"]
    # the token embedding is the row of the model's own table: the same row in both texts
    row = bert.model.state_dict()["embed.weight"][a.ids[pair.pos_a]].numpy()
    np.testing.assert_array_equal(a["hook_embed"][pair.pos_a], row)
    assert same.stages[0].same and same.stages[0].cos == pytest.approx(1.0, abs=1e-12)
    for stage, hook in zip(same.stages[1:], ["blocks.0.hook_resid_pre", "blocks.0.hook_resid_post",
                                             "blocks.1.hook_resid_post"]):
        # float64 cosines of the same float32 vectors: only the summation order differs
        assert stage.cos == pytest.approx(torch_cos(a[hook][pair.pos_a], b[hook][pair.pos_b]), abs=1e-9)
    # an encoder's "it" reads "tired" / "wide": its last vectors point different ways
    # although the two texts are the same up to it: the encoder reads the words after it too
    assert same.stages[-1].cos < 0.9 and not same.stages[-1].same
    assert same.same_prefix


def test_neighbours_are_the_largest_cosines_among_the_other_tokens(bert):
    a = bert.trace(TIRED)
    pos = a.tokens.index("␣it")
    last = a["hook_resid_post", 1]
    want = sorted(((torch_cos(last[pos], last[j]), j) for j in range(len(a.tokens)) if j != pos),
                  key=lambda t: -t[0])[:3]
    got = cx.nearest(last, pos, a.tokens)
    assert [t for t, _ in got] == [a.tokens[j] for _, j in want]
    np.testing.assert_allclose([c for _, c in got], [c for c, _ in want], atol=1e-9)


def test_noun_pull_is_the_cosine_with_each_noun(bert):
    for text in (TIRED, WIDE):
        t = bert.trace(text)
        pos = t.tokens.index("␣it")
        pull = cx.noun_pull(t, pos)
        last = t["hook_resid_post", 1]
        assert (pull.agent, pull.place) == ("animal", "street")
        assert pull.agent_cos == pytest.approx(torch_cos(last[pos], last[t.tokens.index("␣animal")]), abs=1e-9)
        assert pull.place_cos == pytest.approx(torch_cos(last[pos], last[t.tokens.index("␣street")]), abs=1e-9)
        assert pull.nearer in ("animal", "street") and pull.nearer != pull.farther
    assert cx.noun_pull(bert.trace(TIRED), 0) is None  # not the "it"


def test_a_decoder_keeps_a_word_whose_past_is_the_same(gpt):
    """In gpt-tiny "it" comes before "tired"/"wide": its two traces agree up to it. Both texts
    have the same length, so the same kernels run on the same numbers (equal, not merely close)."""
    a, b = gpt.trace(TIRED), gpt.trace(WIDE)
    pos = a.tokens.index("␣it")
    same = cx.same_word(a, pos, b, pos)
    assert same.same_prefix
    for stage in same.stages:
        assert stage.cos == pytest.approx(1.0, abs=1e-6)
    last = len(a.tokens) - 1  # "." reads the changed word
    dot = cx.same_word(a, last, b, last)
    assert not dot.same_prefix and dot.stages[-1].cos < 1 - 1e-4


def test_plain_attention_is_torchs_softmax_of_x_xt(gpt):
    x = gpt.trace(TIRED)["hook_resid_pre", 0]
    n, d = x.shape
    xt = torch.tensor(x, dtype=torch.float64)
    for causal, scale in ((True, False), (False, True)):
        scores = xt @ xt.T / (d ** 0.5 if scale else 1.0)
        if causal:
            scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        want = torch.softmax(scores, dim=-1).numpy()
        got = cx.plain_attention(x, causal=causal, scale=scale)
        np.testing.assert_allclose(got.weights, want, rtol=1e-12, atol=1e-15)
        diag = np.diag(want)[1:] if causal else np.diag(want)
        assert got.self_share == pytest.approx(diag.mean(), rel=1e-12)
    # the notes' point, on the trained model: without projections a token mostly sees itself,
    # and the model's heads (with them) do not
    plain = cx.plain_attention(x, causal=True)
    assert plain.self_share > 0.5 > cx.self_share(gpt.trace(TIRED)["pattern", 0], True)


def test_self_share_by_hand():
    w = np.array([[1.0, 0.0], [0.25, 0.75]])
    assert cx.self_share(w, causal=True) == 0.75  # the first row sees only itself: left out
    assert cx.self_share(w, causal=False) == pytest.approx(0.875)
    assert cx.self_share(np.stack([w, np.eye(2)]), causal=False) == pytest.approx((0.875 + 1) / 2)


def test_the_charts_are_valid_vega_lite(bert):
    import altair as alt

    from tfviz.viz import contextual as vc

    a, b = bert.trace(TIRED), bert.trace(WIDE)
    pos = a.tokens.index("␣it")
    chart = vc.cosine_by_stage(cx.same_word(a, pos, b, pos), "your text", "the second text")
    alt.Chart.from_dict(chart)
    assert [r["cos"] for r in chart["datasets"]["rows"]] == [
        round(s.cos, 4) for s in cx.same_word(a, pos, b, pos).stages]
    plain = cx.plain_attention(a["hook_resid_pre", 0], causal=False)
    pair = vc.plain_against_heads(plain.weights, a["pattern", 0], a.tokens)
    alt.Chart.from_dict(pair)
    with pytest.raises(ValueError):
        vc.plain_against_heads(plain.weights[:2, :2], a["pattern", 0], a.tokens)
