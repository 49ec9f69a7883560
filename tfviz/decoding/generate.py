"""A decoder continues a prompt one token at a time: greedy, or sampled with a seed.

    repeat:  logits of the last position -> filters (temperature, top-k, top-p) -> choose a token
             greedy: the most probable (ties: lower id);  sample: draw from the filtered p
    until:   an end token (<eos>; a checkpoint may name several), max_new_tokens, or the
             context (max_seq_len) is full

With ``use_cache`` the model reads only the new token each step and keeps the keys and values
of the earlier ones (``Transformer.step``, a KV cache); without it, it re-reads the whole
sequence. Both give the same ids, on moe-tiny too: its experts' capacity is counted per
prefix of the sentence and the counts ride in the cache, so a cached step drops exactly what
a re-read drops (tfviz/model/moe.py).

The random draws come from a numpy generator made from ``seed`` for this call only, so the
same seed gives the same text and nobody's global random state is touched.

>>> import tfviz
>>> g = generate(tfviz.load("gpt-tiny"), "the dog", max_new_tokens=20)
>>> g.text, g.stop_reason
(" didn't leave the bridge because it was too weak. it refers to the dog.", 'eos')
>>> s = g.steps[0]                     # what the model weighed before choosing " didn"
>>> s.tokens[:3], [round(p, 2) for p in s.probs[:3]]
(('␣didn', '␣did', '␣is'), [0.41, 0.38, 0.09])
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch

from tfviz.decoding.distribution import Filtered, check_filters, filter_distribution, sample
from tfviz.decoding.prompt import read_prompt, require_decoder
from tfviz.reference import softmax
from tfviz.tokenizer.base import end_ids

Strategy = Literal["greedy", "sample"]
StopReason = Literal["eos", "length", "context"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
N_CANDIDATES = 10  # candidates kept per step for a page: enough bars to see the filters at work


@dataclass(frozen=True)
class Step:
    """One token chosen: the candidates the model weighed, and which one it took.

    Candidates are the N_CANDIDATES most probable tokens (before the filters), plus the chosen
    one if a draw went further down the list. Per candidate: ``before`` = softmax(logits / T),
    ``probs`` = after top-k / top-p, renormalised (0 = excluded: grey it out); ``in_top_k`` and
    ``in_top_p`` say which filter kept it (``in_top_p`` marks the nucleus set); ``plain`` is
    the model's own distribution (T = 1), to see what the temperature did.
    """

    position: int  # index of the chosen token in prompt + new ids
    candidates: tuple[int, ...]
    tokens: tuple[str, ...]
    before: tuple[float, ...]
    probs: tuple[float, ...]
    in_top_k: tuple[bool, ...]
    in_top_p: tuple[bool, ...]
    chosen: int
    n_kept: int  # tokens of the whole vocabulary that survive the filters
    kept_mass: float = 1.0  # their total probability before renormalising (sum of ``before``)
    plain: tuple[float, ...] = ()  # per candidate: softmax(logits) at temperature 1, no filters

    @property
    def chosen_prob(self) -> float:
        """The chosen token's probability after the filters."""
        return self.probs[self.candidates.index(self.chosen)]


@dataclass(frozen=True)
class Generation:
    """What :func:`generate` gives back. ``new_ids`` excludes the prompt and ends with ``<eos>``
    when the model chose it; ``text`` is the continuation alone, without ``<eos>``."""

    prompt_ids: tuple[int, ...]
    new_ids: tuple[int, ...]
    text: str
    steps: tuple[Step, ...]
    stop_reason: StopReason
    stop_message: str
    notice: str | None = None  # set when the prompt was cut to the context

    @property
    def ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.new_ids


def make_step(bundle, f: Filtered, chosen: int, position: int, plain: np.ndarray) -> Step:
    """Keep the top candidates of a filtered distribution (and the chosen token) for a page.
    ``plain`` is softmax(logits) at temperature 1 over the vocabulary."""
    ids = [int(i) for i in f.order[:N_CANDIDATES]]
    if chosen not in ids:
        ids.append(chosen)
    return Step(position, tuple(ids), tuple(bundle.token_strings(ids)),
                tuple(float(f.before[i]) for i in ids), tuple(float(f.probs[i]) for i in ids),
                tuple(bool(f.in_top_k[i]) for i in ids), tuple(bool(f.in_top_p[i]) for i in ids),
                chosen, int(f.kept.sum()), float(f.before[f.kept].sum()),
                tuple(float(plain[i]) for i in ids))


def continuation_text(bundle, prompt_ids: Sequence[int], new_ids: Sequence[int]) -> str:
    """The new ids as text, without the end token, as they read after the prompt: decoded
    together with it, because a tokenizer may drop the leading space of a text it decodes on
    its own."""
    ends, decode = end_ids(bundle.tokenizer), bundle.tokenizer.decode
    new = [i for i in new_ids if i not in ends]
    before, whole = decode(prompt_ids), decode([*prompt_ids, *new])
    return whole[len(before):] if whole.startswith(before) else decode(new)


def step_contexts(bundle, g: Generation, chars: int = 80) -> tuple[str, ...]:
    """The text each step of ``g`` had read (prompt and tokens chosen so far), decoded, with
    only its last ``chars`` characters kept after a "…"."""
    out = []
    for s in g.steps:
        text = bundle.tokenizer.decode(g.ids[:s.position])
        out.append(text if len(text) <= chars else "…" + text[-chars:].lstrip())
    return tuple(out)


def stop_message(reason: StopReason, n_new: int, context: int, eos: str = "<eos>") -> str:
    """One sentence for the learner saying why generation stopped; ``eos`` is the name of the
    end token the model chose (GPT-2's is <|endoftext|>; a Llama 3 Instruct may end on any of
    three)."""
    return {"eos": f"The model chose {eos}: it ended the text.",
            "length": f"Stopped after {n_new} new tokens, the number asked for.",
            "context": f"Stopped: the context is full (this model reads at most {context} "
                       f"tokens, its max_seq_len)."}[reason]


def generate(bundle, prompt: str | Sequence[int], *, strategy: Strategy = "greedy",
             max_new_tokens: int, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None, seed: int = 0, use_cache: bool = True) -> Generation:
    """Continue ``prompt`` (text or ids) with a decoder-only bundle (gpt-tiny, moe-tiny).

    Greedy takes the most probable token, whatever the filters (they never remove it);
    ``sample`` draws from the filtered distribution with ``np.random.default_rng(seed)``.
    The shared model is only read, never changed.
    """
    require_decoder(bundle, "generate()")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}; got {strategy!r}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a whole number >= 0; got {max_new_tokens!r}")
    check_filters(temperature, top_k, top_p)
    prompt_ids, notice = read_prompt(bundle, prompt)
    model, context, ends = bundle.model, bundle.config.max_seq_len, end_ids(bundle.tokenizer)
    rng = np.random.default_rng(seed)  # this call's own generator
    ids, steps, reason = list(prompt_ids), [], "length"
    unread, cache = list(prompt_ids), None  # tokens the cache has not seen yet
    with torch.no_grad():
        for _ in range(max_new_tokens):
            if len(ids) >= context:  # the next token would sit past the last position
                reason = "context"
                break
            if use_cache:
                logits, cache = model.step(torch.tensor([unread]), cache)  # (1, len(unread), V)
            else:
                logits = model(torch.tensor([ids]))  # (1, len(ids), V): the whole sequence again
            z = logits[0, -1].numpy()  # (V,)
            f = filter_distribution(z, temperature, top_k, top_p)
            plain = f.before if temperature == 1 else softmax(z)  # (V,) the model's own p
            chosen = int(f.order[0]) if strategy == "greedy" else sample(f.probs, rng)
            steps.append(make_step(bundle, f, chosen, len(ids), plain))
            ids.append(chosen)
            unread = [chosen]
            if chosen in ends:  # any of the checkpoint's end tokens (Llama 3 Instruct has three)
                reason = "eos"
                break
    new_ids = tuple(ids[len(prompt_ids):])
    text = continuation_text(bundle, prompt_ids, new_ids)
    chosen_end = bundle.token_strings(new_ids[-1:])[0] if reason == "eos" else None
    return Generation(prompt_ids, new_ids, text, tuple(steps), reason,
                      stop_message(reason, len(new_ids), context,
                                   chosen_end or bundle.facts.specials.eos or "<eos>"), notice)
