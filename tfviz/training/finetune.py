"""Fine-tune a pretrained encoder (bert-tiny) on a two-way sentence task, three ways, measured.

    head only   every pretrained weight frozen; only a new classifier head is trained
    LoRA        frozen too, but beside W_Q and W_V of every layer sit two thin matrices,
                A (d_in × r, random at the start) and B (r × d_out, zero at the start):
                the layer computes x·W + b + x·A·B, and only A, B and the head are trained
    full        every weight is trained, and the head

The classifier reads the mean of the last layer's vectors over the sentence's tokens and maps
it to two scores (a d × 2 matrix and 2 biases). bert-tiny was pretrained one sentence per row,
without [CLS], so it never learned to gather a summary there; the mean is the summary it has.
Its masked-LM head is dropped (the copy's ``unembed`` becomes the identity, so the body returns
the last layer's vectors).

Every mode starts from a deep copy of the bundle's model, so the shared model is never
touched, and from the same seed: the head starts equal in all three, and B = 0 makes the LoRA
model compute exactly what the frozen one does until its first step. The three modes see the
same batches in the same order for the same number of steps; only the learning rate differs,
each mode's own (``LEARNING_RATES``: a model that trains fewer numbers takes larger steps).
AdamW, the bundled models' schedule (``loop.lr_at``: warm-up, then cosine down to 10%),
gradients clipped to norm 1.

What is counted as trained: the numbers in the tensors that have ``requires_grad`` and are
handed to the optimizer. The formulas of ``tfviz.analysis.finetune`` count the same
independently (``expected_trained``).
"""
from __future__ import annotations

import copy
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tfviz.analysis.finetune import lora_params
from tfviz.data.classify import TASKS, make_examples
from tfviz.model import Transformer
from tfviz.model.seeded import seeded
from tfviz.params import count_parameters
from tfviz.training.loop import lr_at

MODES = ("head only", "LoRA", "full")
LORA_MATRICES = ("W_Q", "W_V")
LEARNING_RATES = {"head only": 1e-2, "LoRA": 3e-3, "full": 1e-3}
HELDOUT_SEED = 1  # held-out examples are the same whatever the training seed


class Stopped(RuntimeError):
    """The run was asked to stop (the server is shutting down)."""


@dataclass(frozen=True)
class FinetuneSettings:
    """One comparison: the task, the LoRA rank, and the budget every mode gets."""

    task: str = "number"
    rank: int = 4
    steps: int = 400
    batch: int = 32
    train_size: int = 4000
    heldout_size: int = 600
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose from {sorted(TASKS)}")
        if not 1 <= self.rank <= 64:
            raise ValueError("the rank must be between 1 and 64")
        if min(self.steps, self.batch, self.train_size, self.heldout_size) < 1:
            raise ValueError("steps, batch and sizes must be at least 1")


@dataclass(frozen=True)
class ModeResult:
    """What one way of fine-tuning trained and what it reached, measured."""

    mode: str
    trained: int  # numbers in the tensors handed to the optimizer (requires_grad)
    expected: int  # the same, from the counting formulas
    accuracy_before: float  # held-out accuracy at step 0 (the head untrained)
    accuracy: float  # held-out accuracy after the last step
    final_loss: float  # mean training loss of the last 20 steps
    seconds: float  # wall time of this mode: set-up, training and both evaluations


@dataclass(frozen=True)
class FinetuneResult:
    model: str
    settings: FinetuneSettings
    modes: tuple[ModeResult, ...]
    seconds: float  # all three modes, with tokenising the examples
    threads: int  # torch's intra-op threads during the run

    @property
    def chance(self) -> float:
        return 0.5  # both tasks are balanced two-way questions

    def of(self, mode: str) -> ModeResult:
        return next(m for m in self.modes if m.mode == mode)


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` with a trained low-rank update beside it.

    For a row vector x (torch stores W transposed, as ``base.weight`` of shape d_out × d_in):

        y = x·W + b + x·A·B,    A: d_in × r (random at the start),  B: r × d_out (zero)

    The LoRA paper writes the same for column vectors, h = W₀x + BAx, with its A (r × d_in)
    and B (d_out × r) ours transposed; it also scales BA by α/r, which here is 1 (α = r).
    """

    def __init__(self, base: nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base
        d_in, d_out = base.in_features, base.out_features
        # random A and zero B, so A·B = 0 and the layer starts as the frozen one
        self.A = nn.Parameter(torch.randn(d_in, rank) / math.sqrt(d_in))  # (d_in, r)
        self.B = nn.Parameter(torch.zeros(rank, d_out))  # (r, d_out)

    def forward(self, x: Tensor) -> Tensor:
        return self.base(x) + (x @ self.A) @ self.B  # (..., d_in) -> (..., r) -> (..., d_out)


class Classifier(nn.Module):
    """An encoder body without its LM head, the mean of its last layer, and a linear head."""

    def __init__(self, body: Transformer, n_classes: int = 2) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(body.cfg.d_model, n_classes)

    def pool(self, ids: Tensor, mask: Tensor) -> Tensor:
        """ids, mask: (B, T), mask 1 on real tokens -> (B, d): the mean of the last layer."""
        h = self.body(ids, attention_mask=mask)  # (B, T, d): the last layer's vectors
        m = mask[..., None].to(h.dtype)  # (B, T, 1)
        return (h * m).sum(1) / m.sum(1)  # (B, d): mean over real tokens

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        """ids, mask: (B, T) -> scores (B, n_classes)."""
        return self.head(self.pool(ids, mask))  # (B, n_classes)

    def body_frozen(self) -> bool:
        return not any(p.requires_grad for p in self.body.parameters())


def classifier(model: Transformer, mode: str, rank: int = 4, seed: int = 0) -> Classifier:
    """A copy of ``model`` made ready for ``mode``, with a new head; ``model`` itself is untouched.

    The copy's parameters are frozen unless ``mode`` is "full"; "LoRA" wraps each layer's
    W_Q and W_V in a :class:`LoRALinear`. The head and A are drawn from ``seed``."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
    body = copy.deepcopy(model)
    body.unembed = nn.Identity()  # no LM head: the body returns its last layer's vectors
    for p in body.parameters():
        p.requires_grad_(mode == "full")
    with seeded(seed):  # the same head and A for a seed, whatever else is running
        net = Classifier(body, 2)  # the head first, so it starts equal in every mode
        if mode == "LoRA":
            for block in body.blocks:
                block.attn.W_q = LoRALinear(block.attn.W_q, rank)
                block.attn.W_v = LoRALinear(block.attn.W_v, rank)
    return net


def trained_count(net: nn.Module) -> int:
    """Numbers in the tensors that will train (``requires_grad``)."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def expected_trained(config, mode: str, rank: int, n_classes: int = 2) -> int:
    """The same count from the formulas: the head (d·classes + classes), plus for LoRA
    ``lora_params`` on W_Q and W_V, for full every parameter (``count_parameters``).

    >>> from tfviz.config import preset
    >>> [expected_trained(preset("bert-tiny"), m, 4) for m in MODES]   # d = 64, 2 layers
    [130, 2178, 138498]
    """
    head = config.d_model * n_classes + n_classes
    if mode == "head only":
        return head
    if mode == "LoRA":
        return head + lora_params(config, rank, LORA_MATRICES).total
    if mode == "full":
        return head + count_parameters(config).total
    raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")


def encode_examples(tokenizer, examples) -> tuple[Tensor, Tensor, Tensor]:
    """Sentences padded to one length: ids (N, T), mask (N, T), labels (N,)."""
    rows = [list(tokenizer.encode(text)) for text, _ in examples]
    T = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)  # pad id 0, hidden by the mask
    mask = torch.zeros(len(rows), T, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = 1
    return ids, mask, torch.tensor([label for _, label in examples])


@torch.no_grad()
def _pooled(net: Classifier, ids: Tensor, mask: Tensor, chunk: int = 256) -> Tensor:
    """The body's mean vector of every row, (N, d), computed in chunks."""
    net.eval()
    return torch.cat([net.pool(ids[i:i + chunk], mask[i:i + chunk]) for i in range(0, len(ids), chunk)])


@torch.no_grad()
def accuracy(net: Classifier, ids: Tensor, mask: Tensor, labels: Tensor, chunk: int = 256) -> float:
    """Share of rows whose higher score is their label."""
    net.eval()
    right = 0
    for i in range(0, len(ids), chunk):
        scores = net(ids[i:i + chunk], mask[i:i + chunk])  # (b, 2)
        right += int((scores.argmax(-1) == labels[i:i + chunk]).sum())
    return right / len(ids)


def train_mode(net: Classifier, train: tuple[Tensor, Tensor, Tensor], settings: FinetuneSettings,
               lr: float, on_step: Callable[[int], None] | None = None,
               stop: threading.Event | None = None) -> list[float]:
    """``settings.steps`` AdamW steps on batches drawn from ``train`` with ``settings.seed``;
    returns every step's loss.

    When nothing in the body trains (head only), its output for a sentence never changes, so
    it is computed once for every training sentence and each step runs the head alone: the
    same steps on the same batches, a third of the time."""
    ids, mask, labels = train
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.98), weight_decay=0.0, foreach=True)
    features = _pooled(net, ids, mask) if net.body_frozen() else None  # (N, d) or None
    rng = random.Random(settings.seed)  # the same batches for every mode
    warmup = max(1, settings.steps // 10)
    losses = []
    net.train()
    for step in range(settings.steps):
        if stop is not None and stop.is_set():
            raise Stopped("stopped")
        rows = torch.tensor(rng.sample(range(len(ids)), min(settings.batch, len(ids))))
        for group in opt.param_groups:
            group["lr"] = lr_at(step, settings.steps, lr, warmup)
        if features is not None:
            scores = net.head(features[rows])  # (b, 2)
        else:
            width = int(mask[rows].sum(1).max())  # this batch's longest sentence
            scores = net(ids[rows, :width], mask[rows, :width])  # (b, 2)
        loss = F.cross_entropy(scores, labels[rows])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step + 1)
    return losses


def fine_tune(model: Transformer, tokenizer, settings: FinetuneSettings = FinetuneSettings(), *,
              name: str = "bert-tiny", on_progress: Callable[[str, int], None] | None = None,
              stop: threading.Event | None = None) -> FinetuneResult:
    """The three modes, one after the other, on ``settings.task``; ``model`` is never changed.

    ``on_progress(mode, step)`` is called after every step; ``stop`` ends the run between two
    steps (raising :class:`Stopped`)."""
    start = time.perf_counter()
    train = encode_examples(tokenizer, make_examples(settings.task, settings.train_size, settings.seed))
    heldout = encode_examples(tokenizer, make_examples(settings.task, settings.heldout_size,
                                                       HELDOUT_SEED, "heldout"))
    results = []
    for mode in MODES:
        t0 = time.perf_counter()
        net = classifier(model, mode, settings.rank, settings.seed)
        before = accuracy(net, *heldout)
        losses = train_mode(net, train, settings, LEARNING_RATES[mode],
                            None if on_progress is None else (lambda s, m=mode: on_progress(m, s)), stop)
        after = accuracy(net, *heldout)
        tail = losses[-20:]
        results.append(ModeResult(mode, trained_count(net), expected_trained(model.cfg, mode, settings.rank),
                                  before, after, sum(tail) / len(tail), time.perf_counter() - t0))
    return FinetuneResult(name, settings, tuple(results), time.perf_counter() - start,
                          torch.get_num_threads())
