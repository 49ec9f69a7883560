"""RoPE's promise, tested with the engine's own rotation: q·k depends only on the distance.

Rotary embeddings turn each pair of dimensions of a query or key by θ_i · position, with
θ_i = base^(−2i/d_head). Which two dimensions form pair i is the model's layout
(:class:`RopeLayout`): (x[2i], x[2i+1]) in the RoFormer paper and our gpt-tiny-rope,
(x[i], x[i + d/2]) in Llama's rotate_half. Turning q by mθ and k by nθ changes their dot
product only through n − m. These functions rotate real vectors with ``tfviz.model.positional``
(the code the model runs, float32), so the lesson's flat lines are the model's own numbers.

On a model with RoPE (gpt-tiny-rope, llama-tiny, a Llama folder), :func:`rope_pair` reads a
query and a key of the learner's text before and after the turn, :func:`turn_table` measures
each pair's turn, :func:`shifted_scores` moves both tokens along by the same amount, and
:func:`shift_gap` moves the whole text along and measures how much layer 0's scores change.
:func:`stretched_frequencies`, :func:`position_reads` and :func:`stretch_groups` show what a
rope scaling (linear, llama3) does to each pair's speed and to a position past the trained
context.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from tfviz.config import RopePairs, RopeScaling
from tfviz.model.positional import apply_rope, rope_angles, rope_inv_freq
from tfviz.trace import run_with_trace


@dataclass(frozen=True)
class RopeLayout:
    """How a model turns its queries and keys: the head size, how many of its dimensions turn,
    the base, which dimensions pair up, and the frequency scaling (None: plain RoPE).

    >>> RopeLayout(16, 16, 10000.0, "halves").dims(1), RopeLayout(16, 16, 10000.0).dims(1)
    ((1, 9), (2, 3))
    """

    d_head: int
    dim: int  # the dimensions that turn (rotary_dim; the whole head unless partial)
    base: float
    pairs: RopePairs = "adjacent"
    scaling: RopeScaling | None = None

    @property
    def n_pairs(self) -> int:
        return self.dim // 2

    def dims(self, i: int) -> tuple[int, int]:
        """The two dimensions that form pair ``i`` (the plane it turns in)."""
        return (2 * i, 2 * i + 1) if self.pairs == "adjacent" else (i, i + self.dim // 2)

    def inv_freq(self) -> np.ndarray:
        """θ_i for every pair, radians per position, as the engine computes them (float32,
        scaling included): (n_pairs,)."""
        return rope_inv_freq(self.dim, self.base, self.scaling).numpy().astype(np.float64)

    def plain(self) -> "RopeLayout":
        """The same layout without its scaling."""
        return RopeLayout(self.d_head, self.dim, self.base, self.pairs, None)


def rope_layout(cfg) -> RopeLayout:
    """A RoPE model's layout, from its config (base = rope_theta, pairs, rotary dim, scaling)."""
    if cfg.positional != "rope":
        raise ValueError(f"{cfg.name} does not use RoPE (positional={cfg.positional!r})")
    return RopeLayout(cfg.d_head, cfg.rope_dim, float(cfg.pos_base), cfg.rope_pairs, cfg.rope_scaling)


def rope_rotate(vector: np.ndarray, position: int, base: float = 10000.0,
                layout: RopeLayout | None = None) -> np.ndarray:
    """One head vector (d_head,) rotated as RoPE rotates it at ``position`` (engine code), in
    ``layout`` (its pairs, base and scaling), else in the adjacent layout at ``base``."""
    v = torch.as_tensor(np.asarray(vector, dtype=np.float32))
    if layout is None:
        layout = RopeLayout(v.shape[-1], v.shape[-1], base)
    cos, sin = rope_angles(torch.tensor([position]), layout.dim, layout.base, layout.scaling)  # (1, r/2)
    turned = apply_rope(v[None, None, None, :], cos, sin, layout.pairs)  # (1, 1, 1, dh)
    return turned[0, 0, 0].numpy().astype(np.float64)


def rope_scores(q: np.ndarray, k: np.ndarray, distance: int, query_positions,
                base: float = 10000.0, layout: RopeLayout | None = None) -> list[dict]:
    """q at position m and k at position m - distance, both rotated; their dot product per m.

    The rows all carry the same score: after RoPE, q·k depends only on how far apart the two
    tokens are, not on where they sit in the sentence.
    """
    rows = []
    for m in query_positions:
        m = int(m)
        qr, kr = rope_rotate(q, m, base, layout), rope_rotate(k, m - distance, base, layout)
        rows.append({"query position": m, "key position": m - distance,
                     "distance": distance, "q·k after rotation": float(qr @ kr)})
    return rows


def rope_pair_angles(position: int, d_head: int, base: float = 10000.0) -> np.ndarray:
    """The angle (radians) each pair of dimensions is turned by at ``position``: (d_head/2,)."""
    cos, sin = rope_angles(torch.tensor([position]), d_head, base)
    return np.arctan2(sin[0].numpy(), cos[0].numpy()).astype(np.float64)


# ----- a trained RoPE model (gpt-tiny-rope) on the learner's text --------------------------------
@dataclass(frozen=True)
class RopePair:
    """One head's query (token ``query``) and key (token ``key``) as a RoPE model computed them.

    ``q``/``k`` are the vectors before the turn (``hook_q``/``hook_k``), ``q_turned``/``k_turned``
    after it (``hook_rot_q``/``hook_rot_k``: turned by query·θ and key·θ), and ``score`` is the
    model's own q·k for the pair (``hook_scores_raw``, before the 1/√d_k factor).
    """

    layer: int
    head: int
    query: int
    key: int
    q: np.ndarray  # (dh,)
    k: np.ndarray  # (dh,)
    q_turned: np.ndarray  # (dh,)
    k_turned: np.ndarray  # (dh,)
    score: float


def rope_pair(trace, layer: int, head: int, query: int, key: int) -> RopePair:
    """Read one (query token, key token) pair of a RoPE model's trace; the key comes from the
    K/V head that query head reads (itself unless the model shares K/V heads)."""
    cfg = trace.config
    if cfg.positional != "rope":
        raise ValueError(f"{cfg.name} does not use RoPE (positional={cfg.positional!r})")
    kv_head = head // (cfg.n_heads // cfg.kv_heads)
    q, k = trace["q", layer][query, head], trace["k", layer][key, kv_head]  # (dh,) each
    qt, kt = trace["rot_q", layer][query, head], trace["rot_k", layer][key, kv_head]
    score = trace["scores_raw", layer][head, query, key]
    return RopePair(layer, head, query, key, *(np.asarray(v, dtype=np.float64) for v in (q, k, qt, kt)),
                    float(score))


def turn_table(pair: RopePair, rope: float | RopeLayout = 10000.0) -> list[dict]:
    """One row per pair of dimensions i: the two dimensions it turns, its speed θ_i and how far
    q was turned, in radians. ``rope``: the model's :class:`RopeLayout` (or, for the adjacent
    layout without scaling, its base).

    "turned by" is the angle from q's pair before the turn to after it, measured on the model's
    own vectors; it equals (query position · θ_i) wrapped into (−π, π]. A pair with both values
    near zero has no direction, so its angle is noisy.
    """
    layout = rope if isinstance(rope, RopeLayout) else RopeLayout(len(pair.q), len(pair.q), rope)
    thetas = layout.inv_freq()  # (n_pairs,)
    rows = []
    for i, theta in enumerate(thetas):
        a, b = layout.dims(i)
        before = np.arctan2(pair.q[b], pair.q[a])
        after = np.arctan2(pair.q_turned[b], pair.q_turned[a])
        expected = float(np.angle(np.exp(1j * pair.query * theta)))  # m·θ_i in (−π, π]
        turned = float(np.angle(np.exp(1j * (after - before))))
        rows.append({"pair i": i, "dimensions": f"{a}, {b}", "θ_i (radians per step)": float(f"{theta:.5g}"),
                     "q angle before": round(float(before), 3), "q angle after": round(float(after), 3),
                     "turned by": round(turned, 3), f"{pair.query}·θ_i (wrapped)": round(expected, 3)})
    return rows


#: How far both tokens are moved along by :func:`shifted_scores`, by default.
SHIFTS = (0, 1, 10, 100, 1000)


def shifted_scores(q: np.ndarray, k: np.ndarray, query: int, key: int, layout: RopeLayout,
                   shifts=SHIFTS) -> list[dict]:
    """"Relative position only" as numbers: the same q and k turned as if the query stood at
    ``query + s`` and the key at ``key + s``, for each shift s, and their dot product. RoPE
    makes every row's score the same (up to float32's rounding of the angles, which grows
    with the position): only the distance query − key is left in it.
    """
    rows = []
    for s in shifts:
        i, j = query + int(s), key + int(s)
        score = rope_rotate(q, i, layout=layout) @ rope_rotate(k, j, layout=layout)
        rows.append({"shift s": int(s), "query at": i, "key at": j, "distance": i - j,
                     "q·k after rotation": float(score)})
    return rows


# ----- scaling: stretched frequencies for a longer context --------------------------------------
def example_scalings(context: int, factor: float) -> dict[str, RopeScaling]:
    """The two scalings tfviz builds, each stretching a model trained on ``context`` tokens to
    ``factor`` times as many: linear (every speed divided by factor), and llama3 with Llama
    3.1's own low and high frequency factors (1 and 4) and ``context`` as the original length.

    >>> example_scalings(128, 4.0)["llama3"].original_max_position_embeddings
    128
    """
    return {"linear": RopeScaling("linear", factor),
            "llama3": RopeScaling("llama3", factor, 1.0, 4.0, int(context))}


def trained_context(scaling: RopeScaling, context: int) -> int:
    """The context a stretched model was trained on: llama3 records it, a linear scaling's is
    its context divided by the factor, to the nearest position.

    >>> trained_context(RopeScaling("linear", 4.0), 130), trained_context(RopeScaling("linear", 2.0), 4096)
    (32, 2048)
    """
    if scaling.kind == "llama3":
        return scaling.original_max_position_embeddings
    return round(context / scaling.factor)


def shown_distances(distance: int, query: int, key: int) -> list[int]:
    """The distances m − n lesson 3's table rotates a pair at: 0, the slider's, and the pair's
    own (when its key is not after its query), each once, smallest first.

    >>> shown_distances(3, 7, 2), shown_distances(0, 1, 4)
    ([0, 3, 5], [0])
    """
    own = {query - key} if query >= key else set()
    return sorted({0, distance} | own)


def score_spread(rows: list[dict]) -> float:
    """How far apart the "q·k after rotation" scores of ``shifted_scores``' rows lie.

    >>> score_spread([{"q·k after rotation": 1.5}, {"q·k after rotation": 1.25}])
    0.25
    """
    scores = [r["q·k after rotation"] for r in rows]
    return max(scores) - min(scores)


def scaling_name(scaling: RopeScaling) -> str:
    """A scaling's short name for a chart's legend.

    >>> scaling_name(RopeScaling("llama3", 8.0))
    'llama3 ×8'
    """
    return f"{scaling.kind} ×{scaling.factor:g}"


def stretched_frequencies(layout: RopeLayout, scalings: dict[str, RopeScaling]) -> list[dict]:
    """θ_i of every pair, plain and under each scaling, as the engine computes them: one row
    per (pair, scheme), with the pair's wavelength (positions per full turn) unscaled."""
    plain = layout.plain().inv_freq()  # (n_pairs,)
    schemes = {"plain": plain}
    schemes.update({scaling_name(s): RopeLayout(layout.d_head, layout.dim, layout.base, layout.pairs, s)
                    .inv_freq() for s in scalings.values()})
    return [{"pair i": i, "scheme": name, "θ_i (radians per position)": float(theta[i]),
             "wavelength (positions per turn)": float(2 * math.pi / plain[i])}
            for name, theta in schemes.items() for i in range(layout.n_pairs)]


def position_reads(layout: RopeLayout, scalings: dict[str, RopeScaling], position: int) -> list[dict]:
    """For each pair and scheme, the position whose plain turn equals ``position``'s turn under
    that scheme: position · θ_scheme / θ_plain (plain reads it as itself). One row per (pair,
    scheme), the rows of the lesson's chart."""
    rows = stretched_frequencies(layout, scalings)
    plain = {r["pair i"]: r["θ_i (radians per position)"] for r in rows if r["scheme"] == "plain"}
    return [{"pair i": r["pair i"], "scheme": r["scheme"],
             "reads as": position * r["θ_i (radians per position)"] / plain[r["pair i"]],
             "wavelength (positions per turn)": r["wavelength (positions per turn)"]} for r in rows]


@dataclass(frozen=True)
class StretchGroups:
    """Which pairs a scaling keeps (θ unchanged), divides by its factor, or blends between."""

    kept: tuple[int, ...]
    divided: tuple[int, ...]
    blended: tuple[int, ...]


def stretch_groups(layout: RopeLayout, scaling: RopeScaling) -> StretchGroups:
    """Sort the pairs by what ``scaling`` does to their speed (engine numbers, float32's
    tolerance). Linear divides every pair; llama3 keeps the fast pairs, whose wavelength is
    below original context / high_freq_factor, divides the slow ones above original context /
    low_freq_factor, and blends the pairs between.

    >>> stretch_groups(RopeLayout(16, 16, 10000.0), RopeScaling("llama3", 4.0, 1.0, 4.0, 128))
    StretchGroups(kept=(0, 1), divided=(3, 4, 5, 6, 7), blended=(2,))
    """
    plain = layout.plain().inv_freq()
    ratio = RopeLayout(layout.d_head, layout.dim, layout.base, layout.pairs, scaling).inv_freq() / plain
    kept = tuple(i for i, r in enumerate(ratio) if abs(r - 1) < 1e-6)
    divided = tuple(i for i, r in enumerate(ratio) if abs(r * scaling.factor - 1) < 1e-6)
    blended = tuple(i for i in range(len(ratio)) if i not in kept and i not in divided)
    return StretchGroups(kept, divided, blended)


def shift_gap(model, ids, shift: int, filler_id: int, layer: int = 0) -> float:
    """Largest change of layer ``layer``'s raw scores between the tokens of ``ids`` when
    ``shift`` copies of ``filler_id`` are put in front (every token moves ``shift`` places on).

    In a RoPE model layer 0's q and k carry no position (nothing was added to the inputs), so
    only the turn sees where a token is, and the turn keeps only the distance: the gap is
    float32 rounding. A model that adds positions to its inputs changes its scores.
    """
    ids = [int(i) for i in ids]
    name = f"blocks.{layer}.attn.hook_scores_raw"
    plain = run_with_trace(model, ids, names=[name])[name]  # (H, T, T)
    moved = run_with_trace(model, [filler_id] * shift + ids, names=[name])[name][:, shift:, shift:]
    return float(np.abs(moved - plain).max())
