"""Issue #15: view controls switch the charts in the browser, draw the chosen view's own numbers,
never rerun the script, and keep the URL in step so a shared link opens the same view.

The charts draw as SVG, so every cell and bar carries an ARIA label with the values it was
drawn from ("col: 1; row: 8; weight: 0.4123; ..."). The tests read those labels and compare them
with a fresh trace of the same text: the numbers drawn belong to the chosen layer, head and
token. The values travel with 4 decimals (tfviz.viz.kit.instant.DIGITS), hence the tolerance.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

import tfviz
from tests.browser.conftest import OutboundGuard, Runs, wait_idle
from tfviz.analysis import heads as hd
from tfviz.analysis.coref import find_coref_positions
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT
from tfviz.viz.kit.style import token_labels

pytestmark = pytest.mark.browser
TOL = 6e-5  # four decimals sent (5e-5) plus float printing
BIG_MAP = ".vega-embed g.concat_1_layer_0_marks path"  # multi-head's large map, one path per cell
NEW_TEXT = "The dog didn't cross the river because it was too wide."

COUNT_RUNS_JS = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    window.__runs = 0;
    new MutationObserver((rs) => { for (const r of rs) if (r.oldValue === 'running') window.__runs++; })
        .observe(app, {attributes: true, attributeOldValue: true, attributeFilter: ['data-test-script-state']});
}"""
IDLE_JS = "() => document.querySelector('[data-testid=\"stApp\"]')?.getAttribute('data-test-script-state') === 'notRunning'"


def _labels(pg, selector: str) -> list[dict]:
    """The ARIA labels of the marks under ``selector`` as dicts ("a: 1; b: x" -> {a: "1", b: "x"})."""
    raw = pg.eval_on_selector_all(selector, "els => els.map(e => e.getAttribute('aria-label') || '')")
    return [dict(part.split(": ", 1) for part in label.split("; ") if ": " in part) for label in raw]


def _drawn_map(pg, n: int) -> np.ndarray:
    cells = _labels(pg, BIG_MAP)
    assert len(cells) == n * n, len(cells)
    out = np.full((n, n), np.nan)
    for c in cells:
        out[int(c["row"]), int(c["col"])] = float(c["weight"])
    return out


def _drawn_bars(pg) -> np.ndarray:
    """The head-share bars, scrolled into sight first: a chart far off screen follows the
    view only when it comes near (tfviz.ui.views), as a learner scrolling down would see."""
    pg.locator('.vega-bind input[name="layer"]').last.scroll_into_view_if_needed()
    pg.wait_for_function("() => new Set(Array.from(document.querySelectorAll('.vega-bind "
                         "input[name=layer]')).map(e => e.value)).size === 1", timeout=10_000)
    pg.wait_for_timeout(100)  # the frame that draws it
    # the head-share bars: their head is a number (lesson 7's coreference bars say "L0 H0")
    bars = [b for b in _labels(pg, ".vega-embed g.layer_0_marks path")
            if str(b.get("head", "")).isdigit() and "length" in b]
    return np.array([float(b["length"]) for b in sorted(bars, key=lambda b: int(b["head"]))])


def _titles(pg) -> list[str]:
    return pg.eval_on_selector_all(".vega-embed g.role-title text", "els => els.map(e => e.textContent)")


def _wait_title(pg, text: str) -> None:
    pg.wait_for_function("(t) => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
                         ".some(e => e.textContent === t)", arg=text, timeout=30_000)


def _view(pg) -> dict:
    """The view keys of the address bar (location.href: playwright's page.url can lag behind
    history.replaceState)."""
    query = parse_qs(urlparse(pg.evaluate("location.href")).query)
    return {k: v[0] for k, v in query.items() if k in ("layer", "head", "query", "text")}


def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    guard = OutboundGuard()
    context.route("**/*", guard)
    pg = context.new_page()
    pg.runs = Runs(pg)  # every run, read off the websocket (window.__runs can miss a fast one)
    pg.goto(url)
    pg.wait_for_selector(".vega-bind input", timeout=90_000)
    pg.wait_for_function(IDLE_JS, timeout=90_000)
    pg.evaluate(COUNT_RUNS_JS)
    assert wait_idle(pg, pg.runs), pg.runs.events  # the opening run's end delivered, too
    pg.opened = pg.runs.ended()
    return context, guard, pg


def _runs_since_open(pg, expected: int) -> int:
    """Script runs that ended since the page opened, read off its websocket (``Runs``), once
    ``expected`` have ended or 30 s have passed: playwright hands a page's websocket frames
    to Python only while it waits, so a run the page has drawn may not be counted yet."""
    wait_idle(pg, pg.runs, after=pg.opened + expected - 1, timeout=30)
    pg.wait_for_timeout(100)  # a run beyond them, asked already, is then seen too
    return pg.runs.ended() - pg.opened


@pytest.fixture(scope="module")
def expected():
    bundle = tfviz.load(DEFAULT_MODEL)
    out = {}
    for text in (DEFAULT_TEXT, NEW_TEXT):
        trace = bundle.trace(text)
        lengths, _ = hd.share_lengths(trace, bundle.weights())
        out[text] = (trace, lengths)
    return out


def test_view_controls_switch_in_the_browser_with_the_chosen_views_numbers(server, browser, expected):
    trace, lengths = expected[DEFAULT_TEXT]
    n = len(trace.tokens)
    probe = find_coref_positions(trace.tokens).probe
    context, guard, pg = _open(browser, f"{server}/multi-head?layer=1&head=2")
    # The shared link's view: layer 1, head 2, drawn from that head's weights.
    assert "Layer 1, head 2 (" in " ".join(_titles(pg))
    np.testing.assert_allclose(_drawn_map(pg, n), trace["pattern", 1][2], atol=TOL)
    np.testing.assert_allclose(_drawn_bars(pg), lengths[1, probe], atol=TOL)

    layer = pg.locator('.vega-bind input[name="layer"]').first
    layer.focus()
    pg.keyboard.press("ArrowRight")  # the keyboard moves it: layer 2
    _wait_title(pg, f"Layer 2, head 2 ({hd.head_stats(trace['pattern', 2])[2].label})")
    np.testing.assert_allclose(_drawn_map(pg, n), trace["pattern", 2][2], atol=TOL)
    # The other chart's layer follows once it is in sight (charts far off screen follow when
    # they come near), and the address bar says where we are.
    pg.locator('.vega-bind input[name="layer"]').last.scroll_into_view_if_needed()
    pg.wait_for_function("() => Array.from(document.querySelectorAll('.vega-bind input[name=layer]'))"
                         ".every(e => e.value === '2')", timeout=10_000)
    pg.wait_for_function("() => location.search.includes('layer=2')", timeout=10_000)
    np.testing.assert_allclose(_drawn_bars(pg), lengths[2, probe], atol=TOL)

    head = pg.locator('.vega-bind input[name="head"]').first
    head.focus()
    pg.keyboard.press("ArrowLeft")  # head 1
    _wait_title(pg, f"Layer 2, head 1 ({hd.head_stats(trace['pattern', 2])[1].label})")
    np.testing.assert_allclose(_drawn_map(pg, n), trace["pattern", 2][1], atol=TOL)

    pg.locator('.vega-bind input[name="query"]').first.fill("0")  # the first token's shares
    pg.wait_for_function("() => location.search.includes('query=0')", timeout=10_000)
    np.testing.assert_allclose(_drawn_bars(pg), lengths[2, 0], atol=TOL)

    assert _view(pg) | {"text": None} == {"layer": "2", "head": "1", "query": "0", "text": None}
    assert pg.evaluate("window.__runs") == 0  # not one script run for all of that
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_a_shared_link_opens_the_view_and_a_new_sentence_keeps_it(server, browser, expected):
    trace, lengths = expected[DEFAULT_TEXT]
    n = len(trace.tokens)
    context, guard, pg = _open(browser, f"{server}/multi-head?layer=2&head=1&query=0")
    assert "Layer 2, head 1 (" in " ".join(_titles(pg))
    np.testing.assert_allclose(_drawn_map(pg, n), trace["pattern", 2][1], atol=TOL)
    np.testing.assert_allclose(_drawn_bars(pg), lengths[2, 0], atol=TOL)

    # Move to layer 0 in the browser: the server still thinks "layer 2" (it was never told).
    layer = pg.locator('.vega-bind input[name="layer"]').first
    layer.focus()
    pg.keyboard.press("ArrowLeft")
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function("() => location.search.includes('layer=0')", timeout=10_000)

    # A new sentence reruns the page and draws new charts; they open on the browser's view.
    new_trace, new_lengths = expected[NEW_TEXT]
    box = pg.locator('[data-testid="stSidebar"] textarea')
    box.fill(NEW_TEXT)
    box.press("Control+Enter")
    pg.wait_for_function("() => window.__runs > 0", timeout=60_000)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    _wait_title(pg, f"Layer 0, head 1 ({hd.head_stats(new_trace['pattern', 0])[1].label})")
    m = len(new_trace.tokens)
    np.testing.assert_allclose(_drawn_map(pg, m), new_trace["pattern", 0][1], atol=TOL)
    np.testing.assert_allclose(_drawn_bars(pg), new_lengths[0, 0], atol=TOL)
    view = _view(pg)
    assert (view["layer"], view["head"], view["query"]) == ("0", "1", "0")
    assert view["text"] == NEW_TEXT  # the server wrote the text, the browser kept its view keys
    assert re.search(r"layer=0", pg.evaluate("location.search"))
    context.close()
    assert not guard.outside, guard.outside[:5]


SAME_LENGTH = ("The cat sat near the lake because it was tired.",
               "The cat sat over the boat because it was tired.")  # 12 tokens each


def test_a_new_sentence_of_the_same_length_swaps_the_data_of_the_same_charts(server, browser):
    """Lesson 5's charts are not rebuilt for a sentence of the same length (the spec holds
    nothing of the words; tfviz.viz.kit.instant): the same SVG stays, and it now shows the new
    sentence's words and numbers."""
    first, second = (tfviz.load(DEFAULT_MODEL).trace(t) for t in SAME_LENGTH)
    n = len(first.tokens)
    assert len(second.tokens) == n
    context, guard, pg = _open(browser, f"{server}/self-attention?text=" + SAME_LENGTH[0].replace(" ", "+")
                               + "&layer=1&head=2&query=4")
    labels = [token_labels(first.tokens)[4], token_labels(second.tokens)[4]]
    assert labels[0] != labels[1]
    _wait_title(pg, f"q for {labels[0]} (layer 1, head 2)")
    pg.evaluate("() => { window.__svgs = Array.from(document.querySelectorAll('.vega-embed svg')); }")
    box = pg.locator('[data-testid="stSidebar"] textarea')
    box.fill(SAME_LENGTH[1])
    box.press("Control+Enter")
    _wait_title(pg, f"q for {labels[1]} (layer 1, head 2)")
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    kept = pg.evaluate("() => Array.from(document.querySelectorAll('.vega-embed svg'))"
                       ".filter(s => window.__svgs.includes(s)).length")
    assert kept == len(pg.query_selector_all(".vega-embed svg")) > 0  # no chart rebuilt
    # The q row shows the new sentence's q for the chosen view.
    q = {int(c["col"]): float(c["q"].replace("−", "-"))  # Vega prints a true minus sign
         for c in _labels(pg, ".vega-embed g.concat_0_layer_0_marks path")
         if "q" in c}
    want = second["blocks.1.attn.hook_q"][4, 2]  # (position, head, d_head)
    np.testing.assert_allclose([q[i] for i in range(len(q))], want, atol=TOL)
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_every_instant_chart_saves_as_a_png_of_what_it_draws(server, browser, tmp_path):
    """Streamlit offers no export for Vega-Lite charts; the page's script puts a "Save as PNG"
    button under each. The file is a real PNG at twice the chart's size, named after its
    title, and saving runs nothing on the server."""
    import struct

    context, guard, pg = _open(browser, f"{server}/multi-head?layer=1&head=2")
    buttons = pg.locator(".vega-embed > button.tfviz-save")
    assert buttons.count() == pg.locator(".vega-embed").count() >= 2
    svg = pg.locator(".vega-embed svg.marks").first
    width = float(svg.get_attribute("width"))
    with pg.expect_download() as info:
        buttons.first.click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    png_width, png_height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert png_width == int(np.ceil(width * 2)) and png_height > 100
    assert info.value.suggested_filename.startswith("Every_head_of_layer_1")
    assert pg.evaluate("window.__runs") == 0
    context.close()
    assert not guard.outside, guard.outside[:5]


# ----- lesson 17 (long sequences) and the training lab: their views are instant too ---------

def _chart_cells(pg, title: str, part: str) -> list[dict]:
    """The ARIA labels of the marks of group ``part`` ("concat_0_layer_0_marks") in the chart
    whose title is ``title`` (a page holds several charts)."""
    return pg.evaluate(
        """([title, part]) => {
            const chart = Array.from(document.querySelectorAll('.vega-embed')).find((c) =>
                Array.from(c.querySelectorAll('g.role-title text')).some((t) => t.textContent === title));
            if (!chart) return [];
            return Array.from(chart.querySelectorAll(`g.${part} path`)).map((e) => e.getAttribute('aria-label') || '');
        }""", [title, part])


def _matrix(labels: list[str], n: int, m: int, value: str = "weight") -> np.ndarray:
    out = np.full((n, m), np.nan)
    for label in labels:
        cell = dict(part.split(": ", 1) for part in label.split("; ") if ": " in part)
        if value in cell:
            out[int(cell["row"]), int(cell["col"])] = float(cell[value].replace("−", "-"))
    return out


def test_long_sequences_layer_and_head_switch_in_the_browser(server, browser):
    """Lesson 17's what-if maps and Linformer's map follow the layer and head sliders under
    them with no script run: the maps drawn are the trace's own (full attention is the model
    as trained; the sliding window's keeps only the window's keys) and Linformer's title
    follows the layer."""
    from tfviz.experiments import long_sequences as ls
    from tfviz.model.masks import sparse_pattern

    bundle = tfviz.load(DEFAULT_MODEL)
    trace = bundle.trace(DEFAULT_TEXT)
    n = len(trace.tokens)
    context, guard, pg = _open(browser, f"{server}/long-sequences?layer=0&head=3")
    title = "Layer 0, head 3: full attention and sliding window"
    _wait_title(pg, title)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_0_layer_0_marks"), n, n),
                               trace["pattern", 0][3], atol=TOL)
    window = sparse_pattern("sliding", n, window=2) & np.tri(n, dtype=bool)  # read causally
    drawn = _matrix(_chart_cells(pg, title, "concat_1_layer_0_marks"), n, n)
    assert (drawn[~window] == 0).all() and not (drawn[window] == 0).all()

    head = pg.locator('.vega-bind input[name="head"]').first
    head.focus()
    pg.keyboard.press("ArrowLeft")  # head 2
    title = "Layer 0, head 2: full attention and sliding window"
    _wait_title(pg, title)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_0_layer_0_marks"), n, n),
                               trace["pattern", 0][2], atol=TOL)
    layer = pg.locator('.vega-bind input[name="layer"]').first
    layer.focus()
    pg.keyboard.press("ArrowRight")  # layer 1
    title = "Layer 1, head 2: full attention and sliding window"
    _wait_title(pg, title)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_0_layer_0_marks"), n, n),
                               trace["pattern", 1][2], atol=TOL)
    pg.wait_for_function("() => location.search.includes('layer=1') && location.search.includes('head=2')",
                         timeout=10_000)

    # Linformer's chart, further down, follows once in sight: layer 1, head 2, k = n // 2
    pg.locator('.vega-bind input[name="layer"]').last.scroll_into_view_if_needed()
    k = n // 2
    lin = ls.linformer(trace["q", 1], trace["k", 1], trace["v", 1], k)
    best = ls.best_rank_errors(trace["q", 1], trace["k", 1], trace["v", 1])
    said = f"Layer 1 at k = {k}: pooled {lin.error:.3f}, closest rank-k {best[k - 1]:.3f}"
    pg.wait_for_function("(t) => Array.from(document.querySelectorAll('.vega-embed g.role-title text'))"
                         ".some(e => e.textContent.includes(t))", arg=said, timeout=30_000)
    own = f"Layer 1, head 2: each query's weights over the k = {k} pooled rows"
    _wait_title(pg, own)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, own, "concat_0_layer_0_marks"), n, k),
                               lin.maps[2], atol=TOL)
    assert pg.evaluate("window.__runs") == 0  # not one script run for all of that
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_training_lab_checkpoint_example_layer_and_head_switch_in_the_browser(server, browser):
    """A tiny run of the lab's default task: its attention chart moves through checkpoints,
    held-out examples, layers and heads with no script run, and draws the run's own weights
    (the same settings trained here, seeded, give the same run)."""
    from tfviz.lab.settings import LabSettings
    from tfviz.lab.train import RunLog, train

    settings = LabSettings.default("reverse").replace(steps=10, d_model=16)
    run = train(settings, RunLog(settings))
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    guard = OutboundGuard()
    context.route("**/*", guard)
    pg = context.new_page()
    pg.goto(f"{server}/training-lab")
    pg.wait_for_function(IDLE_JS, timeout=90_000)
    main = pg.locator('[data-testid="stMain"]')
    for label in ("Steps", "d_model"):
        thumb = main.locator('[data-testid="stSlider"]', has_text=label).first.get_by_role("slider")
        thumb.focus()
        pg.keyboard.press("Home")
        pg.wait_for_timeout(300)
        pg.wait_for_function(IDLE_JS, timeout=60_000)
    main.get_by_role("button", name="Train", exact=True).click()
    pg.wait_for_selector(".vega-bind input[name='checkpoint']", timeout=120_000)
    pg.wait_for_function(IDLE_JS, timeout=60_000)
    pg.evaluate(COUNT_RUNS_JS)

    def drawn(c: int, e: int, layer: int, head: int) -> None:
        title = f"Layer {layer}, head {head}, after {run.checkpoints[c].step} steps"
        _wait_title(pg, title)
        want = run.checkpoints[c].patterns[e][layer, head].astype(float)
        t = want.shape[-1]
        got = _matrix(_chart_cells(pg, title, "layer_0_marks"), t, t)
        np.testing.assert_allclose(got, want, atol=TOL)

    last = len(run.checkpoints) - 1
    drawn(last, 0, 0, 0)  # the last checkpoint, the first example, layer 0, head 0
    checkpoint = pg.locator('.vega-bind input[name="checkpoint"]').first
    checkpoint.focus()
    pg.keyboard.press("Home")  # before training
    drawn(0, 0, 0, 0)
    pg.locator('.vega-bind select[name="example"]').first.select_option("2")
    drawn(0, 2, 0, 0)
    head = pg.locator('.vega-bind input[name="head"]').first
    head.focus()
    pg.keyboard.press("ArrowRight")
    layer = pg.locator('.vega-bind input[name="layer"]').first
    layer.focus()
    pg.keyboard.press("ArrowRight")
    drawn(0, 2, 1, 1)
    pg.wait_for_function("() => location.search.includes('layer=1') && location.search.includes('head=1')",
                         timeout=10_000)
    assert pg.evaluate("window.__runs") == 0  # not one script run for all of that
    context.close()
    assert not guard.outside, guard.outside[:5]


def test_attention_without_projections_follows_the_head_slider(server, browser):
    """Lesson 5's step 4: the map scored from the vectors themselves (softmax of x_i.x_j, one
    for every head) beside the model's own head of layer 0; moving the head slider swaps the
    right-hand map to that head's pattern with no script run."""
    from tfviz.analysis import contextual as cx

    bundle = tfviz.load(DEFAULT_MODEL)
    trace = bundle.trace(DEFAULT_TEXT)
    n = len(trace.tokens)
    plain = cx.plain_attention(trace["hook_resid_pre", 0], causal=bundle.config.causal).weights
    context, guard, pg = _open(browser, f"{server}/self-attention?head=3")
    title = "Without projections, and head 3 of layer 0"
    chart = pg.locator(".vega-embed", has_text="Without projections").first
    chart.scroll_into_view_if_needed()
    _wait_title(pg, title)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_0_layer_0_marks"), n, n),
                               plain, atol=TOL)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_1_layer_0_marks"), n, n),
                               trace["pattern", 0][3], atol=TOL)
    head = pg.locator('.vega-bind input[name="head"]').first
    head.focus()
    pg.keyboard.press("ArrowLeft")  # head 2, on every chart of the page (they are linked)
    title = "Without projections, and head 2 of layer 0"
    chart.scroll_into_view_if_needed()
    _wait_title(pg, title)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_1_layer_0_marks"), n, n),
                               trace["pattern", 0][2], atol=TOL)
    np.testing.assert_allclose(_matrix(_chart_cells(pg, title, "concat_0_layer_0_marks"), n, n),
                               plain, atol=TOL)
    assert pg.evaluate("window.__runs") == 0
    context.close()
    assert not guard.outside, guard.outside[:5]
