"""Direct logit attribution: how much each part of the model wrote, directly, into one logit.

In a pre-LN model the residual stream at the end is a plain sum of what every part added to it:

    x = embed (+ positions)  +  sum over layers of ( sum over heads z_h W_O[h]  +  b_O  +  MLP )

(a Granite scales each sublayer's output by its residual_multiplier before the add, and the
embeddings by its embedding_multiplier: those scaled pieces are what the sum holds). The logit
of token t is final_norm(x) · W_U[:, t] (+ b_U[t], / logits_scaling). The final norm is not
linear, but with its scale s frozen at the value it had for this position it is: LayerNorm
becomes (x − mean(x)) / s · γ + β, and the mean is linear too, so every part c goes through as
(c − mean(c)) / s · γ, and β is a part of its own. RMSNorm takes no mean away: c / s · γ.
TransformerLens's ``apply_ln_to_stack`` freezes the scale the same way (it centres and divides
by ``ln_final.hook_scale``, with γ and β folded into W_U). The parts then add up to the logit.

A post-LN model normalises after every add, so its final stream is no such sum: refused in words.

>>> import tfviz
>>> b = tfviz.load("llama-tiny")
>>> tr = b.trace("the dog didn't cross the road because it was too tired")
>>> top = int(tr.logits[-1].argmax())
>>> dla = direct_logit_attribution(tr, -1, top, weights=b)
>>> abs(dla.total - float(tr.logits[-1, top])) < 1e-4
True
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from tfviz.interpret.common import require_lm, unembedding, weights_of
from tfviz.trace import Trace


@dataclass(frozen=True)
class Attribution(Mapping):
    """{component: its direct share of the logit (or logit difference)}, in model order: a
    read-only mapping (``parts`` is the same as a dict).

    Components: ``embed``, ``pos_embed`` (positions added to the embeddings), ``token_type_embed``;
    per layer ℓ (from 0) ``L{ℓ}H{h}`` for each head, ``L{ℓ} b_O`` (the output bias),
    ``L{ℓ} cross-attn`` (an encoder-decoder's decoder), ``L{ℓ} MLP`` (or ``L{ℓ} MoE``, the
    whole layer, its biases inside); then ``ln_final.b`` (the final LayerNorm's β) and ``b_U``.
    ``kinds`` names each one's kind: embed, head, bias, cross, mlp, norm_bias, unembed_bias.

    ``logit`` is the model's own logit (or difference) from the trace; ``total`` the parts'
    sum, equal to it within float32's rounding. ``scale`` is the frozen final-norm scale
    (None without a final norm); ``token`` and ``against`` are the ids compared.
    """

    parts: dict[str, float]
    kinds: dict[str, str]
    logit: float
    position: int
    token: int
    against: int | None
    scale: float | None
    n_layers: int
    n_heads: int

    def __getitem__(self, key: str) -> float:
        return self.parts[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def total(self) -> float:
        return float(sum(self.parts.values()))

    def heads(self) -> np.ndarray:
        """(layers, heads): each head's share."""
        return np.array([[self.parts[f"L{i}H{h}"] for h in range(self.n_heads)]
                         for i in range(self.n_layers)])

    def top(self, kind: str | None = None) -> str:
        """The component with the largest share (of one kind, if given)."""
        names = [k for k in self.parts if kind is None or self.kinds[k] == kind]
        return max(names, key=lambda k: self.parts[k])


def decomposable(cfg) -> str | None:
    """Why direct logit attribution cannot split this model's logits, or None when it can."""
    if cfg.norm != "pre":
        return (f"{cfg.name} normalises after each residual add (post-LN), so the stream that "
                "reaches its logits was rescaled as a whole after every sublayer and is not a sum "
                "of what each head and feed-forward block wrote: there is nothing to split. "
                "Direct logit attribution works on pre-LN models, such as GPT-2 and Llama.")
    if not cfg.residual:
        return (f"{cfg.name} runs without its skip path, so each sublayer's output replaces the "
                "stream instead of being added to it: there is no sum of parts to split.")
    if cfg.embed_norm:
        return (f"{cfg.name} normalises its embeddings before the first block, so the "
                "embedding parts do not add up to what enters it.")
    return None


def residual_parts(trace: Trace, weights, position: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Each part's (d,) float64 vector in the final residual stream at ``position``, and its kind.

    Their sum is ``blocks.{L-1}.hook_resid_post`` at that position (what the final norm reads).
    """
    cfg = trace.config
    W = weights_of(weights)
    why = decomposable(cfg)
    if why:
        raise ValueError(why)
    m_e, m_r = cfg.embedding_multiplier, cfg.residual_multiplier
    parts: dict[str, np.ndarray] = {}
    kinds: dict[str, str] = {}

    def add(name: str, kind: str, v) -> None:
        parts[name] = np.asarray(v, dtype=np.float64)
        kinds[name] = kind

    for name in ("hook_embed", "hook_pos_embed", "hook_token_type_embed"):
        if name in trace.activations:
            add(name.removeprefix("hook_"), "embed", trace[name][position] * np.float64(m_e))
    for i in range(cfg.n_layers):
        z = np.asarray(trace[f"blocks.{i}.attn.hook_z"][position], dtype=np.float64)  # (H, dh)
        W_O = np.asarray(W["W_O"][i], dtype=np.float64)  # (H, dh, d)
        per_head = np.einsum("hk,hkd->hd", z, W_O) * m_r  # (H, d): each head's z_h W_O[h]
        for h in range(cfg.n_heads):
            add(f"L{i}H{h}", "head", per_head[h])
        if "b_O" in W:
            add(f"L{i} b_O", "bias", np.asarray(W["b_O"][i], dtype=np.float64) * m_r)
        cross = f"blocks.{i}.hook_cross_attn_out"
        if cross in trace.activations:
            add(f"L{i} cross-attn", "cross", trace[cross][position])
        mlp = f"blocks.{i}.hook_mlp_out"
        if mlp in trace.activations:  # an attention-only block has none
            add(f"L{i} {'MoE' if cfg.is_moe else 'MLP'}", "mlp", trace[mlp][position])
    return parts, kinds


def direct_logit_attribution(trace: Trace, position: int, token: int, against: int | None = None,
                             *, weights) -> Attribution:
    """Each component's direct share of the logit of ``token`` at ``position`` (or of the logit
    difference ``token`` − ``against``), through the final norm with its scale frozen.

    ``weights``: the bundle, or ``bundle.weights()``. Refuses a post-LN model in words.
    """
    require_lm(trace, "Direct logit attribution")
    cfg = trace.config
    W = weights_of(weights)
    n_pos = trace.logits.shape[0]
    if not -n_pos <= position < n_pos:
        raise ValueError(f"position {position} is outside this text's {n_pos} tokens")
    position %= n_pos
    parts, kinds = residual_parts(trace, W, position)
    W_U = unembedding(W)  # (d, vocab)
    direction = W_U[:, token] - (0.0 if against is None else W_U[:, against])  # (d,)
    direction = direction / cfg.logits_scaling
    scale = None
    if cfg.final_norm:
        scale = float(trace["ln_final.hook_scale"][position])
        gamma = np.asarray(W["ln_final.w"], dtype=np.float64)
        layernorm = cfg.norm_type != "rmsnorm"

        def through(v: np.ndarray) -> np.ndarray:
            return ((v - v.mean()) if layernorm else v) / scale * gamma
    else:
        def through(v: np.ndarray) -> np.ndarray:
            return v
    values = {name: float(through(v) @ direction) for name, v in parts.items()}
    if cfg.final_norm and "ln_final.b" in W:
        values["ln_final.b"] = float(np.asarray(W["ln_final.b"], dtype=np.float64) @ direction)
        kinds["ln_final.b"] = "norm_bias"
    if "b_U" in W:
        b_U = np.asarray(W["b_U"], dtype=np.float64)
        values["b_U"] = float((b_U[token] - (0.0 if against is None else b_U[against]))
                              / cfg.logits_scaling)
        kinds["b_U"] = "unembed_bias"
    logits = trace.logits[position].astype(np.float64)
    logit = float(logits[token] - (0.0 if against is None else logits[against]))
    return Attribution(parts=values, kinds=kinds, logit=logit, position=position, token=int(token),
                       against=None if against is None else int(against), scale=scale,
                       n_layers=cfg.n_layers, n_heads=cfg.n_heads)
