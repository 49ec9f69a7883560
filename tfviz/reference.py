"""The one numpy reference for a transformer's maths: softmax, the causal mask, LayerNorm and
RMSNorm, attention, the feed-forward block's gated form, the sinusoidal position table and RoPE.

Each formula sits beside the code that computes it, as in the Annotated Transformer, and
:func:`attention` returns every step rather than only its output. Exercises, analysis and tests
use these functions; the torch model in ``tfviz/model`` is the other, independent
implementation, and the tests compare the two (tests/test_reference.py, tests/test_weights.py).

    softmax(x)_j = e^{x_j} / Σ_m e^{x_m}                    (e^−∞ = 0: a hidden key gets 0)
    causal mask  = True where key j ≤ query i                (a decoder sees itself and the past)
    LN(x)        = (x − μ) / √(σ² + ε) · γ + β               (one vector at a time)
    RMS(x)       = x / √(mean(x²) + ε) · γ                   (no mean taken away, no β)
    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + M) V          (M = 0 where allowed, −∞ where not)
    FFN(x)       = (act(x W_gate) ⊙ x W_in) W_out            (gated: SwiGLU act = SiLU, GeGLU GELU)
    MoE(x)       = Σ_{i ∈ T} w_i E_i(x),  T = top-k           (w: softmax → top-k, or top-k → softmax)
    PE(k, 2i) = sin(k / base^(2i/d)),  PE(k, 2i+1) = cos(k / base^(2i/d))
    RoPE: pair i of q (or k) at position m turned by the angle m · θ_i, θ_i = base^(−2i/d)
    Shaw: e_ij = q_i · (k_j + a^K_{c(j−i)}) / √d_k,  z_i = Σ_j α_ij (v_j + a^V_{c(j−i)}),  c = clip to ±k
    T5:   s_ij = q_i · k_j (/ √d_k) + b_h(bucket(j − i)),  buckets exact near, log-spaced far

Everything is float64, whatever comes in: a learner's hand calculation and the model's float32
numbers are then compared against the same exact-as-possible reference.

>>> steps = attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [3.0]], scale=False)
>>> steps.scores.tolist(), steps.weights.round(4).tolist(), steps.output.round(4).tolist()
([[1.0, 0.0]], [[0.7311, 0.2689]], [[1.5379]])
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np


def softmax(scores, axis: int = -1, *, temperature: float = 1.0) -> np.ndarray:
    """Softmax along ``axis``; −∞ entries get weight 0, and a row of only −∞ gives zeros.

    The source's "Thinking Machines" scores, already divided by √d_k = 8:

    >>> softmax([14.0, 12.0]).round(4).tolist()
    [0.8808, 0.1192]
    >>> softmax([[0.0, 0.0, -np.inf], [-np.inf, -np.inf, -np.inf]]).tolist()
    [[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]

    ``temperature`` divides the scores first: below 1 sharper, above 1 flatter.
    """
    x = np.asarray(scores, dtype=np.float64) / temperature
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a row of only −∞ stays −∞, and e^−∞ = 0
    e = np.exp(x - top)  # (…): the largest entry becomes e^0 = 1, so nothing overflows
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def causal_mask(n_q: int, n_k: int | None = None, q_offset: int = 0) -> np.ndarray:
    """(n_q, n_k) bool, True where query i may see key j: j ≤ q_offset + i (itself and earlier).

    >>> causal_mask(3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]

    As an additive mask, −∞ above the diagonal (what the model writes into its scores):

    >>> np.where(causal_mask(3), 0.0, -np.inf).tolist()
    [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]

    One new query after two cached tokens (a KV cache) sees all three keys:

    >>> causal_mask(1, 3, q_offset=2).astype(int).tolist()
    [[1, 1, 1]]
    """
    n_k = n_q if n_k is None else n_k
    i = np.arange(q_offset, q_offset + n_q)[:, None]  # (n_q, 1) query positions
    j = np.arange(n_k)[None, :]  # (1, n_k) key positions
    return j <= i  # (n_q, n_k)


@dataclass(frozen=True)
class LayerNormSteps:
    """LayerNorm of every vector along the last axis, step by step."""

    mean: np.ndarray  # (…,) μ of each vector
    sigma: np.ndarray  # (…,) √(var + ε): what the model divides by (its ln.hook_scale)
    normalized: np.ndarray  # (…, d) (x − μ) / σ: mean 0, standard deviation ≈ 1
    output: np.ndarray  # (…, d) normalized · γ + β


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5) -> LayerNormSteps:
    """LN(x) = (x − μ) / √(var + ε) · γ + β for each vector x (last axis); γ = 1, β = 0 if None.

    The variance is the biased one (divided by d), as in torch's LayerNorm.

    >>> s = layer_norm([[1.0, 2.0, 3.0, 4.0]], eps=0.0)
    >>> float(s.mean[0]), round(float(s.sigma[0]), 4), s.normalized.round(3).tolist()
    (2.5, 1.118, [[-1.342, -0.447, 0.447, 1.342]])
    >>> layer_norm([[1.0, 3.0]], gamma=[2.0, 2.0], beta=[0.0, 1.0], eps=0.0).output.tolist()
    [[-2.0, 3.0]]
    """
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(-1)  # (…,)
    var = ((x - mean[..., None]) ** 2).mean(-1)  # (…,) biased, like torch's LayerNorm
    sigma = np.sqrt(var + eps)  # (…,)
    normalized = (x - mean[..., None]) / sigma[..., None]  # (…, d)
    output = normalized
    if gamma is not None:
        output = output * gamma
    if beta is not None:
        output = output + beta
    return LayerNormSteps(mean, sigma, normalized, output)


@dataclass(frozen=True)
class AttentionSteps:
    """Every step of scaled dot-product attention; the last two axes are (query, key)."""

    scores: np.ndarray  # (…, n_q, n_k) q · k
    scaled: np.ndarray  # (…, n_q, n_k) ÷ √d_k (unchanged when scale=False), plus any bias
    masked: np.ndarray  # (…, n_q, n_k) scaled, with −∞ where the mask is False
    weights: np.ndarray  # (…, n_q, n_k) softmax(masked / temperature): rows sum to 1
    output: np.ndarray  # (…, n_q, d_v) weights @ v


def attention(q, k, v, mask=None, scale: bool = True, *, temperature: float = 1.0,
              bias=None) -> AttentionSteps:
    """softmax(q kᵀ / √d_k + bias, −∞ where ``mask`` is False) v, keeping every step.

    q: (…, n_q, d_k), k: (…, n_k, d_k), v: (…, n_k, d_v); leading axes (heads, batch) are
    carried along. ``mask`` is a bool array that broadcasts to (…, n_q, n_k), True where a
    query may look (e.g. :func:`causal_mask`); None lets every query see every key. ``bias``
    is added after the scaling (ALiBi's distance penalty). A query that may see no key at all
    gets weights 0 and output 0.

    "flying arrows" (d_k = 2), as a decoder: the first word can only see itself.

    >>> q, k, v = [[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [-1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]
    >>> s = attention(q, k, v, mask=causal_mask(2))
    >>> s.scaled.round(4).tolist()
    [[0.7071, -0.7071], [0.0, 0.0]]
    >>> s.masked[0].tolist()[1], s.weights.round(4).tolist()
    (-inf, [[1.0, 0.0], [0.5, 0.5]])
    >>> s.output.round(4).tolist()
    [[1.0, 0.0], [0.5, 0.5]]
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys need the same size, got {q.shape[-1]} and {k.shape[-1]}")
    scores = q @ np.swapaxes(k, -1, -2)  # (…, n_q, d_k) @ (…, d_k, n_k) -> (…, n_q, n_k)
    scaled = scores / np.sqrt(q.shape[-1]) if scale else scores.copy()
    if bias is not None:
        scaled = scaled + bias
    masked = np.where(mask, scaled, -np.inf) if mask is not None else scaled.copy()
    weights = softmax(masked, temperature=temperature)  # (…, n_q, n_k)
    return AttentionSteps(scores, scaled, masked, weights, weights @ v)  # output: (…, n_q, d_v)


# The sinusoidal position table of the original transformer. Column pairs share one frequency;
# the first pair turns fastest (one radian per position), later pairs ever more slowly. The
# ``exponent``, ``swap`` and ``degrees`` switches reproduce three common slips, which the
# exercise checker uses to recognise them.
Exponent = Literal["2i", "i"]  # "i": the slip of dividing by base^(i/d)


def angles(n_positions: int, d: int, base: float = 10000.0,
           exponent: Exponent = "2i") -> np.ndarray:
    """k / base^(2i/d) for every position k and pair i: shape (n_positions, ceil(d/2)).

    >>> angles(2, 4, base=100).tolist()
    [[0.0, 0.0], [1.0, 0.1]]
    """
    pairs = np.arange((d + 1) // 2)
    power = 2 * pairs / d if exponent == "2i" else pairs / d
    k = np.arange(n_positions)[:, None]  # (n, 1)
    return k / np.power(float(base), power)[None, :]  # (n, d/2)


def positional_table(n_positions: int, d: int, base: float = 10000.0, *, exponent: Exponent = "2i",
                     swap: bool = False, degrees: bool = False) -> np.ndarray:
    """The (n_positions × d) table: sine in even columns, cosine in odd ones.

    With d = 4 and base = 100 the two angles of position k are k/1 and k/10:

    >>> positional_table(4, 4, base=100).round(2).tolist()[3]
    [0.14, -0.99, 0.3, 0.96]

    exponent="i" divides by base^(i/d) instead of base^(2i/d); swap=True puts cosine first;
    degrees=True reads the angle as degrees. All three are mistakes, off by default.
    """
    if n_positions < 0 or d < 1:
        raise ValueError("need n_positions >= 0 and d >= 1")
    a = angles(n_positions, d, base, exponent)
    if degrees:
        a = np.deg2rad(a)
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    table = np.empty((n_positions, d))
    table[:, 0::2] = first(a)[:, : (d + 1) // 2]
    table[:, 1::2] = second(a)[:, : d // 2]
    return table


@dataclass(frozen=True)
class RMSNormSteps:
    """RMSNorm of every vector along the last axis, step by step."""

    rms: np.ndarray  # (…,) √(mean(x²) + ε): what the model divides by (its ln.hook_scale)
    normalized: np.ndarray  # (…, d) x / rms: the same direction, root mean square ≈ 1
    output: np.ndarray  # (…, d) normalized · γ


def rms_norm(x, gamma=None, eps: float = 1e-6) -> RMSNormSteps:
    """RMS(x) = x / √(mean(x²) + ε) · γ for each vector x (last axis); γ = 1 if None.

    Unlike LayerNorm nothing is subtracted: [3, 4] keeps its direction, and its root mean
    square √((9 + 16) / 2) = 3.5355 becomes 1.

    >>> s = rms_norm([[3.0, 4.0]], eps=0.0)
    >>> round(float(s.rms[0]), 4), s.normalized.round(4).tolist()
    (3.5355, [[0.8485, 1.1314]])
    >>> rms_norm([[3.0, 4.0]], gamma=[1.0, 0.5], eps=0.0).output.round(4).tolist()
    [[0.8485, 0.5657]]
    """
    x = np.asarray(x, dtype=np.float64)
    rms = np.sqrt((x * x).mean(-1) + eps)  # (…,)
    normalized = x / rms[..., None]  # (…, d)
    output = normalized if gamma is None else normalized * np.asarray(gamma, dtype=np.float64)
    return RMSNormSteps(rms, normalized, output)


def silu(x) -> np.ndarray:
    """SiLU (swish): x · σ(x) = x / (1 + e^−x). silu(0) = 0, silu(large x) ≈ x, silu(−large) ≈ 0.

    >>> silu([0.0, 1.0, -1.0]).round(4).tolist()
    [0.0, 0.7311, -0.2689]
    """
    x = np.asarray(x, dtype=np.float64)
    return x / (1.0 + np.exp(-x))


def gelu(x) -> np.ndarray:
    """The exact GELU, x · Φ(x) = x · (1 + erf(x / √2)) / 2.

    >>> gelu([0.0, 1.0, -1.0]).round(4).tolist()
    [0.0, 0.8413, -0.1587]
    """
    x = np.asarray(x, dtype=np.float64)
    return x * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0))) / 2.0


def gelu_tanh(x) -> np.ndarray:
    """GELU's tanh approximation (GPT-2's, transformers' "gelu_new"):
    x · (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2; within 5e-4 of the exact GELU.

    >>> gelu_tanh([0.0, 1.0, -1.0]).round(4).tolist()
    [0.0, 0.8412, -0.1588]
    """
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


@dataclass(frozen=True)
class GatedFFNSteps:
    """A gated feed-forward block (SwiGLU, GeGLU), step by step; names as the model's hooks."""

    gate: np.ndarray  # (…, d_ff) x W_gate: what the activation reads (mlp.hook_pre)
    up: np.ndarray  # (…, d_ff) x W_in: the values that are let through (mlp.hook_pre_linear)
    hidden: np.ndarray  # (…, d_ff) act(gate) ⊙ up (mlp.hook_post)
    output: np.ndarray  # (…, d) hidden W_out


def gated_ffn(x, W_gate, W_in, W_out, activation: Literal["swiglu", "geglu"] = "swiglu"
              ) -> GatedFFNSteps:
    """FFN(x) = (act(x W_gate) ⊙ x W_in) W_out, act = SiLU (swiglu) or exact GELU (geglu).

    Matrices as in ``tfviz.weights``: W_gate, W_in (d, d_ff), W_out (d_ff, d). A unit whose gate
    is 0 passes nothing; one whose gate is large passes its value almost as it is:

    >>> s = gated_ffn([[1.0, 2.0]], W_gate=[[0.0, 10.0], [0.0, 0.0]], W_in=[[1.0, 1.0], [1.0, 1.0]],
    ...               W_out=[[1.0], [1.0]])
    >>> s.gate.tolist(), s.up.tolist(), s.hidden.round(4).tolist(), s.output.round(4).tolist()
    ([[0.0, 10.0]], [[3.0, 3.0]], [[0.0, 29.9986]], [[29.9986]])
    """
    if activation not in ("swiglu", "geglu"):
        raise ValueError(f"activation must be 'swiglu' or 'geglu', not {activation!r}")
    x = np.asarray(x, dtype=np.float64)
    gate = x @ np.asarray(W_gate, dtype=np.float64)  # (…, d) @ (d, d_ff) -> (…, d_ff)
    up = x @ np.asarray(W_in, dtype=np.float64)  # (…, d_ff)
    hidden = (silu(gate) if activation == "swiglu" else gelu(gate)) * up  # (…, d_ff)
    return GatedFFNSteps(gate, up, hidden, hidden @ np.asarray(W_out, dtype=np.float64))  # (…, d)


def _activation(name: str, x: np.ndarray) -> np.ndarray:
    """A dense block's activation by the config's name (relu, gelu, gelu_tanh)."""
    if name == "relu":
        return np.maximum(x, 0.0)
    return gelu_tanh(x) if name == "gelu_tanh" else gelu(x)


# A mixture-of-experts layer: a router scores every expert, each token goes to its k best, and
# its output is their outputs weighted. Two rules give the weights; both choose the same experts.
@dataclass(frozen=True)
class RoutingSteps:
    """A router's decision for every token (leading axes), step by step; names as the hooks."""

    probs: np.ndarray  # (…, E) softmax(h) over every expert (mlp.hook_gate_probs)
    indices: np.ndarray  # (…, k) the chosen experts, best first (mlp.hook_expert_indices)
    weights: np.ndarray  # (…, k) each chosen expert's weight (mlp.hook_expert_weights)


def route(logits, k: int, rule: Literal["softmax_topk", "topk_softmax"] = "softmax_topk",
          renormalize: bool = False) -> RoutingSteps:
    """The chosen experts and their weights from router logits h (…, E).

        softmax_topk (Switch, Mixtral)  p = softmax(h);  T = the k largest p;  w_i = p_i,
                                        or p_i / Σ_{j ∈ T} p_j with ``renormalize`` (Mixtral)
        topk_softmax (Granite)          T = the k largest h;  w = softmax(h_T) over those k

    softmax keeps the order of h, so both choose the same T; and e^{h_i} / Σ_{j ∈ T} e^{h_j}
    is p_i / Σ_{j ∈ T} p_j, so Granite's weights are Mixtral's renormalised ones. Ties go to the
    lower expert number.

    >>> s = route([2.0, 1.0, 0.0, 0.0], k=2)
    >>> s.probs.round(4).tolist(), s.indices.tolist(), s.weights.round(4).tolist()
    ([0.6103, 0.2245, 0.0826, 0.0826], [0, 1], [0.6103, 0.2245])
    >>> route([2.0, 1.0, 0.0, 0.0], k=2, renormalize=True).weights.round(4).tolist()
    [0.7311, 0.2689]
    >>> route([2.0, 1.0, 0.0, 0.0], k=2, rule="topk_softmax").weights.round(4).tolist()
    [0.7311, 0.2689]
    """
    if rule not in ("softmax_topk", "topk_softmax"):
        raise ValueError(f"rule must be 'softmax_topk' or 'topk_softmax', not {rule!r}")
    h = np.asarray(logits, dtype=np.float64)
    probs = softmax(h)  # (…, E)
    indices = np.argsort(-h, axis=-1, kind="stable")[..., :k]  # (…, k): the largest h is the largest p
    if rule == "topk_softmax":
        weights = softmax(np.take_along_axis(h, indices, axis=-1))  # (…, k)
    else:
        weights = np.take_along_axis(probs, indices, axis=-1)  # (…, k)
        if renormalize:
            weights = weights / weights.sum(-1, keepdims=True)
    return RoutingSteps(probs, indices, weights)


@dataclass(frozen=True)
class MoESteps:
    """A mixture-of-experts layer, step by step (no capacity: every chosen expert serves)."""

    logits: np.ndarray  # (…, E) h = x W_r (mlp.hook_router_logits)
    routing: RoutingSteps
    output: np.ndarray  # (…, d) Σ_{i ∈ T} w_i E_i(x) (hook_mlp_out, before any multiplier)


def moe(x, W_router, W_in, W_out, k: int, *, W_gate=None, b_in=None, b_out=None,
        activation: str = "swiglu", rule: Literal["softmax_topk", "topk_softmax"] = "softmax_topk",
        renormalize: bool = False) -> MoESteps:
    """MoE(x) = Σ_{i ∈ T} w_i E_i(x) for each token x (…, d), with :func:`route`'s T and w.

    Matrices as ``tfviz.weights`` exports one layer: W_router (d, E) (its "W_gate"), and per
    expert W_in (E, d, d_ff), W_out (E, d_ff, d), b_in (E, d_ff), b_out (E, d); a gated expert
    (swiglu, geglu) also has W_gate (E, d, d_ff), "experts.W_gate":

        E_i(x) = act(x W_in^i + b_in^i) W_out^i + b_out^i          (relu, gelu, gelu_tanh)
        E_i(x) = (act(x W_gate^i) ⊙ x W_in^i) W_out^i              (swiglu, geglu)

    Two experts that double and negate, top-1: the token goes to the one its router prefers.

    >>> s = moe([[1.0, 0.0]], W_router=[[3.0, 0.0], [0.0, 0.0]], W_in=[np.eye(2), np.eye(2)],
    ...         W_out=[2 * np.eye(2), -np.eye(2)], k=1, activation="relu", renormalize=True)
    >>> s.routing.indices.tolist(), s.output.tolist()
    ([[0]], [[2.0, 0.0]])
    """
    x = np.asarray(x, dtype=np.float64)
    logits = x @ np.asarray(W_router, dtype=np.float64)  # (…, d) @ (d, E) -> (…, E)
    steps = route(logits, k, rule, renormalize)
    W_in, W_out = np.asarray(W_in, dtype=np.float64), np.asarray(W_out, dtype=np.float64)
    gated = activation in ("swiglu", "geglu")
    outputs = []  # each expert on every token: (…, d) each
    for e in range(W_in.shape[0]):
        if gated:
            out = gated_ffn(x, np.asarray(W_gate, dtype=np.float64)[e], W_in[e], W_out[e], activation).output
        else:
            pre = x @ W_in[e] + (0.0 if b_in is None else np.asarray(b_in, dtype=np.float64)[e])
            out = _activation(activation, pre) @ W_out[e]  # (…, d)
            out = out + (0.0 if b_out is None else np.asarray(b_out, dtype=np.float64)[e])
        outputs.append(out)
    every = np.stack(outputs, axis=-2)  # (…, E, d)
    chosen = np.take_along_axis(every, steps.indices[..., None], axis=-2)  # (…, k, d)
    return MoESteps(logits, steps, (steps.weights[..., None] * chosen).sum(-2))  # (…, d)


@dataclass(frozen=True)
class DecoderSteps:
    """A modern decoder's forward pass in float64; names as the model's hooks."""

    resid_pre: np.ndarray  # (L, T, d) what enters each block (blocks.i.hook_resid_pre)
    resid_final: np.ndarray  # (T, d) the last block's output, before the final norm
    patterns: np.ndarray  # (L, H, T, T) every layer's attention pattern (hook_pattern)
    routings: tuple[RoutingSteps, ...]  # each layer's routing; () for dense feed-forward blocks
    logits: np.ndarray  # (T, vocab)


def modern_decoder(ids, W, cfg) -> DecoderSteps:
    """The forward pass of a Llama-shaped decoder, from its weights alone: pre-norm blocks with
    RMSNorm, RoPE in rotate_half pairs (with its scaling), grouped-query attention (QK-norm if
    the weights have one), a gated feed-forward block or a mixture of experts
    (:func:`moe`), a final RMSNorm; and Granite's four multipliers:

        x₀      = m_emb · E[ids]                                   (embedding_multiplier)
        a       = softmax(m_att · q kᵀ + M) v W_O                  (m_att = 1/√d_head unless
                                                                    attention_multiplier)
        x       ← x + m_res · a,   then   x ← x + m_res · FFN(RMS(x))   (residual_multiplier)
        logits  = RMS(x_L) W_U / s                                 (s = logits_scaling)

    ``W`` is ``tfviz.weights.export_weights``'s mapping; ``cfg`` the ModelConfig, read for its
    heads, RoPE, ε, routing rule and multipliers. With every multiplier 1 (and m_att = 1/√d_head)
    this is a Llama, Mistral or Mixtral; a MoE layer here has no capacity limit.
    """
    if not (cfg.norm == "pre" and cfg.norm_type == "rmsnorm" and cfg.final_norm and cfg.positional == "rope"
            and cfg.rope_pairs == "halves" and cfg.activation in ("swiglu", "geglu")
            and getattr(cfg, "moe_capacity_factor", None) is None):
        raise ValueError("modern_decoder computes pre-RMSNorm blocks with rotate_half RoPE, a final "
                         "RMSNorm and a gated feed-forward block (or uncapped gated experts)")
    ids = np.asarray(ids)
    T, L = len(ids), W["W_Q"].shape[0]
    H, Hkv, dh = W["W_Q"].shape[1], W["W_K"].shape[1], W["W_Q"].shape[3]

    def w(name: str, layer: int | None = None) -> np.ndarray:
        a = np.asarray(W[name], dtype=np.float64)
        return a if layer is None else a[layer]

    def b(name: str, layer: int, per_head: bool = True) -> np.ndarray | float:
        """A bias of one layer, per head (heads, 1, dh) to add to (heads, T, dh); 0 if none."""
        if name not in W:
            return 0.0
        return w(name, layer)[:, None, :] if per_head else w(name, layer)

    m_att = 1.0 / math.sqrt(dh) if cfg.attention_multiplier is None else cfg.attention_multiplier
    inv_freq = rope_inv_freq(cfg.rope_dim, cfg.pos_base, cfg.rope_scaling)  # (r/2,)
    positions, mask = np.arange(T), causal_mask(T)
    x = cfg.embedding_multiplier * w("W_E")[ids]  # (T, d)
    resid, patterns, routings = [], [], []
    for i in range(L):
        resid.append(x)
        h = rms_norm(x, w("ln1.w", i), cfg.ln_eps).output  # (T, d)
        q = np.einsum("td,hde->hte", h, w("W_Q", i)) + b("b_Q", i)  # (H, T, dh)
        k = np.einsum("td,hde->hte", h, w("W_K", i)) + b("b_K", i)  # (Hkv, T, dh)
        v = np.einsum("td,hde->hte", h, w("W_V", i)) + b("b_V", i)  # (Hkv, T, dh)
        if "q_norm.w" in W:  # Qwen3: each head's q and k to rms 1, times their own γ
            q = rms_norm(q, w("q_norm.w", i), cfg.ln_eps).output
            k = rms_norm(k, w("k_norm.w", i), cfg.ln_eps).output
        q, k = rope(q, positions, inv_freq, "halves"), rope(k, positions, inv_freq, "halves")
        group = H // Hkv  # query heads per key/value head
        steps = attention(q * m_att, np.repeat(k, group, axis=0), np.repeat(v, group, axis=0), mask,
                          scale=False)  # (H, T, T) weights; m_att · q kᵀ = (m_att q) kᵀ
        patterns.append(steps.weights)
        a = np.einsum("hte,hed->td", steps.output, w("W_O", i)) + b("b_O", i, per_head=False)  # (T, d)
        x = x + cfg.residual_multiplier * a
        h = rms_norm(x, w("ln2.w", i), cfg.ln_eps).output  # (T, d)
        if "experts.W_in" in W:
            s = moe(h, w("W_gate", i), w("experts.W_in", i), w("experts.W_out", i), cfg.moe_top_k,
                    W_gate=w("experts.W_gate", i), activation=cfg.activation, rule=cfg.moe_router,
                    renormalize=cfg.moe_renormalize)
            routings.append(s.routing)
            f = s.output  # (T, d)
        else:
            f = gated_ffn(h, w("W_gate", i), w("W_in", i), w("W_out", i), cfg.activation).output
        x = x + cfg.residual_multiplier * f
    final = rms_norm(x, w("ln_final.w"), cfg.ln_eps).output  # (T, d)
    W_U = w("W_U") if "W_U" in W else w("W_E").T  # (d, vocab)
    return DecoderSteps(np.stack(resid), x, np.stack(patterns), tuple(routings),
                        final @ W_U / cfg.logits_scaling)


def rope_inv_freq(dim: int, base: float = 10000.0, scaling=None) -> np.ndarray:
    """θ_i = base^(−2i/dim) for the dim/2 pairs, the angle pair i turns per position; stretched
    when ``scaling`` (a ``tfviz.config.RopeScaling``: kind, factor, …) is given.

    linear: θ_i / factor, as if every position were factor times closer (position
    interpolation). llama3 (Llama 3.1), by each pair's wavelength λ_i = 2π / θ_i, with L the
    original context (original_max_position_embeddings), lo and hi its low/high_freq_factor:

        λ_i < L / hi          θ_i                     (fast pairs: kept)
        λ_i > L / lo          θ_i / factor            (slow pairs: stretched)
        otherwise             (1 − s) θ_i / factor + s θ_i,   s = (L / λ_i − lo) / (hi − lo)

    >>> rope_inv_freq(4, base=100.0).tolist()
    [1.0, 0.1]
    """
    theta = float(base) ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)  # (dim/2,)
    if scaling is None:
        return theta
    if scaling.kind == "linear":
        return theta / scaling.factor
    if scaling.kind != "llama3":
        raise ValueError(f"unknown rope scaling {scaling.kind!r}")
    L, lo, hi = scaling.original_max_position_embeddings, scaling.low_freq_factor, scaling.high_freq_factor
    wavelen = 2 * np.pi / theta  # (dim/2,)
    s = (L / wavelen - lo) / (hi - lo)
    between = (1 - s) * theta / scaling.factor + s * theta
    return np.where(wavelen < L / hi, theta, np.where(wavelen > L / lo, theta / scaling.factor, between))


def rope(x, positions, inv_freq, pairs: Literal["adjacent", "halves"] = "adjacent") -> np.ndarray:
    """Turn each pair of dimensions of x (…, T, d) at position m by m · θ_i (θ = ``inv_freq``).

    The first 2·len(inv_freq) dimensions turn; any after them pass as they are (partial rotary).
    ``pairs``: "adjacent" pairs (x_2i, x_2i+1) (the RoFormer paper), "halves" (x_i, x_i+r/2)
    (Llama's rotate_half). A pair (a, b) turned by φ becomes (a cos φ − b sin φ, a sin φ + b cos φ).

    >>> rope([[1.0, 0.0]], [1], [np.pi / 2]).round(6).tolist()       # a quarter turn
    [[0.0, 1.0]]
    >>> rope([[1.0, 2.0, 0.0, 0.0]], [1], [np.pi / 2, 0.0], pairs="halves").round(6).tolist()
    [[0.0, 2.0, 1.0, 0.0]]
    """
    x = np.asarray(x, dtype=np.float64)
    inv_freq = np.asarray(inv_freq, dtype=np.float64)
    r = 2 * len(inv_freq)
    angle = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]  # (T, r/2)
    c, s = np.cos(angle), np.sin(angle)
    out = x.copy()
    if pairs == "halves":
        a, b = x[..., : r // 2], x[..., r // 2: r]  # (…, T, r/2) each
        out[..., : r // 2], out[..., r // 2: r] = a * c - b * s, a * s + b * c
    else:
        a, b = x[..., 0:r:2], x[..., 1:r:2]  # (…, T, r/2) each
        out[..., 0:r:2], out[..., 1:r:2] = a * c - b * s, a * s + b * c
    return out


# Relative positions inside attention. Both read the distance j − i from query i to key j
# (negative: the key came earlier). Shaw et al. (2018) learn a key and a value vector per
# clipped distance; T5 (Raffel et al. 2020) learns one number per head and distance bucket.
@dataclass(frozen=True)
class RelativeAttentionSteps:
    """Shaw et al.'s relative attention, step by step; the last two axes of the maps are
    (query, key). Names as the model's hooks."""

    index: np.ndarray  # (n_q, n_k) table row of each pair: clip(j − i, −k, k) + k
    rel_scores: np.ndarray  # (…, n_q, n_k) q_i · a^K_ij (attn.hook_rel_scores)
    scores: np.ndarray  # (…, n_q, n_k) q_i · (k_j + a^K_ij) (attn.hook_scores_raw)
    scaled: np.ndarray  # (…, n_q, n_k) ÷ √d_k (unchanged when scale=False)
    masked: np.ndarray  # (…, n_q, n_k) −∞ where the mask is False
    weights: np.ndarray  # (…, n_q, n_k) softmax: rows sum to 1
    rel_output: np.ndarray  # (…, n_q, d_v) Σ_j α_ij a^V_ij (attn.hook_rel_z)
    output: np.ndarray  # (…, n_q, d_v) Σ_j α_ij (v_j + a^V_ij)


def relative_attention(q, k, v, table_k, table_v, clip: int, mask=None, scale: bool = True,
                       q_offset: int = 0) -> RelativeAttentionSteps:
    """Shaw et al.'s self-attention with relative position representations:

        e_ij = q_i · (k_j + a^K_ij) / √d_k,   α_i = softmax_j(e_ij),   z_i = Σ_j α_ij (v_j + a^V_ij)

    where a^K_ij = table_k[clip(j − i, −k, k) + k] and likewise a^V (tables (2k + 1, d), one
    per layer, shared by its heads). Query i sits at position q_offset + i, key j at j.

    One query at position 1, two keys, k = 1 (rows: distance −1, 0, +1), no scale:

    >>> s = relative_attention([[1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.0], [0.0]],
    ...                        table_k=[[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]],
    ...                        table_v=[[2.0], [0.0], [0.0]], clip=1, scale=False, q_offset=1)
    >>> s.index.tolist(), s.scores.tolist(), s.weights.round(4).tolist(), s.output.round(4).tolist()
    ([[0, 1]], [[1.0, 0.0]], [[0.7311, 0.2689]], [[1.4621]])
    """
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    table_k = np.asarray(table_k, dtype=np.float64)
    table_v = np.asarray(table_v, dtype=np.float64)
    n_q, n_k = q.shape[-2], k.shape[-2]
    i = np.arange(q_offset, q_offset + n_q)[:, None]  # (n_q, 1) query positions
    j = np.arange(n_k)[None, :]  # (1, n_k) key positions
    index = np.clip(j - i, -clip, clip) + clip  # (n_q, n_k)
    a_k, a_v = table_k[index], table_v[index]  # (n_q, n_k, d) each
    rel_scores = np.einsum("...qd,qkd->...qk", q, a_k)  # (…, n_q, n_k)
    scores = q @ np.swapaxes(k, -1, -2) + rel_scores  # (…, n_q, n_k)
    scaled = scores / np.sqrt(q.shape[-1]) if scale else scores.copy()
    masked = np.where(mask, scaled, -np.inf) if mask is not None else scaled.copy()
    weights = softmax(masked)  # (…, n_q, n_k)
    rel_output = np.einsum("...qk,qkd->...qd", weights, a_v)  # (…, n_q, d_v)
    return RelativeAttentionSteps(index, rel_scores, scores, scaled, masked, weights, rel_output,
                                  weights @ v + rel_output)


def t5_bucket(relative_position, bidirectional: bool, n_buckets: int = 32,
              max_distance: int = 128) -> np.ndarray:
    """T5's bucket of each distance j − i, written as the formula (float64).

    A decoder (causal) gives every bucket to keys at or before the query: its distance is
    a = max(i − j, 0), and keys after it (masked anyway) share bucket 0. An encoder
    (bidirectional) halves the buckets: N = n_buckets / 2 for each direction, the second half
    for keys after the query, and a = |j − i|. Then, with E = N / 2 exact buckets,

        bucket = a                                                         if a < E
               = min(E + ⌊ln(a / E) / ln(max_distance / E) · (N − E)⌋, N − 1)   otherwise

    so near distances get a bucket each and far ones share log-spaced ranges; every distance
    past max_distance shares the last.

    >>> t5_bucket(-np.array([0, 1, 15, 16, 20, 40, 127, 128, 500]), bidirectional=False).tolist()
    [0, 1, 15, 16, 17, 23, 31, 31, 31]
    >>> t5_bucket(np.array([-9, -1, 0, 1, 9]), bidirectional=True).tolist()
    [8, 1, 0, 17, 24]
    """
    rel = np.asarray(relative_position, dtype=np.int64)
    n = n_buckets // 2 if bidirectional else n_buckets
    upper = np.where(rel > 0, n, 0) if bidirectional else np.zeros_like(rel)
    a = np.abs(rel) if bidirectional else np.maximum(-rel, 0)  # (…,) the distance, ≥ 0
    exact = n // 2
    with np.errstate(divide="ignore"):  # ln 0 only where a < exact, which takes the first branch
        far = exact + np.floor(np.log(a / exact) / np.log(max_distance / exact) * (n - exact))
    far = np.minimum(np.where(a < exact, 0, far), n - 1).astype(np.int64)
    return upper + np.where(a < exact, a, far)


def t5_bias(table, n_q: int, n_k: int, bidirectional: bool, max_distance: int = 128,
            q_offset: int = 0) -> np.ndarray:
    """(H, n_q, n_k): T5's bias b_h(bucket(j − i)) for query positions q_offset … and keys 0 …,
    read from ``table`` (n_buckets, H), one number per bucket and head.

    >>> t5_bias([[0.5, -1.0], [0.1, 0.2], [0.0, 0.0], [0.0, 0.0]], 1, 2, bidirectional=False,
    ...         max_distance=3, q_offset=1).tolist()     # keys at distance 1 and 0
    [[[0.1, 0.5]], [[0.2, -1.0]]]
    """
    table = np.asarray(table, dtype=np.float64)
    i = np.arange(q_offset, q_offset + n_q)[:, None]  # (n_q, 1)
    j = np.arange(n_k)[None, :]  # (1, n_k)
    buckets = t5_bucket(j - i, bidirectional, len(table), max_distance)  # (n_q, n_k)
    return np.moveaxis(table[buckets], -1, 0)  # (n_q, n_k, H) -> (H, n_q, n_k)
