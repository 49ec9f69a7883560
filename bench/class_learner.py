"""What one headless learner does in class (bench/bench_class.py runs many of them).

A learner opens a lesson, types its own sentence, then at a human pace (one action every
``pace`` seconds, from its own seeded generator) moves to another lesson in the sidebar,
types another of its sentences, switches model, or changes one of the page's widgets: a
what-if (a toggle such as "Divide by √d_k", the temperature slider, a button) or a view
(layer, head, token, step) where the page still draws those as server-side widgets. Widgets
are found by label in what the page drew last; when an action has nothing to act on (a page
without widgets), another one is picked.
"""
from __future__ import annotations

import asyncio
import random
import re
import time
from dataclasses import dataclass

from bench.headless import Run, Session, Widget
from tfviz.data.stories import simple_sentence

ROUTE = ["self-attention", "multi-head", "layernorm", "masking", "mixture-of-experts",
         "embeddings", "tokenizer", "forward-walk", "scaling", "feed-forward"]
WEIGHTS = {"open": 25, "type": 15, "model": 10, "what-if": 30, "view": 20}
VIEW = re.compile(r"^(layer|head|query token|token|follow|position to|step|neurons shown|"
                  r"positions shown|which|◀|next)", re.IGNORECASE)
SKIPPED = {"text_input", "text_area", "multiselect"}  # answers and corpora, not what-ifs
WORD = re.compile(r"[a-z]+")


@dataclass
class Action:
    learner: int
    kind: str  # load, open, type, model, what-if, view
    page: str  # the lesson the learner was on (for open: the one it went to)
    label: str  # the widget, sentence or model acted on
    at: float  # seconds since the class started
    seconds: float  # sent -> script_finished (or the timeout / the drop)
    error: str | None = None
    h1: str = ""  # the page title the run drew
    words_seen: float | None = None  # for "type": share of its new words the run drew


def sentences(rng: random.Random, n: int = 3) -> list[str]:
    """A learner's own sentences: two story sentences each (about 12-16 tokens), so no two
    learners share a trace."""
    return [f"{simple_sentence(rng)} {simple_sentence(rng)}" for _ in range(n)]


def words_seen(sentence: str, before: str, run: Run) -> float | None:
    """Share of the sentence's new words (not in the text ``before`` it) that appear in what
    the run drew: text and chart specs, not the text box echoing it back. Token labels such
    as "␣fox" contain the word; a word the tokenizer splits may not show whole."""
    content = "\n".join(run.texts).lower()
    new = set(WORD.findall(sentence.lower())) - set(WORD.findall(before.lower()))
    return sum(w in content for w in new) / len(new) if new else None


def view_or_what_if(w: Widget) -> str:
    return "view" if VIEW.match(w.label.strip()) else "what-if"


def other_value(w: Widget, rng: random.Random):
    """A new value for ``w`` a learner might pick: a nearby slider stop, another option, the
    other side of a toggle. None if there is none."""
    el = w.element
    if w.kind == "checkbox":
        return not w.value
    if w.kind in ("selectbox", "radio"):
        choices = [o for o in w.options if o != w.value]
        return rng.choice(choices) if choices else None
    if w.kind == "button_group" and el.click_mode == el.SINGLE_SELECT:
        choices = [[o] for o in w.options if [o] != w.value]
        return rng.choice(choices) if choices else None
    if w.kind == "select_slider" and w.value and len(w.value) == 1:
        i = w.options.index(w.value[0]) if w.value[0] in w.options else 0
        near = [j for j in range(i - 2, i + 3) if j != i and 0 <= j < len(w.options)]
        return [w.options[rng.choice(near)]] if near else None
    if w.kind == "slider" and w.value and len(w.value) == 1:
        v, step = w.value[0], el.step or 1
        moves = [v + k * step for k in (-3, -2, -1, 1, 2, 3) if el.min <= v + k * step <= el.max]
        if not moves:
            return None
        new = rng.choice(moves)
        return [float(round(new)) if el.data_type == el.INT else round(new, 10)]
    if w.kind == "number_input" and w.value is not None:
        step = el.step or 1
        new = w.value + rng.choice((-1, 1)) * step
        if (el.has_min and new < el.min) or (el.has_max and new > el.max):
            new = w.value - (new - w.value)
        return new
    return None


class Learner:
    def __init__(self, index: int, url: str, seed: int, pace: tuple[float, float], timeout: float):
        self.index, self.url, self.pace, self.timeout = index, url, pace, timeout
        self.rng = random.Random(f"{seed}-{index}")  # each learner its own, seeded generator
        self.sentences = sentences(self.rng)
        self.page = self.rng.choice(ROUTE)
        self.session: Session | None = None
        self.actions: list[Action] = []
        self.typed = 0

    def _record(self, kind, label, run: Run, t0: float, **extra) -> Action:
        h1 = next((body for tag, body in run.headings if tag == "h1"), "")
        a = Action(self.index, kind, self.page, label, run.sent - t0, run.seconds, run.error, h1,
                   **extra)
        self.actions.append(a)
        return a

    async def act(self, t0: float) -> None:
        """One action: (re)connect if needed, else the first sentence, else a random choice."""
        s = self.session
        if s is None or s.closed:
            if s is not None:
                await s.close()
            start = time.perf_counter()
            try:
                self.session, run = await Session.open(self.url, self.page, timeout=self.timeout)
            except Exception as exc:  # refused, HTTP error, handshake timeout
                self.session = None
                self.actions.append(Action(self.index, "load", self.page, "", start - t0,
                                           time.perf_counter() - start,
                                           f"connecting: {type(exc).__name__}: {exc}"))
                return
            self._record("load", self.page, run, t0)
            return
        if self.typed == 0:
            await self._type(self.sentences[0], t0)
            return
        kinds = list(WEIGHTS)
        while kinds:
            kind = self.rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0]
            act = {"open": self._open, "type": self._retype, "model": self._model,
                   "what-if": self._what_if, "view": self._view}[kind]
            if await act(t0):
                return
            kinds.remove(kind)  # nothing to act on: pick another kind

    async def _type(self, sentence: str, t0: float) -> bool:
        box = self.session.find("Your text", "text_area")
        if box is None:
            return False
        before = box.value or ""
        run = await self.session.change(box, sentence)
        self.typed += 1
        self._record("type", sentence, run, t0, words_seen=words_seen(sentence, before, run))
        return True

    async def _open(self, t0: float) -> bool:
        pages = [p for p in ROUTE if p != self.page and p in self.session.pages]
        if not pages:
            return False
        self.page = self.rng.choice(pages)
        self._record("open", self.page, await self.session.goto(self.page), t0)
        return True

    async def _retype(self, t0: float) -> bool:  # another of its own sentences
        box = self.session.find("Your text", "text_area")
        choices = [t for t in self.sentences if box is None or t != box.value]
        return await self._type(self.rng.choice(choices), t0)

    async def _model(self, t0: float) -> bool:
        select = self.session.find("Model", "selectbox")
        choice = other_value(select, self.rng) if select is not None else None
        if choice is None:
            return False
        self._record("model", choice, await self.session.change(select, choice), t0)
        return True

    async def _page_widget(self, kind: str, t0: float) -> bool:
        candidates = [w for w in self.session.page_widgets()
                      if w.kind not in SKIPPED and not getattr(w.element, "disabled", False)
                      and view_or_what_if(w) == kind]
        self.rng.shuffle(candidates)
        for w in candidates:
            value = None if w.kind == "button" else other_value(w, self.rng)
            if w.kind == "button" or value is not None:
                run = await self.session.change(w, value)
                self._record(kind, w.label, run, t0)
                return True
        return False

    async def _what_if(self, t0: float) -> bool:
        return await self._page_widget("what-if", t0)

    async def _view(self, t0: float) -> bool:
        return await self._page_widget("view", t0)

    async def attend(self, t0: float, until: float) -> None:
        """Arrive at a random moment of the first pace interval, then act until ``until``
        (perf_counter seconds), one action every ``pace`` seconds or after the last one ended."""
        await asyncio.sleep(self.rng.uniform(0, self.pace[1]))
        try:
            while time.perf_counter() < until:
                started = time.perf_counter()
                await self.act(t0)
                wait = started + self.rng.uniform(*self.pace) - time.perf_counter()
                await asyncio.sleep(max(wait, 0.05))
        finally:
            if self.session is not None:
                await self.session.close()
