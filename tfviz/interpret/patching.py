"""Activation patching: put one piece of a clean run into a corrupted run, and see what returns.

Two texts of the same length in tokens differ in a word that changes the answer ("... because
it was too tired" / "... too wide"). Run the corrupt one, but with one activation, at one layer
and one position (or one head), replaced by its value in the clean run, and measure how far the
output moves back towards the clean answer. Where one piece restores it, that piece carries
the information the answer needs.

The default measure is the logit difference, at the last position, between the clean run's top
token and the corrupt run's: high on the clean run, low on the corrupt one.

What ``by`` patches, and the shape of the map:

    "position"        one layer and one position at a time     (layers, positions)
    "layer"           one layer, every position at once        (layers,)
    "head"            one head's slice, every position          (layers, heads)   hook_z, q, k, v, pattern
    "head_position"   one head at one position                  (layers, heads, positions)

The patched runs go through the model in batches, each row its own patch (a token's numbers
in a batch can differ from a single run's in float32's last bits, far below any effect shown).

>>> import tfviz
>>> b = tfviz.load("gpt-tiny")
>>> p = patch(b, "the animal didn't cross the street because it was too tired. it refers to the",
...           "the animal didn't cross the street because it was too wide. it refers to the",
...           "hook_resid_pre")
>>> b.tokenizer.id_to_token(p.answer), b.tokenizer.id_to_token(p.distractor)
('␣animal', '␣street')
>>> p.values.shape == (b.config.n_layers, len(p.tokens))
True
>>> p.tokens[11], float(p.restored()[0, 11].round(2))   # block 0's input at the changed word
('␣wide', 1.0)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from tfviz.interpret.common import text_ids, token_label
from tfviz.model.hooks import patching
from tfviz.trace import run_with_trace

Metric = Callable[[np.ndarray], float]

#: hook -> (its sublayer prefix, the position axis, the head axis) of an unbatched activation:
#: resid (T, d), z and q (T, H, dh), k and v (T, H_kv, dh), pattern (H, Tq, Tk): patched by query
PATCHABLE: dict[str, tuple[str, int, int | None]] = {
    "hook_resid_pre": ("", 0, None), "hook_resid_mid": ("", 0, None),
    "hook_resid_post": ("", 0, None), "hook_attn_out": ("", 0, None),
    "hook_mlp_out": ("", 0, None), "hook_z": ("attn.", 0, 1), "hook_q": ("attn.", 0, 1),
    "hook_k": ("attn.", 0, 1), "hook_v": ("attn.", 0, 1), "hook_pattern": ("attn.", 1, 0),
}
BY = ("position", "layer", "head", "head_position")
ROWS_PER_RUN = 4096  # tokens a patched batch holds at most (rows × positions)
LOGIT_BYTES = 256 * 2**20  # and at most this much float32 logits (a 49k vocabulary: ~80 rows of 16)


@dataclass(frozen=True)
class Patching:
    """A patching map and what it is measured against.

    values: the metric of each patched run (shape by ``by``: see the module docstring);
    clean, corrupt: the metric of the two unpatched runs; tokens: the corrupt text's tokens;
    answer, distractor: the default metric's two token ids (None with a metric of your own).
    ``restored()`` rescales the map so the corrupt run is 0 and the clean one 1.
    """

    values: np.ndarray
    clean: float
    corrupt: float
    hook: str
    by: str
    tokens: tuple[str, ...]
    answer: int | None = None
    distractor: int | None = None

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def restored(self) -> np.ndarray:
        gap = self.clean - self.corrupt
        if gap == 0:
            raise ValueError("the clean and corrupt runs measure the same, so nothing can be restored")
        return (self.values - self.corrupt) / gap


def logit_difference(answer: int, distractor: int, position: int = -1) -> Metric:
    """logits (positions, vocab) -> logits[position, answer] − logits[position, distractor]."""
    def metric(logits: np.ndarray) -> float:
        return float(np.float64(logits[position, answer]) - np.float64(logits[position, distractor]))
    return metric


def _hook_key(hook: str) -> str:
    short = hook.rsplit(".", 1)[-1]
    short = short if short.startswith("hook_") else "hook_" + short
    if short not in PATCHABLE:
        raise ValueError(f"{hook!r} cannot be patched here; choose one of {', '.join(PATCHABLE)}")
    return short


def _jobs(by: str, n_layers: int, n_heads: int | None, n_pos: int) -> list[tuple]:
    """(layer, head or None, position or None) of each patched run, in the map's order."""
    if by == "position":
        return [(i, None, p) for i in range(n_layers) for p in range(n_pos)]
    if by == "layer":
        return [(i, None, None) for i in range(n_layers)]
    if by == "head":
        return [(i, h, None) for i in range(n_layers) for h in range(n_heads)]
    return [(i, h, p) for i in range(n_layers) for h in range(n_heads) for p in range(n_pos)]


def run_patched(model, ids: list[int], clean: dict[str, np.ndarray], jobs: list[tuple],
                hook: str, metric: Metric) -> np.ndarray:
    """The metric of each job's run (len(jobs),): ``ids`` with the job's piece of ``hook`` set
    to its value in ``clean`` (full name -> the clean run's activation, unbatched). Runs go in
    batches small enough that their logits stay under LOGIT_BYTES."""
    _, pos_axis, head_axis = PATCHABLE[hook]
    out: list[float] = []
    T, vocab = max(1, len(ids)), model.cfg.vocab_size
    per_run = max(1, min(ROWS_PER_RUN // T, LOGIT_BYTES // (4 * T * vocab)))
    for start in range(0, len(jobs), per_run):
        chunk = jobs[start:start + per_run]
        rows_of: dict[int, list[tuple[int, int | None, int | None]]] = {}
        for r, (layer, head, pos) in enumerate(chunk):
            rows_of.setdefault(layer, []).append((r, head, pos))
        names = {f"blocks.{layer}.{PATCHABLE[hook][0]}{hook}": layer for layer in rows_of}

        def edit(name: str, x: torch.Tensor) -> torch.Tensor:
            layer = names.get(name)
            if layer is None:
                return x
            x = x.clone()  # (B, ...) the batch axis first, then the unbatched axes
            source = torch.from_numpy(np.asarray(clean[name])).to(x.dtype)
            for r, head, pos in rows_of[layer]:
                index: list = [slice(None)] * source.dim()
                if pos is not None:
                    index[pos_axis] = pos
                if head is not None:
                    index[head_axis] = head
                x[(r, *index)] = source[tuple(index)]
            return x

        batch = torch.tensor([ids] * len(chunk), dtype=torch.long)  # (rows, T)
        with patching(edit), torch.no_grad():
            logits = model(batch).numpy()  # (rows, T, vocab)
        out += [metric(row) for row in logits]
    return np.array(out, dtype=np.float64)


def patch(bundle, clean, corrupt, hook: str, metric: Metric | None = None, *,
          by: str = "position") -> Patching:
    """Patch ``hook`` of the clean run into the corrupt run, piece by piece (see ``by``).

    clean, corrupt: texts (read as the model reads them), Readings or id lists, of one length
    in tokens. hook: ``hook_resid_pre``, ``hook_resid_mid``, ``hook_resid_post``,
    ``hook_attn_out``, ``hook_mlp_out``, or a head's ``hook_z``, ``hook_q``, ``hook_k``,
    ``hook_v``, ``hook_pattern`` (by query position). metric: logits (positions × vocab,
    numpy) -> float; by default the last position's logit difference between the clean run's
    top token and the corrupt run's. Refuses, in words, texts of different lengths, two texts
    the model answers alike (under the default metric), and an encoder-decoder.
    """
    cfg = bundle.config
    if cfg.arch == "encoder-decoder":
        raise ValueError(f"{cfg.name} reads a source and writes a target; patching here compares "
                         "two texts read by one stack")
    if by not in BY:
        raise ValueError(f"by is one of {', '.join(BY)}")
    key = _hook_key(hook)
    if by.startswith("head") and PATCHABLE[key][2] is None:
        raise ValueError(f"{key} holds the whole stream, not one slice per head: patch a head's "
                         "hook_z (or q, k, v, pattern) by head")
    a, b = text_ids(bundle, clean), text_ids(bundle, corrupt)
    if len(a) != len(b):
        raise ValueError(f"The clean text is {len(a)} tokens long and the corrupt one {len(b)}: "
                         "patching puts each position of one run into the same position of the "
                         "other, so the two must have the same number of tokens. Change a word "
                         "for one that is a single token too.")
    names = {f"blocks.{i}.{PATCHABLE[key][0]}{key}" for i in range(cfg.n_layers)}
    if key == "hook_mlp_out" and not getattr(cfg, "ffn", True):
        raise ValueError(f"{cfg.name} has no feed-forward blocks, so no hook_mlp_out to patch")
    clean_tr = run_with_trace(bundle.model, a, names=names)
    corrupt_tr = run_with_trace(bundle.model, b, names=())
    answer = distractor = None
    if metric is None:
        answer = int(clean_tr.logits[-1].argmax())
        distractor = int(corrupt_tr.logits[-1].argmax())
        if answer == distractor:
            raise ValueError(f"Both texts lead the model to the same next token "
                             f"({token_label(bundle, answer)!r}), so the difference between the "
                             "two answers is 0 whatever is patched: choose a pair whose answers "
                             "differ, or give a metric of your own.")
        metric = logit_difference(answer, distractor)
    heads = None
    if by.startswith("head"):
        heads = cfg.kv_heads if key in ("hook_k", "hook_v") else cfg.n_heads
    jobs = _jobs(by, cfg.n_layers, heads, len(b))
    values = run_patched(bundle.model, b, clean_tr.activations, jobs, key, metric)
    shape = {"position": (cfg.n_layers, len(b)), "layer": (cfg.n_layers,),
             "head": (cfg.n_layers, heads), "head_position": (cfg.n_layers, heads, len(b))}[by]
    return Patching(values=values.reshape(shape), clean=float(metric(clean_tr.logits)),
                    corrupt=float(metric(corrupt_tr.logits)), hook=key, by=by,
                    tokens=tuple(token_label(bundle, i) for i in b),
                    answer=answer, distractor=distractor)
