"""The whole model: embeddings and positions, a stack of blocks, and the LM head.

decoder:          tokens -> blocks (causal) -> logits for the next token
encoder:          tokens -> blocks (bidirectional) -> logits for masked tokens (BERT-style);
                  a BERT checkpoint adds a token-type row and a LayerNorm to the embeddings and
                  a transform before the unembedding (MLMHead), and may have no head at all
encoder-decoder:  source -> enc_blocks -> memory;  target -> blocks (causal + cross) -> logits

``forward`` is plain: it knows nothing about tracing and keeps nothing from a call. "What if"
switches come in a :class:`~tfviz.config.RunOptions` argument, so a shared model is never
edited to run an experiment.

Three entry points, each with one return type:
    forward(ids)      -> logits (B, T, vocab)
    run(ids)          -> ModelOutput(logits, aux_loss, cache): also the MoE load-balancing loss
                         (training adds it to the loss) and the keys/values for decoding
    step(ids, cache)  -> (logits of the new tokens, grown cache): incremental decoding

An encoder-decoder's cache also keeps the encoder's output (the memory) and every decoder
layer's cross-attention keys and values of it: they depend on the source alone, so they are
computed at the first step and reused by every later one (``KVCache.cross``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tfviz.config import ModelConfig, RunOptions
from tfviz.model.attention import AttnContext
from tfviz.model.block import Block, BlockContext
from tfviz.model.hooks import HookPoint, name_hook_points
from tfviz.model.masks import sparse_pattern
from tfviz.model.mlm_head import MLMHead
from tfviz.model.norm import make_norm
from tfviz.model.positional import (alibi_bias, relative_distance, rope_angles, shaw_index,
                                    sinusoidal_table, t5_bucket)
from tfviz.model.seeded import seeded


@dataclass(frozen=True)
class KVCache:
    """Keys and values of the tokens seen so far, one (k, v) pair per decoder layer."""

    layers: tuple[tuple[Tensor, Tensor], ...]
    length: int
    memory: Tensor | None = None  # encoder output, kept for cross-attention
    # Cross-attention's (k, v) of the memory per decoder layer, each (B, S, Hkv, dh): computed
    # once per source. None: computed again from ``memory`` at the next step.
    cross: tuple[tuple[Tensor, Tensor], ...] | None = None
    # Per decoder layer, an MoE's (B, E) count of tokens each expert has served so far (its
    # capacity is counted as the sentence goes); None for a dense or uncapped layer.
    served: tuple[Tensor | None, ...] | None = None


class ModelOutput(NamedTuple):
    """Everything one pass of :meth:`Transformer.run` gives back."""

    logits: Tensor | None  # (B, T, vocab); None for a model without an LM head (cfg.lm_head)
    aux_loss: Tensor  # scalar: MoE load-balancing loss summed over layers; 0 for dense models
    cache: KVCache  # keys and values of every decoder layer, for :meth:`Transformer.step`


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        with seeded(cfg.init_seed):  # the same weights for a seed, whatever else is running
            self._build(cfg)
        name_hook_points(self)

    def _build(self, cfg: ModelConfig) -> None:
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d)
        nn.init.normal_(self.embed.weight, std=d**-0.5)
        self.hook_embed = HookPoint()  # (B, T, d)
        self.hook_pos_embed = HookPoint()  # (B, T, d)
        if cfg.positional == "learned":
            self.pos_embed = nn.Embedding(cfg.max_seq_len, d)
            nn.init.normal_(self.pos_embed.weight, std=d**-0.5)
        elif cfg.positional == "sinusoidal":
            table = sinusoidal_table(cfg.max_seq_len, d, cfg.pos_base)
            self.register_buffer("pos_table", table, persistent=False)  # (max_len, d)
        if cfg.attn_pattern != "full":
            allowed = sparse_pattern(cfg.attn_pattern, cfg.max_seq_len, window=cfg.window,
                                     dilation=cfg.dilation, n_global=cfg.n_global,
                                     n_random=cfg.n_random, stride=cfg.stride, seed=cfg.pattern_seed)
            self.register_buffer("pattern_allowed", torch.from_numpy(allowed), persistent=False)
        if cfg.arch == "encoder-decoder":
            self.hook_enc_embed = HookPoint()
            self.hook_enc_pos_embed = HookPoint()
            self.enc_blocks = nn.ModuleList(Block(cfg, first=i == 0) for i in range(cfg.enc_layers))
            if cfg.final_norm:
                self.enc_ln_final = make_norm(cfg)
        if cfg.n_token_types:  # BERT's segment table; every token reads row 0 (one sentence)
            self.token_type_embed = nn.Embedding(cfg.n_token_types, d)
            self.hook_token_type_embed = HookPoint()  # (B, T, d)
        if cfg.embed_norm:  # BERT: LayerNorm of word + token type + position
            self.ln_embed = make_norm(cfg)
        self.blocks = nn.ModuleList(Block(cfg, cross=cfg.arch == "encoder-decoder", first=i == 0)
                                    for i in range(cfg.n_layers))
        if cfg.final_norm:
            self.ln_final = make_norm(cfg)
        if cfg.mlm_transform:
            self.mlm_head = MLMHead(cfg)
        untied = cfg.lm_head and not cfg.tie_embeddings
        self.unembed = nn.Linear(d, cfg.vocab_size, bias=False) if untied else None
        if cfg.unembed_bias:
            self.unembed_bias = nn.Parameter(torch.zeros(cfg.vocab_size))  # (vocab,)

    # ----- pieces ---------------------------------------------------------------------------
    def _embed(self, ids: Tensor | None, embeds: Tensor | None, offset: int,
               hook_e: HookPoint, hook_p: HookPoint) -> Tensor:
        x = hook_e(self.embed(ids) if embeds is None else embeds)  # (B, T, d)
        B, T, d = x.shape
        if offset + T > self.cfg.max_seq_len and self.cfg.positional in ("learned", "sinusoidal"):
            raise ValueError(f"{offset + T} tokens is more than this model's context of "
                             f"{self.cfg.max_seq_len}")
        positions = torch.arange(offset, offset + T)
        if self.cfg.n_token_types:  # segment A's row, as BERT adds it before the positions
            x = x + self.hook_token_type_embed(self.token_type_embed.weight[0].expand(B, T, d))
        if self.cfg.positional == "learned":
            x = x + hook_p(self.pos_embed(positions)[None].expand(B, T, d))
        elif self.cfg.positional == "sinusoidal":
            x = x + hook_p(self.pos_table[positions][None].expand(B, T, d))
        if self.cfg.embed_norm:
            x = self.ln_embed(x)  # (B, T, d)
        if self.cfg.embedding_multiplier != 1.0:  # Granite scales what enters the first block
            x = x * self.cfg.embedding_multiplier  # (B, T, d)
        return x

    def _self_ctx(self, Tq: int, offset: int, causal: bool, key_mask: Tensor | None,
                  opts: RunOptions, stack: nn.ModuleList | None = None) -> AttnContext:
        """Mask, RoPE angles, ALiBi bias and relative distances (Shaw's table rows, T5's bias
        from ``stack``'s first layer: the decoder's blocks unless given) for queries at
        offset..offset+Tq over all keys. With a KV cache the distances are those of the real
        positions, so a cached step reads the same rows as a full pass."""
        cfg, Tk = self.cfg, offset + Tq
        q_pos, k_pos = torch.arange(offset, Tk), torch.arange(Tk)
        allowed = None
        if cfg.attn_pattern != "full":
            allowed = self.pattern_allowed[offset:Tk, :Tk]  # (Tq, Tk)
        if causal:
            not_future = k_pos[None, :] <= q_pos[:, None]  # (Tq, Tk): True where key j <= query i
            allowed = not_future if allowed is None else allowed & not_future
        if allowed is not None:
            allowed = allowed[None, None]  # (1, 1, Tq, Tk)
        if key_mask is not None:
            keys = key_mask.bool()[:, None, None, :]  # (B, 1, 1, Tk)
            allowed = keys if allowed is None else allowed & keys
        rope = None
        if cfg.positional == "rope":
            rope = rope_angles(q_pos, cfg.rope_dim, cfg.pos_base, cfg.rope_scaling,  # (Tq, r/2) each
                               transformers_order=cfg.rope_pairs == "halves")
        alibi = alibi_bias(cfg.n_heads, q_pos, k_pos) if cfg.positional == "alibi" else None
        rel_index = shaw_index(q_pos, k_pos, cfg.rel_clip) if cfg.positional == "relative" else None  # (Tq, Tk)
        bias = None
        if cfg.positional == "t5_bias":  # the model's own bucketing: an encoder's reads both ways
            buckets = t5_bucket(relative_distance(q_pos, k_pos), bidirectional=not self._causal_stack(stack),
                                n_buckets=cfg.rel_buckets, max_distance=cfg.rel_max_distance)  # (Tq, Tk)
            bias = (self.blocks if stack is None else stack)[0].attn.position_bias(buckets)  # (1, H, Tq, Tk)
        return AttnContext(allowed=allowed, scale=opts.resolved(cfg).scale,
                           temperature=opts.temperature, rope_q=rope, rope_k=rope, alibi=alibi,
                           rel_index=rel_index, position_bias=bias)

    def _causal_stack(self, stack: nn.ModuleList | None) -> bool:
        """Whether ``stack`` (the decoder's blocks if None) was built to read the past only: the
        model's own arch decides, not a what-if that switches the mask off (T5 buckets a decoder's
        distances one way whatever its mask)."""
        return self.cfg.causal and (stack is None or stack is self.blocks)

    def _logits(self, x: Tensor) -> Tensor | None:
        """(B, T, vocab) logits of the last block's output; None for a model without an LM head.
        Granite divides them by its ``logits_scaling``."""
        cfg = self.cfg
        if not cfg.lm_head:
            return None
        if cfg.mlm_transform:
            x = self.mlm_head(x)  # (B, T, d)
        if cfg.unembed_bias:
            W_U = self.embed.weight if self.unembed is None else self.unembed.weight  # (vocab, d)
            logits = F.linear(x, W_U, self.unembed_bias)  # (B, T, vocab): x W_U^T + b_U
        elif self.unembed is None:
            logits = F.linear(x, self.embed.weight)  # (B, T, vocab), tied: x E^T
        else:
            logits = self.unembed(x)  # (B, T, vocab)
        return logits if cfg.logits_scaling == 1.0 else logits / cfg.logits_scaling

    # ----- public ---------------------------------------------------------------------------
    def encode(self, enc_ids: Tensor, enc_attention_mask: Tensor | None = None,
               options: RunOptions | None = None) -> tuple[Tensor, Tensor]:
        """Encoder of an encoder-decoder model: (memory (B, S, d), summed MoE aux loss)."""
        opts = options or RunOptions()
        x = self._embed(enc_ids, None, 0, self.hook_enc_embed, self.hook_enc_pos_embed)
        ctx = BlockContext(self._self_ctx(x.shape[1], 0, False, enc_attention_mask, opts, self.enc_blocks),
                           moe_top_k=opts.moe_top_k)
        aux = x.new_zeros(())
        for block in self.enc_blocks:
            x, _, a, _ = block(x, ctx)
            aux = aux + a
        if self.cfg.final_norm:
            x = self.enc_ln_final(x)
        return x, aux

    def run(self, ids: Tensor | None = None, *, enc_ids: Tensor | None = None,
            attention_mask: Tensor | None = None, enc_attention_mask: Tensor | None = None,
            inputs_embeds: Tensor | None = None, options: RunOptions | None = None,
            cache: KVCache | None = None) -> ModelOutput:
        """One pass, everything it gives: logits (B, T, vocab), MoE aux loss, KV cache.

        Arguments as :meth:`forward`; ``cache`` continues from earlier tokens (see :meth:`step`).
        """
        opts = options or RunOptions()
        cfg = self.cfg
        memory, aux = None, torch.zeros(())
        if cfg.arch == "encoder-decoder":
            if cache is not None and cache.memory is not None:
                memory = cache.memory
            else:
                if enc_ids is None:
                    raise ValueError("an encoder-decoder model needs enc_ids (the source)")
                memory, aux = self.encode(enc_ids, enc_attention_mask, opts)
        if cache is not None and attention_mask is not None:
            raise ValueError("the KV cache does not support padding masks")
        offset = cache.length if cache is not None else 0
        x = self._embed(ids, inputs_embeds, offset, self.hook_embed, self.hook_pos_embed)
        base = self._self_ctx(x.shape[1], offset, opts.resolved(cfg).causal, attention_mask, opts)
        cross = None
        if memory is not None:
            mem_mask = enc_attention_mask.bool()[:, None, None, :] if enc_attention_mask is not None else None
            cross = AttnContext(allowed=mem_mask, scale=base.scale, temperature=opts.temperature)
        reuse = cache is not None and cache.cross is not None
        layers, cross_kv, served = [], [], []
        for i, block in enumerate(self.blocks):
            ablate = tuple(sorted(h for (layer, h) in opts.ablate_heads if layer == i))
            if memory is not None:  # K, V of the memory: from the cache, or computed now
                cross_kv.append(cache.cross[i] if reuse else block.cross_attn.source_kv(memory))
            ctx = BlockContext(dataclasses.replace(base, ablate=ablate), cross, memory, opts.moe_top_k,
                               cross_kv[i] if memory is not None else None, offset)
            x, kv, a, s = block(x, ctx, past=cache.layers[i] if cache is not None else None,
                                served=cache.served[i] if cache is not None and cache.served else None)
            layers.append(kv)
            served.append(s)
            aux = aux + a
        if cfg.final_norm:
            x = self.ln_final(x)
        new_cache = KVCache(tuple(layers), offset + x.shape[1], memory,
                            tuple(cross_kv) if memory is not None else None, tuple(served))
        return ModelOutput(self._logits(x), aux, new_cache)

    def forward(self, ids: Tensor | None = None, *, enc_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, enc_attention_mask: Tensor | None = None,
                inputs_embeds: Tensor | None = None, options: RunOptions | None = None) -> Tensor:
        """ids: (B, T) token ids -> logits (B, T, vocab). attention_mask: (B, T), 1 = real token.

        enc_ids / enc_attention_mask: the source of an encoder-decoder model. inputs_embeds:
        (B, T, d) vectors in place of the token embeddings. For the MoE loss use :meth:`run`.
        """
        return self.run(ids, enc_ids=enc_ids, attention_mask=attention_mask,
                        enc_attention_mask=enc_attention_mask, inputs_embeds=inputs_embeds,
                        options=options).logits

    def step(self, ids: Tensor, cache: KVCache | None = None, *, enc_ids: Tensor | None = None,
             options: RunOptions | None = None) -> tuple[Tensor, KVCache]:
        """Incremental decoding: feed only the new tokens; earlier keys/values come from cache.

        Returns the new tokens' logits (B, T_new, vocab) and the grown cache. The first call
        (cache=None) takes the prompt, later calls typically one token each. An encoder-decoder
        gets the source at the first call; later calls reuse its memory and the cross-attention
        keys and values kept in the cache (``dataclasses.replace(cache, cross=None)`` makes the
        next call compute them again, for comparison).
        """
        out = self.run(ids, enc_ids=enc_ids, options=options, cache=cache)
        return out.logits, out.cache
