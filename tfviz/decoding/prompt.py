"""What generation starts from: a decoder-only model and the ids of the learner's prompt.

>>> import tfviz
>>> read_prompt(tfviz.load("gpt-tiny"), "the animal")
((265, 331), None)
"""
from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import numpy as np

from tfviz.config import PRESET_NAMES, preset
from tfviz.textinput import truncation_notice

# the last word and the full stop (or ! ?) after it, with any closing quote or bracket
_LAST_WORD_AND_STOP = re.compile(r"\s*[^\s.!?]*\s*[.!?]+[\"'”’)\]]*\s*$")


def generating_models() -> tuple[str, ...]:
    """Presets that can continue a text: the decoder-only ones.

    >>> generating_models()
    ('gpt-tiny', 'moe-tiny')
    """
    return tuple(n for n in PRESET_NAMES if preset(n).arch == "decoder")


def require_decoder(bundle, what: str) -> None:
    """Raise a ValueError naming the models that can generate, unless ``bundle`` is one."""
    arch = bundle.config.arch
    if arch != "decoder":
        raise ValueError(f"{what} needs a decoder-only model that predicts the next token "
                         f"({', '.join(generating_models())}); {bundle.name} is an {arch} model")


def read_prompt(bundle, prompt: str | Sequence[int]) -> tuple[tuple[int, ...], str | None]:
    """(prompt ids cut to the model's context, the notice that says so or None).

    ``prompt`` is text, or token ids already. An empty prompt is an error: a model trained
    without ``<bos>`` has nothing to continue.
    """
    ids = bundle.encode(prompt) if isinstance(prompt, str) else [int(i) for i in prompt]
    if not ids:
        raise ValueError("the prompt is empty: type at least one word for the model to continue")
    vocab = bundle.config.vocab_size
    if not all(0 <= i < vocab for i in ids):
        raise ValueError(f"token ids must lie in 0..{vocab - 1}, this model's vocabulary")
    n = bundle.config.max_seq_len
    return tuple(ids[:n]), truncation_notice(len(ids), n)


def prompt_with_room(bundle, text: str, new_tokens: int) -> tuple[tuple[int, ...], str | None]:
    """(the ids of ``text`` to continue, a notice or None): a prompt too long to leave room for
    ``new_tokens`` more in the context keeps its *last* tokens, the ones a continuation follows
    (``read_prompt`` keeps the first, as a trace does). At least one token is kept. A model whose
    tokenizer puts its beginning-of-text token in front of every text (a Llama's) keeps that
    token first, as every text it was trained on began.

    >>> import tfviz
    >>> ids, notice = prompt_with_room(tfviz.load("gpt-tiny"), "the dog sat. " * 40, 20)
    >>> len(ids)
    108
    >>> print(notice)
    Your prompt is 201 tokens long; to leave room for 20 new tokens in the 128 this model
    reads, it continues from the last 108.
    """
    ids = bundle.encode(text)
    if not ids:
        raise ValueError("the prompt is empty: type at least one word for the model to continue")
    n = bundle.config.max_seq_len
    room = max(n - max(int(new_tokens), 0), 1)
    if len(ids) <= room:
        return tuple(ids), None
    notice = (f"Your prompt is {len(ids)} tokens long; to leave room for {new_tokens} new tokens in "
              f"the {n} this model reads, it continues from the last {room}.")
    bos = getattr(bundle.tokenizer, "bos_id", None)
    if room > 1 and bos is not None and ids[0] == bos and bundle.facts.adds_bos:
        # a model whose every training text began with its BOS keeps it first (a Llama)
        name = bundle.facts.specials.bos
        return (ids[0], *ids[-(room - 1):]), notice.replace(
            f"from the last {room}.", f"from {name}, as every text it reads begins, and the last {room - 1}.")
    return tuple(ids[-room:]), notice


def cut_sentence_end(text: str) -> tuple[str, str] | None:
    """(``text`` without its last word and the full stop that ends it, what was cut), or None
    when ``text`` does not end a sentence or nothing would be left.

    >>> cut_sentence_end("the cat sat on the mat.")
    ('the cat sat on the', ' mat.')
    >>> cut_sentence_end("the cat sat on the") is None, cut_sentence_end("Hi!") is None
    (True, True)
    """
    found = _LAST_WORD_AND_STOP.search(text)
    if found is None or not text[:found.start()].strip():
        return None
    return text[:found.start()], text[found.start():].rstrip()


def starting_prompt(text: str, next_logits, ends: Collection[int]) -> tuple[str, str | None]:
    """(the prompt lesson 14 starts from, the words cut off or None).

    A text that ends a sentence, after which the model's likeliest next token is an end token
    (one of ``ends``; ``next_logits``: the logits at the text's last position), would leave
    greedy decoding and beam search with nothing to write: they would end at once. The prompt
    then starts before its last word and full stop, which the model has to write again itself,
    and goes on from.

    >>> starting_prompt("the cat sat on the mat.", np.array([0.0, 0.0, 5.0]), ends=(2,))
    ('the cat sat on the', ' mat.')
    >>> starting_prompt("the cat sat on the mat.", np.array([9.0, 0.0, 5.0]), ends=(2,))
    ('the cat sat on the mat.', None)
    """
    cut = cut_sentence_end(text)
    if cut is None or not ends or next_logits is None:
        return text, None
    if int(np.argmax(np.asarray(next_logits))) not in ends:
        return text, None
    return cut
