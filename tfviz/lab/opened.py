"""A lab run taken to the lessons: its model as a :class:`~tfviz.bundle.Bundle` that reads the
run's task, not English. No streamlit here (``tfviz.ui.own_model`` keeps it in one session).

A run's model was trained on rows such as ``<bos> c a b <sep> b a c``, so that is what it reads
in the lessons too. :class:`LabTokenizer` reads typed text as the task's symbols: letters one by
one (spaces optional), the stories' words as words, ``<bos>`` ``<sep>`` ``<eos>`` as themselves,
and it always starts the row with ``<bos>``, as every training row did. Anything else is
skipped and named, with what the model does know.

>>> from tfviz.lab.tasks import TASKS
>>> tok = LabTokenizer(TASKS["sort"])
>>> tok.tokens("C a B <sep>")
['<bos>', 'c', 'a', 'b', '<sep>']
>>> tok.normalize("cab!"), tok.unknown("cab!z")
('<bos> c a b', ['!', 'z'])
>>> run_title(LabSettings.default("sort"), 1)
'my run 1: sort, 2 layers × 2 heads'
>>> example_texts(TASKS["sort"], 1)
{'held-out 1: c g f → c f g': '<bos> c g f <sep> c f g'}
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np

from tfviz.bundle import Bundle
from tfviz.data.stories import words_of
from tfviz.data.tasks import SPECIALS
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import LabTask

# A run's model is named "my run N: ..." (N counts the runs this session opened). The name is only
# unique within its session: what keeps it there is that no server-wide cache ever sees it
# (tfviz.ui.own_model, tfviz.ui.cache.per_model), not the name.
RUN_PREFIX = "my run "
RUN_LINK = "my-run"  # what a link says instead: nobody else can open someone's run
READ_SPECIALS = ("<bos>", "<sep>", "<eos>")  # what a learner may type; <pad> is not a token to read
_SPECIAL_RE = re.compile("|".join(re.escape(s) for s in SPECIALS))  # "<pad>" too, to skip it whole
SHOWN_UNKNOWN = 8  # unknown symbols named in the notice


def is_run_name(name: object) -> bool:
    """True for a session's own model name: "my run 1: sort, …" yes, "gpt-tiny" no."""
    return isinstance(name, str) and name.startswith(RUN_PREFIX)


class LabTokenizer:
    """The :class:`~tfviz.tokenizer.base.Tokenizer` of a lab task: one id per symbol of its
    vocabulary (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<sep>`` 3, then the alphabet).

    ``decode(encode(x)) == normalize(x)``: the symbols read, ``<bos>`` first, joined by spaces.
    """

    specials = SPECIALS
    pad_id, bos_id, eos_id, sep_id = 0, 1, 2, 3
    mask_id = unk_id = cls_id = None  # the task vocabularies have none of them

    def __init__(self, task: LabTask) -> None:
        self.task = task
        self.vocab = task.vocab
        self._index = {t: i for i, t in enumerate(self.vocab.tokens)}
        self.by_letter = all(len(s) == 1 for s in self.vocab.alphabet)  # else words (the stories)

    @property
    def vocab_size(self) -> int:
        return self.vocab.size

    def _pieces(self, text: str) -> list[str]:
        """The symbols of ``text`` in order, known or not (spaces and commas between letters
        are separators, not symbols)."""
        out: list[str] = []
        at = 0
        for m in [*_SPECIAL_RE.finditer(text), None]:
            chunk = text[at:m.start() if m else len(text)]
            if self.by_letter:
                out += [c for c in chunk.lower() if not c.isspace() and c != ","]
            else:
                out += words_of(chunk)
            if m:
                out.append(m.group())
                at = m.end()
        return out

    def encode(self, text: str) -> list[int]:
        """Ids of the known symbols, ``<bos>`` first: "c a b" -> [1, 6, 4, 5] (sort: a is 4)."""
        ids = [self._index[p] for p in self._pieces(text) if p in self._index and p != "<pad>"]
        return ids if ids[:1] == [self.bos_id] else [self.bos_id, *ids]

    def unknown(self, text: str) -> list[str]:
        """The symbols ``encode`` skips, each once, in order of appearance."""
        seen: dict[str, None] = {}
        for p in self._pieces(text):
            if p not in self._index or p == "<pad>":
                seen.setdefault(p)
        return list(seen)

    def normalize(self, text: str) -> str:
        return self.decode(self.encode(text))

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.id_to_token(i) for i in ids)

    def id_to_token(self, token_id: int) -> str:
        if not 0 <= int(token_id) < self.vocab_size:
            raise IndexError(f"id {token_id} is outside the vocabulary (size {self.vocab_size})")
        return self.vocab.tokens[int(token_id)]

    def tokens(self, text: str) -> list[str]:
        return [self.id_to_token(i) for i in self.encode(text)]

    def known(self) -> str:
        """What this model reads, in words: "the letters a b c d e f g h, and <bos> <sep> <eos>"."""
        alphabet = self.vocab.alphabet
        if self.by_letter:
            kind = "symbols" if any(not s.isalpha() for s in alphabet) else "letters"
            return f"the {kind} {' '.join(alphabet)}, and {' '.join(READ_SPECIALS)}"
        return (f"the {len(alphabet)} words and marks of its stories ({', '.join(alphabet[:12])}, …), "
                f"and {' '.join(READ_SPECIALS)}")

    def unknown_notice(self, text: str) -> str | None:
        """The sidebar's sentence when ``text`` holds symbols this model never saw, else None.

        >>> from tfviz.lab.tasks import TASKS
        >>> print(LabTokenizer(TASKS["sort"]).unknown_notice("hello z"))
        Your run's model reads only the letters a b c d e f g h, and <bos> <sep> <eos>. It skipped what it does not know: “l”, “o”, “z”.
        """
        missing = self.unknown(text)
        if not missing:
            return None
        listed = ", ".join(f"“{_plain(p)}”" for p in missing[:SHOWN_UNKNOWN])
        more = f" and {len(missing) - SHOWN_UNKNOWN} more" if len(missing) > SHOWN_UNKNOWN else ""
        return (f"Your run's model reads only {self.known()}. It skipped what it does not know: "
                f"{listed}{more}.")


def reads_letters(tokenizer) -> bool:
    """True for a lab run's tokenizer that reads single symbols, not words (every task but the
    stories): English sentences mean nothing to it."""
    return isinstance(tokenizer, LabTokenizer) and tokenizer.by_letter


def _plain(symbol: str) -> str:
    """A symbol as notice text: markdown's special characters escaped, at most 12 characters."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$])", r"\\\1", symbol[:12])


def run_title(settings: LabSettings, number: int) -> str:
    """The name of a run's model, as the sidebar and the lessons show it:
    "my run 2: sort, 2 layers × 2 heads" (+ ", MoE 4 experts"); ``number`` counts the runs this
    session opened, so two runs of the same setting never share a name."""
    s = settings
    moe = f", MoE {s.n_experts} experts" if s.n_experts else ""
    return (f"{RUN_PREFIX}{number}: {s.task}, {s.n_layers} layer{'s' * (s.n_layers > 1)} × "
            f"{s.n_heads} head{'s' * (s.n_heads > 1)}{moe}")


def example_text(task: LabTask, example) -> str:
    """One example as the row the model reads: "<bos> c g f <sep> c f g" (a decoder's answer is
    part of its row: teacher forcing, as in training; an encoder reads up to its ``<sep>``)."""
    ids, _ = task.encode(example)
    return " ".join(task.vocab.decode(ids))


def prompt_part(text: str) -> str:
    """What a run's decoder is asked to continue: its row up to the first ``<sep>``, where the
    answer starts ("<bos> c g f <sep> c f g" -> "<bos> c g f <sep>"); the whole text if it has none.

    >>> prompt_part("<bos> c g f <sep> c f g"), prompt_part("<bos> the dog")
    ('<bos> c g f <sep>', '<bos> the dog')
    """
    head, sep, _ = text.partition("<sep>")
    return head + sep if sep else text


def room_after(bundle: Bundle, prompt: str) -> int:
    """How many tokens a model can still write after ``prompt`` (at least 1): a run's context
    is short (14 to 24 tokens), so a lesson offers no more new tokens than fit."""
    return max(1, bundle.config.max_seq_len - len(bundle.encode(prompt)))


def example_texts(task: LabTask, n: int = 5) -> dict[str, str]:
    """The first ``n`` held-out examples of the lab (the ones its maps show first), labelled
    for the sidebar's example picker: "held-out 1: c g f → c f g"."""
    from tfviz.lab.train import HELDOUT_SEED  # imports torch: only once a run is opened

    out = {}
    for i, ex in enumerate(task.examples(n, HELDOUT_SEED, "heldout")):
        source, answer = ex
        out[f"held-out {i + 1}: {' '.join(source)} → {' '.join(answer)}"] = example_text(task, ex)
    return out


def lab_lesson_links(cfg) -> list[tuple[str, str]]:
    """(lesson URL, link text) of the lessons that read the sidebar's model, for a run's model
    of config ``cfg``: decoding only for a decoder, mixture of experts only for one.

    >>> [u for u, _ in lab_lesson_links(LabSettings.default("order").model_config())]
    ['self-attention', 'multi-head', 'masking', 'layernorm', 'feed-forward', 'forward-walk']
    """
    links = [("self-attention", "Self-attention, step by step"), ("multi-head", "Multi-head attention"),
             ("masking", "Masking"), ("layernorm", "Residual and LayerNorm"),
             ("feed-forward", "Feed-forward"), ("forward-walk", "Full forward walk")]
    if cfg.is_moe:
        links.append(("mixture-of-experts", "Mixture of experts"))
    if cfg.arch == "decoder":
        links.append(("decoding", "LM head and decoding"))
    return links


def run_bundle(settings: LabSettings, weights: Mapping[str, np.ndarray], name: str,
               manifest: dict | None = None) -> Bundle:
    """A bundle holding a copy of a finished run's weights: its own model, in eval mode and
    frozen, so neither the lab nor a lesson can change what the learner opened."""
    import torch

    from tfviz.model import Transformer

    model = Transformer(settings.model_config())
    model.load_state_dict({k: torch.from_numpy(np.array(v, copy=True))
                           for k, v in weights.items()})  # copies: the run's arrays stay as they were
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    cfg = model.cfg
    info = {"lab": {"task": settings.task, "settings": settings.describe()}, **(manifest or {})}
    return Bundle(name, model, LabTokenizer(settings.spec), cfg, info, trained=True)
