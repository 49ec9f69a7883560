"""The reflow rules (``tests/browser/reflow.py``) catch each way a chart can break reflow on a
phone. Every page is checked with them, and with axe-core, in tests/browser/test_every_page.py."""
from __future__ import annotations

import pytest

from tests.browser.reflow import reflow_problems

pytestmark = pytest.mark.browser


def test_the_rules_catch_each_way_to_break_reflow():
    fits = {"kind": "stVegaLiteChart", "left": 16, "right": 374, "drawn": 358, "box": 358,
            "scrolls": False}
    assert reflow_problems({"width": 390, "page": 390, "charts": [fits]}) == []
    past = dict(fits, right=520)
    clipped = dict(fits, drawn=700)
    scrolling = dict(clipped, scrolls=True)
    assert "past the screen's edge" in reflow_problems({"width": 390, "page": 390, "charts": [past]})[0]
    assert "do not scroll" in reflow_problems({"width": 390, "page": 390, "charts": [clipped]})[0]
    assert reflow_problems({"width": 390, "page": 390, "charts": [scrolling]}) == []
    assert "scrolls sideways" in reflow_problems({"width": 390, "page": 620, "charts": [fits]})[0]
