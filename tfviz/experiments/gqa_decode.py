"""Lesson 18's decode time: one new token at a time with the KV cache, for MHA, GQA and MQA.

    decode_times(bundles)  -> DecodeTiming: per model, the median ms per new token after a short
                              and a long prompt, and the cache bytes per token its tensors hold

Every model reads the same fixed text (repeated to length), so all three do exactly the same
steps at the same cache lengths: the prompt goes in at once (not timed), then ``new_tokens``
steps of one token each are timed and their time divided by their number. The tokens are given,
not chosen (no sampling, no ``<eos>`` ending a run early): only the model's own step is timed,
which is where the three differ. Every model and prompt length takes its steps in turn, so a
stall of a shared machine falls on all of them alike; each keeps its median round.

Timings are wall-clock measurements on whatever CPU runs this, with ``threads`` torch threads
(1, as the server runs every page: ``tfviz.ui.server_threads.one_thread_per_op``); they move
with the machine's load. The bytes are exact. The shared models are only read.

For the sidebar's own grouped model (llama-tiny, a Llama folder), :func:`every_kv_head` builds
its full multi-head twin (each K/V head's weights repeated for every query head of its group:
the same outputs, the cache multi-head attention would keep), :func:`own_decode_times` times
the two, and :func:`cache_of_text` counts the cache the model keeps after reading a text.
"""
from __future__ import annotations

import os
import platform
import re
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import torch

from tfviz.bundle import Bundle
from tfviz.experiments.kv_cache_lengths import fill_ids
from tfviz.model import Transformer
from tfviz.threads import torch_threads

TEXT = ("the cat rested near the lake. the dog jumped over the boat. the animal didn't cross the "
        "street because it was too tired. it refers to the animal.")  # what is read: a step's
# time does not depend on which tokens they are
CONTEXTS = (8, 96)  # prompt tokens before the timed steps: short, and long (96 + 32 = 128, full)
NEW_TOKENS = 32


@dataclass(frozen=True)
class DecodeTime:
    """One model's decode time per new token, after each prompt length of its DecodeTiming."""

    variant: str  # MHA, GQA or MQA
    model: str
    kv_heads: int
    cache_bytes_per_token: int  # counted from the cache's own tensors after the run
    ms_per_token: tuple[float, ...]  # the median round, per context
    rounds: tuple[tuple[float, ...], ...]  # every timed round's ms per token, per context


@dataclass(frozen=True)
class DecodeTiming:
    rows: tuple[DecodeTime, ...]
    contexts: tuple[int, ...]  # prompt tokens before the timed steps
    new_tokens: int  # steps timed per round
    repeats: int  # timed rounds (after one untimed round)
    threads: int  # torch threads while timing
    cpu: str  # what the machine calls its processor, and how many cores it has
    measured_at: str  # UTC, to the minute

    def spread(self, context: int) -> float:
        """Slowest over fastest model after ``context`` prompt tokens: 1.0 means the same time."""
        ms = [r.ms_per_token[self.contexts.index(context)] for r in self.rows]
        return max(ms) / min(ms)

    def growth(self, row: DecodeTime) -> float:
        """How much longer a step takes after the longest prompt than after the shortest."""
        return row.ms_per_token[-1] / row.ms_per_token[0]


def cpu_name() -> str:
    """The processor's name as Linux reports it (``platform`` elsewhere), with its core count."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            name = next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")
    except OSError:
        pass
    name = name or platform.processor() or platform.machine() or "unknown CPU"
    return f"{name}, {os.cpu_count()} cores"


def cache_bytes(cache) -> int:
    """Bytes held by a decoder's KV cache: every layer's keys and values, counted from the
    tensors themselves (``numel · element_size``)."""
    return sum(t.numel() * t.element_size() for kv in cache.layers for t in kv)


def decode_times(bundles: dict, contexts: tuple[int, ...] = CONTEXTS, new_tokens: int = NEW_TOKENS,
                 repeats: int = 5, threads: int = 1) -> DecodeTiming:
    """Time decoding with the KV cache for each bundle (``{variant: bundle}``, decoder-only).

    A run per (bundle, context): ``context`` prompt tokens read at once (untimed), then
    ``new_tokens`` steps of one token each, timed. The runs of a round take their steps in turn
    (step 1 of every run, then step 2 of every run...), so a stall of a shared machine falls on
    all of them alike instead of on one run. One untimed round first (first calls pay for
    memory), then ``repeats`` timed rounds. ``threads`` torch threads while timing; the
    caller's count is put back after.
    """
    if repeats < 1 or new_tokens < 1 or not contexts or min(contexts) < 1:
        raise ValueError("need at least one repeat, one new token and one prompt token")
    contexts = tuple(sorted(int(c) for c in contexts))
    runs = []  # (variant, index of the context, model, ids, prompt tokens)
    for variant, bundle in bundles.items():
        room = bundle.config.max_seq_len
        if contexts[-1] + new_tokens > room:
            raise ValueError(f"{bundle.name} reads at most {room} tokens: "
                             f"{contexts[-1]} + {new_tokens} do not fit")
        prompt_ids = bundle.encode(TEXT)
        for i, c in enumerate(contexts):
            ids = torch.tensor([fill_ids(prompt_ids, c + new_tokens)])  # (1, c + new_tokens)
            runs.append((variant, i, bundle.model, ids, c))
    seconds = {v: [[] for _ in contexts] for v in bundles}
    nbytes = {}
    with torch_threads(threads), torch.no_grad():
        for round_ in range(repeats + 1):  # round 0 is untimed
            caches = [model.step(ids[:, :c])[1] for _, _, model, ids, c in runs]  # the prompts
            took = [0.0] * len(runs)
            for j in range(new_tokens):
                for k, (_, _, model, ids, c) in enumerate(runs):
                    start = time.perf_counter()
                    _, caches[k] = model.step(ids[:, c + j:c + j + 1], caches[k])  # (1, 1, V)
                    took[k] += time.perf_counter() - start
            for (variant, i, *_), t, cache in zip(runs, took, caches):
                if round_:
                    seconds[variant][i].append(t / new_tokens)
                nbytes[variant] = cache_bytes(cache) // cache.length
    rows = tuple(
        DecodeTime(variant, bundle.name, bundle.config.kv_heads, nbytes[variant],
                   tuple(statistics.median(s) * 1e3 for s in seconds[variant]),
                   tuple(tuple(x * 1e3 for x in s) for s in seconds[variant]))
        for variant, bundle in bundles.items())
    return DecodeTiming(rows, contexts, new_tokens, repeats, threads, cpu_name(),
                        datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


# ----- the sidebar's own grouped model ----------------------------------------------------------
KV_WEIGHTS = re.compile(r"attn\.W_[kv]\.(weight|bias)$")  # the key and value projections


def every_kv_head(model: Transformer) -> Transformer:
    """A new model with a key/value head for every query head: each K/V head's rows of W^K and
    W^V (and biases) repeated for the query heads of its group, everything else copied. It
    computes exactly what ``model`` computes (the model repeats its K/V heads the same way
    before attention), while its KV cache holds n_heads heads per layer: full multi-head
    attention's. ``model`` is only read.
    """
    cfg = model.cfg
    group = cfg.n_heads // cfg.kv_heads
    twin = Transformer(cfg.replace(name=f"{cfg.name} (MHA)", n_kv_heads=None)).eval()
    state = {}
    for key, t in model.state_dict().items():
        if KV_WEIGHTS.search(key):
            rows = t.reshape(cfg.kv_heads, cfg.d_head, *t.shape[1:])  # (kv, dh[, d])
            t = rows.repeat_interleave(group, dim=0).reshape(cfg.n_heads * cfg.d_head, *t.shape[1:])
        state[key] = t.detach().clone()
    twin.load_state_dict(state)
    for p in twin.parameters():
        p.requires_grad_(False)
    return twin


def timeable(cfg, new_tokens: int = NEW_TOKENS) -> bool:
    """Whether a model's context holds a longer prompt than the short one plus ``new_tokens``."""
    return min(CONTEXTS[-1], cfg.max_seq_len - new_tokens) > CONTEXTS[0]


def own_decode_times(bundle, new_tokens: int = NEW_TOKENS, repeats: int = 5,
                     threads: int = 1) -> DecodeTiming:
    """:func:`decode_times` for a grouped model and its full multi-head twin
    (:func:`every_kv_head`), after a short prompt and the longest that leaves room for
    ``new_tokens`` in its context (at most 96 tokens, as for our three)."""
    cfg = bundle.config
    longest = min(CONTEXTS[-1], cfg.max_seq_len - new_tokens)
    if not timeable(cfg, new_tokens):
        raise ValueError(f"{bundle.name} reads at most {cfg.max_seq_len} tokens: too few to time")
    twin = Bundle(f"{bundle.name} as MHA", every_kv_head(bundle.model), bundle.tokenizer,
                  bundle.model.cfg.replace(n_kv_heads=None))
    own = "MQA" if cfg.kv_heads == 1 else "GQA"
    return decode_times({own: bundle, "MHA": twin}, (CONTEXTS[0], longest), new_tokens, repeats, threads)


def cache_of_text(model: Transformer, ids) -> tuple[int, int]:
    """The KV cache ``model`` keeps after reading ``ids`` at once: (bytes held by its tensors,
    tokens held)."""
    with torch.no_grad():
        _, cache = model.step(torch.tensor([list(ids)]))  # (1, T, V) logits and the cache
    return cache_bytes(cache), cache.length
