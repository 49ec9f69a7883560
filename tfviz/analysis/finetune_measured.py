"""Fine-tuning measured (lesson 15): the table and the sentences that read a run of
``tfviz.training.finetune.fine_tune``, from its numbers only.

A mode here is anything with ``mode``, ``trained``, ``accuracy_before``, ``accuracy`` and
``seconds`` (a ``ModeResult``; :func:`pretraining` also reads its ``curve`` of (step, held-out
accuracy)); this module runs nothing. :func:`paragraphs` gives every sentence a run has: the
three-way story of head only, LoRA and full (:func:`summary`), what a prompt and a prefix did
(:func:`tuned_inputs`), and what pretraining bought (:func:`pretraining`), each when the run
trained the ways it reads.

>>> from types import SimpleNamespace as M
>>> modes = [M(mode="head only", trained=130, accuracy=0.61), M(mode="LoRA", trained=2178, accuracy=0.9),
...          M(mode="full", trained=138498, accuracy=0.93)]
>>> verdict(modes)
'lora close'
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tfviz.params import count_parameters

BASE = ("head only", "LoRA", "full")  # the three ways :func:`summary` compares
CLOSE = 3  # percentage points: within 3 of full fine-tuning counts as "as well as full"
LEARNED = 10  # percentage points above chance needed to count as having learned something


class Measured(Protocol):
    mode: str
    trained: int
    accuracy: float


def _by_mode(modes: Sequence[Measured]) -> dict[str, Measured]:
    found = {m.mode: m for m in modes}
    missing = set(BASE) - set(found)
    if missing:
        raise ValueError(f"missing modes {sorted(missing)}")
    return found


def shown(x: float) -> int:
    """A share as the sentence prints it, in whole percent: shown(0.8916) == 89, as f"{0.8916:.0%}"."""
    return int(f"{x:.0%}".rstrip("%"))


def points(a: float, b: float) -> int:
    """a − b in percentage points, between the whole percentages the sentence prints, so that
    its numbers add up: points(0.93, 0.8916) == 4 (93% − 89%)."""
    return shown(a) - shown(b)


def _within(gap: int, what: str) -> str:
    """"came within 2 points of full fine-tuning", or "matched full fine-tuning" at 0 or less."""
    return f"matched {what}" if gap <= 0 else f"came within {gap} point{'s' if gap != 1 else ''} of {what}"


def verdict(modes: Sequence[Measured], chance: float = 0.5) -> str:
    """Which story the numbers tell, one of:

    "nothing learned"  full fine-tuning stayed within 10 points of chance
    "head enough"      the head alone came within 3 points of full fine-tuning
    "lora close"       LoRA came within 3 points of full, the head alone did not
    "lora between"     LoRA beat the head by more than 3 points but stayed more than 3 below full
    "lora no better"   LoRA did not beat the head alone by more than 3 points (and full did)
    """
    m = _by_mode(modes)
    head, lora, full = m["head only"].accuracy, m["LoRA"].accuracy, m["full"].accuracy
    if points(full, chance) <= LEARNED:
        return "nothing learned"
    if points(full, head) <= CLOSE:
        return "head enough"
    if points(full, lora) <= CLOSE:
        return "lora close"
    if points(lora, head) > CLOSE:
        return "lora between"
    return "lora no better"


def rows(modes: Sequence, total: int) -> list[dict]:
    """One table row per mode: numbers trained (and their share of the ``total`` a full
    fine-tune trains), held-out accuracy in percent before and after, seconds."""
    return [{"way": m.mode, "numbers trained": m.trained, "share of full": f"{m.trained / total:.2%}",
             "held-out % before": round(100 * m.accuracy_before, 1),
             "held-out % after": round(100 * m.accuracy, 1), "seconds": round(m.seconds, 1)}
            for m in modes]


def summary(modes: Sequence[Measured], chance: float = 0.5) -> str:
    """The honest sentence about a run, from its numbers (see :func:`verdict`)."""
    m = _by_mode(modes)
    head, lora, full = m["head only"], m["LoRA"], m["full"]
    share = lora.trained / full.trained
    told = (f"Training the head alone ({head.trained:,} numbers) reached **{head.accuracy:.0%}** on "
            f"held-out sentences, LoRA ({lora.trained:,} numbers, {share:.1%} of full) "
            f"**{lora.accuracy:.0%}**, and full fine-tuning ({full.trained:,}) **{full.accuracy:.0%}**; "
            f"guessing scores {chance:.0%}. ")
    story = verdict(modes, chance)
    if story == "nothing learned":
        return told + ("No way learned the task in this budget: even full fine-tuning stayed "
                       "near chance, so these numbers say nothing about which way is better.")
    if story == "head enough":
        return told + (f"The head alone {_within(points(full.accuracy, head.accuracy), 'full fine-tuning')}"
                       ": the pretrained vectors already carry what the task needs, "
                       "so training more of the model bought almost nothing here.")
    gap = points(full.accuracy, head.accuracy)
    if story == "lora close":
        return told + (f"The head alone stayed {gap} points below full fine-tuning; LoRA "
                       f"{_within(points(full.accuracy, lora.accuracy), 'it')} while training {share:.1%} as "
                       "many numbers: adjusting the frozen layers' queries and values was enough.")
    if story == "lora between":
        return told + (f"LoRA recovered {points(lora.accuracy, head.accuracy)} of the {gap} points "
                       f"between the head alone and full fine-tuning, training {share:.1%} as many "
                       f"numbers as full. {UNEXPLAINED}")
    behind = points(head.accuracy, lora.accuracy)
    compared = (f"LoRA ended {behind} points below the head alone" if behind > CLOSE else
                f"LoRA did no better than the head alone (within {CLOSE} points)")
    return told + (f"Here {compared}, while full fine-tuning gained {gap} points over the head. "
                   f"{UNEXPLAINED}")


# Why LoRA fell short, as far as one run can say: each is a real possibility, the budget too
# (a LoRA that trails at the page's step count can catch up given several times the steps).
UNEXPLAINED = ("The rest may need weights this LoRA leaves frozen, a larger rank, or just more "
               "steps or another learning rate than this run's budget: LoRA's few numbers often "
               "learn more slowly. This run alone cannot say which.")


@dataclass(frozen=True)
class Sizes:
    """What the sentences say about the model's shape: the prompt and prefix length p, the
    width d, the width of one layer's keys (kv heads × d_head) and the layers. From a config:

    >>> from types import SimpleNamespace as C
    >>> from tfviz.config import preset
    >>> Sizes.of(preset("bert-tiny"), p=10)
    Sizes(p=10, d_model=64, kv_width=64, n_layers=2, weights=138368)
    """

    p: int
    d_model: int
    kv_width: int
    n_layers: int
    weights: int  # the model's own numbers (``count_parameters``), what full fine-tuning trains but the head

    @classmethod
    def of(cls, config, p: int) -> "Sizes":
        return cls(p, config.d_model, config.kv_heads * config.d_head, config.n_layers,
                   count_parameters(config).total)


def _gain(a: float, b: float, what: str) -> str:
    """"gained 12 points over the head alone", "did no better than the head alone (within 3
    points)" or "ended 5 points below the head alone": a against b, in whole points."""
    gap = points(a, b)
    if gap > CLOSE:
        return f"gained {gap} points over {what}"
    if gap < -CLOSE:
        return f"ended {-gap} points below {what}"
    return f"did no better than {what} (within {CLOSE} points)"


def measured(modes: Sequence[Measured], chance: float = 0.5) -> str:
    """Each way's numbers in one sentence, for a run without all three of :data:`BASE`.

    >>> from types import SimpleNamespace as M
    >>> measured([M(mode="full", trained=138498, accuracy=1.0), M(mode="from scratch", trained=138498, accuracy=0.5)])
    'Held-out accuracy: full (138,498 numbers trained) **100%**, from scratch (138,498) **50%**; guessing scores 50%.'
    """
    told = [f"{m.mode} ({m.trained:,}{' numbers trained' if i == 0 else ''}) **{m.accuracy:.0%}**"
            for i, m in enumerate(modes)]
    return f"Held-out accuracy: {', '.join(told)}; guessing scores {chance:.0%}."


def tuned_inputs(modes: Sequence[Measured], sizes: Sizes, chance: float = 0.5) -> str:
    """What prompt and prefix tuning reached, each counted in words from ``sizes``, against the
    head alone (the same frozen model with nothing before the head trained) and LoRA when the
    run has them; "" if the run trained neither."""
    m = {x.mode: x for x in modes}
    prompt, prefix = m.get("prompt tuning"), m.get("prefix tuning")
    if prompt is None and prefix is None:
        return ""
    p, d, kv, L = sizes.p, sizes.d_model, sizes.kv_width, sizes.n_layers
    said = []
    if prompt is not None:
        said.append(f"Prompt tuning ({prompt.trained:,} numbers: {p} input vectors of {d} and the head) "
                    f"reached **{prompt.accuracy:.0%}**")
    if prefix is not None:
        said.append(f"prefix tuning ({prefix.trained:,}: {p} keys and {p} values of {kv} numbers in "
                    f"each of {L} layer{'s' if L != 1 else ''}, and the head) **{prefix.accuracy:.0%}**")
    text = (" and ".join(said) if len(said) == 2 else said[0][0].upper() + said[0][1:]) + "."
    against = [(name, x) for name, x in (("the head alone", m.get("head only")), ("LoRA", m.get("LoRA")))
               if x is not None]
    for name, way in (("Prompt tuning", prompt), ("Prefix tuning", prefix)):
        if way is not None and against:
            text += f" {name} " + " and ".join(_gain(way.accuracy, x.accuracy, what)
                                                for what, x in against) + "."
    if prompt is not None and prefix is not None and points(prefix.accuracy, prompt.accuracy) > CLOSE:
        text += (f" A prompt is only {p} more input vectors: what each layer reads at those "
                 "positions is whatever the frozen layers below made of them. A prefix sets the keys "
                 f"and values that the queries of each of the {L} layers read, directly.")
    full = m.get("full")
    if prompt is not None and full is not None and points(full.accuracy, prompt.accuracy) > CLOSE:
        text += (f" Lester et al. saw prompt tuning fall short like this in small models: it matched "
                 f"full fine-tuning only at billions of weights, and this model has {sizes.weights:,}.")
    return text


def pretraining(modes: Sequence, chance: float = 0.5, every: int | None = None) -> str:
    """What pretraining bought: full fine-tuning of the pretrained model against the same steps
    on the same sentences from random weights ("from scratch"), their held-out accuracy and the
    steps each took to reach the pretrained model's final accuracy (checked every ``every``
    steps); "" if the run did not train both.

    >>> from types import SimpleNamespace as M
    >>> full = M(mode="full", trained=9, accuracy=1.0, curve=((0, .5), (40, .7), (80, 1.0), (120, 1.0)))
    >>> scratch = M(mode="from scratch", trained=9, accuracy=0.5, curve=((0, .5), (40, .5), (80, .5), (120, .5)))
    >>> print(pretraining([full, scratch], every=40))  # doctest: +NORMALIZE_WHITESPACE
    From random weights (the same 9 numbers trained, with no pretraining) the same 120 steps on
    the same sentences reached **50%** held-out, against **100%** for the pretrained model. The
    pretrained model was at 100% by step 80 (held-out checked every 40 steps); from random
    weights it never got there in 120 steps. It stayed within 10 points of chance (50%): on its
    own, this budget of labelled sentences taught it nothing that carries to new ones, and
    what made it enough was what pretraining had already put in the weights.
    """
    m = {x.mode: x for x in modes}
    full, scratch = m.get("full"), m.get("from scratch")
    if full is None or scratch is None:
        return ""
    steps = full.curve[-1][0]
    target = full.accuracy
    when, late = steps_to(full.curve, target), steps_to(scratch.curve, target)
    checked = f" (held-out checked every {every} steps)" if every else ""
    text = (f"From random weights (the same {scratch.trained:,} numbers trained, with no pretraining) "
            f"the same {steps} steps on the same sentences reached **{scratch.accuracy:.0%}** held-out, "
            f"against **{full.accuracy:.0%}** for the pretrained model. The pretrained model was at "
            f"{target:.0%} by step {when}{checked}; from random weights it ")
    text += (f"never got there in {steps} steps." if late is None else
             f"got there by step {late}" + (f", {late / when:.1f} times as many." if when else "."))
    if points(scratch.accuracy, chance) <= LEARNED:
        text += (f" It stayed within {LEARNED} points of chance ({chance:.0%}): on its own, this "
                 "budget of labelled sentences taught it nothing that carries to new ones, and what "
                 "made it enough was what pretraining had already put in the weights.")
    elif points(full.accuracy, scratch.accuracy) > CLOSE:
        text += (f" Pretraining was worth {points(full.accuracy, scratch.accuracy)} points here, on "
                 "sentences the fine-tune never saw.")
    else:
        text += (" Both ended level: given these steps, the model from random weights caught up, "
                 "so here pretraining bought speed, not the end point.")
    return text


def steps_to(curve: Sequence[tuple[int, float]], target: float) -> int | None:
    """The first checked step at which held-out accuracy was ``target`` or more (None if none
    was): steps_to([(0, .5), (40, .8), (80, .95)], 0.9) == 80."""
    return next((step for step, acc in curve if acc >= target), None)


def paragraphs(modes: Sequence, chance: float, sizes: Sizes, every: int | None = None) -> list[str]:
    """Every sentence this run has (see the module's docstring), in the order the page shows
    them; empty ones left out."""
    ways = {m.mode for m in modes}
    first = summary(modes, chance) if set(BASE) <= ways else measured(modes, chance)
    return [t for t in (first, tuned_inputs(modes, sizes, chance), pretraining(modes, chance, every)) if t]


def waiting(position: int | None) -> str:
    """What a queued fine-tune tells the learner: its place in the server's one training queue,
    which the training lab's runs share.

    >>> print(waiting(1))
    next in the server's training queue (shared with the training lab)
    >>> print(waiting(3))
    waiting in the server's training queue (shared with the training lab): 2 ahead
    """
    if position is None or position <= 1:
        return "next in the server's training queue (shared with the training lab)"
    return f"waiting in the server's training queue (shared with the training lab): {position - 1} ahead"
