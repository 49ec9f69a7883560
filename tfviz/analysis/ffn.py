"""The feed-forward sublayer, and why attention alone cannot do its job (pure numpy).

    FFN(x) = act(x W_1 + b_1) W_2 + b_2,   act = ReLU (max(0, ·)) or GELU

Each of the d_ff hidden units ("neurons") is one column of W_1 followed by the activation;
``mlp.hook_post`` holds their values after the activation, one row per token.

A gated block (SwiGLU: Llama, Mistral, Qwen, llama-tiny; GeGLU) gives each neuron two columns,
a gate and an "up" value, and lets through act(gate) times up:

    FFN(x) = (SiLU(x W_gate) ⊙ x W_in) W_out        SiLU(u) = u σ(u) = u / (1 + e^−u)

There ``mlp.hook_pre`` is the gate x W_gate, ``mlp.hook_pre_linear`` the up value x W_in and
``mlp.hook_post`` their gated product (TransformerLens's names). ``neuron_steps`` takes one
token's strongest neurons through these steps, then down through W_out:

>>> steps = step_values("swiglu", pre=np.array([[0.0, 2.0]]), up=np.array([[5.0, 3.0]]))
>>> steps.round(4).tolist()       # gate, SiLU(gate), up, product, for each neuron
[[[0.0, 0.0, 5.0, 0.0], [2.0, 1.7616, 3.0, 5.2848]]]

Attention, by contrast, gives each head's output as a weighted average of value vectors,
with weights that are >= 0 and sum to 1:

>>> weights = np.array([0.25, 0.75])
>>> values = np.array([[0.0, 4.0], [4.0, 0.0]])
>>> mix = mixing(weights, values)
>>> mix.z.tolist(), bool(mix.inside)
([3.0, 1.0], True)

Such a mix can never leave the box spanned by the value vectors, coordinate by coordinate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.reference import gelu, gelu_tanh, silu

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace


ACTIVATIONS = {
    "relu": ("ReLU", r"\mathrm{ReLU}(u) = \max(0, u)"),
    "gelu": ("GELU", r"\mathrm{GELU}(u) = u\,\Phi(u)"),
    "gelu_tanh": ("GELU (tanh form)",
                  r"\mathrm{GELU}(u) \approx \tfrac{u}{2}\left(1 + \tanh\left(\sqrt{2/\pi}\,(u + 0.044715\,u^3)\right)\right)"),
    "swiglu": ("SwiGLU", r"\mathrm{SiLU}(u) = u\,\sigma(u) = \frac{u}{1 + e^{-u}}"),
    "geglu": ("GeGLU", r"\mathrm{GELU}(u) = u\,\Phi(u)"),
}
#: The function a gated block applies to its gate (the "act" of act(gate) ⊙ up).
GATE_FUNCTIONS = {"swiglu": "SiLU", "geglu": "GELU"}


def activation_info(config) -> tuple[str, str]:
    """(name, LaTeX of the function applied to each neuron) for the model's feed-forward
    activation: ("ReLU", …), ("GELU", …), and for a gated block ("SwiGLU", SiLU's formula)."""
    return ACTIVATIONS[config.activation]


def activate(activation: str, u) -> np.ndarray:
    """The function each neuron applies, in float64: ReLU, GELU (exact or tanh form), or for a
    gated block the function of its gate (SiLU for swiglu, exact GELU for geglu)."""
    u = np.asarray(u, dtype=np.float64)
    if activation == "relu":
        return np.maximum(u, 0.0)
    if activation == "swiglu":
        return silu(u)
    if activation == "gelu_tanh":
        return gelu_tanh(u)
    return gelu(u)  # gelu, geglu


def step_columns(activation: str) -> tuple[str, ...]:
    """The names of a neuron's steps, as ``step_values`` orders them.

    >>> step_columns("swiglu")
    ('gate = x·W_gate', 'SiLU(gate)', 'up = x·W_in', 'SiLU(gate) × up')
    >>> step_columns("relu")
    ('x·W₁ + b₁', 'ReLU(x·W₁ + b₁)')
    """
    if activation in GATE_FUNCTIONS:
        f = GATE_FUNCTIONS[activation]
        return ("gate = x·W_gate", f"{f}(gate)", "up = x·W_in", f"{f}(gate) × up")
    name = ACTIVATIONS[activation][0].split()[0]
    return ("x·W₁ + b₁", f"{name}(x·W₁ + b₁)")


def step_values(activation: str, pre: np.ndarray, up: np.ndarray | None = None) -> np.ndarray:
    """Each neuron's steps, computed here from the trace's inputs to the activation:
    (…, n, 4) gate, act(gate), up, act(gate)·up for a gated block (``pre`` the gate
    x W_gate, ``up`` x W_in), (…, n, 2) pre, act(pre) otherwise."""
    pre = np.asarray(pre, dtype=np.float64)
    act = activate(activation, pre)
    if activation not in GATE_FUNCTIONS:
        return np.stack([pre, act], axis=-1)
    up = np.asarray(up, dtype=np.float64)
    return np.stack([pre, act, up, act * up], axis=-1)


def has_dense_ffn(trace: Trace, layer: int = 0) -> bool:
    """True when block ``layer`` has a plain feed-forward network (not experts)."""
    return f"blocks.{layer}.mlp.hook_post" in trace.activations


def neuron_acts(trace: Trace, layer: int) -> np.ndarray:
    """(T, d_ff) hidden activations after the nonlinearity."""
    return trace.activations[f"blocks.{layer}.mlp.hook_post"]


def top_neurons(acts: np.ndarray, n: int) -> np.ndarray:
    """Indices of the ``n`` neurons with the largest activation anywhere in the text.

    >>> top_neurons(np.array([[0.0, 5.0, 1.0], [2.0, 0.0, 0.0]]), 2).tolist()
    [1, 0]
    """
    peak = acts.max(axis=0)  # (d_ff,)
    return np.argsort(-peak, kind="stable")[:n]


def fraction_active(acts: np.ndarray) -> np.ndarray:
    """Share of neurons with a positive value, per token. [[1, 0, 2, 0]] -> [0.5]."""
    return (acts > 0).mean(axis=-1)


def fraction_open(trace: Trace, layer: int) -> np.ndarray:
    """A gated block's share of neurons whose gate is open (x W_gate > 0, so SiLU(gate) > 0),
    per token: the gated counterpart of ``fraction_active``, read from mlp.hook_pre."""
    return fraction_active(trace.activations[f"blocks.{layer}.mlp.hook_pre"])


def top_per_token(acts: np.ndarray, k: int = 3) -> list[list[tuple[int, float]]]:
    """For each token, its ``k`` strongest neurons as (neuron, value), strongest first.

    >>> top_per_token(np.array([[0.1, 0.9, 0.5]]), 2)
    [[(1, 0.9), (2, 0.5)]]
    """
    order = np.argsort(-acts, axis=-1, kind="stable")[:, :k]  # (T, k)
    return [[(int(j), float(acts[t, j])) for j in row] for t, row in enumerate(order)]


def top_table(tokens, acts: np.ndarray, k: int = 3) -> list[dict]:
    """Rows for a table: each token, its share of active neurons and its strongest neurons."""
    active = fraction_active(acts)
    return [{"token": f"{t} {tok}", "active": f"{active[t]:.0%}",
             "strongest neurons": ", ".join(f"n{j} ({v:.2f})" for j, v in top)}
            for t, (tok, top) in enumerate(zip(tokens, top_per_token(acts, k)))]


@dataclass(frozen=True)
class Mixing:
    weights: np.ndarray  # (Tk,) attention weights of one query in one head
    values: np.ndarray  # (Tk, dh) value vectors
    z: np.ndarray  # (dh,) sum_j weights_j * values_j
    low: np.ndarray  # (dh,) smallest value per coordinate, over the keys it may see
    high: np.ndarray  # (dh,) largest value per coordinate
    model_z: np.ndarray | None = None  # (dh,) the model's own head output, when known

    @property
    def weight_sum(self) -> float:
        return float(self.weights.sum())

    @property
    def min_weight(self) -> float:
        return float(self.weights.min())

    @property
    def model_gap(self) -> float:
        """Largest difference between the rebuilt z and the model's (nan if not known)."""
        return float("nan") if self.model_z is None else float(np.abs(self.z - self.model_z).max())

    @property
    def inside(self) -> bool:
        """Every coordinate of z lies between the smallest and largest value's coordinate."""
        tol = 1e-5 * max(1.0, float(np.abs(self.values).max(initial=0.0)))
        return bool(np.all(self.z >= self.low - tol) and np.all(self.z <= self.high + tol))


def mixing(weights: np.ndarray, values: np.ndarray, model_z: np.ndarray | None = None) -> Mixing:
    """z = Σ_j w_j v_j, with the per-coordinate range of the values that get weight."""
    weights = np.asarray(weights, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    seen = values[weights > 0] if (weights > 0).any() else values  # masked keys do not count
    return Mixing(weights, values, weights @ values, seen.min(axis=0), seen.max(axis=0), model_z)


def head_values(trace: Trace, layer: int, head: int) -> np.ndarray:
    """(Tk, dh) value vectors that query head ``head`` reads (grouped-query aware)."""
    v = trace.activations[f"blocks.{layer}.attn.hook_v"]  # (Tk, Hkv, dh)
    group = trace.config.n_heads // v.shape[1]
    return v[:, head // group, :]


def attention_mixing(trace: Trace, layer: int, head: int, pos: int) -> Mixing:
    """One query's head output rebuilt from its weights and values, with the model's own z."""
    weights = trace.activations[f"blocks.{layer}.attn.hook_pattern"][head, pos]  # (Tk,)
    model_z = trace.activations[f"blocks.{layer}.attn.hook_z"][pos, head]  # (dh,)
    return mixing(weights, head_values(trace, layer, head), model_z)


# ----- every view at once (the page's instant charts switch layer, head and token) -----------


@dataclass(frozen=True)
class NeuronViews:
    """Each layer's strongest neurons, ranked, for every token (the FFN page's first chart)."""

    ids: np.ndarray  # (L, n) neuron ids of each layer, largest peak first (top_neurons)
    acts: np.ndarray  # (L, T, n) their activations, columns in that order
    active: np.ndarray  # (L, T) share of all d_ff neurons above zero (fraction_active)


def neuron_views(trace: Trace, n: int) -> NeuronViews:
    """``top_neurons(acts, n)`` and ``fraction_active`` for every layer of a dense model."""
    per_layer = [neuron_acts(trace, layer) for layer in range(trace.config.n_layers)]  # (T, d_ff) each
    ids = np.stack([top_neurons(acts, n) for acts in per_layer])  # (L, n)
    chosen = np.stack([acts[:, top] for acts, top in zip(per_layer, ids)])  # (L, T, n)
    return NeuronViews(ids, chosen, np.stack([fraction_active(a) for a in per_layer]))


@dataclass(frozen=True)
class MixingViews:
    """``attention_mixing`` for every layer, head and query at once, as arrays."""

    weights: np.ndarray  # (L, H, Tq, Tk) attention weights
    values: np.ndarray  # (L, H, Tk, dh) the value vectors each query head reads
    z: np.ndarray  # (L, H, Tq, dh) the mixes z = Σ_j α_j v_j, rebuilt
    inside: np.ndarray  # (L, H, Tq) True where z lies inside its values' range
    model_gap: float  # largest |rebuilt z − the model's attn.hook_z| anywhere

    def summary(self) -> dict[str, float | int]:
        """The convexity check over every layer at once: (layer, head, query) triples, the
        smallest weight, the largest |row sum − 1| and how many mixes lie inside."""
        return {"triples": int(self.inside.size), "min weight": float(self.weights.min()),
                "largest |sum − 1|": float(np.abs(self.weights.sum(axis=-1) - 1).max()),
                "inside": int(self.inside.sum())}


def mixing_views(trace: Trace) -> MixingViews:
    """Every (layer, head, query) of ``attention_mixing``, vectorised; the same tolerance for
    "inside" as ``Mixing.inside``."""
    layers = range(trace.config.n_layers)
    a = trace.activations
    weights = np.stack([a[f"blocks.{i}.attn.hook_pattern"] for i in layers]).astype(np.float64)
    H = weights.shape[1]
    values = np.stack([np.stack([head_values(trace, i, h) for h in range(H)]) for i in layers])
    values = values.astype(np.float64)  # (L, H, Tk, dh)
    z = weights @ values  # (L, H, Tq, dh)
    model_z = np.stack([a[f"blocks.{i}.attn.hook_z"] for i in layers]).transpose(0, 2, 1, 3)
    seen = (weights > 0)[..., None]  # (L, H, Tq, Tk, 1): keys that get weight
    seen = seen | ~seen.any(axis=3, keepdims=True)  # none at all: every key counts, as mixing()
    v = values[:, :, None]  # (L, H, 1, Tk, dh)
    low = np.where(seen, v, np.inf).min(axis=3)  # (L, H, Tq, dh)
    high = np.where(seen, v, -np.inf).max(axis=3)
    tol = 1e-5 * np.maximum(1.0, np.abs(values).max(axis=(2, 3)))[..., None, None]  # (L, H, 1, 1)
    inside = np.all((z >= low - tol) & (z <= high + tol), axis=-1)  # (L, H, Tq)
    return MixingViews(weights, values, z, inside, float(np.abs(z - model_z).max()))


# ----- one token's neurons, step by step, then down (lesson 10's worked neurons) ------------


@dataclass(frozen=True)
class NeuronSteps:
    """For every layer and token, its ``m`` strongest neurons (largest |act·…| in mlp.hook_post)
    through each step of ``step_columns``, then the way down: the FFN's output rebuilt as
    hook_post · W_out (+ b_out), next to the model's own mlp.hook_mlp_out.

    The steps are computed here from the trace's inputs to the activation (mlp.hook_pre, and
    for a gated block mlp.hook_pre_linear); ``hidden_error`` is their last step's largest gap
    to the model's own mlp.hook_post, ``output_error`` the rebuilt output's to hook_mlp_out."""

    columns: tuple[str, ...]
    ids: np.ndarray  # (L, T, m) each token's strongest neurons, strongest first
    values: np.ndarray  # (L, T, m, len(columns)) their steps
    share: np.ndarray  # (L, T) the part of Σ_j |h_j| the m neurons hold
    output: np.ndarray  # (L, T, k) the first k numbers of h W_out (+ b_out), by hand
    model_output: np.ndarray  # (L, T, k) the same numbers of the model's hook_mlp_out
    hidden_error: float
    output_error: float
    d_ff: int


def neuron_steps(trace: Trace, weights, m: int = 12, k: int = 16,
                 layers=None) -> NeuronSteps:
    """``NeuronSteps`` of every layer of a dense model (``layers``: of those only, in that
    order), from the trace and ``Bundle.weights()`` (W_out, b_out)."""
    a, cfg = trace.activations, trace.config
    layers = list(range(cfg.n_layers)) if layers is None else list(layers)
    ids, values, share, output, model_output, errors = [], [], [], [], [], [0.0, 0.0]
    for layer in layers:
        p = f"blocks.{layer}.mlp."
        up = a.get(p + "hook_pre_linear")
        steps = step_values(cfg.activation, a[p + "hook_pre"], up)  # (T, d_ff, C)
        hidden = a[p + "hook_post"].astype(np.float64)  # (T, d_ff) the model's own
        errors[0] = max(errors[0], float(np.abs(steps[..., -1] - hidden).max(initial=0.0)))
        top = np.argsort(-np.abs(hidden), axis=-1, kind="stable")[:, :m]  # (T, m)
        rows = np.arange(len(hidden))[:, None]
        ids.append(top)
        values.append(steps[rows, top])  # (T, m, C)
        total = np.abs(hidden).sum(-1)  # (T,)
        share.append(np.abs(hidden[rows, top]).sum(-1) / np.where(total > 0, total, 1.0))
        out = hidden @ weights["W_out"][layer].astype(np.float64)  # (T, d_ff) @ (d_ff, d) -> (T, d)
        if "b_out" in weights:
            out = out + weights["b_out"][layer]
        model = a[f"blocks.{layer}.hook_mlp_out"].astype(np.float64)  # (T, d)
        errors[1] = max(errors[1], float(np.abs(out - model).max(initial=0.0)))
        kk = min(k, out.shape[1])
        output.append(out[:, :kk])
        model_output.append(model[:, :kk])
    return NeuronSteps(step_columns(cfg.activation), np.asarray(ids), np.asarray(values),
                       np.asarray(share), np.asarray(output), np.asarray(model_output),
                       errors[0], errors[1], cfg.d_ff)


def curve_name(activation: str) -> str:
    """Which of ``activation_curves``' functions a neuron of ``activation`` applies (a gated
    block's, to its gate): swiglu -> "SiLU", relu -> "ReLU", the GELUs -> "GELU"."""
    return {"relu": "ReLU", "swiglu": "SiLU"}.get(activation, "GELU")


def activation_curves(lo: float = -4.0, hi: float = 4.0, n: int = 81) -> dict[str, np.ndarray]:
    """ReLU, GELU and SiLU (the function a SwiGLU neuron applies to its gate) on ``n`` points
    from ``lo`` to ``hi``: {"u": …, "ReLU": …, "GELU": …, "SiLU": …}. SiLU dips below 0 to
    about −0.28 (at u ≈ −1.28), GELU to about −0.17; ReLU never does.

    >>> c = activation_curves()
    >>> round(float(c["SiLU"].min()), 3), round(float(c["GELU"].min()), 3), float(c["ReLU"].min())
    (-0.278, -0.169, 0.0)
    """
    u = np.linspace(lo, hi, n)
    return {"u": u, "ReLU": activate("relu", u), "GELU": activate("gelu", u),
            "SiLU": activate("swiglu", u)}


# ----- a mixture of experts: one token's first expert, step by step (lesson 10 on an MoE) ------


def mlp_input(trace: Trace, weights, layer: int) -> np.ndarray:
    """(T, d) what block ``layer``'s feed-forward (or its experts) reads, in float64: the
    second norm's output with γ (and β) in a pre-LN block, the stream after attention's
    add & norm (hook_resid_mid) in a post-LN one."""
    a, cfg = trace.activations, trace.config
    p = f"blocks.{layer}."
    if cfg.norm != "pre":
        return a[p + "hook_resid_mid"].astype(np.float64)
    x = a[p + "ln2.hook_normalized"].astype(np.float64) * weights["ln2.w"][layer]  # (T, d)
    return x + weights["ln2.b"][layer] if "ln2.b" in weights else x


@dataclass(frozen=True)
class ExpertSteps:
    """``NeuronSteps`` of a mixture of experts: each token's strongest neurons of its first-choice
    expert (the one its router weighed most), through each step of ``step_columns``; ``output``
    the whole MoE output rebuilt by hand, Σ over the token's chosen experts of w_i E_i(x) (times
    a Granite's residual_multiplier), next to the model's own hook_mlp_out.

    Experts record no hooks of their own, so every step is computed here from the block's input
    and the experts' weights; ``steps.output_error``, the rebuilt output's largest gap to the
    model's, checks them all (``steps.hidden_error`` is nan: there is no hook_post to meet)."""

    steps: NeuronSteps
    experts: np.ndarray  # (L, T) the expert followed: each token's first choice
    weights: np.ndarray  # (L, T) its router weight w
    top_k: int


def expert_steps(trace: Trace, weights, m: int = 12, k: int = 16, layers=None) -> ExpertSteps:
    """``ExpertSteps`` of every layer of a mixture-of-experts model (``layers``: of those only,
    in that order), from the trace (the block's input, the router's choices and weights) and
    ``Bundle.weights()`` (each expert's W_gate, W_in, W_out and biases)."""
    a, cfg = trace.activations, trace.config
    layers = list(range(cfg.n_layers)) if layers is None else list(layers)
    gated = cfg.activation in GATE_FUNCTIONS
    ids, values, share, output, model_output, followed, their_w = [], [], [], [], [], [], []
    error = 0.0
    for layer in layers:
        p = f"blocks.{layer}.mlp."
        x = mlp_input(trace, weights, layer)  # (T, d)
        chosen, w = a[p + "hook_expert_indices"], a[p + "hook_expert_weights"].astype(np.float64)  # (T, k)

        def expert(e: int) -> tuple[np.ndarray, np.ndarray]:
            """Expert e on every token: its steps (T, d_ff, C) and its output (T, d)."""
            pre = x @ weights["experts.W_gate" if gated else "experts.W_in"][layer, e].astype(np.float64)
            if not gated and "experts.b_in" in weights:
                pre = pre + weights["experts.b_in"][layer, e]
            up = x @ weights["experts.W_in"][layer, e].astype(np.float64) if gated else None  # (T, d_ff)
            steps = step_values(cfg.activation, pre, up)  # (T, d_ff, C)
            out = steps[..., -1] @ weights["experts.W_out"][layer, e].astype(np.float64)  # (T, d)
            if "experts.b_out" in weights:
                out = out + weights["experts.b_out"][layer, e]
            return steps, out

        every = [expert(e) for e in range(cfg.n_experts)]
        rows = np.arange(len(x))
        mixed = sum(w[:, j:j + 1] * np.stack([every[e][1][t] for t, e in enumerate(chosen[:, j])])
                    for j in range(chosen.shape[1]))  # (T, d): Σ_j w_j E_{chosen j}(x)
        out = mixed * cfg.residual_multiplier  # what the block adds, as hook_mlp_out holds it
        model = a[f"blocks.{layer}.hook_mlp_out"].astype(np.float64)  # (T, d)
        error = max(error, float(np.abs(out - model).max(initial=0.0)))
        first = chosen[:, 0]  # (T,)
        steps = np.stack([every[e][0][t] for t, e in enumerate(first)])  # (T, d_ff, C)
        hidden = steps[..., -1]  # (T, d_ff) the first expert's products (or activations)
        top = np.argsort(-np.abs(hidden), axis=-1, kind="stable")[:, :m]  # (T, m)
        ids.append(top)
        values.append(steps[rows[:, None], top])  # (T, m, C)
        total = np.abs(hidden).sum(-1)  # (T,)
        share.append(np.abs(hidden[rows[:, None], top]).sum(-1) / np.where(total > 0, total, 1.0))
        kk = min(k, out.shape[1])
        output.append(out[:, :kk])
        model_output.append(model[:, :kk])
        followed.append(first)
        their_w.append(w[:, 0])
    steps = NeuronSteps(step_columns(cfg.activation), np.asarray(ids), np.asarray(values), np.asarray(share),
                        np.asarray(output), np.asarray(model_output), float("nan"), error, cfg.d_ff)
    return ExpertSteps(steps, np.asarray(followed), np.asarray(their_w), cfg.moe_top_k)
