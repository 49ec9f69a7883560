"""The training objective of a decoder, on the learner's own sentence: predict the next token.

    inputs   x_1 … x_{n-1}          targets  x_2 … x_n       (the same ids moved one place left)
    loss_t = −log p(x_{t+1} | x_1 … x_t)                      cross-entropy, in nats
    L      = mean over t of loss_t                            what training minimises

gpt-tiny and moe-tiny were trained on rows "sentence <eos>" (tfviz/training/recipes.py), so
by default ``<eos>`` is appended and the last pair asks the model to end the sentence.

>>> import tfviz
>>> r = lm_loss_per_token(tfviz.load("gpt-tiny"), "the animal didn't cross the street")
>>> list(zip(r.input_tokens, r.target_tokens))[:3]
[('␣the', '␣animal'), ('␣animal', '␣didn'), ('␣didn', "'t")]
>>> [round(x, 2) for x in r.losses[:4]], r.target_tokens[-1]     # "'t" after "didn" is sure
([2.51, 0.9, 0.0, 1.41], '<eos>')
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tfviz.decoding.prompt import require_decoder
from tfviz.textinput import truncation_notice


@dataclass(frozen=True)
class TokenLoss:
    """Input/target pairs of one sentence and the loss of each (all tuples of equal length)."""

    inputs: tuple[int, ...]
    targets: tuple[int, ...]
    input_tokens: tuple[str, ...]
    target_tokens: tuple[str, ...]
    losses: tuple[float, ...]  # −log p(target | inputs up to here), nats
    probs: tuple[float, ...]  # p(target | inputs up to here) = e^−loss
    notice: str | None = None  # set when the sentence was cut to the context

    @property
    def mean(self) -> float:
        """The sentence's loss: the mean of the per-token losses."""
        return sum(self.losses) / len(self.losses)

    @property
    def perplexity(self) -> float:
        """e to the mean loss: the number of equally likely tokens that would be as uncertain."""
        return math.exp(self.mean)

    @property
    def hardest(self) -> int:
        """The position of the largest loss (the first of equal ones)."""
        return max(range(len(self.losses)), key=self.losses.__getitem__)

    def rows(self) -> list[dict]:
        """The lesson's table, a row a position: input, target, p(target) to 4 significant
        digits and the loss to 4 decimals."""
        return [{"position": i, "input": a, "target": b, "p(target)": float(f"{p:.4g}"),
                 "loss (nats)": round(x, 4)}
                for i, (a, b, p, x) in enumerate(zip(self.input_tokens, self.target_tokens,
                                                     self.probs, self.losses))]


def lm_loss_per_token(bundle, text: str, *, append_eos: bool | None = None) -> TokenLoss:
    """Cross-entropy on shifted targets for ``text``, one number per input/target pair.

    ``append_eos``: None scores the text as the model was trained: with its end token appended
    where one closed every training row (our story models: "sentence <eos>"), without it where
    the end token only separated whole documents (GPT-2's <|endoftext|>), since there a sentence's
    end is no reason to predict it.

    The model reads at most ``max_seq_len`` inputs; longer text is cut (see ``notice``).
    """
    require_decoder(bundle, "lm_loss_per_token()")
    ids = bundle.encode(text)
    n = bundle.config.max_seq_len
    notice = truncation_notice(len(ids), n)
    if append_eos is None:
        append_eos = bundle.facts.eos_ends != "document"
    row = ([*ids, bundle.tokenizer.eos_id] if append_eos else ids)[:n + 1]
    if len(row) < 2:
        raise ValueError("the sentence needs at least two tokens: one to read and one to predict")
    inputs, targets = row[:-1], row[1:]
    with torch.no_grad():
        logits = bundle.model(torch.tensor([inputs]))[0]  # (T, V)
    logp = torch.log_softmax(logits.double(), dim=-1)  # (T, V)
    picked = logp[torch.arange(len(targets)), torch.tensor(targets)]  # (T,) log p(target_t)
    return TokenLoss(tuple(inputs), tuple(targets), tuple(bundle.token_strings(inputs)),
                     tuple(bundle.token_strings(targets)), tuple((-picked).tolist()),
                     tuple(picked.exp().tolist()), notice)
