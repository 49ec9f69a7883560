"""One training run of the lab: a fresh model, trained on its task while a log fills up.

    every step       loss = cross-entropy over the scored positions (+ 0.01 × MoE balance loss),
                     and each layer's gradient norm ‖∂loss/∂θ_layer‖ over its parameters (before
                     clipping)
    every N steps    held-out accuracy (share of held-out rows solved), the attention maps of a
                     few fixed held-out examples, for a mixture of experts each expert's load
                     (share of held-out tokens whose first choice it is), and each layer's
                     gradient norm averaged over the steps since the last checkpoint; on the
                     induction task, each head's induction and previous-token scores and the
                     loss on the run's first and second copy (``tfviz.lab.induction``)

N is chosen so a run holds about 25 checkpoints whatever its length, plus one before the first
step. The schedule is the bundled models' (``tfviz.training.loop.lr_at``: warm-up, then cosine
down to 10%), with AdamW and gradients clipped to norm 1.

The log (:class:`RunLog`) is the only thing shared with other threads: the trainer appends to
it under its lock, and readers get an immutable :class:`RunView`. The model and the optimizer
live in :func:`train`'s frame only, so they are freed when the run ends, is stopped or fails.
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

from tfviz.lab.induction import InductionProbe, probe
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import IGNORE, accuracy, next_token_targets
from tfviz.model import Transformer
from tfviz.model.hooks import recording
from tfviz.threads import torch_threads
from tfviz.trace import run_with_trace
from tfviz.training.loop import lr_at

TRAIN_POOL = 8192  # training examples drawn once per run (the seed decides which)
HELDOUT = 256  # held-out examples scored at every checkpoint
SHOWN = 3  # held-out examples whose attention maps are kept
CHECKPOINTS = 25  # about this many checkpoints per run
HELDOUT_SEED = 1  # held-out examples are the same for every run of a task
MOE_AUX = 0.01  # weight of the load-balancing loss (as ModelConfig.moe_aux_loss_coef)
State = Literal["queued", "running", "done", "stopped", "failed", "cancelled"]
FINAL_STATES = ("done", "stopped", "failed", "cancelled")


def eval_every(steps: int) -> int:
    """Steps between checkpoints: eval_every(500) == 20, never less than 5."""
    return max(5, steps // CHECKPOINTS)


@dataclass(frozen=True)
class Checkpoint:
    step: int  # steps done when it was taken (0: before training)
    seconds: float  # wall time since the run started (training and checkpoints)
    accuracy: float  # held-out rows solved, 0..1
    loss: float  # mean training loss of the steps since the last checkpoint (nan at step 0)
    patterns: tuple[np.ndarray, ...]  # per shown example: (layers, heads, T, T) weights, float16
    expert_load: np.ndarray | None = None  # (layers, experts) share of first choices; None if dense
    # (layers,) each block's gradient norm, the mean over the steps since the last checkpoint;
    # None before the first step
    grad_norms: np.ndarray | None = None
    # the induction task only: heads' scores and the two halves' losses on the held-out rows
    induction: InductionProbe | None = None


@dataclass(frozen=True)
class RunView:
    """What a reader sees of a run at one moment; immutable (arrays are read-only)."""

    settings: LabSettings
    state: State
    step: int
    losses: tuple[float, ...]
    checkpoints: tuple[Checkpoint, ...]
    shown_tokens: tuple[tuple[str, ...], ...]  # the shown examples' input tokens
    error: str = ""
    seconds: float = 0.0
    train_seconds: float = 0.0  # time in training steps only (no checkpoints)
    # The trained parameters (state_dict names -> read-only float32 copies), once the run is
    # done or stopped: what "Open in the lessons" builds its model from. None before, or if it failed.
    weights: Mapping[str, np.ndarray] | None = field(default=None, compare=False, repr=False)

    @property
    def accuracy(self) -> float | None:
        """Held-out accuracy at the last checkpoint (None before the first)."""
        return self.checkpoints[-1].accuracy if self.checkpoints else None

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def steps_per_second(self) -> float | None:
        return self.step / self.train_seconds if self.train_seconds > 0 else None

    def seconds_to(self, target: float = 0.95) -> float | None:
        """Wall time until held-out accuracy first reached ``target`` (None if it never did)."""
        return next((c.seconds for c in self.checkpoints if c.accuracy >= target), None)

    def final_loss(self, last: int = 20) -> float | None:
        """Mean training loss of the last ``last`` steps (one step alone is noisy)."""
        tail = self.losses[-last:]
        return sum(tail) / len(tail) if tail else None


@dataclass
class RunLog:
    """The growing record of one run, written by its trainer and read by anyone (thread-safe)."""

    settings: LabSettings
    state: State = "queued"
    step: int = 0
    losses: list[float] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    shown_tokens: tuple[tuple[str, ...], ...] = ()
    error: str = ""
    seconds: float = 0.0
    train_seconds: float = 0.0
    weights: Mapping[str, np.ndarray] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, **changes) -> None:
        with self._lock:
            for k, v in changes.items():
                setattr(self, k, v)

    def add_step(self, loss: float, seconds: float, train_seconds: float) -> None:
        with self._lock:
            self.losses.append(loss)
            self.step += 1
            self.seconds, self.train_seconds = seconds, train_seconds

    def add_checkpoint(self, cp: Checkpoint) -> None:
        with self._lock:
            self.checkpoints.append(cp)

    def view(self) -> RunView:
        with self._lock:
            return RunView(self.settings, self.state, self.step, tuple(self.losses),
                           tuple(self.checkpoints), self.shown_tokens, self.error, self.seconds,
                           self.train_seconds, self.weights)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def frozen_weights(model: Transformer) -> Mapping[str, np.ndarray]:
    """Every parameter and buffer as a read-only float32 copy, by state_dict name (never a view
    of the model's memory, so nothing done to the model later reaches it)."""
    return MappingProxyType({k: _frozen(np.array(v.detach().cpu().numpy(), copy=True))
                             for k, v in model.state_dict().items()})


class _Data:
    """A run's data: the training pool and the held-out set, as padded id arrays."""

    def __init__(self, settings: LabSettings) -> None:
        task = settings.spec
        self.task = task
        self.train_ids, self.train_targets = task.encode_many(task.examples(TRAIN_POOL, settings.seed, "train"))
        if task.train_on_all:
            self.train_targets = next_token_targets(self.train_ids, self.train_targets, task.vocab.pad_id)
        heldout = task.examples(HELDOUT, HELDOUT_SEED, "heldout")
        self.ids, self.targets = task.encode_many(heldout)
        self.shown = [task.encode(e)[0] for e in heldout[:SHOWN]]
        self.rng = random.Random(settings.seed)
        self.batch_size = settings.batch_size

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [self.rng.randrange(len(self.train_ids)) for _ in range(self.batch_size)]
        ids, targets = self.train_ids[rows], self.train_targets[rows]
        width = int((ids != self.task.vocab.pad_id).sum(1).max())  # drop columns of padding only
        return torch.from_numpy(ids[:, :width]), torch.from_numpy(targets[:, :width])


def loss_of(model: Transformer, ids: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss to minimise, cross-entropy alone) over the scored positions of a batch."""
    out = model.run(ids)  # logits (B, T, V), MoE aux loss
    ce = F.cross_entropy(out.logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
    return ce + MOE_AUX * out.aux_loss, ce


@torch.no_grad()
def evaluate(model: Transformer, ids: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray | None]:
    """(held-out accuracy, expert load (layers, E) or None) in one forward pass."""
    cfg = model.cfg
    with recording(lambda n: n.endswith("mlp.hook_expert_indices")) as store:
        logits = model(torch.from_numpy(ids))  # (N, T, V)
    acc = accuracy(logits.argmax(-1).numpy(), targets)
    if not cfg.is_moe:
        return acc, None
    real = ids != 0  # padding is not a token
    load = np.stack([np.bincount(store[f"blocks.{i}.mlp.hook_expert_indices"][..., 0].numpy()[real],
                                 minlength=cfg.n_experts) for i in range(cfg.n_layers)])
    return acc, load / load.sum(1, keepdims=True)


def layer_grad_norms(model: Transformer) -> list[float]:
    """Each block's gradient norm after ``backward``: sqrt of the sum of squares of every
    gradient entry of that block's parameters (a parameter without a gradient adds nothing)."""
    return torch.stack([torch.linalg.vector_norm(torch.stack(  # (layers,)
        [torch.linalg.vector_norm(p.grad) for p in block.parameters() if p.grad is not None]
        or [torch.zeros(())])) for block in model.blocks]).tolist()


def attention_maps(model: Transformer, rows: list[list[int]]) -> tuple[np.ndarray, ...]:
    """Each row's attention weights, (layers, heads, T, T), from :func:`run_with_trace`.

    Kept as float16 (about 3 significant digits, plenty for a heat map): a run holds ~26
    checkpoints of them, and every learner keeps up to four runs."""
    out = []
    for row in rows:
        tr = run_with_trace(model, row, names=lambda n: n.endswith("attn.hook_pattern"))
        out.append(_frozen(tr.stack("pattern").astype(np.float16)))  # (layers, heads, T, T)
    return tuple(out)


def train(settings: LabSettings, log: RunLog | None = None, stop: threading.Event | None = None,
          threads: int | None = 1) -> RunView:
    """Train a fresh model with ``settings``, writing into ``log``; returns its final view.

    ``stop`` is checked before every step; once set, the run ends after a last checkpoint with
    state "stopped". An exception ends it with state "failed" and the message in ``error``.
    ``threads``: torch's intra-op threads for this thread while it trains (None leaves them).
    """
    log = log or RunLog(settings)
    stop = stop or threading.Event()
    start = time.perf_counter()
    with torch_threads(threads):
        try:
            log.update(state="running")
            data = _Data(settings)
            log.update(shown_tokens=tuple(tuple(data.task.vocab.decode(r)) for r in data.shown))
            model = Transformer(settings.model_config())
            opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, betas=(0.9, 0.98),
                                    weight_decay=0.01)
            every, warmup = eval_every(settings.steps), max(1, min(50, settings.steps // 10))
            train_seconds, recent, grads = 0.0, [], []

            def checkpoint(step: int) -> None:
                model.eval()
                acc, load = evaluate(model, data.ids, data.targets)
                maps = attention_maps(model, data.shown)
                found = probe(model, data.ids, data.task.vocab.pad_id) if data.task.layout == "repeat" else None
                model.train()
                loss = float(np.mean(recent)) if recent else float("nan")
                norms = _frozen(np.mean(grads, axis=0)) if grads else None  # (layers,)
                recent.clear()
                grads.clear()
                log.add_checkpoint(Checkpoint(step, time.perf_counter() - start, acc, loss, maps,
                                              None if load is None else _frozen(load), norms, found))

            checkpoint(0)
            model.train()
            state: State = "done"
            for step in range(settings.steps):
                if stop.is_set():
                    state = "stopped"
                    break
                t0 = time.perf_counter()
                for group in opt.param_groups:
                    group["lr"] = lr_at(step, settings.steps, settings.lr, warmup)
                ids, targets = data.batch()
                loss, ce = loss_of(model, ids, targets)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                grads.append(layer_grad_norms(model))  # before clipping: what backpropagation gave
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                train_seconds += time.perf_counter() - t0
                recent.append(ce.item())
                log.add_step(ce.item(), time.perf_counter() - start, train_seconds)
                if (step + 1) % every == 0 or step + 1 == settings.steps:
                    checkpoint(step + 1)
            view = log.view()
            if state == "stopped" and (not view.checkpoints or view.checkpoints[-1].step != view.step):
                checkpoint(view.step)
            log.update(state=state, seconds=time.perf_counter() - start, weights=frozen_weights(model))
        except Exception as exc:  # the page shows the message; the server keeps running
            log.update(state="failed", error=f"{type(exc).__name__}: {exc}",
                       seconds=time.perf_counter() - start)
    return log.view()
