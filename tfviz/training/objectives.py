"""What each model is trained to do, as one loss per batch of rows.

    next token (gpt-tiny, moe-tiny):  L = mean over real positions of -log p(x[t+1] | x[..t])
                                          (+ coef * load-balancing loss for a mixture of experts)
    masked LM (bert-tiny):            L = mean over the chosen 15% of -log p(x[t] | masked x)
    reversal (reverse-encdec):        L = mean over target positions of -log p(y[t] | src, y[..t-1])

Each function returns (loss to minimise, cross-entropy alone) so the log shows the same
number for dense and MoE models.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from tfviz.model import Transformer
from tfviz.training.batches import IGNORE, lm_batch, mlm_batch, seq2seq_batch


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


def mlm_loss(model: Transformer, rows: Sequence[Sequence[int]], gen: torch.Generator,
             tok) -> tuple[Tensor, Tensor]:
    """Masked-LM loss; ``gen`` draws which tokens are chosen and what they become."""
    x, y, mask = mlm_batch(rows, gen, mask_id=tok.mask_id, vocab_size=tok.vocab_size,
                           pad_id=tok.pad_id)
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
