"""Masked LM on the learner's sentence: BERT's masking draw, and bert-tiny's guesses.

The draw is the very code that masked bert-tiny's training batches
(``tfviz.training.batches.mlm_draw``), run on one sentence with a seed the learner picks:

>>> d = draw_masks(list(range(10, 30)), seed=0, mask_id=4, vocab_size=600)
>>> sum(k != NOT_CHOSEN for k in d.kinds)      # round(15% of 20) = 3 positions chosen
3
>>> draw_masks(list(range(10, 30)), seed=0, mask_id=4, vocab_size=600) == d   # same seed, same draw
True

``guesses`` runs the model once on what it reads and keeps the top-k tokens and their
probabilities at every position: BERT predicts everywhere, but its loss counts only the
chosen positions (``chosen_loss``). The shared model is only read, never changed.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

import numpy as np
import torch

from tfviz.training.batches import KEPT, MASKED, RANDOM, mlm_draw

NOT_CHOSEN = -1
KIND_NAMES = {NOT_CHOSEN: "not chosen", MASKED: "[MASK]", RANDOM: "random token", KEPT: "unchanged"}


class MaskedSentence(NamedTuple):
    ids: tuple[int, ...]  # the sentence as typed
    inputs: tuple[int, ...]  # what the model reads
    kinds: tuple[int, ...]  # per position: NOT_CHOSEN, MASKED, RANDOM or KEPT

    @property
    def chosen(self) -> list[int]:
        """The positions the loss is computed at."""
        return [i for i, k in enumerate(self.kinds) if k != NOT_CHOSEN]


def draw_masks(ids: Sequence[int], seed: int, *, mask_id: int, vocab_size: int,
               first_ordinary: int = 7, special_ids: Collection[int] | None = None) -> MaskedSentence:
    """One BERT masking draw of the sentence ``ids``, from a generator seeded with ``seed``.

    ``special_ids``: the tokenizer's special tokens (default: ids below ``first_ordinary``, as
    in our own tokenizers). A position holding one ([CLS], [SEP]) is never chosen, and 15% of
    the other positions are (Google's create_pretraining_data.py also never chooses [CLS] or
    [SEP], but takes its 15% of all tokens, those included); a random replacement is any id of
    the tokenizer's ``vocab_size`` but a special one. Where the specials are our first ids and
    the sentence holds none (bert-tiny), this is exactly the draw of bert-tiny's training.

    >>> d = draw_masks([2, 10, 11, 12, 13, 14, 15, 3], 0, mask_id=4, vocab_size=30,
    ...                special_ids={0, 1, 2, 3, 4})
    >>> d.kinds[0], d.kinds[-1]               # [CLS] and [SEP] are never chosen
    (-1, -1)
    """
    specials = set(range(first_ordinary)) if special_ids is None else set(special_ids)
    at = [i for i, t in enumerate(ids) if t not in specials]  # the positions that may be chosen
    kinds = [NOT_CHOSEN] * len(ids)
    inputs = [int(i) for i in ids]
    if at:
        pool = torch.tensor([i for i in range(vocab_size) if i not in specials])  # (V - specials,)
        gen = torch.Generator().manual_seed(int(seed))
        d = mlm_draw([[ids[i] for i in at]], gen, vocab_size=len(pool), first_ordinary=0)
        replaced = pool[d.random_ids[0]]  # (len(at),) an index into the pool, as an id
        for j, i in enumerate(at):
            kinds[i] = int(d.kind[0, j])
            if kinds[i] == MASKED:
                inputs[i] = mask_id
            elif kinds[i] == RANDOM:
                inputs[i] = int(replaced[j])
    return MaskedSentence(tuple(int(i) for i in ids), tuple(inputs), tuple(kinds))


def masking_tally(n_tokens: int, draws: int, seed: int, *, vocab_size: int,
                  first_ordinary: int = 7) -> np.ndarray:
    """(draws, 4) counts per draw of a sentence of ``n_tokens``: positions chosen, and of
    those how many became [MASK], a random token, or stayed unchanged. One generator seeded
    with ``seed`` makes every draw (the rows of one batch), so the tally is reproducible.
    Which tokens the sentence holds does not matter to the draw, only its length."""
    gen = torch.Generator().manual_seed(int(seed))
    d = mlm_draw([[first_ordinary] * n_tokens] * draws, gen, vocab_size=vocab_size,
                 first_ordinary=first_ordinary)
    counts = [d.chosen.sum(1)] + [(d.kind == k).sum(1) for k in (MASKED, RANDOM, KEPT)]
    return torch.stack(counts, 1).numpy()  # (draws, 4)


class Guesses(NamedTuple):
    ids: np.ndarray  # (n, k) the k most likely tokens at each position, best first
    probs: np.ndarray  # (n, k) their probabilities
    target_probs: np.ndarray  # (n,) the probability of the token that was typed there

    def typed_prob(self, position: int) -> float:
        """p(typed token) at ``position`` as the lesson's table shows it, to 4 decimals."""
        return round(float(self.target_probs[position]), 4)


@torch.no_grad()
def guesses(model, inputs: Sequence[int], targets: Sequence[int], k: int = 5) -> Guesses:
    """The model's top-``k`` tokens at every position of ``inputs`` (softmax of its logits),
    and the probability it gives each position's ``targets`` token (the one typed)."""
    logits = model(torch.tensor([list(inputs)]))[0]  # (n, vocab)
    probs = torch.softmax(logits.double(), dim=-1)  # (n, vocab), in double so they sum to 1
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    typed = probs.gather(1, torch.tensor(list(targets))[:, None])[:, 0]  # (n,)
    return Guesses(top.indices.numpy(), top.values.numpy(), typed.numpy())


def chosen_loss(g: Guesses, sentence: MaskedSentence) -> float:
    """The masked-LM loss of this draw: the mean of −log p(typed token) over the chosen
    positions only (the other positions are predicted too, but not counted)."""
    return float(np.mean(-np.log(g.target_probs[sentence.chosen])))
