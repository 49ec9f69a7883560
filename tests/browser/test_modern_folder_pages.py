"""The modern block's lessons in chromium on a Llama folder the server finds, as
tests/browser/test_modern_pages.py checks them on llama-tiny: lessons 3, 9, 10, 11 and 18
opened by URL on a random Llama checkpoint named in ``TFVIZ_MODELS`` (made by transformers:
3 layers, 6 query heads over 2 key/value heads, d = 48, an untied unembedding, Llama 3's
byte-level tokenizer, and a generation_config.json that lists two end tokens), and lesson 11 on
llama-tiny too. Each page runs without an exception, draws its charts, says what is true of
this model (its RoPE pairing and base, its RMSNorm, its SiLU gate, that it has no experts, its
K/V groups and cache), is clean under axe-core and reflows at 390 px. Each page is
photographed into tests/screenshots/ (modern_folder_*.png) for a person to look at."""
from __future__ import annotations

import pytest

from tests.browser.test_modern_pages import check_modern_page
from tests.browser.test_every_page import axe_source  # noqa: F401  (the fixture)

pytestmark = pytest.mark.browser
pytest.importorskip("transformers")

FOLDER = "llama-random"
#: url -> words the page must show on the folder's model
PAGES = {
    "embeddings": "pair i is dimension i with i + d/2",
    "layernorm": "normalises each token with RMSNorm",
    "feed-forward": "The nonlinearity is SiLU",
    "mixture-of-experts": f"{FOLDER} is a dense model",
    "gqa": f"5 · The cache of {FOLDER}, the sidebar's model",
}


@pytest.fixture
def folder_server(folder_server):
    """conftest's server of random folders, among them FOLDER."""
    return folder_server[0]


@pytest.mark.parametrize("url", list(PAGES))
def test_a_modern_block_lesson_on_a_llama_folder(folder_server, page, axe_source, url):  # noqa: F811
    check_modern_page(page, f"{folder_server}/{url}?model={FOLDER}", axe_source, PAGES[url],
                      charts=url != "mixture-of-experts", shot=f"modern_folder_{url}.png")


def test_the_moe_lesson_on_llama_tiny_says_it_has_no_experts(server, page, axe_source):  # noqa: F811
    check_modern_page(page, f"{server}/mixture-of-experts?model=llama-tiny", axe_source,
                      "llama-tiny is a dense model", charts=False, shot="modern_llama_tiny_moe.png")
