"""Captions are readable (WCAG 2.2 AA, 1.4.3): the colour the frame's CSS gives st.caption has
a contrast ratio of at least 4.5:1 on every background a caption sits on, computed with WCAG's
own formula from the file the browser receives."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tfviz.viz.kit.style import contrast_ratio, relative_luminance

ROOT = Path(__file__).resolve().parents[1]
CSS = ROOT / "tfviz" / "ui" / "assets" / "readable.css"
# Streamlit 1.67's light theme (its config.py): the page, the sidebar, and the widgets in the
# sidebar, the darkest of the three.
BACKGROUNDS = {"page": "#ffffff", "sidebar": "#f8f8f7", "sidebar widget": "#f1f0ee"}
AA_TEXT = 4.5


def caption_colour(css: str) -> str:
    """The colour of the rule that selects st.caption's container, as "#rrggbb"."""
    rule = re.search(r'\[data-testid="stCaptionContainer"\]\s*\{([^}]*)\}', css)
    assert rule, "readable.css has no rule for stCaptionContainer"
    body = rule.group(1)
    assert re.search(r"(^|;|\s)opacity:\s*1\s*(;|$)", body), "the caption's 60% opacity stays"
    return re.search(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})", body).group(1)


def test_the_formula_gives_wcags_own_values():
    assert relative_luminance("#ffffff") == pytest.approx(1.0)
    assert relative_luminance("#000000") == 0.0
    assert relative_luminance("#808080") == pytest.approx(0.2158605, abs=1e-6)  # sRGB mid grey
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#ffffff", "#000000") == pytest.approx(21.0)  # order does not matter
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.005)  # a known near miss
    # Streamlit's caption before the fix: body text #2f2d2b at 60% on white draws #828180
    assert 3.88 < contrast_ratio("#828180", "#ffffff") < 3.89 < AA_TEXT


@pytest.mark.parametrize("where", BACKGROUNDS)
def test_captions_reach_aa_contrast(where):
    colour = caption_colour(CSS.read_text())
    ratio = contrast_ratio(colour, BACKGROUNDS[where])
    assert ratio >= AA_TEXT, f"{colour} on {BACKGROUNDS[where]} ({where}) is {ratio:.2f}:1"
    assert colour.lower() == "#6b6a68" and ratio == pytest.approx(
        {"page": 5.40, "sidebar": 5.08, "sidebar widget": 4.74}[where], abs=0.005)


def test_the_app_stays_on_the_light_theme_the_ratios_were_computed_for():
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    assert theme["base"] == "light"
    assert not {"backgroundColor", "secondaryBackgroundColor", "textColor"} & set(theme)


def test_the_frame_draws_the_rules_on_every_page():
    app = (ROOT / "app.py").read_text()
    assert "readable_frame()" in app.split("current.run()")[0]  # before any lesson draws


def test_the_focus_ring_stands_out_on_every_background():
    css = CSS.read_text()
    ring = re.search(r":focus-visible\s*\{[^}]*outline:\s*\d+px solid (#[0-9a-fA-F]{6})", css).group(1)
    for where, background in BACKGROUNDS.items():  # 1.4.11: 3:1 for what is not text
        assert contrast_ratio(ring, background) >= 3, where
    assert contrast_ratio(ring, "#ffffff") == pytest.approx(8.66, abs=0.005)
