"""A block is its formula (pre-LN and post-LN, with and without cross-attention), checked against
torch's own layer_norm and linear layers; the model has one return type per entry point."""
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import ModelConfig
from tfviz.model import ModelOutput, Transformer
from tfviz.model.moe import Expert
from tfviz.trace import run_with_trace


def _ln(x: torch.Tensor, ln) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], ln.weight, ln.bias, ln.eps)


def _ffn(x: torch.Tensor, mlp, act) -> torch.Tensor:
    return F.linear(act(F.linear(x, mlp.W_in.weight, mlp.W_in.bias)), mlp.W_out.weight, mlp.W_out.bias)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder"])
def test_block_is_its_formula(norm, arch):
    cfg = ModelConfig(arch=arch, norm=norm, final_norm=norm == "pre", n_layers=2, vocab_size=30,
                      activation="gelu")
    model = Transformer(cfg).eval()
    tr = run_with_trace(model, [1, 8, 7, 6], enc_ids=[4, 5, 6, 7, 8] if arch != "decoder" else None)
    for i, block in enumerate(model.blocks):
        a = {k: torch.from_numpy(tr[f"blocks.{i}.{k}"]) for k in (
            "hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")}
        x, z = a["hook_resid_pre"], a["hook_resid_mid"]
        with torch.no_grad():
            if norm == "post":  # z = LN1(x + SelfAttn(x)), y = LN2(z + FFN(z))
                torch.testing.assert_close(z, _ln(x + a["hook_attn_out"], block.ln1))
            else:  # z = x + SelfAttn(LN1(x)), y = z + FFN(LN2(z))
                torch.testing.assert_close(z, x + a["hook_attn_out"])
            if arch == "encoder-decoder":
                c = torch.from_numpy(tr[f"blocks.{i}.hook_cross_attn_out"])
                z_cross = torch.from_numpy(tr[f"blocks.{i}.hook_resid_mid_cross"])
                expected = _ln(z + c, block.ln_cross) if norm == "post" else z + c
                torch.testing.assert_close(z_cross, expected)
                z = z_cross
            ffn_in = z if norm == "post" else _ln(z, block.ln2)
            torch.testing.assert_close(a["hook_mlp_out"], _ffn(ffn_in, block.mlp, F.gelu),
                                       atol=1e-5, rtol=1e-5)
            y = z + a["hook_mlp_out"]
            torch.testing.assert_close(a["hook_resid_post"], _ln(y, block.ln2) if norm == "post" else y)


def test_only_decoder_blocks_of_an_encoder_decoder_have_cross_attention():
    encdec = Transformer(ModelConfig(arch="encoder-decoder", n_layers=1, vocab_size=30))
    assert encdec.blocks[0].cross_attn is not None and encdec.blocks[0].ln_cross is not None
    for block in [*encdec.enc_blocks, *Transformer(ModelConfig(n_layers=1)).blocks]:
        assert block.cross_attn is None and block.ln_cross is None
        assert not any("cross" in name for name, _ in block.named_modules())


def test_experts_are_expert_modules_with_the_saved_parameter_names():
    model = Transformer(ModelConfig(n_experts=3, n_layers=1))
    assert all(isinstance(e, Expert) for e in model.blocks[0].mlp.experts)
    assert "blocks.0.mlp.experts.2.W_out.bias" in model.state_dict()


@pytest.mark.parametrize("kw", [{}, {"arch": "encoder"}, {"n_experts": 3, "moe_top_k": 2},
                                {"arch": "encoder-decoder", "n_experts": 2}])
def test_forward_returns_logits_and_run_returns_model_output(kw):
    cfg = ModelConfig(n_layers=2, vocab_size=30, **kw)
    model = Transformer(cfg).eval()
    ids = torch.tensor([[1, 8, 7, 6]])
    enc = {"enc_ids": torch.tensor([[4, 5, 6]])} if cfg.arch == "encoder-decoder" else {}
    with torch.no_grad():
        logits, out = model(ids, **enc), model.run(ids, **enc)
    assert isinstance(logits, torch.Tensor) and logits.shape == (1, 4, 30)
    assert isinstance(out, ModelOutput)
    assert torch.equal(out.logits, logits)  # the same pass, the same kernels
    assert out.aux_loss.shape == () and out.cache.length == 4
    if cfg.is_moe:  # the Switch loss is at least 1 per layer (equal when perfectly balanced)
        n_moe_layers = cfg.n_layers + (cfg.enc_layers if cfg.arch == "encoder-decoder" else 0)
        assert float(out.aux_loss) >= n_moe_layers - 1e-5
    else:
        assert float(out.aux_loss) == 0.0
