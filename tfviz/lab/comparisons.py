"""Ready-made comparisons: runs that differ in one design choice, and what they showed.

Each :class:`Comparison` holds the settings to train (one job, run after run) and turns the
finished runs into a sentence with the numbers measured in *those* runs, e.g.

    "no positions: 50% held-out after 200 steps (training loss 0.69); sinusoidal positions:
     100% held-out after 200 steps (training loss 0.00); …"

followed by what to notice, but only when these runs show it. Each comparison names the run
(or runs) the notice expects to come out ahead of the others (and, for some, that the others
stay near chance); :meth:`Comparison.shows` checks that on the measured numbers. When the runs
do not show it (another seed, a stopped run), the sentence says what they did show instead.
Most compare two settings; "positions" trains four: none, the sines added to the embeddings,
Shaw et al.'s relative vectors and T5's bucketed bias (the last two inside attention).
"residual" also reads each layer's gradient norm (``Checkpoint.grad_norms``): how much smaller
the first layer's is than the last's, in each run (:func:`gradient_ratio`).

>>> [c.key for c in COMPARISONS.values()]
['scale', 'positions', 'norm', 'residual', 'heads', 'moe']
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from tfviz.lab.settings import LabSettings, differing, label
from tfviz.lab.train import RunView
from tfviz.model import Transformer
from tfviz.model.norm import LayerNorm

MARGIN = 0.05  # held-out accuracies closer than this are level
NEAR_CHANCE = 0.10  # within this of the task's chance score, a run has learned next to nothing
TARGET = 0.95  # "reached": the held-out accuracy the lab's curves and table count up to


@cache
def residual_norms(settings: LabSettings) -> int:
    """LayerNorms on the residual path from the loss down to the first layer, counted in the
    model these settings build. Post-LN puts every block's LayerNorms on it (each normalises
    the residual sum); pre-LN keeps them on the side branches and leaves only the final one.

    >>> s = LabSettings.default("order", n_layers=4)
    >>> residual_norms(s.replace(norm="post")), residual_norms(s.replace(norm="pre"))
    (8, 1)
    """
    model = Transformer(settings.model_config())
    on_path = sum(isinstance(m, LayerNorm) for block in model.blocks if not block.pre_ln
                  for m in block.modules())
    return on_path + (getattr(model, "ln_final", None) is not None)


def steps_to(run: RunView, target: float = TARGET) -> int | None:
    """The step of the first held-out check at or above ``target`` (None if none was)."""
    return next((c.step for c in run.checkpoints if c.accuracy >= target), None)


def ahead(a: RunView, b: RunView) -> bool:
    """Run ``a`` came out ahead of ``b``: clearly higher held-out accuracy at the end, or level
    at the end and it reached ``TARGET`` in fewer steps (or ``b`` never did)."""
    if a.accuracy is None or b.accuracy is None:
        return False
    if a.accuracy >= b.accuracy + MARGIN:
        return True
    if abs(a.accuracy - b.accuracy) < MARGIN:
        sa, sb = steps_to(a), steps_to(b)
        return sa is not None and (sb is None or sa < sb)
    return False


def near_chance(run: RunView) -> bool:
    """The run's held-out accuracy is within ``NEAR_CHANCE`` of what guessing scores."""
    return run.accuracy is not None and abs(run.accuracy - run.settings.spec.chance) <= NEAR_CHANCE


def gradient_ratio(run: RunView) -> float | None:
    """The first layer's gradient norm over the last layer's, the median over the run's
    checkpoints (None for one layer, or before any step): 1 when every layer gets as much,
    1e-5 when the first gets a hundred-thousandth of the last's."""
    ratios = [float(c.grad_norms[0]) / float(c.grad_norms[-1]) for c in run.checkpoints
              if c.grad_norms is not None and len(c.grad_norms) > 1 and c.grad_norms[-1] > 0]
    return statistics.median(ratios) if ratios else None


def times(ratio: float) -> str:
    """A ratio in words, to 2 significant figures; between 0.9 and 1.1, "about as large".

    >>> times(1.04e-5), times(4.23), times(0.5), times(1.05)
    ('96,000 times smaller', '4.2 times larger', '2 times smaller', 'about as large')
    """
    if 0.9 <= ratio <= 1.1:
        return "about as large"
    big = 1 / ratio if ratio < 1 else ratio
    shown = float(f"{big:.2g}")
    text = f"{shown:,.0f}" if shown >= 10 else f"{shown:g}"
    return f"{text} times {'smaller' if ratio < 1 else 'larger'}"


def gradients(runs: Sequence[RunView]) -> str:
    """"The first layer's gradient norm, against the last layer's (the median over the
    checkpoints): with residuals 3.1 times larger; no residuals 96,000 times smaller." ("" if
    no run measured one)."""
    fields = differing([r.settings for r in runs])
    said = [(label(r.settings, fields), gradient_ratio(r)) for r in runs]
    said = [f"{name} {times(ratio)}" for name, ratio in said if ratio is not None]
    if not said:
        return ""
    return ("The first layer's gradient norm, against the last layer's (the median over the "
            "checkpoints): " + "; ".join(said) + ".")


def _reached(run: RunView) -> str:
    step = steps_to(run)
    return f"never reached {TARGET:.0%}" if step is None else f"reached {TARGET:.0%} at step {step}"


@dataclass(frozen=True)
class Comparison:
    key: str
    title: str
    settings: tuple[LabSettings, ...]
    notice: str  # what the learner should look for, when their runs show it
    # The run (or runs) the notice expects ahead of every other (None: it expects no winner).
    better: int | tuple[int, ...] | None = None
    stuck: bool = False  # the notice also says the other runs stay near chance
    # The notice also says the first layers got less gradient in the other runs than in the
    # expected winner (a smaller first/last layer's gradient ratio); the measured ratios are
    # told with the runs' numbers.
    gradients: bool = False

    @property
    def ahead_runs(self) -> tuple[int, ...]:
        """The indices of the runs the notice expects ahead (none when it expects no winner)."""
        return () if self.better is None else (
            (self.better,) if isinstance(self.better, int) else tuple(self.better))

    def _pairs(self, runs: Sequence[RunView]) -> list[tuple[RunView, RunView]]:
        """(expected ahead, one of the others), for every such pair, in run order."""
        good = self.ahead_runs
        return [(runs[g], runs[o]) for g in good for o in range(len(runs)) if o not in good]

    def shows(self, runs: Sequence[RunView]) -> bool:
        """Whether these runs show what the notice says."""
        if len(runs) != len(self.settings) or any(r.accuracy is None for r in runs):
            return False
        if self.better is None:  # the notice reads the experts' load: it needs one measured
            return any(expert_loads(r) for r in runs)
        return all(ahead(good, other) and (not self.stuck or near_chance(other))
                   and (not self.gradients or _fainter(other, good))
                   for good, other in self._pairs(runs))

    def observed(self, runs: Sequence[RunView]) -> str:
        """What the runs showed, for when they do not show the notice's effect: one sentence for
        each expected winner and other run that did not come out as the notice says."""
        if len(runs) != len(self.settings) or any(r.accuracy is None for r in runs):
            return ("Not every run reached a held-out check, so these runs cannot show the "
                    "difference this comparison is about.")
        if self.better is None:
            return "No expert load was measured in these runs."
        fields = differing([r.settings for r in runs])
        said, near_said = [], set()
        for good, other in self._pairs(runs):
            g, o = label(good.settings, fields), label(other.settings, fields)
            if ahead(other, good):
                said.append(f"In these runs {o} came out ahead of {g} ({other.accuracy:.0%} against "
                            f"{good.accuracy:.0%} held-out; {o} {_reached(other)}, {g} "
                            f"{_reached(good)}), the opposite of what this comparison usually "
                            "shows. Another seed may tell another story.")
            elif ahead(good, other):
                if self.gradients and not _fainter(other, good):
                    said.append(f"{g} came out ahead, but {o}'s first layer did not get less "
                                f"gradient, against its last, than {g}'s did (the ratios above), "
                                "so these runs do not show the fading this comparison is about.")
                    continue
                if not self.stuck or near_chance(other) or o in near_said:
                    continue  # as the notice says; or the other's score is told already
                near_said.add(o)
                said.append(f"{g} came out ahead, but {o} did not stay near chance: it scored "
                            f"{other.accuracy:.0%}, where guessing scores "
                            f"{other.settings.spec.chance:.0%}, so it learned part of the task even so.")
            else:
                level = "the two came out level" if len(runs) == 2 else f"{g} and {o} came out level"
                said.append(f"In these runs {level}: {g} {good.accuracy:.0%} and {o} "
                            f"{other.accuracy:.0%} held-out ({g} {_reached(good)}, {o} "
                            f"{_reached(other)}), so they do not show the difference this "
                            "comparison is about. Another seed, or more steps, may.")
        return " ".join(said)

    def summarize(self, runs: Sequence[RunView]) -> str:
        """The measured sentence, then the notice if these runs show it, else what they show."""
        measured = summarize(runs)
        if not runs:
            return measured
        if self.gradients and gradients(runs):
            measured += " " + gradients(runs)
        return f"{measured} {self.notice if self.shows(runs) else self.observed(runs)}"


def _fainter(run: RunView, than: RunView) -> bool:
    """Whether ``run``'s first layer got less gradient, against its last, than ``than``'s did."""
    a, b = gradient_ratio(run), gradient_ratio(than)
    return a is not None and b is not None and a < b


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


def summarize(runs: Sequence[RunView]) -> str:
    """One sentence with each run's measured numbers, naming only the settings that differ."""
    if not runs:
        return ""
    fields = differing([r.settings for r in runs])
    text = "; ".join(run_line(r, fields) for r in runs) + "."
    loads = [(label(r.settings, fields), expert_loads(r)) for r in runs if expert_loads(r)]
    if loads:
        text += " Share of held-out tokens each expert took first, at the end: " + \
            "; ".join(f"{name}, {ld}" for name, ld in loads) + "."
    return text


def _pair(base: LabSettings, **other) -> tuple[LabSettings, LabSettings]:
    return base, base.replace(**other)


_NORM_PAIR = _pair(LabSettings.default("order", n_layers=4, lr=3e-2, steps=200), norm="post")
# Six layers, narrow (d_model 32) so that both runs finish within the lab's time target
# (``python -m bench.bench_lab --only residual norm``)
_RESIDUAL_PAIR = _pair(LabSettings.default("order", n_layers=6, d_model=32), residual=False)

COMPARISONS: dict[str, Comparison] = {c.key: c for c in (
    Comparison(
        "scale", "√d_k scale on / off, one head of size 128",
        _pair(LabSettings.default("sort", n_heads=1, d_model=128, steps=300, lr=3e-3), scale=False),
        "With one head of size 128, the unscaled scores are about √128 ≈ 11 times larger, so the "
        "softmax saturates: a few keys take all the weight and the gradients of the rest vanish.",
        better=0),
    Comparison(
        "positions", "No positions / sine / Shaw / T5, on “which came first?”",
        tuple(LabSettings.default("order", positional=p, steps=200)
              for p in ("none", "sinusoidal", "relative", "t5_bias")),
        "Without positions every token sees the same crowd whatever the order, so the model can "
        "only guess, and half of the held-out examples is what a guess gets. Each of the other "
        "three tells order apart its own way: the sines are added to the tokens before the first "
        "layer; Shaw's relative vectors (a key and a value vector per distance) and T5's bias (a "
        "number per head and distance bucket) act inside attention and see only how far apart "
        "two tokens are, which is enough here: the first marker is the one farther back from the "
        "<sep> that answers.",
        better=(1, 2, 3), stuck=True),
    Comparison(
        "norm", "Pre-LN / post-LN, 4 layers at learning rate 0.03", _NORM_PAIR,
        f"Post-LN normalises after each residual add, so on its way down from the loss to the "
        f"first layer every update passes through {residual_norms(_NORM_PAIR[1])} LayerNorms "
        f"({residual_norms(_NORM_PAIR[1]) // _NORM_PAIR[1].n_layers} in each of the "
        f"{_NORM_PAIR[1].n_layers} layers); at this high learning rate that stack tends to get "
        f"stuck near chance ({_NORM_PAIR[1].spec.chance:.0%} on this task), while pre-LN keeps a clean residual "
        f"path, with {residual_norms(_NORM_PAIR[0])} LayerNorm on it (the final one), from the "
        "loss to the first layer.",
        better=0, stuck=True),
    Comparison(
        "residual", f"Residuals on / off, {_RESIDUAL_PAIR[0].n_layers} layers", _RESIDUAL_PAIR,
        f"A residual add passes the gradient through untouched: the derivative of x + F(x) is "
        f"1 + F'(x), so along the skip path the loss's gradient reaches the first of the "
        f"{_RESIDUAL_PAIR[0].n_layers} layers with a factor of 1 from each layer above it, "
        "whatever those layers do. Without the skip path it must pass through every attention "
        "and feed-forward block on the way down, multiplied by each one's derivative, and here it "
        "faded on its way down (the ratios above), so the first layers hardly learned. Without residuals a layer "
        "cannot even hand its input up unchanged unless it learns to compute the identity, so "
        "the tokens and their positions reach the top only as far as the layers below pass them "
        f"on: this deep stack stayed near chance ({_RESIDUAL_PAIR[1].spec.chance:.0%} on this task).",
        better=0, stuck=True, gradients=True),
    Comparison(
        "heads", "1 head / 4 heads, same d_model",
        _pair(LabSettings.default("sort", n_heads=1, steps=300), n_heads=4),
        "The same width split four ways gives each layer four attention maps instead of one, so "
        "it can look at several letters at once (the ones already written, the ones left); "
        "compare how soon each curve climbs, not only where it ends.",
        better=1),
    Comparison(
        "moe", "Dense / mixture of 4 experts (top-1)",
        _pair(LabSettings.default("sort", steps=300), n_experts=4, top_k=1),
        "A mixture of experts has four feed-forward blocks but sends each token to one; the load "
        "shows how evenly the router spread the tokens (25% each would be perfectly even)."),
)}
