"""Lesson 16's cost over lengths: one generation step timed at growing lengths t, with the KV
cache (the t - 1 earlier keys and values stored, the newest token in) and without (all t tokens
in), beside the multiply-adds :func:`tfviz.analysis.kv_cache_cost.step_macs` predicts.

    cost_over_lengths(model, prompt_ids, [16, 32, 64])  -> one LengthCost per length
    lengths_up_to(top)                                   -> six lengths to time, up to ``top``
    stretched(model, max_len)                            -> a copy that reads longer texts

Timings are wall-clock measurements on whatever CPU runs this: they move with the machine's
load; the counts are exact. The shared model is only read: ``stretched`` returns a copy when a
longer context is asked for.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass

import torch

from tfviz.analysis.kv_cache_cost import score_cells, step_macs
from tfviz.model.positional import sinusoidal_table


def can_stretch(cfg) -> bool:
    """Whether :func:`stretched` can give this model a longer context (not learned positions,
    nor a sparse pattern built for its own length)."""
    return cfg.positional != "learned" and cfg.attn_pattern == "full"


def stretched(model, max_len: int):
    """``model`` itself if it reads ``max_len`` tokens, else a copy whose context is ``max_len``
    (a longer sinusoidal table; RoPE, ALiBi and no positions need none). Only for timing: the
    copy was never trained on positions past its model's context. Learned positions cannot be
    stretched (ValueError). The shared model is never changed."""
    cfg = model.cfg
    if max_len <= cfg.max_seq_len:
        return model
    if not can_stretch(cfg):
        raise ValueError(f"{cfg.name} cannot read more than its {cfg.max_seq_len} tokens")
    new = copy.deepcopy(model)
    new.cfg = dataclasses.replace(cfg, max_seq_len=max_len)
    if cfg.positional == "sinusoidal":
        new.register_buffer("pos_table", sinusoidal_table(max_len, cfg.d_model, cfg.pos_base),
                            persistent=False)
    return new


@dataclass(frozen=True)
class LengthCost:
    t: int  # tokens read so far (the keys of this step)
    ms_cached: float  # best of the repeats: one token in, t keys from the cache
    ms_uncached: float  # best of the repeats: all t tokens in again
    macs_cached: int  # step_macs, both parts
    macs_uncached: int
    attn_macs_cached: int  # the attention part alone
    attn_macs_uncached: int
    cells_cached: int  # score_cells
    cells_uncached: int

    @property
    def macs_ratio(self) -> float:
        """How many times more multiply-adds the step takes without the cache."""
        return self.macs_uncached / self.macs_cached

    @property
    def ms_ratio(self) -> float:
        """How many times longer the step took without the cache, by the clock."""
        return self.ms_uncached / self.ms_cached

    def row(self) -> dict:
        """The lesson's table row: times to the microsecond, every count exact."""
        return {"t": self.t, "ms (cache)": round(self.ms_cached, 3),
                "ms (no cache)": round(self.ms_uncached, 3),
                "multiply-adds (cache)": self.macs_cached, "multiply-adds (no cache)": self.macs_uncached,
                "of which attention (cache)": self.attn_macs_cached,
                "of which attention (no cache)": self.attn_macs_uncached,
                "scores computed (cache: L·H·t)": self.cells_cached,
                "scores computed (no cache: L·H·t²)": self.cells_uncached}


def fill_ids(prompt_ids, t: int) -> list[int]:
    """``prompt_ids`` repeated (and cut) to exactly t ids: something to time at length t. The
    time of a step does not depend on which tokens they are.

    >>> fill_ids([5, 6, 7], 7)
    [5, 6, 7, 5, 6, 7, 5]
    """
    ids = [int(i) for i in prompt_ids] or [0]
    return (ids * (t // len(ids) + 1))[:t]


def cost_over_lengths(model, prompt_ids, lengths, repeats: int = 5) -> list[LengthCost]:
    """For each length t: the wall time of one step with the cache (its t - 1 earlier keys and
    values already stored, the newest token in) and without (all t tokens in), next to
    :func:`step_macs` and :func:`score_cells`. Every length is timed once per round, for
    ``repeats`` rounds after an untimed one, and keeps its best time: a stall of a shared
    machine hits one round, not the result. ``model`` must read max(lengths) tokens (see
    :func:`stretched`)."""
    cfg = model.cfg
    work = []
    with torch.no_grad():
        for t in lengths:
            ids = torch.tensor([fill_ids(prompt_ids, int(t))])  # (1, t)
            cache = model.step(ids[:, :-1])[1] if t > 1 else None  # the t - 1 earlier tokens
            work.append((ids, cache))
        best = [[float("inf"), float("inf")] for _ in work]
        for round_ in range(repeats + 1):  # round 0 is untimed: first calls pay for memory
            for b, (ids, cache) in zip(best, work):
                t0 = time.perf_counter()
                model.step(ids[:, -1:], cache)  # (1, 1, V): the cache is not grown in place
                t1 = time.perf_counter()
                model(ids)  # (1, t, V)
                t2 = time.perf_counter()
                if round_:
                    b[0], b[1] = min(b[0], t1 - t0), min(b[1], t2 - t1)
    out = []
    for t, (best_c, best_u) in zip(lengths, best):
        mc, mu = step_macs(cfg, int(t), True), step_macs(cfg, int(t), False)
        out.append(LengthCost(int(t), best_c * 1e3, best_u * 1e3, sum(mc.values()),
                              sum(mu.values()), mc["attention"], mu["attention"],
                              score_cells(cfg, int(t), True), score_cells(cfg, int(t), False)))
    return out


def length_choices(cfg) -> tuple[list[int], int]:
    """The longest lengths lesson 16 offers to time, and the one it starts on. Our models read
    64-128 tokens: their own context, then longer copies where the positions allow
    (:func:`stretched`), starting on the second longest. A model with a long context of its
    own (GPT-2: 1,024) offers powers of two up to it and starts on 128, since one 1,024-token
    step of a 124M-parameter model takes seconds on a shared 2-core server.

    >>> from tfviz.config import preset
    >>> length_choices(preset("gpt-tiny").replace(max_seq_len=1024))
    ([64, 128, 256, 512, 1024], 128)
    """
    if cfg.max_seq_len > 256:
        return [n for n in (64, 128, 256, 512) if n < cfg.max_seq_len] + [cfg.max_seq_len], 128
    choices = [cfg.max_seq_len] + [n for n in (256, 512, 1024) if n > cfg.max_seq_len and can_stretch(cfg)]
    return choices, choices[-2] if len(choices) > 2 else choices[0]


def lengths_up_to(top: int) -> list[int]:
    """Six lengths up to ``top``: 1/8, 1/4, 3/8, 1/2, 3/4 and all of it (at least 2 tokens).

    >>> lengths_up_to(128), lengths_up_to(1024)[-3:]
    ([16, 32, 48, 64, 96, 128], [512, 768, 1024])
    """
    return sorted({max(2, top * a // b) for a, b in ((1, 8), (1, 4), (3, 8), (1, 2), (3, 4), (1, 1))})

