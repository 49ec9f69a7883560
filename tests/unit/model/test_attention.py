"""Attention, LayerNorm and positions against torch's own implementations."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import ModelConfig, RunOptions
from tfviz.model import Transformer
from tfviz.model.attention import Attention, AttnContext
from tfviz.model.norm import LayerNorm
from tfviz.model.positional import sinusoidal_table
from tfviz.trace import run_with_trace


def _attn_and_x(cfg, T=6, B=2):
    """A freshly initialised layer and an input, the same on every run (seeded here: nothing
    seeds the global generator for all tests)."""
    torch.manual_seed(0)
    attn = Attention(cfg)
    x = torch.randn(B, T, cfg.d_model)
    return attn, x


@pytest.mark.parametrize("causal", [False, True])
def test_attention_equals_sdpa(causal):
    cfg = ModelConfig(d_model=32, n_heads=4)
    attn, x = _attn_and_x(cfg)
    allowed = torch.tril(torch.ones(6, 6, dtype=torch.bool))[None, None] if causal else None
    with torch.no_grad():
        out, _ = attn(x, AttnContext(allowed=allowed, scale=True))
        B, T, _ = x.shape
        q = attn.W_q(x).view(B, T, 4, 8).transpose(1, 2)  # (B, H, T, dh)
        k = attn.W_k(x).view(B, T, 4, 8).transpose(1, 2)
        v = attn.W_v(x).view(B, T, 4, 8).transpose(1, 2)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (B, H, T, dh)
        ref = attn.W_o(ref.transpose(1, 2).reshape(B, T, 32))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_attention_equals_torch_multihead_with_copied_weights():
    d, H = 16, 2
    cfg = ModelConfig(d_model=d, n_heads=H)
    attn, x = _attn_and_x(cfg, T=5, B=3)
    mha = torch.nn.MultiheadAttention(d, H, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([attn.W_q.weight, attn.W_k.weight, attn.W_v.weight]))
        mha.in_proj_bias.copy_(torch.cat([attn.W_q.bias, attn.W_k.bias, attn.W_v.bias]))
        mha.out_proj.weight.copy_(attn.W_o.weight)
        mha.out_proj.bias.copy_(attn.W_o.bias)
        ref, ref_weights = mha(x, x, x, average_attn_weights=False)
        store = {}
        handle = attn.hook_pattern.register_forward_hook(lambda m, i, o: store.update(p=o))
        out, _ = attn(x, AttnContext(allowed=None, scale=True))
        handle.remove()
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(store["p"], ref_weights, atol=1e-5, rtol=1e-5)


def test_layernorm_equals_torch():
    torch.manual_seed(0)
    ln, ref = LayerNorm(10), torch.nn.LayerNorm(10)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(10))
        ln.bias.copy_(torch.randn(10))
        ref.weight.copy_(ln.weight)
        ref.bias.copy_(ln.bias)
    x = torch.randn(3, 7, 10) * 5 + 2
    torch.testing.assert_close(ln(x), ref(x), atol=1e-5, rtol=1e-5)


def test_sinusoidal_table_matches_the_source_example():
    # The notes' table for "I am a Robot" with d = 4, n = 100, to two decimals.
    expected = [[0, 1, 0, 1], [0.84, 0.54, 0.10, 1.0], [0.91, -0.42, 0.20, 0.98],
                [0.14, -0.99, 0.30, 0.96]]
    got = sinusoidal_table(4, 4, base=100).numpy()
    np.testing.assert_allclose(got, expected, atol=0.005)
    # And against math.sin/cos directly, for a wider table (float64 sines rounded once to
    # float32: within 3e-8).
    t = sinusoidal_table(50, 10, base=10000).numpy()
    for k in (0, 7, 49):
        for i in range(5):
            assert t[k, 2 * i] == pytest.approx(math.sin(k / 10000 ** (2 * i / 10)), abs=1e-6)
            assert t[k, 2 * i + 1] == pytest.approx(math.cos(k / 10000 ** (2 * i / 10)), abs=1e-6)


def test_scale_switch_changes_scores_by_sqrt_dk():
    model = Transformer(ModelConfig(d_model=32, n_heads=2, n_layers=1)).eval()
    ids = [3, 4, 5, 6]
    on = run_with_trace(model, ids)
    off = run_with_trace(model, ids, options=RunOptions(scale=False))
    np.testing.assert_allclose(off["attn_scores_unmasked", 0] / math.sqrt(16),
                               on["attn_scores_unmasked", 0], rtol=1e-5, atol=1e-6)


def test_temperature_divides_masked_scores():
    model = Transformer(ModelConfig(d_model=32, n_heads=2, n_layers=1)).eval()
    tr = run_with_trace(model, [3, 4, 5, 6], options=RunOptions(temperature=2.0))
    # torch's own softmax of the same float32 scores (÷2 is exact), as the model runs it
    ref = torch.softmax(torch.from_numpy(tr["attn_scores", 0]) / 2.0, dim=-1).numpy()
    np.testing.assert_allclose(tr["pattern", 0], ref, atol=1e-6)
