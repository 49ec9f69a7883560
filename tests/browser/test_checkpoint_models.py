"""Hugging Face folders named in TFVIZ_MODELS, in chromium: the server lists a GPT-2 and a BERT
in the sidebar's picker with family and size, opens each from a link or from the picker, and
the self-attention lesson runs on it with no exception and no traceback."""
from __future__ import annotations

import pytest

from tests.browser.conftest import SHOTS, assert_no_exception, wait_for_app
from tfviz.ui.errors import FRIENDLY_ERROR

pytestmark = pytest.mark.browser
transformers = pytest.importorskip("transformers")

CHARTS_JS = """() => document.querySelectorAll('[data-testid="stMain"] [data-testid="stVegaLiteChart"] svg, '
                + '[data-testid="stMain"] [data-testid="stVegaLiteChart"] canvas').length"""


@pytest.fixture
def folder_server(folder_server):
    """conftest's server of random folders, among them "gpt2" and "bert" (2 layers × 2 heads,
    d = 32); yields (url, gpt2's picker label)."""
    url, n = folder_server
    return url, f"gpt2 · GPT-2, 2 layers × 2 heads, {round(n / 1000)}k parameters"


def picker_text(page) -> str:
    """The sidebar picker's shown value (its combobox input holds the chosen option's label)."""
    return page.locator('[data-testid="stSidebar"] input[aria-label="Model"]').input_value()


def lesson_ran(page) -> None:
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_function(f"() => ({CHARTS_JS})() > 0", timeout=120_000)  # a loaded machine
    assert_no_exception(page)
    assert FRIENDLY_ERROR not in page.inner_text("body")  # the error boundary's words
    assert not page.js_errors, page.js_errors


def test_a_link_opens_the_folder_in_the_self_attention_lesson(folder_server, page):
    url, label = folder_server
    page.goto(f"{url}/self-attention?model=gpt2")
    lesson_ran(page)
    assert picker_text(page) == label
    assert "model=gpt2" in page.url
    assert page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').count() == 0  # no refusal
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "checkpoint_self_attention.png"), full_page=True)


def test_picking_the_folder_in_the_sidebar(folder_server, page):
    url, label = folder_server
    page.goto(f"{url}/self-attention")
    wait_for_app(page)
    assert picker_text(page) == "gpt-tiny"
    picker = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first
    picker.locator("input").click()
    page.keyboard.type("gpt2")  # a select box filters its options as one types, and opens
    option = page.get_by_role("option", name=label, exact=True)
    option.wait_for(timeout=30_000)
    option.click()
    page.wait_for_url("**model=gpt2**", timeout=120_000)
    lesson_ran(page)
    assert picker_text(page) == label
    # the folder's memory cost is listed beside it, before and after it is opened
    page.locator('[data-testid="stSidebar"] summary', has_text="Model folders").click()
    notes = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]').inner_text()
    assert "Opening it takes about" in notes and "of memory" in notes
    # named by place, never by the server's path (the folders are in pytest's /tmp/pytest-of-…)
    assert "from TFVIZ_MODELS entry 1, folder gpt2." in notes
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "/tmp/" not in sidebar and "pytest-of" not in sidebar


def test_a_bert_folder_in_the_self_attention_lesson(folder_server, page):
    url, _ = folder_server
    page.goto(f"{url}/self-attention?model=bert")
    lesson_ran(page)
    assert picker_text(page).startswith("bert · BERT, 2 layers × 2 heads, ")
    assert "model=bert" in page.url
    assert page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]').count() == 0
    page.screenshot(path=str(SHOTS / "checkpoint_bert_self_attention.png"), full_page=True)
