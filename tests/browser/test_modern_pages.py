"""The lessons that teach the modern block (3, 5, 7, 9, 10, 12, 14 and 18) in chromium on
llama-tiny (RMSNorm, SwiGLU, RoPE in Llama's halves layout, 4 query heads over 2 K/V heads), as
tests/browser/test_every_page.py checks every page on gpt-tiny: opened by its URL with
``?model=llama-tiny``, the page runs without an exception and draws every chart on show, says
what is new on this model (its norm and activation, its RoPE pairing, its K/V groups, its own
cache), names no LayerNorm or ReLU it does not have, is clean under axe-core's
WCAG 2.2 AA rules (with that file's exemptions for Streamlit's own navigation), and reflows
on a phone (390 px): every chart fits or scrolls in its own box. Where axe-core is missing the
other checks still run (test_every_page.py says how to install it)."""
from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_exception, wait_for_app
from tests.browser.reflow import CHARTS_ON_SHOW_JS, MEASURE_JS, PHONE, reflow_problems
from tests.browser.test_every_page import (DRAWN_JS, EXEMPT, ON_A_PHONE, RUN_AXE_JS, TAGS, axe_source,
                                           describe)

pytestmark = pytest.mark.browser
__all__ = ["axe_source"]  # the fixture, shared with test_every_page.py

#: url -> words the page must show on llama-tiny (its norm, its activation, its walk, its RoPE,
#: its K/V groups, its BOS, its own cache)
PAGES = {
    "embeddings": "pair i is dimension i with i + d/2",
    "multi-head": "4 query heads share 2 key/value heads: heads 0–1 read K/V head 0, heads 2–3 read K/V head 1.",
    "decoding": "tokenizer puts no beginning-of-text token in front of your prompt",
    "gqa": "5 · The cache of llama-tiny, the sidebar's model",
    "self-attention": r"\mathrm{RMS}",
    "layernorm": "normalises each token with RMSNorm",
    "feed-forward": "The nonlinearity is SiLU",
    "forward-walk": "is built like Llama, Mistral and Qwen",
}
WIDER_THAN_A_PHONE = {"self-attention"}  # its widest chart scrolls in its box on a phone


@pytest.mark.parametrize("url", list(PAGES))
def test_a_modern_block_lesson_in_the_browser(server, page, axe_source, url):
    page.goto(f"{server}/{url}?model=llama-tiny")
    wait_for_app(page, timeout=180_000)
    assert_no_exception(page)
    page.wait_for_function(CHARTS_ON_SHOW_JS, timeout=90_000, polling=100)
    page.wait_for_function(DRAWN_JS, timeout=30_000, polling=100)
    main = page.inner_text('[data-testid="stMain"]')
    if url != "self-attention":  # its formula is drawn by KaTeX, not as text
        assert PAGES[url] in main, (url, PAGES[url])
    assert "Final LayerNorm" not in main and "max(0" not in main
    if axe_source is not None:
        page.add_script_tag(content=axe_source)
        found = page.evaluate(RUN_AXE_JS, [TAGS, {k: v[0] for k, v in EXEMPT.items()}])
        assert found["passes"] > 10
        assert not found["violations"], f"/{url} on llama-tiny:\n{describe(found['violations'])}"
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(300)
    try:
        page.wait_for_function(DRAWN_JS, timeout=10_000, polling=100)
    except Exception:
        pass
    if axe_source is not None:
        found = page.evaluate(RUN_AXE_JS, [ON_A_PHONE, {}])
        assert not found["violations"], f"/{url} at {PHONE['width']} px:\n{describe(found['violations'])}"
    found = page.evaluate(MEASURE_JS)
    assert found["width"] <= PHONE["width"] and found["charts"], found
    problems = reflow_problems(found)
    assert not problems, f"/{url} at {PHONE['width']} px:\n" + "\n".join(problems)
    if url in WIDER_THAN_A_PHONE:
        assert any(c["scrolls"] for c in found["charts"]), f"/{url}: the widest chart scrolls"
    assert not page.js_errors, page.js_errors
