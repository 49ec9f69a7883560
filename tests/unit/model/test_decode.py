"""KV-cache decoding equals a full recompute; encoder-decoder cross-attention is what it says."""
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import ModelConfig
from tfviz.model import Transformer
from tfviz.trace import run_with_trace


@pytest.mark.parametrize("kw", [
    {}, {"positional": "rope"}, {"positional": "alibi"}, {"positional": "learned"},
    {"n_kv_heads": 1}, {"attn_pattern": "sliding", "window": 2}, {"norm": "pre", "final_norm": True},
    {"n_experts": 3, "moe_top_k": 2},
])
def test_kv_cache_decoding_equals_full_recompute(kw):
    model = Transformer(ModelConfig(n_layers=2, **kw)).eval()
    ids = torch.tensor([[3, 14, 15, 92, 65, 35, 89, 79]])
    with torch.no_grad():
        full = model(ids)
        logits, cache = model.step(ids[:, :3])
        steps = [logits]
        for t in range(3, ids.shape[1]):
            logits, cache = model.step(ids[:, t:t + 1], cache)
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 8


def test_encoder_decoder_cache_and_cross_attention():
    model = Transformer(ModelConfig(arch="encoder-decoder", n_layers=2, vocab_size=30)).eval()
    src, tgt = torch.tensor([[4, 5, 6, 7, 8]]), torch.tensor([[1, 8, 7, 6]])
    with torch.no_grad():
        full = model(tgt, enc_ids=src)
        logits, cache = model.step(tgt[:, :1], enc_ids=src)
        out = [logits]
        for t in range(1, 4):
            logits, cache = model.step(tgt[:, t:t + 1], cache)
            out.append(logits)
    torch.testing.assert_close(torch.cat(out, 1), full, atol=1e-5, rtol=1e-5)

    tr = run_with_trace(model, tgt[0], enc_ids=src[0])
    attn = model.blocks[0].cross_attn
    memory = torch.from_numpy(tr["enc_blocks.1.hook_resid_post"])[None]  # top encoder output
    x = torch.from_numpy(tr["resid_mid", 0])[None]  # decoder stream entering cross-attention
    with torch.no_grad():
        q = attn.W_q(x).view(1, 4, 4, 16).transpose(1, 2)
        k = attn.W_k(memory).view(1, 5, 4, 16).transpose(1, 2)
        v = attn.W_v(memory).view(1, 5, 4, 16).transpose(1, 2)
        ref = F.scaled_dot_product_attention(q, k, v)  # (1, H, 4, dh), no mask
    assert tr["cross_attn.pattern", 0].shape == (4, 4, 5)
    torch.testing.assert_close(torch.from_numpy(tr["cross_attn.z", 0]), ref[0].transpose(0, 1),
                               atol=1e-5, rtol=1e-5)


def test_too_long_input_gives_a_clear_error():
    model = Transformer(ModelConfig(max_seq_len=4, n_layers=1)).eval()
    with pytest.raises(ValueError, match="context of 4"):
        model(torch.tensor([[1, 2, 3, 4, 5]]))
