"""The training loop: AdamW, warm-up then cosine decay, gradient clipping, fixed seeds.

    lr(step) = lr * step / warmup                                   while step < warmup
             = lr * (0.1 + 0.9 * (1 + cos(pi * progress)) / 2)      afterwards (down to 10%)

Determinism: the model's initial weights come from ``cfg.init_seed``; batches are drawn with
``random.Random(seed)``; masking draws use a ``torch.Generator`` seeded with ``seed``; torch
runs on a fixed number of threads. Same recipe, steps and threads -> the same weights, bit
for bit, on the same machine.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

import torch

from tfviz.config import preset
from tfviz.model import Transformer
from tfviz.threads import torch_threads
from tfviz.training.recipes import Recipe

DEFAULT_THREADS = 1  # one thread is steadier than two on a machine whose cores are shared


@dataclass(frozen=True)
class TrainResult:
    model: Transformer
    tokenizer: object
    losses: tuple[float, ...]  # cross-entropy of every step
    wall_seconds: float
    steps: int
    threads: int

    @property
    def final_train_loss(self) -> float:
        """Mean cross-entropy over the last 50 steps (one step alone is noisy)."""
        tail = self.losses[-50:]
        return sum(tail) / len(tail)


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Learning rate at ``step``: lr_at(0, 100, 1.0, 10) == 0.1; lr_at(99, 100, 1.0, 10) ≈ 0.1."""
    warmup = min(warmup, max(1, steps // 5))
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup - 1)
    return lr * (0.1 + 0.9 * (1 + math.cos(math.pi * progress)) / 2)


def fit(recipe: Recipe, steps: int | None = None, threads: int = DEFAULT_THREADS,
        log_every: int = 0) -> TrainResult:
    """Train ``recipe.preset`` from scratch; ``steps`` overrides the recipe's (e.g. 20 for a test)."""
    steps = recipe.steps if steps is None else steps
    start = time.perf_counter()
    with torch_threads(threads):
        tok = recipe.make_tokenizer()
        if recipe.make_model is None:  # a text model: the preset's Transformer
            cfg = preset(recipe.preset)
            if cfg.vocab_size != tok.vocab_size:
                raise ValueError(f"{recipe.preset}: config vocab_size {cfg.vocab_size} != tokenizer's "
                                 f"{tok.vocab_size}; fix _PRESETS in tfviz/config.py")
        rows = recipe.make_rows(tok)
        model = (Transformer(cfg) if recipe.make_model is None else recipe.make_model()).train()
        opt = torch.optim.AdamW(model.parameters(), lr=recipe.lr, betas=(0.9, 0.98),
                                weight_decay=recipe.weight_decay)
        pick = random.Random(recipe.seed)
        gen = torch.Generator().manual_seed(recipe.seed)
        losses = []
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, steps, recipe.lr, recipe.warmup)
            batch = [rows[pick.randrange(len(rows))] for _ in range(recipe.batch_size)]
            loss, ce = recipe.loss(model, batch, gen, tok)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(ce.item())
            if log_every and (step % log_every == 0 or step == steps - 1):
                print(f"{recipe.preset} step {step:5d}  loss {ce.item():.4f}  "
                      f"{time.perf_counter() - start:6.1f}s", flush=True)
        model.eval()
    return TrainResult(model, tok, tuple(losses), time.perf_counter() - start, steps, threads)
