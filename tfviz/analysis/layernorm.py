"""Residual stream and LayerNorm (or RMSNorm) statistics, read from a trace (pure numpy).

Every sublayer of a block adds its output to the residual stream, and a norm rescales each
token vector on its own. LayerNorm (the original paper, GPT-2, BERT, our story models):

    mu = mean(x),   sigma = sqrt(mean((x - mu)^2) + eps),   LN(x) = (x - mu) / sigma * gamma + beta

RMSNorm (Llama, Mistral, Qwen, llama-tiny) keeps only the rescaling: no mean is taken away
and there is no beta. Its scale is the root mean square, which the model records in
``ln*.hook_scale`` as LayerNorm records its sigma:

    rms = sqrt(mean(x^2) + eps),   RMS(x) = x / rms * gamma

The two scales are tied by mean(x^2) = var + mu^2, so rms^2 = sigma^2 + mu^2 (the same eps
inside both): an RMSNorm divides by at least LayerNorm's sigma, and by exactly that when the
vector's mean is 0.

Where the norm sits decides what it sees:
    post-LN:  ln1 sees x + SelfAttn(x)   (resid_pre + attn_out),  ln2 sees z + FFN(z)
    pre-LN:   ln1 sees x itself          (resid_pre),             ln2 sees z (resid_mid)

>>> x = np.array([[1.0, 2.0, 3.0, 4.0]])
>>> mean, sigma, normed = normalize(x, eps=0.0)
>>> float(mean[0]), round(float(sigma[0]), 4), normed.round(3).tolist()
(2.5, 1.118, [[-1.342, -0.447, 0.447, 1.342]])
>>> p = norm_pair(x, eps=0.0)   # the same token through both norms
>>> round(float(p.rms[0]), 4), round(float(p.rms[0] ** 2 - p.sigma[0] ** 2 - p.mean[0] ** 2), 12)
(2.7386, 0.0)
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tfviz.reference import layer_norm, rms_norm

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace

# Where each norm's input comes from: (stream before the sublayer, sublayer output) hooks.
_SUBLAYER = {"ln1": ("hook_resid_pre", "hook_attn_out"),
             "ln_cross": ("hook_resid_mid", "hook_cross_attn_out"),
             "ln2": (None, "hook_mlp_out")}
# The stream a post-LN norm writes to.
_OUTPUT = {"ln1": "hook_resid_mid", "ln_cross": "hook_resid_mid_cross", "ln2": "hook_resid_post"}
# Named by the sublayer each norm belongs to, not by "before" or "after": a post-LN model's ln1
# normalises the sum after self-attention, a pre-LN model's the copy that goes into it.
NORM_NAMES = {"ln1": "self-attention's (ln1)", "ln_cross": "cross-attention's (ln_cross)",
              "ln2": "the feed-forward's (ln2)"}


def normalize(x: np.ndarray, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-token mean, sigma = sqrt(var + eps) and (x - mean) / sigma, for x of shape (T, d):
    the first steps of the reference's :func:`~tfviz.reference.layer_norm`."""
    steps = layer_norm(x, eps=eps)
    return steps.mean, steps.sigma, steps.normalized


def norms_of(trace: Trace, layer: int = 0) -> list[str]:
    """The norms of one block of the main stack, in order: ["ln1", "ln2"] (+ "ln_cross")."""
    prefix = f"blocks.{layer}."
    return [n for n in ("ln1", "ln_cross", "ln2") if f"{prefix}{n}.hook_scale" in trace.activations]


def is_rms(trace: Trace) -> bool:
    """Whether the model's norms are RMSNorms (no mean taken away, no β) rather than LayerNorms."""
    return trace.config.norm_type == "rmsnorm"


def ln_input(trace: Trace, layer: int, norm: str) -> np.ndarray:
    """The (T, d) vectors that go into ``norm`` of block ``layer`` (see the module docstring)."""
    p, acts = f"blocks.{layer}.", trace.activations
    before, out = _SUBLAYER[norm]
    if before is None:  # ln2 follows cross-attention in decoder blocks of encoder-decoders
        before = "hook_resid_mid_cross" if p + "hook_resid_mid_cross" in acts else "hook_resid_mid"
    x = acts[p + before]
    return x if trace.config.norm == "pre" else x + acts[p + out]


def ln_output(trace: Trace, layer: int, norm: str, gamma: np.ndarray,
              beta: np.ndarray | None) -> np.ndarray:
    """LN(x) as the model used it: read from the stream for post-LN, rebuilt for pre-LN
    (normalized · γ + β; an RMSNorm's ``beta`` is None: normalized · γ)."""
    if trace.config.norm == "post":
        return trace.activations[f"blocks.{layer}.{_OUTPUT[norm]}"]
    out = trace.activations[f"blocks.{layer}.{norm}.hook_normalized"] * gamma
    return out if beta is None else out + beta


@dataclass(frozen=True)
class TokenStats:
    """Per-token statistics of one norm, before it and after normalising (before γ, β).
    For an RMSNorm the "std" fields hold the root mean square instead (its ``hook_scale``
    before, ≈ 1 after), and the means are computed here: it records none, and keeps them."""

    mean_before: np.ndarray  # (T,)
    std_before: np.ndarray  # (T,) the model's hook_scale: sqrt(var + eps), RMSNorm's rms
    mean_after: np.ndarray  # (T,) ≈ 0 after a LayerNorm; after an RMSNorm, μ / rms
    std_after: np.ndarray  # (T,) ≈ 1 (RMSNorm: the root mean square, ≈ 1)


def token_stats(trace: Trace, layer: int, norm: str) -> TokenStats:
    p = f"blocks.{layer}.{norm}."
    after = trace.activations[p + "hook_normalized"].astype(np.float64)  # (T, d)
    if is_rms(trace):
        mean = ln_input(trace, layer, norm).astype(np.float64).mean(-1)  # (T,)
        return TokenStats(mean, trace.activations[p + "hook_scale"], after.mean(-1),
                          np.sqrt((after * after).mean(-1)))
    return TokenStats(trace.activations[p + "hook_mean"], trace.activations[p + "hook_scale"],
                      after.mean(-1), after.std(-1))


def _r(x, digits: int = 4) -> float:
    """Rounded for a table, without a confusing "-0.0"."""
    return round(float(x), digits) + 0.0


def stats_table(trace: Trace) -> list[dict]:
    """One row per norm of the main stack: averages over tokens of the statistics (for an
    RMSNorm the root mean square where a LayerNorm has its standard deviation)."""
    spread = ("rms", "rms") if is_rms(trace) else ("std σ", "std")
    rows = []
    for layer in range(trace.config.n_layers):
        for norm in norms_of(trace, layer):
            s = token_stats(trace, layer, norm)
            rows.append({"layer": layer, "norm": norm, "mean μ before": _r(s.mean_before.mean()),
                         f"{spread[0]} before": _r(s.std_before.mean()),
                         "mean after": _r(s.mean_after.mean()),
                         f"{spread[1]} after": _r(s.std_after.mean())})
    return rows


def gamma_beta(weights: Mapping[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Copies of every block norm's learned γ and β, from ``Bundle.weights()``:
    {"L0 ln1": (gamma, beta), ...}, block by block in the order the norms run. An RMSNorm
    has no β: its entry is (gamma, None)."""
    n_layers = weights["ln1.w"].shape[0]

    def beta(norm: str, i: int) -> np.ndarray | None:
        return weights[f"{norm}.b"][i].copy() if f"{norm}.b" in weights else None

    return {f"L{i} {norm}": (weights[f"{norm}.w"][i].copy(), beta(norm, i))
            for i in range(n_layers) for norm in ("ln1", "ln_cross", "ln2")
            if f"{norm}.w" in weights}


def residual_norms(trace: Trace) -> list[tuple[str, float]]:
    """Mean over tokens of the L2 norm of the residual stream, stage by stage.

    Stages: "embed" (resid_pre of block 0), then per block "L{i} attn" (resid_mid),
    "L{i} cross" (decoder blocks of encoder-decoders) and "L{i} ffn" (resid_post).
    """
    def size(name: str) -> float:
        return float(np.linalg.norm(trace.activations[name], axis=-1).mean())

    out = [("embed", size("blocks.0.hook_resid_pre"))]
    for i in range(trace.config.n_layers):
        out.append((f"L{i} attn", size(f"blocks.{i}.hook_resid_mid")))
        if f"blocks.{i}.hook_resid_mid_cross" in trace.activations:
            out.append((f"L{i} cross", size(f"blocks.{i}.hook_resid_mid_cross")))
        out.append((f"L{i} ffn", size(f"blocks.{i}.hook_resid_post")))
    return out


NORM_ORDER = ("ln1", "ln_cross", "ln2")  # every norm a block can have, in the order they run
STEP_COLUMNS = ("x", "x − μ", "(x − μ)/σ", "γ", "β", "by hand", "model")
RMS_STEP_COLUMNS = ("x", "x²", "x / rms", "γ", "by hand", "model")  # no mean, no β


@dataclass(frozen=True)
class EveryNorm:
    """Every norm of the main stack for every token, by hand and as the model recorded it:
    all that lesson 9's charts show, so choosing a layer, norm or token needs no run.

    For an RMSNorm model (``kind`` "rmsnorm") ``sigma`` is the root mean square by hand and
    ``trace_sigma`` the model's ``hook_scale`` of it; ``trace_mean`` is μ computed here from
    the norm's input (an RMSNorm records no mean: it takes none away); ``steps`` follow
    RMS_STEP_COLUMNS and ``vectors`` hold x, x / rms and the output."""

    norms: tuple[str, ...]  # the block's norms in the order they run, e.g. ("ln1", "ln2")
    stats: np.ndarray  # (layers, norms, 4, T): μ before, σ before, mean after, std after
    mean: np.ndarray  # (layers, norms, T) μ by hand
    sigma: np.ndarray  # (layers, norms, T) σ = sqrt(var + eps) by hand (RMSNorm: rms)
    trace_mean: np.ndarray  # (layers, norms, T) the model's ln.hook_mean
    trace_sigma: np.ndarray  # (layers, norms, T) the model's ln.hook_scale
    steps: np.ndarray  # (layers, norms, T, k, 7): the first k dimensions, STEP_COLUMNS
    vectors: np.ndarray  # (layers, norms, T, 3, d): x, (x − μ)/σ and the output, by hand
    max_error: float  # largest gap between hand and model over everything above
    kind: str = "layernorm"  # or "rmsnorm"

    @property
    def columns(self) -> tuple[str, ...]:
        return RMS_STEP_COLUMNS if self.kind == "rmsnorm" else STEP_COLUMNS


def every_norm(trace: Trace, params: Mapping[str, tuple[np.ndarray, np.ndarray]],
               k: int = 8) -> EveryNorm:
    """``token_stats`` and each token's worked steps for every layer, norm and token at once; ``params``
    as ``gamma_beta`` returns them, ``k`` the dimensions the step table shows."""
    norms = tuple(norms_of(trace, 0))
    acts, eps = trace.activations, trace.config.ln_eps
    stats, hand, model, steps, vectors, errors = [], [], [], [], [], [0.0]
    for layer in range(trace.config.n_layers):
        for norm in norms:
            gamma, beta = params[f"L{layer} {norm}"]
            p = f"blocks.{layer}.{norm}."
            s = token_stats(trace, layer, norm)
            stats.append([s.mean_before, s.std_before, s.mean_after, s.std_after])
            x = ln_input(trace, layer, norm).astype(np.float64)  # (T, d)
            if is_rms(trace):
                rms = rms_norm(x, gamma, eps)  # every token at once: (T,), (T, d)
                out = ln_output(trace, layer, norm, gamma, None)  # (T, d) what the model produced
                hand.append([x.mean(-1), rms.rms])
                model.append([s.mean_before, acts[p + "hook_scale"]])
                kk = min(k, x.shape[1])
                cols = [x[:, :kk], x[:, :kk] ** 2, rms.normalized[:, :kk],
                        np.broadcast_to(gamma[:kk], (len(x), kk)), rms.output[:, :kk], out[:, :kk]]
                steps.append(np.stack(cols, axis=-1))  # (T, k, 6)
                vectors.append(np.stack([x, rms.normalized, rms.output], axis=1))  # (T, 3, d)
                errors += [np.abs(rms.rms - acts[p + "hook_scale"]).max(initial=0.0),
                           np.abs(rms.normalized - acts[p + "hook_normalized"]).max(initial=0.0),
                           np.abs(rms.output - out).max(initial=0.0)]
                continue
            ln = layer_norm(x, gamma, beta, eps)  # every token at once: (T,), (T, d)
            out = ln_output(trace, layer, norm, gamma, beta)  # (T, d) what the model produced
            hand.append([ln.mean, ln.sigma])
            model.append([acts[p + "hook_mean"], acts[p + "hook_scale"]])
            kk = min(k, x.shape[1])
            cols = [x[:, :kk], x[:, :kk] - ln.mean[:, None], ln.normalized[:, :kk],
                    np.broadcast_to(gamma[:kk], (len(x), kk)), np.broadcast_to(beta[:kk], (len(x), kk)),
                    ln.output[:, :kk], out[:, :kk]]
            steps.append(np.stack(cols, axis=-1))  # (T, k, 7)
            vectors.append(np.stack([x, ln.normalized, ln.output], axis=1))  # (T, 3, d)
            errors += [np.abs(ln.mean - acts[p + "hook_mean"]).max(initial=0.0),
                       np.abs(ln.sigma - acts[p + "hook_scale"]).max(initial=0.0),
                       np.abs(ln.normalized - acts[p + "hook_normalized"]).max(initial=0.0),
                       np.abs(ln.output - out).max(initial=0.0)]
    shape = (trace.config.n_layers, len(norms))

    def stacked(items) -> np.ndarray:
        arr = np.asarray(items, dtype=np.float64)
        return arr.reshape(*shape, *arr.shape[1:])

    hand_arr, model_arr = stacked(hand), stacked(model)  # (layers, norms, 2, T)
    return EveryNorm(norms, stacked(stats), hand_arr[:, :, 0], hand_arr[:, :, 1],
                     model_arr[:, :, 0], model_arr[:, :, 1], stacked(steps), stacked(vectors),
                     float(max(errors)), trace.config.norm_type)


# ----- RMSNorm next to LayerNorm, on the same token ------------------------------------------

PAIR_VECTORS = ("x", "LayerNorm: (x − μ)/σ", "RMSNorm: x / rms")


@dataclass(frozen=True)
class NormPair:
    """The same vectors through LayerNorm's and RMSNorm's normalising step (before γ, β).

    rms² = σ² + μ² for every vector (``identity_gap`` is how far that is from exact here)."""

    mean: np.ndarray  # (…,) μ, what LayerNorm takes away and RMSNorm keeps
    sigma: np.ndarray  # (…,) LayerNorm's √(var + ε)
    rms: np.ndarray  # (…,) RMSNorm's √(mean(x²) + ε)
    layer_normed: np.ndarray  # (…, d) (x − μ)/σ: mean 0, spread 1
    rms_normed: np.ndarray  # (…, d) x / rms: the same direction as x, root mean square 1

    @property
    def identity_gap(self) -> float:
        return float(np.abs(self.rms ** 2 - self.sigma ** 2 - self.mean ** 2).max(initial=0.0))


def norm_pair(x: np.ndarray, eps: float = 1e-5) -> NormPair:
    """Both norms' first step for each vector of ``x`` (last axis), in float64."""
    ln, rms = layer_norm(x, eps=eps), rms_norm(x, eps=eps)
    return NormPair(ln.mean, ln.sigma, rms.rms, ln.normalized, rms.normalized)


@dataclass(frozen=True)
class EveryPair:
    """``norm_pair`` of every norm's input, every layer and token: lesson 9's side-by-side
    chart. ``model_scale`` is what the model itself recorded in hook_scale (its own norm's σ
    or rms), ``own_error`` the largest gap between it and the same scale computed here."""

    norms: tuple[str, ...]
    numbers: np.ndarray  # (layers, norms, T, 4): μ, σ, rms, the model's hook_scale
    vectors: np.ndarray  # (layers, norms, T, 3, k): the first k dimensions of PAIR_VECTORS
    own_error: float
    identity_gap: float


def every_pair(trace: Trace, k: int = 16) -> EveryPair:
    """``norm_pair`` on the input of every block norm, every token; ``k`` dimensions kept."""
    norms = tuple(norms_of(trace, 0))
    eps, rms_model = trace.config.ln_eps, is_rms(trace)
    numbers, vectors, own, gaps = [], [], [0.0], [0.0]
    for layer in range(trace.config.n_layers):
        per_norm_numbers, per_norm_vectors = [], []
        for norm in norms:
            x = ln_input(trace, layer, norm).astype(np.float64)  # (T, d)
            pair = norm_pair(x, eps)
            scale = trace.activations[f"blocks.{layer}.{norm}.hook_scale"].astype(np.float64)  # (T,)
            own.append(float(np.abs((pair.rms if rms_model else pair.sigma) - scale).max(initial=0.0)))
            gaps.append(pair.identity_gap)
            per_norm_numbers.append(np.stack([pair.mean, pair.sigma, pair.rms, scale], axis=-1))  # (T, 4)
            kk = min(k, x.shape[1])
            per_norm_vectors.append(np.stack([x[:, :kk], pair.layer_normed[:, :kk],
                                              pair.rms_normed[:, :kk]], axis=1))  # (T, 3, k)
        numbers.append(per_norm_numbers)
        vectors.append(per_norm_vectors)
    return EveryPair(norms, np.asarray(numbers), np.asarray(vectors), max(own), max(gaps))
