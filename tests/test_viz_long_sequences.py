"""Lesson 17's reach grid: one cell per (number of layers, position), coloured by whether the
last token reaches it."""
import numpy as np

from tfviz.model.masks import reach_by_layer
from tfviz.viz.long_sequences import reach_chart


def test_reach_strip_holds_every_layer_and_colours_both_kinds():
    rows = np.asarray(reach_by_layer("sliding", 10, 3, window=2))
    spec = reach_chart(rows).to_dict()
    data = spec["data"]["values"]
    assert len(data) == rows.size
    # by hand: a window of 2 lets the last token (9) reach 2 more positions per layer
    for layer in (1, 2, 3):
        reached = [d["position"] for d in data if d["layers"] == layer and d["reached"] == "yes"]
        assert reached == list(range(9 - 2 * layer, 10))
    scale = spec["encoding"]["color"]["scale"]
    assert set(scale["domain"]) == {d["reached"] for d in data} == {"yes", "no"}
    assert spec["height"] == {"step": 22}  # 22 px a row per number of layers, axes on top
