"""Length-free instant charts: one spec for every sentence of a range of lengths.

Streamlit draws a Vega-Lite chart anew when its spec changes and only swaps its data
when it does not. A chart whose spec holds the sentence's length (axis domains, sizes, the
query slider's range, where the query starts) is therefore drawn anew for every sentence of
another length, which costs the browser far more than a data swap (bench/bench_views.py;
BENCHMARKS.md, "Instant views"). A length-free chart instead:

- is laid out for ``length_cap(n)``, the smallest of ``LENGTH_CAPS`` that holds the sentence:
  cell sizes, the renderer and the query slider's range follow the cap, not n;
- reads the sentence's own length in the browser as the expression ``ntok`` (the number of
  token labels in its data) and draws its token axes over ``TOKENS_DOMAIN``;
- starts its query slider at -1 unless a shared link names a token (``token_slider``): the
  chart then shows the sentence's default query ``dq``, which travels in its data, and the
  expression ``qi`` is the query shown. The page's view script narrows the slider to the
  sentence's tokens and shows the query drawn (``tfviz.ui.views.length_marker``).
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.viz.kit.conventions import range_bind
from tfviz.viz.kit.style import FONT_SIZE

# Sentences are laid out for the smallest of these lengths that holds them (``length_cap``):
# a new sentence of 8-16 tokens keeps the charts of the last one and swaps their data.
LENGTH_CAPS = (16, 24, 32, 48, 64, 96, 128)
TOKENS_DOMAIN = {"expr": "sequence(0, ntok)"}  # an ordinal scale over the sentence's positions


def length_cap(n: int) -> int:
    """The length a length-free chart of an ``n``-token sentence is laid out for: sizes,
    renderer and slider range follow it, and the sentence's own length ``ntok`` is read from
    the data in the browser. Streamlit draws a chart anew when its spec changes and only swaps
    its data otherwise, so every sentence of 1-16 tokens shares one spec (BENCHMARKS.md,
    "Instant views").

    >>> [length_cap(n) for n in (1, 13, 16, 17, 100, 300)]
    [16, 16, 16, 24, 128, 300]
    """
    return next((cap for cap in LENGTH_CAPS if n <= cap), n)


POSITIONS = ("query", "pos")  # a length-free chart's token sliders (``token_slider``)


def shown_names(slider: str) -> tuple[str, str]:
    """The expressions of a token slider: the sentence's default position (a key of the first
    data row too) and the position shown.

    >>> shown_names("query"), shown_names("pos")
    (('dq', 'qi'), ('dpos', 'posi'))
    """
    return ("dq", "qi") if slider == "query" else (f"d{slider}", f"{slider}i")


def length_params(dataset: str, positions: Sequence[str] = ()) -> list[dict]:
    """Expressions of a length-free chart: ``ntok``, the sentence's length, and for each of its
    token sliders in ``positions`` (``POSITIONS``) two more (``shown_names``): for ``query``,
    ``dq`` (the sentence's default query, sent in the first row of ``dataset``) and ``qi``,
    the query shown: the slider's, kept below ``ntok``, or ``dq`` while the slider says -1;
    for ``pos``, ``dpos`` and ``posi`` alike."""
    out = [{"name": "ntok", "expr": "length(tokens)"}]
    rows = f"data('{dataset}')"
    for slider in positions:
        default, shown = shown_names(slider)
        out += [{"name": default, "expr": f"length({rows}) ? {rows}[0].{default} : 0"},
                {"name": shown, "expr": f"{slider} < 0 ? {default} : min({slider}, ntok - 1)"}]
    return out


SENTENCE_PREFIX = "s_"  # the first row's keys that hold a length-free chart's sentence values


def sentence_params(dataset: str, values: dict) -> list[dict]:
    """Expressions of numbers or strings that follow the sentence but not the view (the colour
    range of its scores, the means in a title, the heads' role labels): each ``name`` reads
    the key ``s_name`` of ``dataset``'s first row, where ``charts.chart(sentence=...)`` puts
    it beside the token labels. They ride in the data rather than in the spec, so a new
    sentence still swaps data only. (A dataset of their own would be dropped: Vega-Lite
    compiles only the datasets a view draws from.)

    >>> sentence_params("maps", {"bound": 2.5})
    [{'name': 'bound', 'expr': "length(data('maps')) ? data('maps')[0].s_bound : 0"}]
    """
    rows = f"data('{dataset}')"
    return [{"name": name, "expr": f"length({rows}) ? {rows}[0].{SENTENCE_PREFIX}{name} : "
                                   f"{chr(39) * 2 if isinstance(value, str) else 0}"}
            for name, value in values.items()]


def token_slider(upper: int, label: str, value: int | None, name: str = "query") -> dict:
    """The token slider ``name`` (one of ``POSITIONS``) of a length-free chart
    (``length_cap``): its range is the layout's, 0..upper, and the page's view script narrows
    it to the sentence's own tokens (``tfviz.ui.views.length_marker``). ``value`` None or below
    0 means "the sentence's own default" (``qi``, ``posi``: ``shown_names``), which the chart
    reads from its data; the spec then holds nothing of the sentence."""
    value = -1 if value is None or value < 0 else int(min(value, upper))
    return {"name": name, "value": value, "bind": range_bind(label, upper)}


def step_slider(upper: int, value: int) -> dict:
    """The ``step`` slider of a length-free chart whose steps count from 1 (a decoder's or a
    generation's): its range is the layout's, 1..upper, and the page's view script narrows it
    to the steps taken (``tfviz.ui.views.fit_marker``, from 1). The chart draws ``si``
    (``step_params``), the slider's step kept within the steps it has."""
    return {"name": "step", "value": int(min(max(value, 1), upper)), "bind": range_bind("Step", upper, 1)}


def step_params() -> list[dict]:
    """``si``: the step a length-free chart draws, the ``step`` slider's kept within 1..``ntok``
    (its number of steps), so a chart whose layout outlasts a longer answer never draws a step
    the new one did not take."""
    return [{"name": "si", "expr": "max(1, min(step, ntok))"}]


def step_notes(width: int) -> dict:
    """The words of the step drawn (``si``), a line a row: the dataset ``notes`` holds rows of
    (step, line, first, text), a note's first line in bold (its point), the rest plain."""
    return {"data": {"name": "notes"}, "transform": [{"filter": "datum.step == si"}],
            "encoding": {"y": {"field": "line", "type": "ordinal", "axis": None},
                         "x": {"value": 0}, "text": {"field": "text"}},
            "layer": [{"transform": [{"filter": f"{'' if bold else '!'}datum.first"}],
                       "mark": {"type": "text", "align": "left", "fontSize": FONT_SIZE - 1,
                                "fontWeight": "bold" if bold else "normal"}}
                      for bold in (True, False)],
            "width": width, "height": {"step": 24}}
