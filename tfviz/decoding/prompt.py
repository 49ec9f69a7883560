"""What generation starts from: a decoder-only model and the ids of the learner's prompt.

>>> import tfviz
>>> read_prompt(tfviz.load("gpt-tiny"), "the animal")
((265, 331), None)
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.config import PRESET_NAMES, preset
from tfviz.textinput import truncation_notice


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
    (``read_prompt`` keeps the first, as a trace does). At least one token is kept.

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
    return tuple(ids[-room:]), (f"Your prompt is {len(ids)} tokens long; to leave room for "
                                f"{new_tokens} new tokens in the {n} this model reads, it "
                                f"continues from the last {room}.")
