"""Multi-head attention with every step materialised (no fused kernel).

For one head with d_k = d_head:
    q = x W_q,  k = x W_k,  v = x W_v
    scores  = q k^T            (hook_scores_raw)
    scaled  = scores / sqrt(d_k) (+ ALiBi bias)     (hook_attn_scores_unmasked)
              (Granite: scores * attention_multiplier in place of / sqrt(d_k))
    masked  = scaled, with -inf where attention is not allowed   (hook_attn_scores)
    pattern = softmax(masked / temperature) over keys            (hook_pattern)
    z       = pattern v        (hook_z, one vector per head)
    out     = concat(z_1..z_h) W_o

``hook_attn_scores`` is what TransformerLens records under that name: the scores after the
scale and the mask, the softmax's input. ``hook_scores_raw`` and ``hook_attn_scores_unmasked``
are ours, the two steps before it, so a lesson can show what the scale and the mask each did.

Grouped-query attention keeps n_kv_heads key/value heads; each serves n_heads / n_kv_heads
query heads. n_kv_heads = 1 is multi-query attention.

With RoPE, q and k are turned by their positions before the scores (hook_rot_q, hook_rot_k);
with QK-norm (Qwen3), each head's q and k first go through an RMSNorm of their own
(``q_norm``, ``k_norm``, whose hook_scale is (B, T, heads)).

Two position schemes act on the scores and values themselves (self-attention only):

Shaw et al. (2018), ``positional="relative"``: each layer learns a key vector a^K_d and a value
vector a^V_d for every clipped distance d = clip(j - i, -k, k), shared by its heads (as in the
paper), and adds them inside attention:
    e_ij = q_i . (k_j + a^K_ij) / sqrt(d_k)     hook_scores_raw holds q_i . (k_j + a^K_ij),
                                                hook_rel_scores its position part q_i . a^K_ij
    z_i  = sum_j alpha_ij (v_j + a^V_ij)        hook_rel_z holds the part sum_j alpha_ij a^V_ij
hook_rel_k and hook_rel_v are the (1, Tq, Tk, dh) vectors each pair read.

T5 (Raffel et al. 2020), ``positional="t5_bias"``: a learned number b_h(bucket(j - i)) per head
and distance bucket, added to the scores after the scale (hook_rel_pos_bias, (1, H, Tq, Tk)).
T5 itself does not divide by sqrt(d_k) (its initialisation absorbs it); our models keep the
config's ``scale_attn``, so with it on the bias is added to q . k / sqrt(d_k), as ALiBi's is,
and with it off this is T5's score exactly. As in T5, one table (``rel_pos_bias``, n_buckets x
H) per stack lives in its first layer's attention and every layer of the stack adds it.
TransformerLens's T5Attention names the table ``rel_pos_bias`` too; its hook is spelt
``rel_pos_hook``, ours ``hook_rel_pos_bias`` like every other of our hooks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.hooks import HookPoint
from tfviz.model.norm import make_norm
from tfviz.model.positional import apply_rope


@dataclass(frozen=True)
class AttnContext:
    """What one attention call needs besides its input; built per forward, never stored."""

    allowed: Tensor | None  # (B or 1, 1, Tq, Tk) bool, True = may attend; None = everything
    scale: bool
    temperature: float = 1.0
    ablate: tuple[int, ...] = ()  # heads whose z is zeroed
    rope_q: tuple[Tensor, Tensor] | None = None  # cos, sin for the query positions
    rope_k: tuple[Tensor, Tensor] | None = None  # cos, sin for the new key positions
    alibi: Tensor | None = None  # (H, Tq, Tk) additive bias
    rel_index: Tensor | None = None  # (Tq, Tk) long: Shaw's table row clip(j - i, -k, k) + k
    position_bias: Tensor | None = None  # (1, H, Tq, Tk): T5's bias, the same for every layer


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, *, cross: bool = False, bias_table: bool = False) -> None:
        """``cross``: a cross-attention (no relative positions: its keys are another sequence's).
        ``bias_table``: this attention holds its stack's T5 bias table (the stack's first layer)."""
        super().__init__()
        self.n_heads, self.n_kv, self.d_head = cfg.n_heads, cfg.kv_heads, cfg.d_head
        self.rope_pairs = cfg.rope_pairs
        self.multiplier = cfg.attention_multiplier  # None: divide the scores by sqrt(d_head)
        d, qkv_bias = cfg.d_model, cfg.has_qkv_bias
        self.W_q = nn.Linear(d, self.n_heads * self.d_head, bias=qkv_bias)
        self.W_k = nn.Linear(d, self.n_kv * self.d_head, bias=qkv_bias)
        self.W_v = nn.Linear(d, self.n_kv * self.d_head, bias=qkv_bias)
        self.W_o = nn.Linear(self.n_heads * self.d_head, d, bias=cfg.bias)
        self.hook_q = HookPoint()  # (B, Tq, H, dh)
        self.hook_k = HookPoint()  # (B, Tk_new, Hkv, dh)
        self.hook_v = HookPoint()  # (B, Tk_new, Hkv, dh)
        # QK-norm: one gamma of dh entries for all query heads, one for all key heads.
        self.q_norm = make_norm(cfg, self.d_head) if cfg.qk_norm else None
        self.k_norm = make_norm(cfg, self.d_head) if cfg.qk_norm else None
        if cfg.positional == "rope":
            self.hook_rot_q = HookPoint()  # (B, Tq, H, dh): q after rotation
            self.hook_rot_k = HookPoint()
        self.rel_k = self.rel_v = None
        if cfg.positional == "relative" and not cross:
            # a^K and a^V: row clip(j - i, -k, k) + k, one of 2k + 1, shared by this layer's heads;
            # started a little smaller than a fresh model's keys and values (0.06 an entry
            # against 0.1 at d = 64), so at first the tokens themselves lead the scores
            self.rel_k = nn.Embedding(2 * cfg.rel_clip + 1, self.d_head)
            self.rel_v = nn.Embedding(2 * cfg.rel_clip + 1, self.d_head)
            nn.init.normal_(self.rel_k.weight, std=0.5 * d ** -0.5)
            nn.init.normal_(self.rel_v.weight, std=0.5 * d ** -0.5)
            self.hook_rel_k = HookPoint()  # (1, Tq, Tk, dh): a^K_ij of every pair
            self.hook_rel_v = HookPoint()  # (1, Tq, Tk, dh): a^V_ij of every pair
            self.hook_rel_scores = HookPoint()  # (B, H, Tq, Tk): q_i . a^K_ij, before the scale
        if bias_table:  # T5: one number per (bucket, head); N(0, d^-1/2) as transformers starts T5
            self.rel_pos_bias = nn.Embedding(cfg.rel_buckets, self.n_heads)
            nn.init.normal_(self.rel_pos_bias.weight, std=d ** -0.5)
        if cfg.positional == "t5_bias" and not cross:
            self.hook_rel_pos_bias = HookPoint()  # (1, H, Tq, Tk): the bias this layer adds
        self.hook_scores_raw = HookPoint()  # (B, H, Tq, Tk): q . k (Shaw: q . (k + a^K))
        self.hook_attn_scores_unmasked = HookPoint()  # (B, H, Tq, Tk): scaled, before the mask
        self.hook_attn_scores = HookPoint()  # (B, H, Tq, Tk): scaled and masked (-inf: hidden)
        self.hook_pattern = HookPoint()  # (B, H, Tq, Tk): rows sum to 1
        if self.rel_v is not None:
            self.hook_rel_z = HookPoint()  # (B, Tq, H, dh): sum_j alpha_ij a^V_ij
        self.hook_z = HookPoint()  # (B, Tq, H, dh): each head's weighted sum of values

    def source_kv(self, source: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values of ``source`` (B, S, d): each (B, S, Hkv, dh).

        Cross-attention reads the encoder's output through these. They depend on the source
        alone, so an encoder-decoder computes them once per source and passes them to every
        decoding step as ``kv`` (``KVCache.cross`` in :mod:`tfviz.model.transformer`).
        """
        B, S, _ = source.shape
        k = self.hook_k(self.W_k(source).view(B, S, self.n_kv, self.d_head))  # (B, S, Hkv, dh)
        v = self.hook_v(self.W_v(source).view(B, S, self.n_kv, self.d_head))  # (B, S, Hkv, dh)
        if self.k_norm is not None:
            k = self.k_norm(k)  # (B, S, Hkv, dh): each head's key to rms 1, times gamma
        return k, v

    def position_bias(self, buckets: Tensor) -> Tensor:
        """T5's bias for each pair's bucket (Tq, Tk): (1, H, Tq, Tk). Only the attention that
        holds its stack's table (``bias_table``) has one."""
        return self.rel_pos_bias(buckets).permute(2, 0, 1)[None]  # (Tq, Tk, H) -> (1, H, Tq, Tk)

    def forward(self, x: Tensor, ctx: AttnContext, source: Tensor | None = None,
                past: tuple[Tensor, Tensor] | None = None,
                kv: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """x: (B, Tq, d) queries; source: (B, Tk, d) keys/values (x itself for self-attention).
        kv: the keys and values of ``source`` already computed (``source_kv``), used as they are.

        Returns the output (B, Tq, d) and this call's (k, v) including ``past``, for a KV cache.
        """
        B, Tq, _ = x.shape
        H, Hkv, dh = self.n_heads, self.n_kv, self.d_head
        q = self.hook_q(self.W_q(x).view(B, Tq, H, dh))  # (B, Tq, H, dh)
        if self.q_norm is not None:
            q = self.q_norm(q)  # (B, Tq, H, dh): each head's query to rms 1, times gamma
        k, v = self.source_kv(x if source is None else source) if kv is None else kv  # (B, Tk, Hkv, dh)
        if ctx.rope_q is not None:
            q = self.hook_rot_q(apply_rope(q, *ctx.rope_q, self.rope_pairs))  # (B, Tq, H, dh)
            k = self.hook_rot_k(apply_rope(k, *ctx.rope_k, self.rope_pairs))  # (B, Tk, Hkv, dh)
        if past is not None:
            k = torch.cat([past[0], k], dim=1)  # (B, Tpast + Tk, Hkv, dh)
            v = torch.cat([past[1], v], dim=1)
        group = H // Hkv
        k_full = k.repeat_interleave(group, dim=2) if group > 1 else k  # (B, Tk, H, dh)
        v_full = v.repeat_interleave(group, dim=2) if group > 1 else v  # (B, Tk, H, dh)

        scores = torch.einsum("bqhd,bkhd->bhqk", q, k_full)  # (B, H, Tq, Tk): q_i . k_j
        if self.rel_k is not None:  # Shaw et al.: q_i . (k_j + a^K_ij)
            if ctx.rel_index is None:
                raise ValueError("relative positions need each pair's distance (AttnContext.rel_index)")
            a_k = self.hook_rel_k(self.rel_k(ctx.rel_index)[None])  # (1, Tq, Tk, dh)
            a_v = self.hook_rel_v(self.rel_v(ctx.rel_index)[None])  # (1, Tq, Tk, dh)
            scores = scores + self.hook_rel_scores(torch.einsum("bqhd,qkd->bhqk", q, a_k[0]))  # (B, H, Tq, Tk)
        scores = self.hook_scores_raw(scores)  # (B, H, Tq, Tk)
        if not ctx.scale:
            scaled = scores
        elif self.multiplier is None:
            scaled = scores / math.sqrt(dh)  # (B, H, Tq, Tk)
        else:
            scaled = scores * self.multiplier  # (B, H, Tq, Tk): Granite's factor for 1/sqrt(dh)
        if ctx.alibi is not None:
            scaled = scaled + ctx.alibi[None]
        if ctx.position_bias is not None:  # T5: b_h(bucket(j - i)), added after the scale
            scaled = scaled + self.hook_rel_pos_bias(ctx.position_bias)  # (B, H, Tq, Tk)
        scaled = self.hook_attn_scores_unmasked(scaled)
        if ctx.allowed is not None:
            masked = scaled.masked_fill(~ctx.allowed, float("-inf"))
        else:
            masked = scaled
        masked = self.hook_attn_scores(masked)
        logits = masked / ctx.temperature if ctx.temperature != 1.0 else masked
        pattern = torch.softmax(logits, dim=-1)  # (B, H, Tq, Tk)
        if ctx.allowed is not None:
            # A query that may see no key at all (only padding) attends to nothing, not NaN.
            pattern = pattern.masked_fill(~ctx.allowed.any(-1, keepdim=True), 0.0)
        pattern = self.hook_pattern(pattern)

        z = torch.einsum("bhqk,bkhd->bqhd", pattern, v_full)  # (B, Tq, H, dh)
        if self.rel_v is not None:  # Shaw et al.: each value read with its distance's a^V_ij
            z = z + self.hook_rel_z(torch.einsum("bhqk,qkd->bqhd", pattern, a_v[0]))  # (B, Tq, H, dh)
        if ctx.ablate:
            keep = torch.ones(H, dtype=z.dtype)
            keep[list(ctx.ablate)] = 0.0
            z = z * keep[None, None, :, None]
        z = self.hook_z(z)
        out = self.W_o(z.reshape(B, Tq, H * dh))  # (B, Tq, d): concat heads, then W_o
        return out, (k, v)
