"""Fine-tune a pretrained encoder (bert-tiny) on a two-way sentence task, several ways, measured.

    head only      every pretrained weight frozen; only a new classifier head is trained
    prompt tuning  frozen too; p trained vectors stand before the text's token embeddings
    prefix tuning  frozen too; every attention layer reads p trained keys and values before
                   the text's (both: ``tfviz.training.prefix_prompt``)
    LoRA           frozen too, but beside W_Q and W_V of every layer sit two thin matrices,
                   A (d_in × r, random at the start) and B (r × d_out, zero at the start):
                   the layer computes x·W + b + x·A·B, and only A, B and the head are trained
    full           every weight is trained, and the head
    from scratch   full, but from random weights: a fresh model of the same config, built from
                   the config's own seed, with no pretraining. What pretraining bought is the
                   difference between this and "full", the same steps on the same data

The classifier reads the mean of the last layer's vectors over the sentence's tokens and maps
it to two scores (a d × 2 matrix and 2 biases). bert-tiny was pretrained one sentence per row,
without [CLS], so it never learned to gather a summary there; the mean is the summary it has.
Its masked-LM head is dropped (the copy's ``unembed`` becomes the identity, so the body returns
the last layer's vectors).

Every mode starts from a deep copy of the bundle's model (from scratch: a new model), so the
shared model is never touched, and from the same seed: the head starts equal in every mode, and
B = 0 makes the LoRA model compute exactly what the frozen one does until its first step. Every
mode sees the same batches in the same order for the same number of steps; only the learning
rate differs, each mode's own (``LEARNING_RATES``: a model that trains fewer numbers takes
larger steps; from scratch takes full's). AdamW, the bundled models' schedule (``loop.lr_at``:
warm-up, then cosine down to 10%), gradients clipped to norm 1. Held-out accuracy is measured
every ``settings.steps // CHECKS`` steps, so a run also says how soon each way got where it did.

Which ways run is chosen (``FinetuneSettings.modes``); by default the three that lesson 15
has always compared (head only, LoRA, full), since each other way costs about as much time as
LoRA or full again.

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

from tfviz.analysis.finetune import lora_params, prefix_params, prompt_params
from tfviz.config import PRESET_NAMES, preset
from tfviz.data.classify import TASKS, make_examples
from tfviz.model import Transformer
from tfviz.model.seeded import seeded
from tfviz.params import count_parameters
from tfviz.training.loop import lr_at
from tfviz.training.prefix_prompt import add_prefix, prompt_start, starting_tokens
from tfviz.training.recipes import RECIPES

MODES = ("head only", "prompt tuning", "prefix tuning", "LoRA", "full", "from scratch")
DEFAULT_MODES = ("head only", "LoRA", "full")  # a run's ways unless told otherwise
LORA_MATRICES = ("W_Q", "W_V")
LEARNING_RATES = {"head only": 1e-2, "prompt tuning": 3e-2, "prefix tuning": 1e-1, "LoRA": 3e-3,
                  "full": 1e-3, "from scratch": 1e-3}
HELDOUT_SEED = 1  # held-out examples are the same whatever the training seed
CHECKS = 10  # held-out checks per mode after step 0: every steps // CHECKS steps, and the last


class Stopped(RuntimeError):
    """The run was asked to stop (the server is shutting down)."""


@dataclass(frozen=True)
class FinetuneSettings:
    """One comparison: the task, the LoRA rank, the prefix and prompt length p, the ways to
    run (any of ``MODES``, kept in its order) and the budget every way gets."""

    task: str = "number"
    rank: int = 4
    steps: int = 400
    batch: int = 32
    train_size: int = 4000
    heldout_size: int = 600
    seed: int = 0
    p: int = 10  # prompt tuning's input vectors, prefix tuning's keys and values per layer
    modes: tuple[str, ...] = DEFAULT_MODES

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; choose from {sorted(TASKS)}")
        if not 1 <= self.rank <= 64:
            raise ValueError("the rank must be between 1 and 64")
        if not 1 <= self.p <= 64:
            raise ValueError("the prefix and prompt length p must be between 1 and 64")
        if min(self.steps, self.batch, self.train_size, self.heldout_size) < 1:
            raise ValueError("steps, batch and sizes must be at least 1")
        if not self.modes or set(self.modes) - set(MODES):
            raise ValueError(f"choose one or more ways among {MODES}")
        object.__setattr__(self, "modes", tuple(m for m in MODES if m in self.modes))  # MODES' order

    @property
    def every(self) -> int:
        """Steps between two held-out checks: every(400 steps) == 40."""
        return max(1, self.steps // CHECKS)


@dataclass(frozen=True)
class ModeResult:
    """What one way of fine-tuning trained and what it reached, measured."""

    mode: str
    trained: int  # numbers in the tensors handed to the optimizer (requires_grad)
    expected: int  # the same, from the counting formulas
    accuracy_before: float  # held-out accuracy at step 0 (the head untrained)
    accuracy: float  # held-out accuracy after the last step
    final_loss: float  # mean training loss of the last 20 steps
    seconds: float  # wall time of this mode: set-up, training and its held-out checks
    curve: tuple[tuple[int, float], ...] = ()  # (step, held-out accuracy) of every check


@dataclass(frozen=True)
class FinetuneResult:
    model: str
    settings: FinetuneSettings
    modes: tuple[ModeResult, ...]
    seconds: float  # every mode, with tokenising the examples
    threads: int  # torch's intra-op threads during the run

    @property
    def chance(self) -> float:
        return 0.5  # both tasks are balanced two-way questions

    def of(self, mode: str) -> ModeResult | None:
        """The result of ``mode``, or None if this run did not train it."""
        return next((m for m in self.modes if m.mode == mode), None)


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
    """An encoder body without its LM head, the mean of its last layer, and a linear head;
    with ``prompt`` (p × d), those p vectors stand before every text's token embeddings
    (prompt tuning), and the mean is taken over the text's own positions only."""

    def __init__(self, body: Transformer, n_classes: int = 2, prompt: Tensor | None = None) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(body.cfg.d_model, n_classes)
        self.prompt = None if prompt is None else nn.Parameter(prompt.detach().clone())  # (p, d)

    def pool(self, ids: Tensor, mask: Tensor) -> Tensor:
        """ids, mask: (B, T), mask 1 on real tokens -> (B, d): the mean of the last layer."""
        if self.prompt is None:
            h = self.body(ids, attention_mask=mask)  # (B, T, d): the last layer's vectors
        else:
            B, p = ids.shape[0], self.prompt.shape[0]
            x = torch.cat([self.prompt.expand(B, *self.prompt.shape), self.body.embed(ids)], 1)  # (B, p + T, d)
            seen = torch.cat([mask.new_ones(B, p), mask], 1)  # (B, p + T): the prompt is always read
            h = self.body(inputs_embeds=x, attention_mask=seen)[:, p:]  # (B, T, d): the text's positions
        m = mask[..., None].to(h.dtype)  # (B, T, 1)
        return (h * m).sum(1) / m.sum(1)  # (B, d): mean over real tokens

    def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
        """ids, mask: (B, T) -> scores (B, n_classes)."""
        return self.head(self.pool(ids, mask))  # (B, n_classes)

    def body_frozen(self) -> bool:
        """Whether a sentence's pooled vector can never change: nothing before the head trains."""
        return self.prompt is None and not any(p.requires_grad for p in self.body.parameters())


def classifier(model: Transformer, mode: str, rank: int = 4, seed: int = 0,
               start: Tensor | None = None) -> Classifier:
    """A copy of ``model`` made ready for ``mode``, with a new head; ``model`` itself is untouched.

    The copy's parameters are frozen unless ``mode`` is "full"; "LoRA" wraps each layer's
    W_Q and W_V in a :class:`LoRALinear`; "prompt tuning" and "prefix tuning" add p trained
    vectors that start from the tokens ``start`` (p,) (``tfviz.training.prefix_prompt``);
    "from scratch" is a new model of ``model``'s config (its own ``init_seed``), all trained.
    The head and A are drawn from ``seed``."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
    if mode in ("prompt tuning", "prefix tuning") and start is None:
        raise ValueError(f"{mode} starts from p tokens: pass them as start")
    body = Transformer(model.cfg) if mode == "from scratch" else copy.deepcopy(model)
    body.unembed = nn.Identity()  # no LM head: the body returns its last layer's vectors
    for p in body.parameters():
        p.requires_grad_(mode in ("full", "from scratch"))
    if mode == "prefix tuning":
        add_prefix(body, start)  # trained keys and values before the text's, in every layer
    prompt = prompt_start(body, start) if mode == "prompt tuning" else None
    with seeded(seed):  # the same head and A for a seed, whatever else is running
        net = Classifier(body, 2, prompt)  # the head first, so it starts equal in every mode
        if mode == "LoRA":
            for block in body.blocks:
                block.attn.W_q = LoRALinear(block.attn.W_q, rank)
                block.attn.W_v = LoRALinear(block.attn.W_v, rank)
    return net


def starts_like_pretraining(config) -> bool:
    """Whether a new model of ``config`` (what "from scratch" trains) holds the very weights the
    bundled model of that name was pretrained from: its recipe builds the preset's model from
    the config's ``init_seed`` (``tfviz.training.loop.fit``), and ``config`` is the preset's."""
    recipe = RECIPES.get(config.name)
    return (recipe is not None and recipe.make_model is None and config.name in PRESET_NAMES
            and preset(config.name) == config)


def trained_count(net: nn.Module) -> int:
    """Numbers in the tensors that will train (``requires_grad``)."""
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def expected_trained(config, mode: str, rank: int, n_classes: int = 2, p: int = 10) -> int:
    """The same count from the formulas: the head (d·classes + classes), plus for LoRA
    ``lora_params`` on W_Q and W_V, for prompt and prefix tuning ``prompt_params`` and
    ``prefix_params`` of length ``p``, for full and from scratch every parameter
    (``count_parameters``).

    >>> from tfviz.config import preset
    >>> [expected_trained(preset("bert-tiny"), m, 4) for m in MODES]   # d = 64, 2 layers, p = 10
    [130, 770, 2690, 2178, 138498, 138498]
    """
    head = config.d_model * n_classes + n_classes
    if mode == "head only":
        return head
    if mode == "prompt tuning":
        return head + prompt_params(config, p)
    if mode == "prefix tuning":
        return head + prefix_params(config, p)
    if mode == "LoRA":
        return head + lora_params(config, rank, LORA_MATRICES).total
    if mode in ("full", "from scratch"):
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


class HeldOut:
    """Held-out accuracy of a classifier as it trains, measured the cheap way when it can be:
    when nothing before the head trains (head only), the held-out sentences' pooled vectors are
    computed once and each check runs the head alone (the same numbers, in far less time)."""

    def __init__(self, net: Classifier, heldout: tuple[Tensor, Tensor, Tensor]) -> None:
        self.net, self.heldout = net, heldout
        self.features = _pooled(net, *heldout[:2]) if net.body_frozen() else None  # (N, d)

    @torch.no_grad()
    def __call__(self) -> float:
        if self.features is None:
            return accuracy(self.net, *self.heldout)
        labels = self.heldout[2]
        return int((self.net.head(self.features).argmax(-1) == labels).sum()) / len(labels)


def train_mode(net: Classifier, train: tuple[Tensor, Tensor, Tensor], settings: FinetuneSettings,
               lr: float, on_step: Callable[[int], None] | None = None,
               stop: threading.Event | None = None,
               on_check: Callable[[int], None] | None = None) -> list[float]:
    """``settings.steps`` AdamW steps on batches drawn from ``train`` with ``settings.seed``;
    returns every step's loss. ``on_check(step)`` is called after every ``settings.every``-th
    step and the last (to measure held-out accuracy); training then goes on in train mode.

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
        if on_check is not None and ((step + 1) % settings.every == 0 or step + 1 == settings.steps):
            on_check(step + 1)
            net.train()
    return losses


def fine_tune(model: Transformer, tokenizer, settings: FinetuneSettings = FinetuneSettings(), *,
              name: str = "bert-tiny", on_progress: Callable[[str, int], None] | None = None,
              stop: threading.Event | None = None) -> FinetuneResult:
    """Every mode of ``settings.modes``, one after the other, on ``settings.task``; ``model``
    is never changed. Each mode's held-out accuracy is measured before training, after every
    ``settings.every`` steps and after the last.

    ``on_progress(mode, step)`` is called after every step; ``stop`` ends the run between two
    steps (raising :class:`Stopped`)."""
    start = time.perf_counter()
    train = encode_examples(tokenizer, make_examples(settings.task, settings.train_size, settings.seed))
    heldout = encode_examples(tokenizer, make_examples(settings.task, settings.heldout_size,
                                                       HELDOUT_SEED, "heldout"))
    first = starting_tokens(train[0], train[1], settings.p)  # (p,): where a prompt or prefix starts
    results = []
    for mode in settings.modes:
        t0 = time.perf_counter()
        net = classifier(model, mode, settings.rank, settings.seed, first)
        measure = HeldOut(net, heldout)
        curve = [(0, measure())]
        losses = train_mode(net, train, settings, LEARNING_RATES[mode],
                            None if on_progress is None else (lambda s, m=mode: on_progress(m, s)), stop,
                            on_check=lambda s: curve.append((s, measure())))
        tail = losses[-20:]
        results.append(ModeResult(mode, trained_count(net),
                                  expected_trained(model.cfg, mode, settings.rank, p=settings.p),
                                  curve[0][1], curve[-1][1], sum(tail) / len(tail),
                                  time.perf_counter() - t0, tuple(curve)))
    return FinetuneResult(name, settings, tuple(results), time.perf_counter() - start,
                          torch.get_num_threads())
