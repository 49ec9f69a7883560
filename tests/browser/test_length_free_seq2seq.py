"""Lessons 13 and 14 in chromium: a source, a sentence or a prompt of another length swaps the
data of their length-free charts (``tfviz.viz.kit.instant_length``) instead of drawing them anew.
Every chart's SVG survives; the step, position, layer and head sliders fit the new lengths
and the source's own head (the page's fit markers); and the numbers drawn, read from the
cells' ARIA labels, are the model's for the new source. The values travel with 4 decimals
(``tfviz.viz.kit.instant.DIGITS``), hence the tolerance."""
from __future__ import annotations

import numpy as np
import pytest

import tfviz
from tests.browser.test_instant_views import COUNT_RUNS_JS, IDLE_JS, _open
from tfviz.analysis import encdec as ed
from tfviz.analysis.decoding import lm_head
from tfviz.decoding import generate
from tfviz.decoding.seq2seq import translate
from tfviz.ui.state import DEFAULT_MODEL
from tfviz.viz.kit.style import token_labels

pytestmark = pytest.mark.browser
TOL = 6e-5  # four decimals sent (5e-5) plus float printing
KEEP_JS = "() => { window.__svgs = Array.from(document.querySelectorAll('.vega-embed svg')); }"
KEPT_JS = ("() => Array.from(document.querySelectorAll('.vega-embed svg'))"
           ".map(s => window.__svgs.includes(s))")
# Each slider of a name, as the page shows it: [min, max, value, the number printed beside it]
SLIDERS_JS = """(name) => Array.from(document.querySelectorAll(`.vega-bind input[name=${name}]`))
    .map(e => [+e.min, +e.max, +e.value, e.nextElementSibling.textContent])"""
# Each range input's ends, value and how far Streamlit's stylesheet fills its track
FILLS_JS = """() => Array.from(document.querySelectorAll('.vega-bind input[type=range]'))
    .map(e => [+e.min, +e.max, +e.value, e.style.getPropertyValue('--vega-range-progress')])"""
# Every weight cell of the chart with ``index`` (page order), grouped by its marks' group
CELLS_JS = """(index) => {
    const chart = document.querySelectorAll('.vega-embed')[index];
    const out = {};
    for (const e of chart.querySelectorAll('g.mark-rect path[aria-label]')) {
        const group = e.closest('g.mark-rect').getAttribute('class');
        (out[group] = out[group] || []).push(e.getAttribute('aria-label'));
    }
    return out;
}"""


def _wait_title(pg, text: str) -> None:
    pg.wait_for_function("(t) => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
                         ".some(e => e.textContent === t)", arg=text, timeout=60_000)


def _settled(pg) -> None:
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    pg.wait_for_timeout(500)  # the last data swap's repaint


def _sliders(pg, name: str) -> set[tuple]:
    return {tuple(s) for s in pg.evaluate(SLIDERS_JS, name)}


def _weights(labels: list[str]) -> dict[tuple[int, int], float]:
    cells = [dict(part.split(": ", 1) for part in label.split("; ") if ": " in part) for label in labels]
    return {(int(c["row"]), int(c["col"])): float(c["weight"]) for c in cells if "weight" in c}


def test_a_source_of_another_length_keeps_lesson_13s_charts_with_its_numbers(server, browser):
    """hello (6 steps) -> abcdefghij (11 steps): the encoder, decoder and masks charts keep
    their SVGs; the step slider takes 1..11, the layer and head sliders the new source's own
    heads, each track filled up to its thumb; the last step draws the new source's cross-attention, all 11 × 10 weights, and
    moving the step runs no script."""
    bundle = tfviz.load("reverse-encdec")
    run = translate(bundle, "abcdefghij")
    T, n = len(run.steps), len(run.source_ids)
    sharp, _ = ed.row_peaks(run.enc_patterns)
    anti = ed.anti_diagonal_head(run.cross_attention())
    context, guard, pg = _open(browser, f"{server}/encoder-decoder")
    _wait_title(pg, "Decoding step 1 of 6")
    assert _sliders(pg, "step") == {(1, 6, 1, "1")}  # fitted to hello's 6 steps
    pg.evaluate(KEEP_JS)

    box = pg.get_by_role("textbox", name="Source (letters a to p)")
    box.fill("abcdefghij")
    box.press("Enter")
    _wait_title(pg, f"Decoding step 1 of {T}")
    _settled(pg)
    assert pg.evaluate(KEPT_JS) == [True, True, True]  # no chart drawn anew
    assert _sliders(pg, "step") == {(1, T, 1, "1")}
    enc_layer, dec_layer = pg.evaluate(SLIDERS_JS, "layer")  # the charts open on the source's heads
    enc_head, dec_head = pg.evaluate(SLIDERS_JS, "head")
    assert (enc_layer[2], enc_head[2], dec_layer[2], dec_head[2]) == (sharp.layer, sharp.head,
                                                                      anti.layer, anti.head)
    _wait_title(pg, f"Encoder self-attention · layer {sharp.layer}, head {sharp.head} "
                    "(no mask: every row may use every key)")
    for low, high, value, fill in pg.evaluate(FILLS_JS):  # each track filled up to its thumb
        assert float(fill.rstrip("%")) == pytest.approx(100 * (value - low) / (high - low) if high > low else 0)

    pg.evaluate(COUNT_RUNS_JS)
    slider = pg.locator('.vega-bind input[name="step"]')
    slider.focus()
    pg.keyboard.press("End")  # the last step: every row of both maps
    _wait_title(pg, f"Decoding step {T} of {T}")
    pg.wait_for_timeout(300)
    groups = pg.evaluate(CELLS_JS, 1).values()
    cross = next(_weights(g) for g in groups if len(_weights(g)) == T * n)
    want = run.cross_attention()[anti.layer, anti.head]  # (T, n)
    drawn = np.array([[cross[r, c] for c in range(n)] for r in range(T)])
    np.testing.assert_allclose(drawn, want, atol=TOL)
    own = next(_weights(g) for g in groups if len(_weights(g)) == T * (T + 1) // 2)
    below = run.self_attention()[anti.layer, anti.head]
    for (r, c), w in own.items():
        assert c <= r and abs(w - below[r, c]) <= TOL
    assert pg.evaluate("window.__runs") == 0  # the step moved in the browser
    context.close()
    assert not guard.outside, guard.outside[:5]


SHORT, LONGER = "The cat sat on the mat.", "A bird saw the dog because it was very loud today."
P = "probability = softmax(logits)"  # the probability panel's bars name their length so


def test_a_sentence_and_a_prompt_of_another_length_keep_lesson_14s_charts(server, browser):
    """A sidebar sentence of another length keeps the LM head's, the steps' and the loss's SVGs
    (the LM head's position slider fits the new sentence and opens on its last token, whose
    candidates it draws; the page's prompt follows the sentence), and
    so does a prompt of another length (the steps chart's slider fits its steps)."""
    gpt = tfviz.load(DEFAULT_MODEL)
    short, longer = gpt.trace(SHORT), gpt.trace(LONGER)
    n, m = len(short.tokens), len(longer.tokens)
    assert n < m <= 16
    context, guard, pg = _open(browser, f"{server}/decoding?text=" + SHORT.replace(" ", "+"))
    _wait_title(pg, f"After {token_labels(short.tokens)[n - 1]}, the model expects")
    assert _sliders(pg, "pos") == {(0, n - 1, n - 1, str(n - 1))}
    pg.evaluate(KEEP_JS)

    box = pg.locator('[data-testid="stSidebar"] textarea')
    box.fill(LONGER)
    box.press("Control+Enter")
    _wait_title(pg, f"After {token_labels(longer.tokens)[m - 1]}, the model expects")
    _settled(pg)
    # The page's prompt follows the sidebar's new sentence, so the generation's steps and its
    # beam tree are the new prompt's: the LM head, the steps and the loss keep their drawings;
    # the beam tree is drawn anew when its tree's shape changes (it follows that shape).
    assert pg.get_by_role("textbox", name="Prompt").input_value() == LONGER
    head_kept, steps_kept, _, loss_kept = pg.evaluate(KEPT_JS)
    assert (head_kept, steps_kept, loss_kept) == (True, True, True)
    assert _sliders(pg, "pos") == {(0, m - 1, m - 1, str(m - 1))}
    head = lm_head(longer, gpt.weights(), gpt.token_strings)
    labels = pg.evaluate("() => Array.from(document.querySelectorAll('.vega-embed')[0]"
                         ".querySelectorAll('path[aria-label]')).map(e => e.getAttribute('aria-label'))")
    bars = [dict(part.split(": ", 1) for part in label.split("; ") if ": " in part) for label in labels]
    probs = sorted((float(b[P]) for b in bars if P in b), reverse=True)
    np.testing.assert_allclose(probs, head.top_probs[m - 1], atol=TOL)

    prompts = ("once upon a time", "the cat sat")  # answers of 8 and 4 steps: one layout
    steps = [len(generate(gpt, p, max_new_tokens=20).steps) for p in prompts]
    assert steps[0] != steps[1] and max(steps) <= 16
    for prompt, count in zip(prompts, steps):
        pg.evaluate(KEEP_JS)  # (the first prompt's answer may outgrow the sentence's layout)
        box = pg.get_by_role("textbox", name="Prompt")
        box.fill(prompt)
        box.press("Control+Enter")
        pg.wait_for_function("(t) => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
                             ".some(e => e.textContent.startsWith(t))", arg=f"Step 1 of {count}:",
                             timeout=60_000)
        _settled(pg)
        assert pg.evaluate(KEPT_JS)[1] or prompt == prompts[0]  # the steps chart swapped its data
        assert _sliders(pg, "step") == {(1, count, 1, "1")}
    context.close()
    assert not guard.outside, guard.outside[:5]
