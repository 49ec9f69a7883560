"""What each model is trained to do, as one loss per batch of rows.

    next token (gpt-tiny, moe-tiny):  L = mean over real positions of -log p(x[t+1] | x[..t])
                                          (+ coef * load-balancing loss for a mixture of experts)
    masked LM (bert-tiny):            L = mean over the chosen 15% of -log p(x[t] | masked x)
                                          (+ at the "it" of an Antecedent row: -log p(its noun | x))
    reversal (reverse-encdec):        L = mean over target positions of -log p(y[t] | src, y[..t-1])

Each function returns (loss to minimise, cross-entropy alone) so the log shows the same
number for dense and MoE models.

Head dropout (``mlm_loss(..., drop_heads=(layer, p))``, bert-tiny): in the Antecedent rows of a
batch, each head of that layer is switched off with probability p (its output zeroed before
W_o), and the heads kept are scaled by 1 / (1 - p), like dropout. Plain rows keep every head,
and nothing is dropped outside training. A job that two heads share half each (one head for
each kind of answer) fails whenever one of them is off, so the job tends to end up whole in
a single head. Dropping whole heads is known as DropHead (Zhou et al., 2020).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext

import torch
import torch.nn.functional as F
from torch import Tensor

from tfviz.model import Transformer
from tfviz.training.batches import IGNORE, Antecedent, lm_batch, mlm_batch, seq2seq_batch


def _ce(logits: Tensor, targets: Tensor) -> Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=IGNORE)


def lm_loss(model: Transformer, rows: Sequence[Sequence[int]], gen: torch.Generator,
            tok) -> tuple[Tensor, Tensor]:
    """Next-token loss; rows are right-padded, and causal attention never sees the padding."""
    x, y = lm_batch(rows, tok.pad_id)
    out = model.run(x)  # logits (B, T, V) and the MoE load-balancing loss
    ce = _ce(out.logits, y)
    return ce + model.cfg.moe_aux_loss_coef * out.aux_loss, ce


@contextmanager
def heads_scaled(model: Transformer, layer: int, keep: Tensor) -> Iterator[None]:
    """While active, the output of head h of ``blocks[layer]`` in row b is multiplied by
    ``keep[b, h]`` (B, H) before W_o mixes the heads; the model itself is not changed."""
    def scale(module, args):
        (z,) = args  # (B, T, H * dh): the heads' outputs side by side
        dh = z.shape[-1] // keep.shape[1]
        return (z * keep.repeat_interleave(dh, dim=1)[:, None, :],)
    handle = model.blocks[layer].attn.W_o.register_forward_pre_hook(scale)
    try:
        yield
    finally:
        handle.remove()


def mlm_loss(model: Transformer, rows: Sequence[Sequence[int] | Antecedent], gen: torch.Generator,
             tok, drop_heads: tuple[int, float] | None = None) -> tuple[Tensor, Tensor]:
    """Masked-LM loss; ``gen`` draws which tokens are chosen and what they become.

    Antecedent rows also count their pronoun's position (target: its noun). With
    ``drop_heads=(layer, p)`` those rows run with each head of ``layer`` off with probability
    p (drawn from ``gen`` after the masking); see the module docstring.
    """
    x, y, mask = mlm_batch(rows, gen, mask_id=tok.mask_id, vocab_size=tok.vocab_size,
                           pad_id=tok.pad_id)
    dropping = nullcontext()
    if drop_heads is not None and model.training:
        layer, p = drop_heads
        keep = (torch.rand(len(rows), model.cfg.n_heads, generator=gen) >= p).float() / (1 - p)  # (B, H)
        labelled = torch.tensor([isinstance(r, Antecedent) for r in rows])  # (B,)
        keep[~labelled] = 1.0
        dropping = heads_scaled(model, layer, keep)
    with dropping:
        out = model.run(x, attention_mask=mask)  # logits (B, T, V) and the MoE loss
    ce = _ce(out.logits, y)
    return ce + model.cfg.moe_aux_loss_coef * out.aux_loss, ce


def seq2seq_loss(model: Transformer, pairs: Sequence[tuple[Sequence[int], Sequence[int]]],
                 gen: torch.Generator, tok) -> tuple[Tensor, Tensor]:
    """Teacher-forced loss of an encoder-decoder: decoder reads <bos> target, predicts target <eos>."""
    enc, enc_mask, dec_in, dec_tgt = seq2seq_batch(pairs, tok.bos_id, tok.eos_id, tok.pad_id)
    out = model.run(dec_in, enc_ids=enc, enc_attention_mask=enc_mask)  # logits (B, T, V), MoE loss
    ce = _ce(out.logits, dec_tgt)
    return ce + model.cfg.moe_aux_loss_coef * out.aux_loss, ce
