"""A sentence of another length keeps the length-free charts (``tfviz.viz.kit.instant_length``):
10 -> 15 tokens swaps their data (the SVG drawn stays), a token chosen on the longer sentence
is kept below the shorter one's length, and the numbers drawn are the new sentence's own.
Lessons 5 (self-attention), 7 (multi-head), 8 (masking), 9 (LayerNorm), 11 (mixture of
experts) and 12 (the forward walk); other lessons' are in tests/browser/test_length_free_*.py.

Lessons 5, 7, 9 and 11 choose their token with a slider (``query``, ``pos``), which the page's
length marker fits to the sentence (``tfviz.ui.views.length_marker``, ``fitted`` in
``tfviz/ui/assets/view_sync.js``); lesson 12's ``step`` runs over the model's steps, which no
sentence changes. Numbers are read from the SVG (text marks and ARIA labels) and checked
against torch's own functions (or tfviz's analysis, for the heads' roles and shares) on a
fresh trace of the same text.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tests.browser.test_instant_views import (IDLE_JS, TOL, _drawn_map, _labels, _open,
                                              _runs_since_open, _titles, _wait_title)
from tfviz.analysis import heads as hd
from tfviz.analysis import layernorm as lna
from tfviz.analysis.coref import find_coref_positions
from tfviz.config import RunOptions
from tfviz.ui.state import DEFAULT_MODEL
from tfviz.viz.kit.style import token_labels

pytestmark = pytest.mark.browser
OTHER_LENGTHS = ("The cat sat on the mat.", "A bird saw the dog because it was very loud today.")
SLIDERS_JS = """() => Array.from(document.querySelectorAll('.vega-bind input[name=query]'))
    .map(e => [e.min, e.max, e.value, e.nextElementSibling.textContent])"""


def test_a_sentence_of_another_length_keeps_lesson_5s_charts_and_fits_the_token_slider(server, browser):
    """Lesson 5's charts are laid out for 1-16 tokens (tfviz.viz.kit.instant_length): a sentence of
    another length swaps their data too. The query sliders take the new sentence's range; with
    no token chosen the charts show the sentence's own "it" (else its last token), and a
    chosen token is kept, or the last one when the sentence is shorter."""
    bundle = tfviz.load(DEFAULT_MODEL)
    short, longer = (bundle.trace(t) for t in OTHER_LENGTHS)
    n, m = len(short.tokens), len(longer.tokens)
    assert n < m <= 16 and find_coref_positions(short.tokens) is None
    probe = find_coref_positions(longer.tokens).probe
    context, guard, pg = _open(browser, f"{server}/self-attention?text=" + OTHER_LENGTHS[0].replace(" ", "+")
                               + "&layer=1&head=2")
    last = token_labels(short.tokens)[n - 1]
    _wait_title(pg, f"q for {last} (layer 1, head 2)")  # no "it": the last token
    assert {tuple(s) for s in pg.evaluate(SLIDERS_JS)} == {("0", str(n - 1), str(n - 1), str(n - 1))}
    pg.evaluate("() => { window.__svgs = Array.from(document.querySelectorAll('.vega-embed svg')); }")

    box = pg.locator('[data-testid="stSidebar"] textarea')
    box.fill(OTHER_LENGTHS[1])
    box.press("Control+Enter")
    _wait_title(pg, f"q for {token_labels(longer.tokens)[probe]} (layer 1, head 2)")  # its "it"
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    kept = pg.evaluate("() => Array.from(document.querySelectorAll('.vega-embed svg'))"
                       ".filter(s => window.__svgs.includes(s)).length")
    # step 1's five charts are kept (their data swapped); steps 3 and 4 draw the new sentence's
    # own cosines and maps anew: two more, whose specs hold the sentence's word and length
    assert kept == 5 and len(pg.query_selector_all(".vega-embed svg")) == 7
    assert {tuple(s) for s in pg.evaluate(SLIDERS_JS)} == {("0", str(m - 1), str(probe), str(probe))}
    q = {int(c["col"]): float(c["q"].replace("−", "-"))
         for c in _labels(pg, ".vega-embed g.concat_0_layer_0_marks path") if "q" in c}
    np.testing.assert_allclose([q[i] for i in range(len(q))],
                               longer["blocks.1.attn.hook_q"][probe, 2], atol=TOL)
    bars = [b for b in _labels(pg, ".vega-embed g.concat_5_layer_0_marks path") if "key" in b]
    assert len(bars) == m  # one bar per key of the new sentence

    # The learner picks the last token, then types the shorter sentence: its last token.
    slider = pg.locator('.vega-bind input[name="query"]').first
    slider.focus()
    pg.keyboard.press("End")
    pg.wait_for_function(f"() => location.search.includes('query={m - 1}')", timeout=10_000)
    box.fill(OTHER_LENGTHS[0])
    box.press("Control+Enter")
    _wait_title(pg, f"q for {last} (layer 1, head 2)")
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    assert {tuple(s) for s in pg.evaluate(SLIDERS_JS)} == {("0", str(n - 1), str(n - 1), str(n - 1))}
    context.close()
    assert not guard.outside, guard.outside[:5]


def _keep_svgs(pg) -> None:
    pg.evaluate("() => { window.__svgs = Array.from(document.querySelectorAll('.vega-embed svg')); }")


def _kept_svgs(pg) -> list[bool]:
    """For each chart on the page, in order: whether its drawing survived since
    ``_keep_svgs`` (Vega swapped its data) rather than being drawn anew."""
    return pg.evaluate("() => Array.from(document.querySelectorAll('.vega-embed svg'))"
                       ".map(s => window.__svgs.includes(s))")


def _type(pg, text: str) -> None:
    box = pg.locator('[data-testid="stSidebar"] textarea')
    box.fill(text)
    box.press("Control+Enter")


def test_a_sentence_of_another_length_keeps_multi_heads_charts_with_its_numbers(server, browser):
    """Lesson 7's maps and head shares are length-free too: 10 -> 15 tokens keeps both SVGs,
    the large map draws the new sentence's 15 × 15 weights, the role labels are its own, and
    the token slider fits the new sentence and follows its "it" (OTHER_LENGTHS[0] has none)."""
    bundle = tfviz.load(DEFAULT_MODEL)
    short, longer = (bundle.trace(t) for t in OTHER_LENGTHS)
    n, m = len(short.tokens), len(longer.tokens)
    probe = find_coref_positions(longer.tokens).probe
    lengths, _ = hd.share_lengths(longer, bundle.weights())
    context, guard, pg = _open(browser, f"{server}/multi-head?text=" + OTHER_LENGTHS[0].replace(" ", "+")
                               + "&layer=1&head=2")
    assert _drawn_map(pg, n).shape == (n, n)
    _keep_svgs(pg)
    _type(pg, OTHER_LENGTHS[1])
    label = token_labels(longer.tokens)[probe]
    _wait_title(pg, f"How much each head adds to the output for {label} (layer 1)")
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    # both charts kept; the third is section 4's, which only a sentence with "it" has
    assert _kept_svgs(pg) == [True, True, False]
    big = "(k) => document.querySelector('.vega-embed').querySelectorAll('g.concat_1_layer_0_marks path')"
    pg.wait_for_function(big + ".length === k", arg=m * m, timeout=10_000)  # the first chart's
    raw = pg.locator(".vega-embed").first.locator("g.concat_1_layer_0_marks path").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label'))")
    cells = [dict(part.split(": ", 1) for part in label.split("; ") if ": " in part) for label in raw]
    drawn = np.full((m, m), np.nan)
    for c in cells:
        drawn[int(c["row"]), int(c["col"])] = float(c["weight"])
    np.testing.assert_allclose(drawn, longer["pattern", 1][2], atol=TOL)
    role = hd.head_stats(longer["pattern", 1])[2].label
    assert f"Layer 1, head 2 ({role})" in _titles(pg)
    assert {tuple(s) for s in pg.evaluate(SLIDERS_JS)} == {("0", str(m - 1), str(probe), str(probe))}
    shares = pg.locator(".vega-embed").nth(1)  # the heads' shares (section 4's chart follows)
    shares.scroll_into_view_if_needed()
    raw = shares.locator("g.layer_0_marks path").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label'))")
    bars = [dict(part.split(": ", 1) for part in label.split("; ") if ": " in part) for label in raw]
    drawn = [float(b["length"]) for b in sorted(bars, key=lambda b: int(b["head"]))]
    np.testing.assert_allclose(drawn, lengths[1, probe], atol=TOL)
    assert _runs_since_open(pg, 1) == 1  # the new sentence's run, nothing else
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_a_sentence_of_another_length_keeps_the_masking_charts_with_its_scores(server, browser):
    """Lesson 8's triangle and two masks: 10 -> 15 tokens keeps both SVGs, and the triangle
    draws the new sentence's masked scores (−∞ above the diagonal)."""
    bundle = tfviz.load(DEFAULT_MODEL)
    longer = bundle.trace(OTHER_LENGTHS[1])
    m = len(longer.tokens)
    context, guard, pg = _open(browser, f"{server}/masking?text=" + OTHER_LENGTHS[0].replace(" ", "+")
                               + "&layer=2&head=1")
    _keep_svgs(pg)
    _type(pg, OTHER_LENGTHS[1])
    cells = ".vega-embed >> nth=0"
    triangle = pg.locator(cells).locator("g.layer_0_marks path")
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    pg.wait_for_function("(k) => document.querySelector('.vega-embed')"
                         ".querySelectorAll('g.layer_0_marks path').length === k",
                         arg=m * (m + 1) // 2, timeout=30_000)  # the finite cells, row i: keys 0..i
    assert _kept_svgs(pg)[:2] == [True, True]  # the padded batch below is the page's own
    labels = triangle.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    want = longer["attn_scores", 2][1]
    for label in labels:
        c = dict(part.split(": ", 1) for part in label.split("; ") if ": " in part)
        i, j = int(c["row"]), int(c["col"])
        assert j <= i and abs(float(c["score"].replace("−", "-")) - want[i, j]) <= TOL
    context.close()
    assert not guard.outside, guard.outside[:5]


SHORT, LONG = OTHER_LENGTHS  # 10 and 15 tokens for gpt-tiny and moe-tiny (checked below)

# For each chart on the page, in order: its own title (not a panel's) and whether its drawing
# survived since _keep_svgs (Vega swapped its data) rather than being drawn anew.
KEPT_JS = """() => Array.from(document.querySelectorAll('.vega-embed')).map((c) => {
    const svg = c.querySelector('svg');
    const title = c.querySelector('svg > g g.role-title text');
    return [title ? title.textContent : '', !!svg && window.__svgs.includes(svg)];
})"""
POS_JS = """() => Array.from(document.querySelectorAll('.vega-bind input[name=pos]'))
    .map(e => [e.min, e.max, e.value, e.nextElementSibling.textContent])"""


def _url(server: str, page: str, text: str, extra: str = "") -> str:
    return f"{server}/{page}?text=" + text.replace(" ", "+") + extra


def _kept(pg, starts: str) -> bool:
    """Whether the chart whose title starts with ``starts`` kept its drawing."""
    found = [kept for title, kept in pg.evaluate(KEPT_JS) if title.startswith(starts)]
    assert len(found) == 1, pg.evaluate(KEPT_JS)
    return found[0]


def _chart_texts(pg, starts: str, marks: str = "g.mark-text") -> list[str]:
    """The texts under ``marks`` (every text mark) of the chart whose title starts with
    ``starts``."""
    return pg.evaluate("""([starts, marks]) => {
        const chart = Array.from(document.querySelectorAll('.vega-embed')).find((c) =>
            (c.querySelector('svg > g g.role-title text') || {}).textContent?.startsWith(starts));
        return chart ? Array.from(chart.querySelectorAll(marks + ' text')).map(t => t.textContent) : [];
    }""", [starts, marks])


def _number(text: str) -> float:
    return float(text.replace("−", "-"))  # Vega writes a minus sign, not a hyphen


def _press_end(pg, name: str, last: int) -> None:
    """The learner takes the last position of slider ``name`` with the keyboard."""
    slider = pg.locator(f'.vega-bind input[name="{name}"]').first
    slider.scroll_into_view_if_needed()
    slider.focus()
    pg.keyboard.press("End")
    pg.wait_for_function(f"() => location.search.includes('{name}={last}')", timeout=10_000)


def _number_after(texts: list[str], prefix: str) -> float:
    line = next(t for t in texts if t.startswith(prefix))
    return _number(line.rsplit("= ", 1)[1].split()[0])


def test_layernorm_worked_example_keeps_its_drawing_and_its_token(server, browser):
    """Lesson 9: 10 -> 15 tokens keeps both length-free charts; the worked example stays on
    the link's token 3 and draws the new sentence's μ, σ and (x − μ)/σ for it; the learner's
    last token (14) then becomes the shorter sentence's last (9), in the chart and on the
    slider. The page opens on its first LayerNorm (ln1)."""
    bundle = tfviz.load(DEFAULT_MODEL)
    short, longer = (bundle.trace(t) for t in (SHORT, LONG))
    n, m = len(short.tokens), len(longer.tokens)
    assert (n, m) == (10, 15)
    d, eps = bundle.config.d_model, bundle.config.ln_eps
    norm = lna.NORM_NAMES["ln1"]

    def check(trace, pos: int) -> None:
        label = token_labels(trace.tokens)[pos]
        _wait_title(pg, f"One token by hand: {label} (layer 1, {norm})")
        x = torch.tensor(lna.ln_input(trace, 1, "ln1"), dtype=torch.float64)[pos]  # (d,)
        texts = _chart_texts(pg, "One token by hand")
        assert _number_after(texts, "μ = ") == pytest.approx(float(x.mean()), abs=TOL)
        sigma = float(torch.sqrt(x.var(unbiased=False) + eps))
        assert _number_after(texts, "σ = ") == pytest.approx(sigma, abs=TOL)
        # the strips: x, (x − μ)/σ and the output, one cell per dimension
        cells = _labels(pg, ".vega-embed g.concat_2_layer_0_marks path")
        assert len(cells) == 3 * d
        normed = {int(c["dimension"]): _number(c["value"]) for c in cells if c["rowlabel"] == "(x − μ)/σ"}
        plain = F.layer_norm(x[None], (d,), eps=eps)[0].numpy()
        np.testing.assert_allclose([normed[i] for i in range(d)], plain, atol=TOL)

    context, guard, pg = _open(browser, _url(server, "layernorm", SHORT, "&layer=1&pos=3"))
    check(short, 3)
    _keep_svgs(pg)
    _type(pg, LONG)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    check(longer, 3)
    assert _kept(pg, "One token by hand") and _kept(pg, "μ and σ per token")
    assert {tuple(s) for s in pg.evaluate(POS_JS)} == {("0", str(m - 1), "3", "3")}

    _press_end(pg, "pos", m - 1)
    check(longer, m - 1)
    _keep_svgs(pg)
    _type(pg, SHORT)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    check(short, n - 1)  # 14 is past the end: the last token
    assert _kept(pg, "One token by hand") and _kept(pg, "μ and σ per token")
    assert {tuple(s) for s in pg.evaluate(POS_JS)} == {("0", str(n - 1), str(n - 1), str(n - 1))}
    assert _runs_since_open(pg, 2) == 2  # the two sentences' runs, nothing else
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_moe_routing_chart_keeps_its_drawing_and_its_token(server, browser):
    """Lesson 11: 10 -> 15 tokens keeps the routing chart, its gate map grows to the new
    sentence's 15 rows, and the token followed is the link's (3), with the gates of the new
    sentence; the learner's last token then becomes the shorter sentence's last."""
    bundle = tfviz.load("moe-tiny")
    k = bundle.config.moe_top_k
    short, longer = (bundle.trace(t, options=RunOptions(moe_top_k=k)) for t in (SHORT, LONG))
    n, m = len(short.tokens), len(longer.tokens)
    assert (n, m) == (10, 15)
    experts = bundle.config.n_experts

    def check(trace, pos: int) -> None:
        label = token_labels(trace.tokens)[pos]
        _wait_title(pg, f"Follow {label}: its gates in layer 1")
        logits = torch.as_tensor(trace["blocks.1.mlp.hook_router_logits"], dtype=torch.float64)
        gates = torch.softmax(logits, dim=-1).numpy()  # (T, E)
        # the routing chart's map (the rules chart below it has bars with a "rule" of their own)
        heat = [c for c in _labels(pg, ".vega-embed g.concat_0_layer_0_marks path")
                if "expert" in c and "rule" not in c]
        assert len(heat) == len(trace.tokens) * experts
        bars = [c for c in _labels(pg, ".vega-embed g.concat_1_layer_0_marks path") if "expert" in c]
        drawn = [float(b["p"]) for b in sorted(bars, key=lambda b: b["expert"])]
        np.testing.assert_allclose(drawn, gates[pos], atol=TOL)

    context, guard, pg = _open(browser, _url(server, "mixture-of-experts", SHORT,
                                             "&model=moe-tiny&layer=1&pos=3"))
    check(short, 3)
    _keep_svgs(pg)
    _type(pg, LONG)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    check(longer, 3)
    assert _kept(pg, "Gate probabilities p")
    assert {tuple(s) for s in pg.evaluate(POS_JS)} == {("0", str(m - 1), "3", "3")}

    _press_end(pg, "pos", m - 1)
    check(longer, m - 1)
    _keep_svgs(pg)
    _type(pg, SHORT)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    check(short, n - 1)
    assert _kept(pg, "Gate probabilities p")
    assert {tuple(s) for s in pg.evaluate(POS_JS)} == {("0", str(n - 1), str(n - 1), str(n - 1))}
    assert _runs_since_open(pg, 2) == 2
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_forward_walk_keeps_its_drawing_and_its_step(server, browser):
    """Lesson 12: 10 -> 15 tokens keeps the walk's drawing and the step chosen; the last step
    names the new sentence's last token and draws its top 5, torch's own top-k of the
    softmax of its logits."""
    bundle = tfviz.load(DEFAULT_MODEL)
    short, longer = (bundle.trace(t) for t in (SHORT, LONG))

    def check(trace, last: int) -> None:
        label = token_labels(trace.tokens)[-1]
        _wait_title(pg, f"Step {last} of {last}: Top-5 prediction at {label}")
        probs = torch.softmax(torch.as_tensor(trace["logits"][-1], dtype=torch.float64), dim=-1)
        top = torch.topk(probs, 5)
        shown = [float(t) for t in _chart_texts(pg, f"Step {last} of {last}", "g.concat_2_layer_1_marks")]
        np.testing.assert_allclose(shown, top.values.numpy(), atol=6e-4)  # written with 3 decimals
        names = bundle.token_strings(top.indices.tolist())
        axis = pg.evaluate("""() => Array.from(document.querySelectorAll(
            '.vega-embed g.role-axis-label text')).map(t => t.textContent)""")
        assert all(name in axis for name in names), (names, axis)

    context, guard, pg = _open(browser, _url(server, "forward-walk", SHORT))
    steps = int(pg.locator('.vega-bind input[name="step"]').first.get_attribute("max"))
    _press_end(pg, "step", steps)
    check(short, steps)
    _keep_svgs(pg)
    _type(pg, LONG)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    check(longer, steps)
    assert _kept(pg, f"Step {steps} of {steps}")
    assert pg.locator('.vega-bind input[name="step"]').first.input_value() == str(steps)
    assert _runs_since_open(pg, 1) == 1
    context.close()
    assert not guard.outside, guard.outside[:5]
