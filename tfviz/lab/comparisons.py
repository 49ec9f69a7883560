"""Ready-made comparisons: two runs that differ in one design choice, and what they showed.

Each :class:`Comparison` holds the settings to train (one job, run after run) and turns the
finished runs into a sentence with the numbers measured in *those* runs, e.g.

    "no positions: 50% held-out after 200 steps (training loss 0.69); sinusoidal positions:
     100% held-out after 200 steps (training loss 0.00)."

followed by what to notice. The sentence reports what happened; if a run surprised (it can,
with a different seed), the numbers say so rather than the text claiming the expected effect.

>>> [c.key for c in COMPARISONS.values()]
['scale', 'positions', 'norm', 'heads', 'moe']
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfviz.lab.settings import LabSettings, differing, label
from tfviz.lab.train import RunView


@dataclass(frozen=True)
class Comparison:
    key: str
    title: str
    settings: tuple[LabSettings, ...]
    notice: str  # what the learner should look for

    def summarize(self, runs: Sequence[RunView]) -> str:
        return summarize(runs, self.notice)


def _pct(x: float | None) -> str:
    return "no checkpoint" if x is None else f"{x:.0%}"


def run_line(run: RunView, fields: list[str]) -> str:
    """"no positions: 50% held-out after 200 steps (training loss 0.69)"."""
    loss = run.final_loss()
    tail = "" if loss is None else f" (training loss {loss:.2f})"
    stopped = "" if run.state == "done" else f", {run.state}"
    return f"{label(run.settings, fields)}: {_pct(run.accuracy)} held-out after {run.step} steps{tail}{stopped}"


def comparison_table(runs: Sequence[RunView], names: Sequence[str]) -> dict[str, list[str]]:
    """Section 5's table, one row per run. A run stopped before its first step has no loss
    and may have no held-out check yet: its cells say so (seen in CI: the page failed on such
    a run when it formatted None)."""
    loss = [r.final_loss() for r in runs]
    reached = [r.seconds_to() for r in runs]
    return {"run": list(names),
            "held-out accuracy": ["no check yet" if r.accuracy is None else f"{r.accuracy:.1%}"
                                  for r in runs],
            "reached 95% after (s)": ["never" if t is None else f"{t:.1f}" for t in reached],
            "final loss": ["no step trained" if x is None else f"{x:.3f}" for x in loss],
            "settings": [f"{r.settings.spec.title}: {r.settings.describe()}" for r in runs]}


def expert_loads(run: RunView) -> str:
    """"layer 0: 31% 22% 25% 22%" per layer at the last checkpoint, or "" for a dense run."""
    if not run.checkpoints or run.checkpoints[-1].expert_load is None:
        return ""
    load = run.checkpoints[-1].expert_load
    return "; ".join(f"layer {i}: " + " ".join(f"{x:.0%}" for x in row) for i, row in enumerate(load))


def summarize(runs: Sequence[RunView], notice: str = "") -> str:
    """One sentence with each run's measured numbers, naming only the settings that differ."""
    if not runs:
        return ""
    fields = differing([r.settings for r in runs])
    text = "; ".join(run_line(r, fields) for r in runs) + "."
    loads = [(label(r.settings, fields), expert_loads(r)) for r in runs if expert_loads(r)]
    if loads:
        text += " Share of held-out tokens each expert took first, at the end: " + \
            "; ".join(f"{name}, {ld}" for name, ld in loads) + "."
    return f"{text} {notice}".strip()


def _pair(base: LabSettings, **other) -> tuple[LabSettings, LabSettings]:
    return base, base.replace(**other)


COMPARISONS: dict[str, Comparison] = {c.key: c for c in (
    Comparison(
        "scale", "√d_k scale on / off, one head of size 128",
        _pair(LabSettings.default("sort", n_heads=1, d_model=128, steps=300, lr=3e-3), scale=False),
        "With one head of size 128, the unscaled scores are about √128 ≈ 11 times larger, so the "
        "softmax saturates: a few keys take all the weight and the gradients of the rest vanish."),
    Comparison(
        "positions", "No positions / sinusoidal, on “which came first?”",
        _pair(LabSettings.default("order", positional="none", steps=200), positional="sinusoidal"),
        "Without positions every token sees the same crowd whatever the order, so the model can "
        "only guess, and half of the held-out examples is what a guess gets."),
    Comparison(
        "norm", "Pre-LN / post-LN, 4 layers at learning rate 0.03",
        _pair(LabSettings.default("order", n_layers=4, lr=3e-2, steps=200), norm="post"),
        "Post-LN normalises after each residual add, so every update has to pass through four "
        "LayerNorms on its way down; at this high learning rate that stack tends to get stuck "
        "near chance (50% on this task), while pre-LN keeps a clean residual path from the loss "
        "to the first layer."),
    Comparison(
        "heads", "1 head / 4 heads, same d_model",
        _pair(LabSettings.default("sort", n_heads=1, steps=300), n_heads=4),
        "The same width split four ways gives each layer four attention maps instead of one, so "
        "it can look at several letters at once (the ones already written, the ones left); "
        "compare how soon each curve climbs, not only where it ends."),
    Comparison(
        "moe", "Dense / mixture of 4 experts (top-1)",
        _pair(LabSettings.default("sort", steps=300), n_experts=4, top_k=1),
        "A mixture of experts has four feed-forward blocks but sends each token to one; the load "
        "shows how evenly the router spread the tokens (25% each would be perfectly even)."),
)}
