"""Fine-tuning measured (lesson 15): the table and the sentence that read a run of
``tfviz.training.finetune.fine_tune``, from its numbers only.

A mode here is anything with ``mode``, ``trained``, ``accuracy_before``, ``accuracy`` and
``seconds`` (a ``ModeResult``); this module runs nothing.

>>> from types import SimpleNamespace as M
>>> modes = [M(mode="head only", trained=130, accuracy=0.61), M(mode="LoRA", trained=2178, accuracy=0.9),
...          M(mode="full", trained=138498, accuracy=0.93)]
>>> verdict(modes)
'lora close'
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

CLOSE = 3  # percentage points: within 3 of full fine-tuning counts as "as well as full"
LEARNED = 10  # percentage points above chance needed to count as having learned something


class Measured(Protocol):
    mode: str
    trained: int
    accuracy: float


def _by_mode(modes: Sequence[Measured]) -> dict[str, Measured]:
    found = {m.mode: m for m in modes}
    missing = {"head only", "LoRA", "full"} - set(found)
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
