"""What a lesson reads from a trace must be self-consistent and must not disturb the model."""
import hashlib
import threading

import numpy as np
import pytest
import torch

from tfviz.config import ModelConfig, RunOptions, preset
from tfviz.model import Transformer
from tfviz.model.hooks import _RECORDING, HookPoint
from tfviz.reference import softmax
from tfviz.trace import run_with_trace

IDS = [5, 9, 2, 7, 7, 3, 11]

@pytest.fixture(scope="module", params=["gpt-tiny", "bert-tiny", "moe-tiny"])
def traced(request):
    model = Transformer(preset(request.param)).eval()
    return model, run_with_trace(model, IDS)


def test_pattern_is_softmax_of_masked_scores_and_mixes_values(traced):
    model, tr = traced
    cfg = model.cfg
    for layer in range(cfg.n_layers):
        masked, pattern = tr["attn_scores", layer], tr["pattern", layer]
        # torch's float32 softmax against the float64 reference of the same scores: weights up
        # to 1, a float32 tolerance (and so for the rows' float32 sums)
        np.testing.assert_allclose(softmax(masked), pattern, atol=1e-5)
        np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=1e-5)
        assert (pattern[np.isneginf(masked)] == 0.0).all()  # masked entries exactly zero
        v = tr["v", layer]  # (T, Hkv, dh)
        z = np.einsum("hqk,khd->qhd", pattern, v)
        np.testing.assert_allclose(z, tr["z", layer], atol=1e-5)
        # W_o applied to the concatenated heads gives the attention output
        W_o = model.blocks[layer].attn.W_o
        out = tr["z", layer].reshape(len(IDS), -1) @ W_o.weight.detach().numpy().T + W_o.bias.detach().numpy()
        np.testing.assert_allclose(out, tr["attn_out", layer], atol=1e-5)


def test_causal_mask_is_minus_inf_above_diagonal():
    tr = run_with_trace(Transformer(preset("gpt-tiny")).eval(), IDS)
    masked = tr["attn_scores", 0]
    upper = np.triu(np.ones((7, 7), bool), k=1)
    assert np.isneginf(masked[:, upper]).all() and np.isfinite(masked[:, ~upper]).all()
    unmasked = tr["attn_scores_unmasked", 0]
    np.testing.assert_array_equal(unmasked[:, ~upper], masked[:, ~upper])  # copied by masked_fill


@pytest.mark.parametrize("name, causal", [("gpt-tiny", True), ("bert-tiny", False)])
def test_attn_scores_are_scaled_and_masked_as_in_transformer_lens(name, causal):
    """TransformerLens records ``hook_attn_scores`` after the scale and the mask. Rebuilt here
    from the trace's own q and k with torch's einsum, masked_fill and softmax: the unmasked
    scores are q·kᵀ/√d_head, the masked ones add −∞ above the diagonal (decoder only), and the
    softmax of those is the pattern."""
    tr = run_with_trace(Transformer(preset(name)).eval(), IDS)
    n = len(IDS)
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if causal else \
        torch.zeros(n, n, dtype=torch.bool)
    for layer in range(tr.config.n_layers):
        q = torch.from_numpy(tr["q", layer]).double()  # (T, H, dh)
        k = torch.from_numpy(tr["k", layer]).double()  # (T, Hkv, dh); Hkv = H here
        scaled = torch.einsum("qhd,khd->hqk", q, k) / tr.config.d_head ** 0.5  # (H, T, T)
        masked = scaled.masked_fill(hidden, float("-inf"))
        np.testing.assert_allclose(tr["attn_scores_unmasked", layer], scaled.numpy(), atol=1e-4)
        np.testing.assert_allclose(tr["attn_scores", layer], masked.numpy(), atol=1e-4)
        assert np.array_equal(np.isneginf(tr["attn_scores", layer]), np.broadcast_to(
            hidden.numpy(), masked.shape))
        np.testing.assert_allclose(tr["pattern", layer], torch.softmax(masked, -1).numpy(),
                                   atol=1e-5)  # float32 weights against float64
    names = [n.split(".")[-1] for n in tr.names() if n.startswith("blocks.0.attn.hook_")]
    assert names[names.index("hook_scores_raw"):][:4] == [
        "hook_scores_raw", "hook_attn_scores_unmasked", "hook_attn_scores", "hook_pattern"]
    assert "blocks.0.attn.hook_masked_scores" not in tr.names()


def test_layernorm_statistics_in_trace():
    model = Transformer(preset("gpt-tiny")).eval()
    tr = run_with_trace(model, IDS)
    x = tr["resid_pre", 0] + tr["attn_out", 0]  # post-LN: LN1 sees x + attn(x)
    np.testing.assert_allclose(tr["ln1.mean", 0], x.mean(-1), atol=1e-5)
    np.testing.assert_allclose(tr["ln1.scale", 0], np.sqrt(x.var(-1) + 1e-5), atol=1e-5)
    ln = model.blocks[0].ln1
    ref = torch.nn.functional.layer_norm(torch.from_numpy(x), (64,), ln.weight, ln.bias).detach().numpy()
    np.testing.assert_allclose(tr["resid_mid", 0], ref, atol=1e-5)


def test_tracing_gives_bit_identical_logits_and_leaves_no_state():
    model = Transformer(preset("moe-tiny")).eval()
    before = hashlib.sha256(b"".join(t.numpy().tobytes() for t in model.state_dict().values())).hexdigest()
    plain = model(torch.tensor([IDS])).detach().numpy()[0]
    tr = run_with_trace(model, IDS)
    assert np.array_equal(plain, tr.logits)  # hooks are identities: the same ops on the same shapes
    after = hashlib.sha256(b"".join(t.numpy().tobytes() for t in model.state_dict().values())).hexdigest()
    assert before == after
    assert all(not m._forward_hooks for m in model.modules())


def test_recording_is_switched_off_even_when_forward_fails():
    model = Transformer(ModelConfig(max_seq_len=8, n_layers=1)).eval()
    with pytest.raises(ValueError, match="context"):
        run_with_trace(model, list(range(20)))
    assert _RECORDING.get() is None


def test_two_threads_tracing_one_shared_model_do_not_mix():
    model = Transformer(preset("gpt-tiny")).eval()
    inputs = {0: [5, 9, 2, 7], 1: [30, 31, 32, 33, 34, 35]}
    expected = {}
    # the references in a new thread too: a new thread takes torch's thread count from the last
    # set_num_threads anywhere (a page run sets one), which may not be this thread's, and another
    # count may round differently (TFVIZ_TEST_THREADS=2 after an app test did)
    first = threading.Thread(target=lambda: expected.update(
        {k: run_with_trace(model, v) for k, v in inputs.items()}))
    first.start()
    first.join()
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def work(k):
        try:
            barrier.wait()
            for _ in range(30):
                tr = run_with_trace(model, inputs[k])
                for name in ("blocks.0.attn.hook_pattern", "blocks.2.hook_resid_post"):
                    # the same ids through the same model: bit for bit, unless recordings mix
                    if not np.array_equal(tr[name], expected[k][name]):
                        errors.append((k, name))
            results[k] = True
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {0: True, 1: True}


def test_names_filter_records_only_what_is_asked():
    model = Transformer(preset("gpt-tiny")).eval()
    tr = run_with_trace(model, IDS, names=lambda n: n.endswith("hook_pattern"))
    assert set(tr.names()) == {f"blocks.{i}.attn.hook_pattern" for i in range(3)} | {"logits"}
    full = run_with_trace(model, IDS)
    np.testing.assert_array_equal(tr["pattern", 2], full["pattern", 2])  # recording changes no maths
    points = {name for name, mod in model.named_modules() if isinstance(mod, HookPoint)}
    assert set(full.names()) == points | {"logits"}  # every hook point fires


def test_short_keys_and_shapes():
    tr = run_with_trace(Transformer(preset("gpt-tiny")).eval(), IDS, tokens=list("abcdefg"))
    assert tr["q", 0].shape == (7, 4, 16)
    assert tr["pattern", -1].shape == (4, 7, 7)
    assert tr["ln2.scale", 1].shape == (7,)
    assert tr["mlp.pre", 0].shape == (7, 256)
    assert tr["embed"].shape == tr["pos_embed"].shape == (7, 64)
    assert tr.tokens == tuple("abcdefg")
    with pytest.raises(KeyError, match="did you mean"):
        tr["scale", 0]


def test_batch_keeps_batch_axis_and_padding_does_not_leak():
    model = Transformer(preset("bert-tiny")).eval()
    ids = torch.tensor([[5, 6, 7, 8], [5, 6, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    tr = run_with_trace(model, ids, attention_mask=mask)
    assert tr["pattern", 0].shape == (2, 4, 4, 4)
    assert (tr["pattern", 0][1, :, :, 2:] == 0).all()  # masked with -inf: exp gives exactly 0
    alone = run_with_trace(model, [5, 6])
    np.testing.assert_allclose(tr.logits[1, :2], alone.logits, atol=1e-5)


def test_head_ablation_zeroes_that_head_only():
    model = Transformer(preset("gpt-tiny")).eval()
    tr = run_with_trace(model, IDS, options=RunOptions(ablate_heads=frozenset({(1, 2)})))
    assert (tr["z", 1][:, 2] == 0).all() and (tr["z", 1][:, 1] != 0).any()  # multiplied by 0
    base = run_with_trace(model, IDS)
    np.testing.assert_array_equal(base["z", 0], tr["z", 0])  # layer 0: the same ops on the same input


@pytest.mark.parametrize("name", ["gpt-tiny", "bert-tiny", "moe-tiny", "reverse-encdec"])
@pytest.mark.parametrize("options", [RunOptions(), RunOptions(scale=False), RunOptions(causal=True),
                                     RunOptions(causal=False, scale=True), RunOptions(moe_top_k=2)],
                         ids=["none", "no scale", "causal", "bidirectional", "top-2"])
def test_resolved_options_fill_in_the_configs_choices_and_run_the_same(name, options):
    """``RunOptions.resolved``: a given switch stays, an unset one takes the config's value, and
    the model computes exactly the same with either (the same ops on the same numbers)."""
    cfg = preset(name)
    if options.moe_top_k is not None and not cfg.is_moe:
        options = RunOptions()
    r = options.resolved(cfg)
    assert r.scale == (cfg.scale_attn if options.scale is None else options.scale)
    assert r.causal == (cfg.causal if options.causal is None else options.causal)
    assert r.moe_top_k == (cfg.moe_top_k if options.moe_top_k is None else options.moe_top_k)
    assert r.resolved(cfg) == r and r.canonical(cfg) == options.canonical(cfg)
    model = Transformer(cfg).eval()
    enc = IDS[:4] if cfg.arch == "encoder-decoder" else None
    ids = IDS[:4] if enc else IDS
    a = run_with_trace(model, ids, enc_ids=enc, options=options)
    b = run_with_trace(model, ids, enc_ids=enc, options=r)
    np.testing.assert_array_equal(a.logits, b.logits)
    # what the resolved scale says is what the model did: scores_raw / √d_head, or not divided
    divisor = cfg.d_head ** 0.5 if r.scale else 1.0
    # one float32 division of the same raw scores on both sides: an ulp apart at most, any CPU
    np.testing.assert_allclose(a["attn_scores_unmasked", 0], a["scores_raw", 0] / divisor, rtol=1e-6)
    # and what the resolved causal switch says: −∞ above the diagonal exactly when causal
    upper = np.triu(np.ones((len(ids), len(ids)), bool), k=1)
    assert np.isneginf(a["attn_scores", 0][:, upper]).all() == r.causal


def test_stack_puts_every_layer_of_one_activation_on_a_first_axis():
    """``Trace.stack(name)`` against the per-layer reads it replaces, for the decoder, an
    encoder-decoder's encoder and cross-attention, and a batch (layer axis second)."""
    tr = run_with_trace(Transformer(preset("gpt-tiny")).eval(), IDS)
    for name in ("pattern", "attn_scores", "ln1.scale", "resid_post"):
        expected = np.stack([tr[name, layer] for layer in range(tr.config.n_layers)])
        np.testing.assert_array_equal(tr.stack(name), expected)
    assert tr.stack("pattern").shape == (3, 4, len(IDS), len(IDS))
    seq = run_with_trace(Transformer(preset("reverse-encdec")).eval(), [3, 4, 5], enc_ids=[6, 7, 8, 9])
    np.testing.assert_array_equal(seq.stack("pattern", enc=True),
                                  np.stack([seq["enc_blocks.0.attn.hook_pattern"],
                                            seq["enc_blocks.1.attn.hook_pattern"]]))
    assert seq.stack("cross_attn.pattern").shape == (2, 4, 3, 4)  # (layers, heads, target, source)
    batch = run_with_trace(Transformer(preset("bert-tiny")).eval(), [[5, 6, 7], [8, 9, 10]])
    stacked = batch.stack("pattern", axis=1)  # (batch, layers, heads, n, n)
    assert stacked.shape == (2, 2, 4, 3, 3)
    np.testing.assert_array_equal(stacked[1, 0], batch["pattern", 0][1])
