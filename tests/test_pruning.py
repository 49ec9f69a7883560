"""Lesson 7's head types and pruning what-if against independent computations: torch's
cross-entropy sentence by sentence, a copy of the model with a head's W^O columns zeroed, the
training corpus counted here from the generator, and small hand-made patterns."""
import copy
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.config import RunOptions
from tfviz.data import story_corpus
from tfviz.experiments import pruning as pr
from tfviz.training.counts import corpus_counts, heldout_sentences

SENTENCES = ["the cat rested near the lake.", "the dog jumped over the boat.", "the cat sat."]


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def _rows(b):
    return [b.encode(s) + [b.tokenizer.eos_id] for s in SENTENCES]


def test_heldout_loss_is_torchs_cross_entropy_over_every_predicted_token(gpt):
    rows = _rows(gpt)
    total, count = 0.0, 0
    for r in rows:  # each sentence alone, no padding
        with torch.no_grad():
            logits = gpt.model(torch.tensor([r]))[0].double()
        total += float(F.cross_entropy(logits[:-1], torch.tensor(r[1:]), reduction="sum"))
        count += len(r) - 1
    # one padded batch against single runs: the same float32 model through different kernel
    # shapes, so the logits agree to float32 rounding, not bit for bit
    assert pr.heldout_loss(gpt.model, rows, gpt.config.pad_id) == pytest.approx(total / count, rel=1e-5)
    with pytest.raises(ValueError):
        pr.heldout_loss(gpt.model, [[5]], 0)


def test_removing_a_head_is_zeroing_its_columns_of_w_o(gpt):
    rows = _rows(gpt)
    layer, head = 1, 2
    twin = copy.deepcopy(gpt.model)
    dh = gpt.config.d_head
    with torch.no_grad():
        w = twin.blocks[layer].attn.W_o.weight  # (d, h*dh): head h's z meets columns h*dh..
        w[:, head * dh:(head + 1) * dh] = 0
    want = pr.heldout_loss(twin, rows, gpt.config.pad_id)
    got = pr.heldout_loss(gpt.model, rows, gpt.config.pad_id,
                          RunOptions(ablate_heads=frozenset([(layer, head)])))
    assert got == pytest.approx(want, rel=1e-5)  # float32 model, two routes to the same zeros
    assert got != pytest.approx(pr.heldout_loss(gpt.model, rows, gpt.config.pad_id), rel=1e-4)


def test_prune_removes_the_least_missed_first_and_records_each_loss(gpt):
    rows = _rows(gpt)
    L, H = gpt.config.n_layers, gpt.config.n_heads
    result = pr.prune(gpt.model, rows, gpt.config.pad_id, L, H)
    assert sorted(result.order) == [(a, b) for a in range(L) for b in range(H)]
    rises = [result.importance[h] for h in result.order]
    assert rises == sorted(rises)
    assert result.losses[0] == result.base and len(result.losses) == L * H + 1
    assert result.kept == list(range(L * H, -1, -1))
    for k in (1, 5, L * H):
        again = pr.heldout_loss(gpt.model, rows, gpt.config.pad_id,
                                RunOptions(ablate_heads=frozenset(result.order[:k])))
        assert result.losses[k] == again  # the same call on the same inputs: equal by construction
    h = result.order[-1]
    alone = pr.heldout_loss(gpt.model, rows, gpt.config.pad_id, RunOptions(ablate_heads=frozenset([h])))
    assert result.importance[h] == alone - result.base
    assert gpt.model.cfg.n_heads == H  # the shared model is only run


def test_removable_counts_heads_until_the_loss_first_rises_past_the_tolerance():
    p = pr.Pruning(1.0, {}, ((0, 0), (0, 1), (0, 2)), (1.0, 1.01, 1.2, 1.02))
    assert p.removable(0.05) == 1 and p.removable(0.5) == 3 and p.removable(0.0) == 0


def test_rarest_keys_and_their_share_by_hand():
    counts = {10: 5, 11: 2, 12: 2, 13: 9}
    ids = [13, 11, 10, 12, 99]  # 99 never in training: count 0
    assert pr.rarest_keys(ids, counts, causal=True).tolist() == [0, 1, 1, 1, 4]
    assert pr.rarest_keys(ids, counts, causal=False).tolist() == [4] * 5
    patterns = np.zeros((2, 3, 3))
    patterns[0] = [[1, 0, 0], [0.25, 0.75, 0], [0.5, 0.25, 0.25]]
    patterns[1] = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]  # even over what it sees
    rarest = np.array([0, 1, 0])
    got, even = pr.rare_share(patterns, rarest, causal=True)
    np.testing.assert_allclose(got, [(0.75 + 0.5) / 2, (1 / 2 + 1 / 3) / 2])
    assert even == pytest.approx((1 / 2 + 1 / 3) / 2) == got[1]  # an even head scores exactly it


def test_corpus_counts_are_the_training_rows_counted_here(gpt):
    from tfviz.training.recipes import CORPUS_SENTENCES, GPT_COREF_FRACTION

    tok = gpt.tokenizer
    want = Counter()
    for s in story_corpus(CORPUS_SENTENCES, seed=0, coref_fraction=GPT_COREF_FRACTION):
        want.update(tok.encode(s))
        want[tok.eos_id] += 1
    assert corpus_counts("gpt-tiny", tok) == dict(want)
    assert corpus_counts("reverse-encdec", tok) is None and corpus_counts("no-such-model", tok) is None
    held = heldout_sentences("gpt-tiny", 8)
    assert len(held) == 8 and held[0] == story_corpus(512, seed=1001)[0]
    assert heldout_sentences("vit-tiny") is None


def test_the_pruning_chart_is_valid_vega_lite(gpt):
    import altair as alt

    from tfviz.viz.heads import pruning_chart

    result = pr.prune(gpt.model, _rows(gpt), gpt.config.pad_id, gpt.config.n_layers, gpt.config.n_heads)
    chart = pruning_chart(result, "gpt-tiny")
    alt.Chart.from_dict(chart)
    assert [r["loss"] for r in chart["datasets"]["rows"]] == [round(x, 4) for x in result.losses]
    assert [r["kept"] for r in chart["datasets"]["rows"]] == result.kept
