"""view_opening: where a page's instant charts open, the one helper six lessons share. A shared
link's layer and head, clamped to the model; a deep model's layer slider, whose layer the charts
then carry alone."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest


def _page(n_layers: int, n_heads: int) -> None:
    from types import SimpleNamespace

    import streamlit as st

    from tfviz.ui.views import view_opening

    opening = view_opening(SimpleNamespace(n_layers=n_layers, n_heads=n_heads), "t_layer")
    st.write(repr((opening.only, opening.layer, opening.head, opening.view)))


@pytest.mark.parametrize("query,n_layers,want", [
    ({}, 2, (None, 0, 0)),  # a small model, no link: layer 0, head 0, every layer sent
    ({"layer": "9", "head": "9"}, 2, (None, 1, 3)),  # a link past the model: its last ones
    ({"layer": "1", "head": "2"}, 2, (None, 1, 2)),
    ({}, 12, (0, 0, 0)),  # a deep model: the slider's layer, and only that layer sent
    ({"layer": "7", "head": "1"}, 12, (7, 7, 1)),
    ({"layer": "x"}, 12, (0, 0, 0)),  # not a number: the first
])
def test_the_opening_follows_the_link_within_the_model(query, n_layers, want):
    at = AppTest.from_function(_page, args=(n_layers, 4))
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    only, layer, head = want
    view = {"layer": layer, "head": head, "only_layer": only}
    assert at.markdown[-1].value == repr((only, layer, head, view))
    assert len(at.slider) == (1 if n_layers > 4 else 0)  # the deep model's layer slider
