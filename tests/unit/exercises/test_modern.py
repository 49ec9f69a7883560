"""The modern block's exercises (RoPE, RMSNorm, SwiGLU, a grouped-query KV cache): the worked
example by hand, every answer against torch's own functions and tfviz's model modules, and
every slip recomputed here, independently, and diagnosed by its name."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.config import ModelConfig, preset
from tfviz.exercises.registry import make_instance
from tfviz.model.ffn import MLP
from tfviz.model.norm import RMSNorm
from tfviz.model.positional import apply_rope, rope_angles

SEEDS = [None, *range(8)]
D64 = torch.float64


def typed(values, places: int = 6) -> str:
    """Numbers as a learner types them."""
    return " ".join(f"{float(v):.{places}f}" for v in np.ravel(values))


def diagnosed(inst, box: str, values) -> str:
    fb = inst.check(box, typed(values))
    assert not fb.correct and fb.valid and fb.diagnosis, (box, fb)
    return fb.mistake


def vec(inst, key):
    return torch.tensor(np.asarray(inst.data[key]), dtype=D64)


# ------------------------------------------------------------------------------------- RMSNorm

def test_rmsnorm_by_hand():
    # x = [6, -4, 2, 2]: squares 36, 16, 4, 4, mean 15; ε = 1 -> √16 = 4
    # x / 4 = [1.5, -1, 0.5, 0.5]; γ = [1, 0.5, 2, -1] -> [1.5, -0.5, 1, -0.5]
    inst = make_instance("rmsnorm")
    assert inst.field("mean_square").expected == 15
    assert inst.field("rms").expected == 4
    assert inst.field("output").expected.tolist() == [1.5, -0.5, 1, -0.5]
    assert inst.check("output", "1.5, -0.5, 1, -0.5").correct
    # LayerNorm's centring: μ = 1.5, variance 15 − 2.25 = 12.75, σ = √13.75 = 3.70810
    assert inst.check("mean_square", "12.75").mistake == "centred"
    assert inst.check("rms", "3.708").mistake == "centred"
    assert inst.check("rms", "3.873").mistake == "no_eps"  # √15
    assert inst.check("rms", "16").mistake == "no_root"
    assert inst.check("output", "1.5 -1 0.5 0.5").mistake == "no_gamma"
    assert inst.check("output", "1.618 -0.539 1.079 -0.539").mistake == "by_std"  # x / 3.708 · γ


@pytest.mark.parametrize("seed", SEEDS)
def test_rmsnorm_matches_torch_and_our_module(seed):
    inst = make_instance("rmsnorm", seed)
    x, g, eps = vec(inst, "x"), vec(inst, "gamma"), inst.data["eps"]
    ref = F.rms_norm(x, (len(x),), g, eps=eps)
    assert np.allclose(inst.field("output").expected, ref.numpy(), atol=1e-12)
    assert inst.field("rms").expected == pytest.approx(float(torch.sqrt((x * x).mean() + eps)))
    norm = RMSNorm(len(x), eps=eps)
    with torch.no_grad():
        norm.weight.copy_(g.float())
    out = norm(x.float()[None, None])  # (1, 1, d), float32 as the model runs
    # float32: one sum of four squares, a root and a product per entry, ~1e-7 relative
    assert np.allclose(out[0, 0].detach().numpy(), inst.field("output").expected, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_rmsnorm_slips_recomputed_and_diagnosed(seed):
    inst = make_instance("rmsnorm", seed)
    x, g, eps = vec(inst, "x"), vec(inst, "gamma"), inst.data["eps"]
    d = len(x)
    sigma = torch.sqrt(x.var(unbiased=False) + eps)  # the mean taken away
    ms = (x * x).mean()
    slips = {
        ("mean_square", "centred"): x.var(unbiased=False),
        ("mean_square", "sum_squares"): (x * x).sum(),
        ("rms", "centred"): sigma,
        ("rms", "sum_squares"): torch.sqrt((x * x).sum() + eps),
        ("rms", "no_eps"): torch.sqrt(ms),
        ("rms", "no_root"): ms + eps,
        ("output", "centred"): F.layer_norm(x, (d,), g, None, eps=eps),
        ("output", "no_eps"): F.rms_norm(x, (d,), g, eps=0.0),
        ("output", "no_root"): x / (ms + eps) * g,
        ("output", "by_std"): x / sigma * g,
        ("output", "no_gamma"): F.rms_norm(x, (d,), None, eps=eps),
    }
    for (box, name), values in slips.items():
        assert name in diagnosed(inst, box, values.numpy()).split("+"), (seed, box, name)


# -------------------------------------------------------------------------------------- SwiGLU

def test_swiglu_by_hand():
    # g = x W_gate = [1+1, 0, 1-2] = [2, 0, -1]; u = x W_up = [1, 2+1, 0+2] = [1, 3, 2]
    # SiLU(g) = [2/(1+e^-2), 0, -1/(1+e^1)] = [1.76159, 0, -0.26894]
    # h = [1.76159, 0, -0.53788]; y = 1.76159·[1, 0] + 0·[2, 1] - 0.53788·[1, -1]
    inst = make_instance("swiglu")
    assert inst.field("gate").expected.tolist() == [2, 0, -1]
    assert inst.field("act").expected == pytest.approx([1.76159, 0, -0.26894], abs=1e-5)
    assert inst.field("hidden").expected == pytest.approx([1.76159, 0, -0.53788], abs=1e-5)
    assert inst.field("output").expected == pytest.approx([1.22371, 0.53788], abs=1e-5)
    assert inst.check("act", "0.881 0.5 0.269").mistake == "sigmoid"  # σ(2), σ(0), σ(-1)
    assert inst.check("gate", "1 3 2").mistake == "swapped"
    assert inst.check("hidden", "2 0 -2").mistake == "no_activation"
    fb = inst.check("output", "1.76 0 -0.54")  # h typed where y belongs: 3 numbers, not 2
    assert fb.valid and fb.mistake == "no_down" and "W_down" in fb.diagnosis


def _swiglu_tensors(inst):
    return [vec(inst, k) for k in ("x", "W_gate", "W_up", "W_down")]


@pytest.mark.parametrize("seed", SEEDS)
def test_swiglu_matches_torch_and_our_mlp(seed):
    inst = make_instance("swiglu", seed)
    x, Wg, Wu, Wd = _swiglu_tensors(inst)
    g, u = x @ Wg, x @ Wu
    h = F.silu(g) * u
    assert np.allclose(inst.field("gate").expected, g.numpy(), atol=1e-12)
    assert np.allclose(inst.field("act").expected, F.silu(g).numpy(), atol=1e-12)
    assert np.allclose(inst.field("hidden").expected, h.numpy(), atol=1e-12)
    assert np.allclose(inst.field("output").expected, (h @ Wd).numpy(), atol=1e-12)
    d, d_ff = Wg.shape
    mlp = MLP(ModelConfig(d_model=d, n_heads=1, d_ff=d_ff, activation="swiglu", bias=False))
    with torch.no_grad():  # nn.Linear keeps (out, in): our matrices transposed
        mlp.W_gate.weight.copy_(Wg.T.float())
        mlp.W_in.weight.copy_(Wu.T.float())
        mlp.W_out.weight.copy_(Wd.T.float())
        out = mlp(x.float()[None, None])[0, 0]  # (d,)
    # float32, entries of size ≤ 10: a few products and an exp each, well within 1e-5
    assert np.allclose(out.numpy(), inst.field("output").expected, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_swiglu_slips_recomputed_and_diagnosed(seed):
    inst = make_instance("swiglu", seed)
    x, Wg, Wu, Wd = _swiglu_tensors(inst)
    g, u = x @ Wg, x @ Wu
    hidden = {"sigmoid": torch.sigmoid(g) * u, "silu_on_up": g * F.silu(u),
              "silu_after": F.silu(g * u), "no_up": F.silu(g), "no_gate": u,
              "no_activation": g * u}
    assert "swapped" in diagnosed(inst, "gate", u.numpy())
    assert "sigmoid" in diagnosed(inst, "act", torch.sigmoid(g).numpy())
    assert "silu_on_up" in diagnosed(inst, "act", F.silu(u).numpy())
    for name, h in hidden.items():
        assert name in diagnosed(inst, "hidden", h.numpy()).split("+"), (seed, name)
        assert name in diagnosed(inst, "output", (h @ Wd).numpy()).split("+"), (seed, name)
    assert diagnosed(inst, "output", (F.silu(g) * u).numpy()) == "no_down"


def test_an_answer_of_another_length_that_is_no_slip_is_still_refused_kindly():
    inst = make_instance("swiglu")
    fb = inst.check("output", "1 2 3")
    assert not fb.valid and fb.message.endswith("This box wants 2 numbers, separated by spaces "
                                                "or commas.")
    assert not inst.check("gate", "2 0").valid  # a box without such a slip, as before


# ---------------------------------------------------------------------------------------- RoPE

def complex_turn(v: torch.Tensor, position: float, theta: torch.Tensor) -> torch.Tensor:
    """RoPE as the original Llama code writes it: each neighbouring pair (a, c) is the complex
    number a + ic, multiplied by e^(i·position·θ)."""
    z = torch.view_as_complex(v.reshape(-1, 2).contiguous())  # (d/2,)
    turned = z * torch.polar(torch.ones_like(theta), position * theta)
    return torch.view_as_real(turned).reshape(-1)


def our_model_turn(v: torch.Tensor, position: int, base: float, pairs: str = "adjacent"):
    cos, sin = rope_angles(torch.tensor([position]), len(v), base)  # (1, d/2)
    return apply_rope(v.float()[None, None, None], cos, sin, pairs)[0, 0, 0]  # (d,)


def test_rope_by_hand():
    # θ = 100^(-0/4), 100^(-2/4) = 1, 0.1; q = [1, 2, -1, 1] at m = 2 turns by 2 and 0.2
    c2, s2, c02, s02 = math.cos(2), math.sin(2), math.cos(0.2), math.sin(0.2)
    q_turned = [c2 - 2 * s2, s2 + 2 * c2, -c02 - s02, -s02 + c02]
    # k = [1, 0, 0, 1] at n = 1 turns by 1 and 0.1
    k_turned = [math.cos(1), math.sin(1), -math.sin(0.1), math.cos(0.1)]
    inst = make_instance("rope")
    assert inst.field("angles").expected.tolist() == pytest.approx([2, 0.2])
    assert inst.field("rotated").expected == pytest.approx(q_turned, abs=1e-12)
    assert inst.field("score").expected == pytest.approx(np.dot(q_turned, k_turned), abs=1e-12)
    assert q_turned == pytest.approx([-2.2347, 0.0770, -1.1787, 0.7814], abs=1e-4)
    assert inst.check("rotated", "-2.23 0.08 -1.18 0.78").correct
    assert inst.check("angles", "1 0.1").mistake == "no_position"
    # the other way round: (a cos + c sin, -a sin + c cos)
    assert inst.check("rotated", typed([c2 + 2 * s2, -s2 + 2 * c2, -c02 + s02, s02 + c02])
                      ).mistake == "sin_sign"


@pytest.mark.parametrize("seed", SEEDS)
def test_rope_matches_complex_numbers_and_our_model(seed):
    inst = make_instance("rope", seed)
    q, k, base = vec(inst, "q"), vec(inst, "k"), inst.data["base"]
    m, n = inst.data["query_position"], inst.data["key_position"]
    d = len(q)
    theta = base ** (-torch.arange(0, d, 2, dtype=D64) / d)
    assert np.allclose(inst.field("angles").expected, (m * theta).numpy(), atol=1e-12)
    q_rot, k_rot = complex_turn(q, m, theta), complex_turn(k, n, theta)
    assert np.allclose(inst.field("rotated").expected, q_rot.numpy(), atol=1e-12)
    assert inst.field("score").expected == pytest.approx(float(q_rot @ k_rot), abs=1e-12)
    # the model's own RoPE (float32: one power, a product, cos and sin per entry)
    ours = our_model_turn(q, m, base)
    assert np.allclose(ours.numpy(), inst.field("rotated").expected, atol=1e-5)
    # relative position only: the same score at positions shifted by 7, and for q turned alone
    shifted = our_model_turn(q, m + 7, base) @ our_model_turn(k, n + 7, base)
    assert float(shifted) == pytest.approx(inst.field("score").expected, abs=1e-4)
    assert float(complex_turn(q, m - n, theta) @ k) == pytest.approx(inst.field("score").expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_rope_slips_recomputed_and_diagnosed(seed):
    inst = make_instance("rope", seed)
    q, k, base = vec(inst, "q"), vec(inst, "k"), inst.data["base"]
    m, n = inst.data["query_position"], inst.data["key_position"]
    d = len(q)
    i = torch.arange(d // 2, dtype=D64)
    theta = base ** (-2 * i / d)
    wrong = {"exponent_i": base ** (-i / d), "dim_index": base ** (-2 * (2 * i) / d),
             "positive_exponent": base ** (2 * i / d)}
    for name, t in wrong.items():
        assert name in diagnosed(inst, "angles", (m * t).numpy()).split("+"), (seed, name)
    assert "no_position" in diagnosed(inst, "angles", theta.numpy())
    degrees = theta * math.pi / 180
    halves = our_model_turn(q, m, base, "halves").double()  # Llama's pairing
    turned = {"exponent_i": complex_turn(q, m, wrong["exponent_i"]),
              "dim_index": complex_turn(q, m, wrong["dim_index"]),
              "degrees": complex_turn(q, m, degrees),
              "sin_sign": complex_turn(q, -m, theta), "no_position": complex_turn(q, 1, theta)}
    for name, v in turned.items():
        assert name in diagnosed(inst, "rotated", v.numpy()).split("+"), (seed, name)
    fb = inst.check("rotated", typed(halves.numpy()))  # float32's 1e-7 is far inside ±0.01
    assert "halves" in fb.mistake.split("+")
    q_rot = complex_turn(q, m, theta)
    scores = {"k_not_rotated": q_rot @ k, "no_rotation": q @ k,
              "score_sign": complex_turn(q, n - m, theta) @ k,  # turned the other way
              "degrees": complex_turn(q, m, degrees) @ complex_turn(k, n, degrees)}
    for name, s in scores.items():
        assert name in diagnosed(inst, "score", [float(s)]).split("+"), (seed, name)


# ------------------------------------------------------------------------------- GQA KV cache

DTYPES = {32: torch.float32, 16: torch.bfloat16, 8: torch.int8}


def cache_tensor_bytes(layers, kv_heads, d_head, tokens, bits) -> int:
    """Bytes of the K and V tensors every layer keeps, (1, kv_heads, tokens, d_head) each, as
    meta tensors of the right dtype (nothing allocated)."""
    one = torch.empty(1, kv_heads, tokens, d_head, dtype=DTYPES[bits], device="meta")
    return sum(t.numel() * t.element_size() for _ in range(layers) for t in (one, one))


def test_gqa_cache_by_hand():
    # SmolLM2-135M: 30 layers × 2 (K, V) × 3 K/V heads × 64 × 2 bytes (bf16) = 23,040
    inst = make_instance("gqa-cache")
    assert inst.field("per_token").expected == 30 * 2 * 3 * 64 * 2 == 23_040
    assert inst.field("total").expected == 23_040 * 2048 == 47_185_920
    assert inst.check("total", "47,185,920").correct and inst.check("total", "47185920").correct
    assert inst.check("per_token", "69,120").mistake == "query_heads"  # 9 heads, not 3
    assert inst.check("per_token", "11520").mistake == "no_kv_factor"
    assert inst.check("per_token", "768").mistake == "no_layers"
    assert inst.check("per_token", "184320").mistake == "bits"  # 16 "bytes" a number
    assert not inst.check("total", "47185921").correct  # exact: one byte off is wrong


@pytest.mark.parametrize("seed", SEEDS)
def test_gqa_cache_matches_tensors_and_slips(seed):
    inst = make_instance("gqa-cache", seed)
    L, H, G, dh, T, bits = (inst.data[k] for k in ("layers", "q_heads", "kv_heads", "d_head",
                                                   "tokens", "bits"))
    assert inst.field("per_token").expected == cache_tensor_bytes(L, G, dh, 1, bits)
    assert inst.field("total").expected == cache_tensor_bytes(L, G, dh, T, bits)
    for box, tokens in (("per_token", 1), ("total", T)):
        slips = {"query_heads": cache_tensor_bytes(L, H, dh, tokens, bits),
                 "no_kv_factor": cache_tensor_bytes(L, G, dh, tokens, bits) // 2,
                 "no_layers": cache_tensor_bytes(1, G, dh, tokens, bits),
                 "bits": cache_tensor_bytes(L, G, dh, tokens, bits) * 8}
        for name, value in slips.items():
            fb = inst.check(box, f"{value:,}")
            assert name in fb.mistake.split("+"), (seed, box, name, fb)


def test_gqa_cache_is_what_our_model_keeps():
    """The worked example's shape, built as a model (a small vocabulary and feed-forward):
    the bytes its own cache tensors hold per token, in float32, are the exercise's bf16 answer
    times 32/16."""
    from tfviz.experiments.gqa_decode import cache_of_text
    from tfviz.model import Transformer

    inst = make_instance("gqa-cache")
    cfg = preset("llama-tiny").replace(
        name="smollm2-cache", n_layers=inst.data["layers"], n_heads=inst.data["q_heads"],
        n_kv_heads=inst.data["kv_heads"], d_model=inst.data["q_heads"] * inst.data["d_head"],
        d_ff=16, vocab_size=50)
    torch.manual_seed(0)
    held, tokens = cache_of_text(Transformer(cfg).eval(), [5, 17, 9, 3])
    assert tokens == 4
    assert held // tokens == inst.field("per_token").expected * 32 // inst.data["bits"]
