"""Lessons 15 and 16 in chromium: a sentence or a prompt of another length swaps the data of
their length-free charts (``tfviz.viz.kit.instant_length``) instead of drawing them anew. Every
chart's SVG survives; the position and step sliders fit the new sentence, the new draw and
the steps taken (the pages' fit markers); and the numbers drawn, read from the marks' ARIA
labels, are the model's for the new text, recomputed here with torch. The values travel with
4 decimals (``tfviz.viz.kit.instant.DIGITS``), hence the tolerance."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tests.browser.test_instant_views import IDLE_JS, _open
from tests.browser.test_length_free_seq2seq import KEEP_JS, KEPT_JS, SLIDERS_JS, TOL
from tfviz.analysis.masking import special_ids
from tfviz.decoding import generate
from tfviz.experiments import mlm
from tfviz.trace import run_with_trace
from tfviz.viz.kit.style import token_labels

pytestmark = pytest.mark.browser
TITLE_JS = ("(t) => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
            ".some(e => e.textContent === t)")
LABELS_JS = """(part) => Array.from(document.querySelectorAll('.vega-embed path[aria-label]'))
    .map(e => e.getAttribute('aria-label')).filter(l => l.includes(part))"""


def _settled(pg, title: str) -> None:
    """The run is over and a chart shows ``title``; then two frames for the other charts."""
    pg.wait_for_function(TITLE_JS, arg=title, timeout=90_000)
    pg.wait_for_function(IDLE_JS, timeout=90_000)
    pg.wait_for_timeout(300)


def _labels(pg, part: str) -> list[dict]:
    """The ARIA labels of the marks whose label holds ``part``, as dicts."""
    return [dict(p.split(": ", 1) for p in label.split("; ") if ": " in p)
            for label in pg.evaluate(LABELS_JS, part)]


SHORT, LONGER = "The cat sat on the mat.", "A bird saw the big dog near the river."


def _draw(bert, text: str):
    """The page's draw at seed 0, the positions' kinds and typed tokens, and torch's top 5 at
    every position of what the model reads (softmax of its logits, in double)."""
    tok = bert.tokenizer
    ids = bert.encode(text)
    drawn = mlm.draw_masks(ids, 0, mask_id=tok.mask_id, vocab_size=tok.vocab_size,
                           special_ids=special_ids(tok))
    with torch.no_grad():
        logits = bert.model(torch.tensor([list(drawn.inputs)]))[0].double()  # (n, vocab)
    return drawn, torch.softmax(logits, dim=-1).topk(5, dim=-1).values.numpy()


def test_a_sentence_of_another_length_keeps_lesson_15s_charts(server, browser):
    """10 -> 15 tokens keeps every SVG of the page; the position slider fits the new sentence
    and opens on its draw's first chosen position, whose guesses it draws; a learner's last
    position is kept as the last one of a shorter sentence."""
    bert = tfviz.load("bert-tiny")
    n, m = len(bert.encode(SHORT)), len(bert.encode(LONGER))
    assert n < m <= 16
    context, guard, pg = _open(browser, f"{server}/bert?text=" + SHORT.replace(" ", "+"))
    drawn, _ = _draw(bert, SHORT)
    first = drawn.chosen[0]
    _settled(pg, f"Guesses at position {first} ({mlm.KIND_NAMES[drawn.kinds[first]]}; typed: "
                 f"{bert.token_strings(drawn.ids)[first]})")
    assert pg.evaluate(SLIDERS_JS, "pos") == [[0, n - 1, first, str(first)]]
    pg.evaluate(KEEP_JS)

    box = pg.locator('[data-testid="stSidebar"] textarea')
    box.fill(LONGER)
    box.press("Control+Enter")
    drawn, top = _draw(bert, LONGER)
    first = drawn.chosen[0]
    _settled(pg, f"Guesses at position {first} ({mlm.KIND_NAMES[drawn.kinds[first]]}; typed: "
                 f"{bert.token_strings(drawn.ids)[first]})")
    kept = pg.evaluate(KEPT_JS)
    assert kept == [True] * len(kept) and len(kept) == 4  # guesses, shares, "it", fine-tuning
    assert pg.evaluate(SLIDERS_JS, "pos") == [[0, m - 1, first, str(first)]]
    strip = [c for c in _labels(pg, "what the draw did: ")]
    assert [c["typed"] for c in strip] == token_labels(bert.token_strings(drawn.ids))
    bars = sorted(_labels(pg, "right: "), key=lambda b: int(b["rank"]))
    np.testing.assert_allclose([float(b["probability"]) for b in bars], top[first], atol=TOL)

    # The learner picks the last position, then types the shorter sentence: its last one.
    slider = pg.locator('.vega-bind input[name="pos"]')
    slider.focus()
    pg.keyboard.press("End")
    pg.wait_for_function(f"() => location.search.includes('pos={m - 1}')", timeout=10_000)
    box.fill(SHORT)
    box.press("Control+Enter")
    drawn, top = _draw(bert, SHORT)
    _settled(pg, f"Guesses at position {n - 1} ({mlm.KIND_NAMES[drawn.kinds[n - 1]]}; typed: "
                 f"{bert.token_strings(drawn.ids)[n - 1]})")
    assert pg.evaluate(KEPT_JS) == [True] * 4
    assert pg.evaluate(SLIDERS_JS, "pos") == [[0, n - 1, n - 1, str(n - 1)]]
    bars = sorted(_labels(pg, "right: "), key=lambda b: int(b["rank"]))
    np.testing.assert_allclose([float(b["probability"]) for b in bars], top[n - 1], atol=TOL)
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_a_prompt_of_another_length_keeps_lesson_16s_steps_chart(server, browser):
    """A prompt of 13 tokens, then one of 4 (answers of 8 and 4 steps, 20 at most): the steps
    chart keeps its SVG, the step slider fits the steps taken, and step 1's row of weights in
    every layer and head is the last row of a full recompute of the tokens it read."""
    gpt = tfviz.load("gpt-tiny")
    prompts = ("once upon a time", "the cat sat")
    runs = [generate(gpt, p, max_new_tokens=20) for p in prompts]
    sizes = [len(r.prompt_ids) for r in runs]
    steps = [len(r.new_ids) for r in runs]
    assert sizes[0] != sizes[1] and max(sizes) <= 16 and steps[0] != steps[1] and min(steps) >= 2
    context, guard, pg = _open(browser, f"{server}/kv-cache?text=" + prompts[0].replace(" ", "+"))
    assert pg.evaluate(SLIDERS_JS, "step") == [[0, steps[0] - 1, 1, "1"]]
    pg.evaluate(KEEP_JS)

    box = pg.get_by_role("textbox", name="Prompt")
    box.fill(prompts[1])
    box.press("Control+Enter")
    ids = list(runs[1].prompt_ids + runs[1].new_ids)
    words = gpt.token_strings(ids)
    t = sizes[1] + 1  # step 1 reads the prompt and the first token written
    _settled(pg, f"Step 1: reads {token_labels(words)[t - 1]}, writes {words[t]}")
    assert pg.evaluate(KEPT_JS) == [True, True]  # the steps, the cost over lengths
    assert pg.evaluate(SLIDERS_JS, "step") == [[0, steps[1] - 1, 1, "1"]]
    cells = _labels(pg, "weight: ")
    assert len(cells) == 3 * 4 * t  # one cell per layer, head and key read so far
    full = run_with_trace(gpt.model, ids[:t])  # no cache: the t tokens read again
    for c in cells:
        layer, head = divmod(int(c["row"]), 4)
        want = full["pattern", layer][head, -1, int(c["col"])]
        assert abs(float(c["weight"]) - want) <= TOL + 1e-6  # the cached run's float32 order
    context.close()
    assert not guard.outside, guard.outside[:5]
