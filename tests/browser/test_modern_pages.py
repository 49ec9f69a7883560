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

from tests.browser.conftest import SHOTS, assert_no_exception, wait_for_app
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


def check_modern_page(page, address: str, axe_source: str | None, must_show: str | None, *,
                      scrolls: bool = False, shot: str | None = None, timeout: int = 180_000,
                      charts: bool = True) -> str:
    """Open ``address`` (a lesson's URL with its ``?model=``) and check it as this module's
    docstring says: no exception, every chart drawn, ``must_show`` in the page's text (None: not
    read), no LayerNorm or ReLU the model lacks, clean under axe-core, reflowing at 390 px
    (``scrolls``: its widest chart scrolls in its box there). ``charts=False``: a page that
    shows none on this model (lesson 11 on a dense one). ``shot``: a screenshot at the desktop
    size, saved under tests/screenshots/. Returns the page's main text."""
    page.goto(address)
    wait_for_app(page, timeout=timeout)
    assert_no_exception(page)
    if charts:
        page.wait_for_function(CHARTS_ON_SHOW_JS, timeout=timeout, polling=100)
        page.wait_for_function(DRAWN_JS, timeout=30_000, polling=100)
    main = page.inner_text('[data-testid="stMain"]')
    if must_show is not None:
        assert must_show in main, (address, must_show)
    assert "Final LayerNorm" not in main and "max(0" not in main
    if shot:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / shot), full_page=True)
    if axe_source is not None:
        page.add_script_tag(content=axe_source)
        found = page.evaluate(RUN_AXE_JS, [TAGS, {k: v[0] for k, v in EXEMPT.items()}])
        assert found["passes"] > 10
        assert not found["violations"], f"{address}:\n{describe(found['violations'])}"
    page.set_viewport_size(PHONE)
    page.wait_for_timeout(300)
    try:
        page.wait_for_function(DRAWN_JS, timeout=10_000, polling=100)
    except Exception:
        pass
    if axe_source is not None:
        found = page.evaluate(RUN_AXE_JS, [ON_A_PHONE, {}])
        assert not found["violations"], f"{address} at {PHONE['width']} px:\n{describe(found['violations'])}"
    found = page.evaluate(MEASURE_JS)
    assert found["width"] <= PHONE["width"] and bool(found["charts"]) is charts, found
    problems = reflow_problems(found)
    assert not problems, f"{address} at {PHONE['width']} px:\n" + "\n".join(problems)
    if scrolls:
        assert any(c["scrolls"] for c in found["charts"]), f"{address}: the widest chart scrolls"
    assert not page.js_errors, page.js_errors
    return main


@pytest.mark.parametrize("url", list(PAGES))
def test_a_modern_block_lesson_in_the_browser(server, page, axe_source, url):
    # self-attention's formula is drawn by KaTeX, not as text
    check_modern_page(page, f"{server}/{url}?model=llama-tiny", axe_source,
                      None if url == "self-attention" else PAGES[url], scrolls=url in WIDER_THAN_A_PHONE)


#: url -> words the page must show on mixtral-tiny, the bundled Mixtral: the same block as
#: llama-tiny's with 4 SwiGLU experts a layer, 2 a token (lesson 10 follows a token's first
#: expert, lesson 12 walks its router)
MIXTRAL_PAGES = {
    "embeddings": "pair i is dimension i with i + d/2",
    "multi-head": "4 query heads share 2 key/value heads: heads 0–1 read K/V head 0, heads 2–3 read K/V head 1.",
    "layernorm": "normalises each token with RMSNorm",
    "feed-forward": "is a mixture of experts: each block holds 4 such networks",
    "forward-walk": "a mixture of 4 SwiGLU experts, 2 per token",
    "gqa": "5 · The cache of mixtral-tiny, the sidebar's model",
}


@pytest.mark.parametrize("url", list(MIXTRAL_PAGES))
def test_a_modern_block_lesson_on_a_mixture_of_experts(server, page, axe_source, url):
    check_modern_page(page, f"{server}/{url}?model=mixtral-tiny", axe_source, MIXTRAL_PAGES[url],
                      shot=f"mixtral-tiny-{url}.png")
