"""The training lab's induction task (#45): attention-only blocks against a forward written with
torch's own functions (and every other model's feed-forward path untouched), the repeated
sequences and their scoring, each head's induction and previous-token scores and the two
halves' losses against hand-built maps and torch's cross-entropy, and a real run with the
default setting growing an induction head."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.bundle import bundled_names
from tfviz.config import ModelConfig
from tfviz.lab.induction import INDUCTION_HEAD, half_losses, probe, repeat_scores
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import IGNORE, TASKS, make_repeat, repeat_layout
from tfviz.lab.train import train
from tfviz.model import Transformer
from tfviz.opening import load
from tfviz.trace import run_with_trace

TASK = TASKS["induction"]


def _attention_only_forward(model: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """A pre-LN decoder without feed-forward, from its weights: x = x + Attn(LN1(x)) per block,
    the final LayerNorm and the tied unembedding, with F.layer_norm and torch's own causal
    F.scaled_dot_product_attention (sinusoidal positions, added to the embeddings)."""
    cfg, w = model.cfg, model.state_dict()
    B, T = ids.shape
    H, dh, d = cfg.n_heads, cfg.d_head, cfg.d_model

    def ln(x, name):
        return F.layer_norm(x, (d,), w[f"{name}.weight"], w[f"{name}.bias"], cfg.ln_eps)

    def lin(x, name):
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    x = F.embedding(ids, w["embed.weight"]) + model.pos_table[:T]  # (B, T, d)
    for i in range(cfg.n_layers):
        p = f"blocks.{i}"
        h = ln(x, f"{p}.ln1")
        q, k, v = (lin(h, f"{p}.attn.W_{n}").view(B, T, H, dh).transpose(1, 2) for n in "qkv")  # (B, H, T, dh)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, dh)
        x = x + lin(z.transpose(1, 2).reshape(B, T, d), f"{p}.attn.W_o")
    return ln(x, "ln_final") @ w["embed.weight"].T  # (B, T, vocab)


def test_an_attention_only_model_is_attention_alone():
    s = LabSettings.default("induction", positional="sinusoidal")
    model = Transformer(s.model_config()).eval()
    assert not any(".mlp." in k or ".ln2." in k for k in model.state_dict())
    ids = torch.tensor([TASK.encode(e)[0] for e in TASK.examples(1, 0, "heldout")])
    with torch.no_grad():
        # float32 through two orders of the same sums (torch's fused attention, our steps)
        torch.testing.assert_close(model(ids), _attention_only_forward(model, ids), rtol=1e-5, atol=1e-5)
    tr = run_with_trace(model, ids[0].tolist())
    for i in range(s.n_layers):
        assert f"blocks.{i}.hook_mlp_out" not in tr.activations
        # resid_post is resid_mid itself: nothing is added after attention
        assert np.array_equal(tr[f"blocks.{i}.hook_resid_post"], tr[f"blocks.{i}.hook_resid_mid"])


@pytest.mark.parametrize("name", bundled_names())
def test_every_bundle_keeps_its_feed_forward_path(name):
    """A config written before the switch reads ffn=True, and its blocks still add FFN(LN2(z))
    (pre-LN) or take LN2(z + FFN(z)) (post-LN): recomputed here from the trace with the block's
    own modules, in the same order, so bit for bit."""
    bundle = load(name)
    cfg = bundle.config
    assert cfg.ffn is True and cfg.replace(ffn=True) == cfg
    ids = bundle.tokenizer.encode("the dog did not cross the road because it was too wide")[:16]
    kw = {"enc_ids": ids} if cfg.arch == "encoder-decoder" else {}
    tr = run_with_trace(bundle.model, ids, **kw)
    with torch.no_grad():
        for i, block in enumerate(bundle.model.blocks):
            mid = torch.from_numpy(tr[f"blocks.{i}.hook_resid_mid_cross" if block.cross_attn is not None
                                     else f"blocks.{i}.hook_resid_mid"])
            out, post = (torch.from_numpy(tr[f"blocks.{i}.{n}"]) for n in ("hook_mlp_out", "hook_resid_post"))
            if cfg.norm == "pre":
                assert torch.equal(post, mid + out)
            else:
                assert torch.equal(post, block.ln2(mid + out))
            if not cfg.is_moe:  # an MoE's output depends on its capacity counts: the trace's own
                assert torch.equal(out, block.mlp(block.ln2(mid) if cfg.norm == "pre" else mid))


def test_attention_only_refuses_experts_in_words():
    with pytest.raises(ValueError, match="mixture of experts is a feed-forward"):
        ModelConfig(ffn=False, n_experts=4)
    with pytest.raises(ValueError, match="Experts are a kind of feed-forward"):
        LabSettings.default("induction", n_experts=2)
    assert "attention only" in LabSettings.default("induction").describe()


def test_the_repeated_sequences_and_what_is_scored():
    train_ex, held = make_repeat(300, seed=0), make_repeat(300, seed=0, split="heldout")
    assert not {s for s, _ in train_ex} & {s for s, _ in held}
    for source, run in train_ex[:50]:
        assert len(set(source)) == len(source) and source[-len(run):] == run
        assert 5 <= len(run) <= 9 and 0 <= len(source) - len(run) <= 5
        ids, targets = TASK.encode((source, run))
        assert len(ids) == len(targets) <= TASK.max_len
        start, L = repeat_layout(ids)
        assert (start, L) == (1 + len(source) - len(run), len(run))
        # scored: the second copy's s_1 … s_{L-1}, each asked for the symbol after it
        scored = [(i, t) for i, t in enumerate(targets) if t != IGNORE]
        assert [i for i, _ in scored] == list(range(start + L, start + 2 * L - 1))
        assert [TASK.vocab.tokens[t] for _, t in scored] == list(run[1:])


def test_scores_of_hand_built_maps():
    start, L, T = 2, 4, 9  # <bos> n s1 s2 s3 s4 s1 s2 s3
    perfect = np.zeros((1, 2, T, T))
    for i in range(1, L):  # head 0: the second s_i reads the first s_{i+1}
        perfect[0, 0, start + L + i - 1, start + i] = 1.0
    for q in range(1, T):  # head 1: every token reads the one before it
        perfect[0, 1, q, q - 1] = 1.0
    perfect[0, 0, 0, 0] = perfect[0, 1, 0, 0] = 1.0
    induction, previous = repeat_scores(perfect, start, L)
    assert induction.tolist() == [[1.0, 0.0]]
    # head 0 reads the previous token at no position q >= 1 except where the copy's next is q - 1
    assert previous[0, 1] == 1.0 and previous[0, 0] == 0.0
    half = perfect.copy()
    half[0, 0, start + L, :] = 0.0
    half[0, 0, start + L, start + 1], half[0, 0, start + L, 0] = 0.5, 0.5  # one query split
    assert repeat_scores(half, start, L)[0][0, 0] == pytest.approx((0.5 + 1 + 1) / 3)


def test_half_losses_are_torchs_cross_entropy():
    rng = np.random.default_rng(0)
    ids = np.array([1, 9, 4, 5, 6, 7, 4, 5, 6])  # start 2, L 4
    logits = rng.normal(size=(len(ids), 30)).astype(np.float32)
    first, second = half_losses(logits, ids, 2, 4)
    x = torch.from_numpy(logits).double()
    targets = torch.tensor([5, 6, 7])  # s_2 … s_4
    # float64 both sides, one log-softmax each: equal to rounding
    assert first == pytest.approx(float(F.cross_entropy(x[[2, 3, 4]], targets)), rel=1e-12)
    assert second == pytest.approx(float(F.cross_entropy(x[[6, 7, 8]], targets)), rel=1e-12)


def test_the_probe_is_each_rows_own_trace():
    """The batched probe against each row traced alone (unpadded) and measured by hand."""
    model = Transformer(LabSettings.default("induction", seed=3).model_config()).eval()
    rows = [TASK.encode(e)[0] for e in TASK.examples(5, 1, "heldout")]
    ids, _ = TASK.encode_many(TASK.examples(5, 1, "heldout"))
    got = probe(model, ids)
    ind, prev, first, second = [], [], [], []
    for row in rows:
        tr = run_with_trace(model, row)
        start, L = repeat_layout(row)
        a, b = repeat_scores(tr.stack("pattern"), start, L)
        ind.append(a)
        prev.append(b)
        f, s = half_losses(tr["logits"], np.array(row), start, L)
        first.append(f)
        second.append(s)
    # float32: a padded batch and a single row may sum in another order
    np.testing.assert_allclose(got.induction, np.mean(ind, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.previous, np.mean(prev, 0), rtol=1e-5, atol=1e-6)
    assert got.first_loss == pytest.approx(np.mean(first), rel=1e-5)
    assert got.second_loss == pytest.approx(np.mean(second), rel=1e-5)


def test_the_default_setting_grows_an_induction_head():
    """Seed 0's default run. 0.5 is the issue's bar, and it means something here: a head that
    spread its weight over the row would give the right key about 1/14 (the mean row is ~14
    tokens long at the second copy), and a previous-token head gives it 0. The second copy's
    loss must fall below a quarter of the first's: the first copy is unpredictable (ln 26 ≈ 3.3
    nats at best, minus what 'not seen yet' gives), so only reading the earlier copy does that."""
    view = train(LabSettings.default("induction"))
    assert view.state == "done", view.error
    last = view.checkpoints[-1].induction
    layer, head, score = last.best
    assert score > INDUCTION_HEAD and layer >= 1  # the first layer cannot: it has no previous token to match
    assert last.second_loss < 0.25 * last.first_loss
    assert view.checkpoints[0].induction.best[2] < 0.2  # not there before training


def test_the_summary_is_the_runs_own_numbers():
    from types import SimpleNamespace

    from tfviz.lab.induction import InductionProbe, induction_summary

    def cp(step, seconds, ind, prev, first, second):
        return SimpleNamespace(step=step, seconds=seconds,
                               induction=InductionProbe(np.array(ind), np.array(prev), first, second))

    before = cp(0, 0.5, [[0.1, 0.1], [0.1, 0.1]], [[0.2, 0.1], [0.1, 0.1]], 3.9, 3.9)
    mid = cp(100, 4.2, [[0.1, 0.1], [0.1, 0.6]], [[0.2, 0.7], [0.1, 0.1]], 3.3, 1.1)
    end = cp(200, 8.0, [[0.1, 0.1], [0.2, 0.8]], [[0.3, 0.75], [0.1, 0.1]], 3.3, 0.2)
    assert induction_summary([before, mid, end]) == (
        "Head L1H1 passed an induction score of 0.5 at step 100, 4 s into the run. At step 200 the "
        "best induction head is L1H1 (0.80); the strongest previous-token head before it, L0H1, "
        "scores 0.75. The loss on the second copy is 0.20 nats against 3.30 on the first (before "
        "training: 3.90 and 3.90).")
    assert induction_summary([before]).startswith("No head has passed an induction score of 0.5 yet.")
