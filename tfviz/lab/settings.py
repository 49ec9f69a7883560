"""What a learner may choose in the training lab, bounded on the server.

A :class:`LabSettings` is checked when it is made: a value from a widget, the URL or a hand-
written request that is out of range raises ``ValueError`` with a sentence the page can show
as it is. Nothing it allows can take much memory: at most 6 layers of width 128, 8 experts,
batches of 128 rows of at most 24 tokens, 3,000 steps.

>>> LabSettings(task="reverse").model_config().arch
'decoder'
>>> LabSettings(task="order").model_config().arch    # bidirectional: see tfviz.lab.tasks
'encoder'
>>> LabSettings(n_layers=9)
Traceback (most recent call last):
...
ValueError: Layers must be a whole number from 1 to 6 (got 9).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tfviz.config import NORMS, ModelConfig
from tfviz.lab.tasks import TASKS, LabTask

# The lab's choices of position information. "none" adds nothing to the token vectors: an
# encoder is then blind to order; a decoder's causal mask still lets a token count how many
# came before it, so it is not fully blind (the order task uses an encoder for that reason).
LAB_POSITIONALS = ("none", "sinusoidal", "learned", "relative", "t5_bias", "rope", "alibi")
# How a picker and a comparison name them: "relative" and "t5_bias" by their authors.
POSITIONAL_TEXT = {"none": "no positions", "relative": "Shaw relative", "t5_bias": "T5 bias"}
LIMITS = dict(n_layers=(1, 6), n_heads=(1, 4), d_model=(16, 128), n_experts=(2, 8),
              steps=(1, 3000), batch_size=(8, 128), seed=(0, 10_000))
LR_RANGE = (1e-4, 3e-2)
D_FF_RATIO = 4  # the feed-forward width is 4 x d_model, as in the original paper

_NAMES = {"n_layers": "Layers", "n_heads": "Heads", "d_model": "d_model", "n_experts": "Experts",
          "steps": "Steps", "batch_size": "Batch size", "seed": "Seed"}


def _whole(value, name: str, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{_NAMES.get(name, name)} must be a whole number from {lo} to {hi} "
                         f"(got {value!r:.40}).")


@dataclass(frozen=True)
class LabSettings:
    """One training run: the task, the architecture and the schedule.

    ``n_experts`` 0 is a dense feed-forward block; 2-8 is a mixture of experts sending each
    token to ``top_k`` of them (no capacity limit, so no token is dropped, and the order of the
    tokens cannot leak through which ones an expert had room for).
    """

    task: str = "reverse"
    n_layers: int = 2
    n_heads: int = 2
    d_model: int = 64
    positional: str = "sinusoidal"
    scale: bool = True  # divide scores by sqrt(d_head)
    norm: str = "pre"  # LayerNorm before each sublayer (pre) or after the residual add (post)
    residual: bool = True  # False: no skip path around the sublayers (ModelConfig.residual)
    ffn: bool = True  # False: attention only, no feed-forward sublayer (ModelConfig.ffn)
    n_experts: int = 0
    top_k: int = 1
    lr: float = 3e-3
    steps: int = 500
    batch_size: int = 64
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"Unknown task {self.task!r:.40}; choose one of {', '.join(TASKS)}.")
        for name in ("n_layers", "n_heads", "d_model", "steps", "batch_size", "seed"):
            _whole(getattr(self, name), name, *LIMITS[name])
        if self.n_experts != 0:
            _whole(self.n_experts, "n_experts", *LIMITS["n_experts"])
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or \
                not 1 <= self.top_k <= max(1, self.n_experts):
            raise ValueError(f"Experts per token (top-k) must be from 1 to the number of experts "
                             f"({max(1, self.n_experts)}); got {self.top_k!r:.40}.")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must split evenly into {self.n_heads} heads.")
        if self.positional not in LAB_POSITIONALS:
            raise ValueError(f"Positions must be one of {', '.join(LAB_POSITIONALS)} "
                             f"(got {self.positional!r:.40}).")
        if self.positional == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError("RoPE rotates pairs of numbers, so each head needs an even size "
                             f"(d_model / heads = {self.d_model // self.n_heads}).")
        if self.norm not in NORMS:
            raise ValueError(f"LayerNorm must be 'pre' or 'post' (got {self.norm!r:.40}).")
        if not isinstance(self.scale, bool):
            raise ValueError("The √d_k scale is either on or off.")
        if not isinstance(self.residual, bool):
            raise ValueError("Residual connections are either on or off.")
        if not isinstance(self.ffn, bool):
            raise ValueError("The feed-forward sublayer is either on or off.")
        if not self.ffn and self.n_experts:
            raise ValueError("Experts are a kind of feed-forward sublayer: with attention only, "
                             "choose a dense feed-forward (0 experts).")
        lr = self.lr
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not LR_RANGE[0] <= lr <= LR_RANGE[1]:
            raise ValueError(f"The learning rate must be between {LR_RANGE[0]:g} and {LR_RANGE[1]:g} "
                             f"(got {lr!r:.40}).")

    @property
    def spec(self) -> LabTask:
        return TASKS[self.task]

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @classmethod
    def default(cls, task: str, **changes) -> LabSettings:
        """The task's default setting (see ``LabTask.defaults``), with ``changes`` on top."""
        if task not in TASKS:
            raise ValueError(f"Unknown task {task!r:.40}; choose one of {', '.join(TASKS)}.")
        return cls(task=task, **(TASKS[task].defaults | changes))

    def replace(self, **changes) -> LabSettings:
        return dataclasses.replace(self, **changes)

    def differences(self, other: LabSettings) -> dict[str, tuple]:
        """Field -> (mine, other's), for the fields that differ: what a comparison names."""
        return {f.name: (getattr(self, f.name), getattr(other, f.name))
                for f in dataclasses.fields(self) if getattr(self, f.name) != getattr(other, f.name)}

    def describe(self) -> str:
        """"2 layers × 2 heads, d_model 64, sinusoidal, scaled, pre-LN, dense, lr 0.003, 500 steps"
        (", no residuals" after the LayerNorm when the skip path is off)."""
        ffn = ("attention only" if not self.ffn else "dense" if not self.n_experts
               else f"MoE {self.n_experts} experts top-{self.top_k}")
        return (f"{self.n_layers} layer{'s' * (self.n_layers > 1)} × {self.n_heads} "
                f"head{'s' * (self.n_heads > 1)}, d_model {self.d_model}, {self.positional} "
                f"positions, {'scaled' if self.scale else 'unscaled'}, {self.norm}-LN, "
                f"{'' if self.residual else 'no residuals, '}{ffn}, "
                f"lr {self.lr:g}, {self.steps} steps")

    def model_config(self) -> ModelConfig:
        """The tfviz ModelConfig of this run (a fresh model; nothing shared is touched)."""
        t = self.spec
        return ModelConfig(
            name=f"lab-{t.key}", arch=t.arch, vocab_size=t.vocab.size, d_model=self.d_model,
            n_heads=self.n_heads, n_layers=self.n_layers, d_ff=D_FF_RATIO * self.d_model,
            max_seq_len=t.max_len, positional=self.positional, norm=self.norm,
            final_norm=self.norm == "pre", scale_attn=self.scale, residual=self.residual,
            n_experts=self.n_experts, ffn=self.ffn,
            moe_top_k=self.top_k if self.n_experts else 1, moe_capacity_factor=None,
            init_seed=self.seed)


LABELS = {"task": "task", "n_layers": "layers", "n_heads": "heads", "d_model": "d_model",
          "positional": "positions", "scale": "√d_k scale", "norm": "LayerNorm",
          "residual": "residual connections", "ffn": "feed-forward", "n_experts": "experts",
          "top_k": "top-k", "lr": "learning rate", "steps": "steps", "batch_size": "batch",
          "seed": "seed"}


def value_text(field: str, value) -> str:
    """How a comparison names one value: scale True -> "on", norm "pre" -> "pre-LN", 0 experts -> "dense"."""
    if field in ("scale", "residual", "ffn"):
        return "on" if value else "off"
    if field == "norm":
        return f"{value}-LN"
    if field == "n_experts":
        return "dense" if value == 0 else f"{value} experts"
    if field == "positional":
        return POSITIONAL_TEXT.get(value, str(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def differing(runs: list[LabSettings]) -> list[str]:
    """The fields on which these settings are not all equal, in field order."""
    if not runs:
        return []
    return [f.name for f in dataclasses.fields(LabSettings)
            if len({getattr(r, f.name) for r in runs}) > 1]


def named(field: str, value) -> str:
    """One setting as a comparison names it: "no positions", "sinusoidal positions", "pre-LN",
    "√d_k scale off", "no residuals", "4 heads", "dense", "lr 0.02"."""
    if field == "residual":
        return "with residuals" if value else "no residuals"
    if field == "ffn":
        return "with feed-forward" if value else "attention only"
    if field == "positional":
        return "no positions" if value == "none" else f"{value_text(field, value)} positions"
    if field == "norm":
        return f"{value}-LN"
    if field == "scale":
        return f"√d_k scale {value_text(field, value)}"
    if field == "n_experts":
        return value_text(field, value)
    if field in ("n_layers", "n_heads"):
        return f"{value} {LABELS[field][:-1]}{'s' if value != 1 else ''}"
    return f"{LABELS[field]} {value_text(field, value)}"


def label(settings: LabSettings, fields: list[str]) -> str:
    """"no positions, post-LN": the given fields only (the whole setting if none differ)."""
    return ", ".join(named(f, getattr(settings, f)) for f in fields) or settings.describe()
