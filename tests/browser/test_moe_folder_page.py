"""Lesson 11 in chromium on a random Mixtral folder the server finds (``TFVIZ_MODELS``; made by
transformers: 2 layers, 4 experts, top-2 by Mixtral's rule, 4 query heads over 2 K/V heads,
Mistral's SentencePiece-style tokenizer), as tests/browser/test_modern_pages.py checks the
modern lessons: no exception, every chart drawn, the words true of this model (its rule, that
it sets no capacity, the two rules' difference as a number), clean under axe-core, reflowing
at 390 px. Then the same page with the followed token and the layer moved in the browser, and
the page photographed into tests/screenshots/ (moe_folder_*.png) for a person to look at."""
from __future__ import annotations

import re

import pytest

from tests.browser.test_every_page import axe_source  # noqa: F401  (the fixture)
from tests.browser.test_modern_pages import check_modern_page

pytestmark = pytest.mark.browser
pytest.importorskip("transformers")

FOLDER = "mixtral-random"


@pytest.fixture
def folder_server(folder_server):
    """conftest's server of random folders, among them FOLDER."""
    return folder_server[0]


def test_the_moe_lesson_on_a_mixtral_folder(folder_server, page, axe_source):  # noqa: F811
    main = check_modern_page(page, f"{folder_server}/mixture-of-experts?model={FOLDER}", axe_source,
                             f"{FOLDER} routes by softmax → top-k → renormalise, Mixtral's rule",
                             shot="moe_folder_mixtral.png")
    assert "it sets no capacity" in main
    gap = re.search(r"renormalise and top-k → softmax, over every token, layer and expert, "
                    r"is ([0-9.e+-]+)", main)
    assert gap and float(gap.group(1)) < 1e-6, gap
    assert re.search(r"largest difference from the renormalised weights is 0\.\d{3}", main)
