"""Residual connections on and off (the training lab's comparison, #42 item 3): the block
without its skip path against a forward written by hand with torch's own functions, the default
unchanged, each layer's gradient norm against a hand-written training step, and the
comparison's sentences read from the runs' numbers."""
from __future__ import annotations

import random
import statistics

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.lab import comparisons as cmp
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import IGNORE
from tfviz.lab.train import TRAIN_POOL, Checkpoint, RunView, train
from tfviz.model import Transformer
from tfviz.model.hooks import recording
from tfviz.training.loop import lr_at


def _hand_forward(model: Transformer, ids: torch.Tensor, residual: bool) -> torch.Tensor:
    """An encoder's logits from its weights, with F.layer_norm, F.scaled_dot_product_attention
    and F.relu: z = x + Attn(LN1(x)) and y = z + FFN(LN2(z)) (pre-LN), or z = LN1(x + Attn(x)),
    y = LN2(z + FFN(z)) (post-LN), each "x +" there only when ``residual``."""
    cfg, w = model.cfg, model.state_dict()
    B, T = ids.shape
    H, dh, d = cfg.n_heads, cfg.d_head, cfg.d_model

    def ln(x, name):
        return F.layer_norm(x, (d,), w[f"{name}.weight"], w[f"{name}.bias"], cfg.ln_eps)

    def lin(x, name):
        return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])

    def attn(x, p):
        q, k, v = (lin(x, f"{p}.attn.W_{n}").view(B, T, H, dh).transpose(1, 2) for n in "qkv")  # (B, H, T, dh)
        z = F.scaled_dot_product_attention(q, k, v)  # (B, H, T, dh): no mask, an encoder
        return lin(z.transpose(1, 2).reshape(B, T, d), f"{p}.attn.W_o")

    def ffn(x, p):
        return lin(F.relu(lin(x, f"{p}.mlp.W_in")), f"{p}.mlp.W_out")

    x = F.embedding(ids, w["embed.weight"]) + model.pos_table[:T]  # (B, T, d)
    for i in range(cfg.n_layers):
        p = f"blocks.{i}"
        if cfg.norm == "pre":
            x = (x if residual else 0) + attn(ln(x, f"{p}.ln1"), p)
            x = (x if residual else 0) + ffn(ln(x, f"{p}.ln2"), p)
        else:
            x = ln((x if residual else 0) + attn(x, p), f"{p}.ln1")
            x = ln((x if residual else 0) + ffn(x, p), f"{p}.ln2")
    if cfg.final_norm:
        x = ln(x, "ln_final")
    return x @ w["embed.weight"].T  # (B, T, vocab): tied


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("residual", [True, False])
def test_the_block_with_and_without_its_skip_path_matches_a_hand_forward(norm, residual):
    s = LabSettings.default("order", n_layers=3, d_model=32, norm=norm, residual=residual)
    model = Transformer(s.model_config()).eval()
    ids, _ = s.spec.encode_many(s.spec.examples(4, seed=0, split="heldout"))
    ids = torch.from_numpy(ids[:, :int((ids != 0).sum(1).min())])  # no padding: the hand forward has no mask
    with torch.no_grad():
        torch.testing.assert_close(model(ids), _hand_forward(model, ids, residual), rtol=1e-5, atol=1e-5)


def test_the_switch_changes_no_weight_and_only_the_adds():
    """The same seed builds the same weights either way; with the skip path a block's output is
    exactly its input plus what each sublayer added (bit for bit, as before the switch existed),
    without it exactly the feed-forward block's output."""
    on = LabSettings.default("order", n_layers=2, d_model=32)
    a, b = Transformer(on.model_config()), Transformer(on.replace(residual=False).model_config())
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert on.model_config().residual is True and LabSettings().model_config() == \
        LabSettings().model_config().replace(residual=True)
    ids = torch.tensor([[1, 5, 6, 7, 2]])
    for model, skip in ((a, True), (b, False)):
        with recording(lambda n: n.startswith("blocks.1.hook_")) as h, torch.no_grad():
            model(ids)
        mid, post, out = h["blocks.1.hook_resid_mid"], h["blocks.1.hook_resid_post"], h["blocks.1.hook_mlp_out"]
        assert torch.equal(post, mid + out if skip else out)
        attn, pre = h["blocks.1.hook_attn_out"], h["blocks.1.hook_resid_pre"]
        assert torch.equal(mid, pre + attn if skip else attn)


def _norms(model: Transformer) -> list[float]:
    """Each block's gradient norm in float64, from every gradient entry of its parameters."""
    return [float(np.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in block.parameters()
                              if p.grad is not None))) for block in model.blocks]


def test_each_layers_gradient_norm_is_a_hand_written_steps():
    """Two steps trained by the lab, against the same two steps written out here: the same
    model and batches, the loss, backward, the norms before clipping, clipping, AdamW at the
    schedule's rate. Checkpoint 1 (after step 2) holds the mean of the two steps' norms."""
    s = LabSettings.default("order", n_layers=3, d_model=32, steps=2, residual=False)
    view = train(s)
    assert view.checkpoints[0].grad_norms is None and view.checkpoints[-1].step == 2

    model = Transformer(s.model_config())
    task = s.spec  # the run's training pool, and its rows drawn with random.Random(seed)
    pool_ids, pool_targets = task.encode_many(task.examples(TRAIN_POOL, s.seed, "train"))
    pick = random.Random(s.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, betas=(0.9, 0.98), weight_decay=0.01)
    model.train()
    seen = []
    for step in range(2):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, 2, s.lr, 1)
        rows = [pick.randrange(len(pool_ids)) for _ in range(s.batch_size)]
        width = int((pool_ids[rows] != 0).sum(1).max())  # columns of padding only are dropped
        ids, targets = torch.from_numpy(pool_ids[rows, :width]), torch.from_numpy(pool_targets[rows, :width])
        logits = model(ids)  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        seen.append(_norms(model))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    np.testing.assert_allclose(view.checkpoints[-1].grad_norms, np.mean(seen, axis=0), rtol=1e-4)
    assert len(view.checkpoints[-1].grad_norms) == 3


def _run(settings, accs, norms):
    cps = (Checkpoint(0, 0.0, accs[0], float("nan"), ()),) + tuple(
        Checkpoint(20 * (i + 1), float(i + 1), a, 0.5, (), None, np.asarray(n, float))
        for i, (a, n) in enumerate(zip(accs[1:], norms)))
    return RunView(settings, "done", 20 * (len(accs) - 1), (0.7, 0.5), cps, ())


def test_the_gradient_ratio_is_the_median_of_first_over_last():
    on, off = cmp.COMPARISONS["residual"].settings
    norms = [[4.0, 3.0, 2.0], [0.9, 0.5, 0.3], [0.04, 0.02, 0.01]]
    run = _run(on, [0.5, 0.8, 1.0, 1.0], norms)
    assert cmp.gradient_ratio(run) == statistics.median([4 / 2, 0.9 / 0.3, 0.04 / 0.01]) == 3.0
    assert cmp.gradient_ratio(_run(on.replace(n_layers=1), [0.5, 1.0], [[2.0]])) is None  # one layer
    assert cmp.times(1 / 3) == "3 times smaller" and cmp.times(3.0) == "3 times larger"
    assert cmp.times(2.4e-6) == "420,000 times smaller" and cmp.times(0.95) == "about as large"


def test_the_residual_notice_needs_the_runs_to_show_ahead_stuck_and_fading():
    comp = cmp.COMPARISONS["residual"]
    on, off = comp.settings
    assert (on.n_layers, on.residual, off.residual) == (6, True, False)
    assert f"the first of the {on.n_layers} layers" in comp.notice and "near chance (50%" in comp.notice
    flat = [[4.0, 3.5, 3.0, 3.0, 3.1, 3.2]] * 3
    faded = [[1e-6 * 10 ** k for k in range(6)]] * 3  # each layer 10 times the one below
    shown = comp.summarize([_run(on, [0.5, 0.9, 1.0, 1.0], flat), _run(off, [0.5, 0.5, 0.5, 0.5], faded)])
    assert comp.notice in shown
    assert ("The first layer's gradient norm, against the last layer's (the median over the "
            "checkpoints): with residuals 1.2 times larger; no residuals 100,000 times smaller.") in shown
    # ahead and stuck, but the gradients did not fade: no notice, and it says why
    same = comp.summarize([_run(on, [0.5, 0.9, 1.0, 1.0], faded), _run(off, [0.5, 0.5, 0.5, 0.5], flat)])
    assert comp.notice not in same and "did not get less gradient" in same
    # the run without residuals learned: no notice
    learned = comp.summarize([_run(on, [0.5, 1.0, 1.0, 1.0], flat), _run(off, [0.5, 0.8, 0.9, 1.0], faded)])
    assert comp.notice not in learned


def test_a_short_real_pair_shows_the_fading():
    """40 steps of the comparison's own settings: without residuals the first layer's gradient
    is a small fraction of the last's (here about 1e-4 by step 30); with them, about as large
    or larger (here 1 to 14 times). The bounds sit two orders of magnitude from either."""
    on, off = (s.replace(steps=40) for s in cmp.COMPARISONS["residual"].settings)
    with_res, without = train(on), train(off)
    assert cmp.gradient_ratio(without) < 1e-2 < 0.3 < cmp.gradient_ratio(with_res)
