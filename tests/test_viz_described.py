"""Every chart has a text alternative (WCAG 2.2 AA, 1.1.1): Vega makes a spec's
``description`` the chart's accessible name, what a screen reader says first.

- Instant charts cannot be built without one (``tfviz.viz.instant.spec`` refuses).
- Every other Vega-Lite chart a lesson draws goes through ``tfviz.ui.widgets.vega``, which
  keeps the builder's description, else takes the chart's title (``style.described``). Each
  such builder that the lessons call is built here with small inputs and its description
  checked word for word; a lesson that starts calling a new builder fails
  ``test_every_builder_a_lesson_draws_is_checked_here`` until it is added.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from tfviz.viz import instant
from tfviz.viz.style import described

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "lessons").glob("*.py"))


def drawn_builders(source: str, drawer: str) -> set[str]:
    """The builders a lesson passes to ``drawer(builder, ...)``, by module and name, read from
    its imports: ``from tfviz.viz.lab import x`` and ``from tfviz.viz import lab as lv``."""
    tree = ast.parse(source)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == drawer
                and node.args):
            first = node.args[0]
            if isinstance(first, ast.Name):
                found.add(names.get(first.id, first.id))
            elif isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name):
                found.add(f"{names.get(first.value.id, first.value.id)}.{first.attr}")
    return found


def _spec(chart) -> dict:
    return described(chart if isinstance(chart, dict) else chart.to_dict())


def _cases():
    """builder -> (its inputs as a function, the description it must carry, or the words and
    numbers it must hold)."""
    from tfviz.analysis import pipeline, scaling
    from tfviz.viz import forward, lab, layernorm, long_sequences as ls, lookup
    from tfviz.viz import pipeline as vp, positions, scaling as vs

    third = np.full((3, 3), 1 / 3)
    return {
        "tfviz.viz.pipeline.predictions_chart": (
            lambda: vp.predictions_chart([(5, "␣dog", 0.4), (7, "␣cat", 0.35)],
                                         title="After 'the', the next token is probably…"),
            "After 'the', the next token is probably…"),
        "tfviz.viz.pipeline.rnn_vs_transformer_chart": (
            lambda: vp.rnn_vs_transformer_chart(pipeline.rnn_vs_transformer(range(2, 6))),
            "RNN vs transformer as the sentence grows"),
        "tfviz.viz.lookup.weights_chart": (
            lambda: lookup.weights_chart(["a → 1", "b → 2"], np.array([0.7, 0.3]), np.array([1.0, 0.0])),
            "Weight on each value"),
        "tfviz.viz.positions.similarity_chart": (
            lambda: positions.similarity_chart({"sine": np.array([1.0, 0.9, 0.8])}),
            "How alike are two position vectors, by distance?"),
        "tfviz.viz.positions.rope_chart": (
            lambda: positions.rope_chart(
                [{"query position": m, "key position": m - 1, "distance": 1, "q·k after rotation": 0.5}
                 for m in (1, 2, 3)], title="RoPE: the same q and k placed at other positions"),
            "RoPE: the same q and k placed at other positions"),
        "tfviz.viz.scaling.variance_chart": (
            lambda: vs.variance_chart(scaling.dot_product_variance((4, 16), 200, 0)),
            "Variance of q·k grows like d_k; ÷√d_k keeps it at 1"),
        "tfviz.viz.scaling.example_row_chart": (
            lambda: vs.example_row_chart(*scaling.example_row(16, seed=0), 16),
            "One query, 6 random keys, d_k = 16"),
        "tfviz.viz.scaling.saturation_chart": (
            lambda: vs.saturation_chart(scaling.saturation((4, 16), n_rows=10)),
            "Without the scale, softmax turns one-hot and its gradient vanishes"),
        "tfviz.viz.layernorm.residual_norm_chart": (
            lambda: layernorm.residual_norm_chart({"gpt-tiny": [("embed", 1.0), ("L0 attn", 2.0)]},
                                                  title="Size of the residual stream through the stack"),
            "Size of the residual stream through the stack"),
        "tfviz.viz.forward.params_chart": (
            lambda: forward.params_chart({"embeddings": 100, "attention": 200},
                                         title="Parameters of gpt-tiny by part (total 300)"),
            "Parameters of gpt-tiny by part (total 300)"),
        "tfviz.viz.long_sequences.mask_chart": (
            lambda: ls.mask_chart(np.tri(4, dtype=bool), "causal"), "causal"),
        "tfviz.viz.long_sequences.reach_chart": (
            lambda: ls.reach_chart(np.array([[0, 0, 1, 1], [1, 1, 1, 1]], dtype=bool)),
            "Which of 4 positions token 3 has read after 1 to 2 layers: 2 after 1, 4 after 2."),
        "tfviz.viz.long_sequences.cost_chart": (
            lambda: ls.cost_chart((64, 128), (1.0, 4.0), (1.0, 2.0)),
            "Measured time (ms) of full and sliding-window attention at n = 64, 128, with dashed "
            "references ∝ n² and ∝ n·w."),
        "tfviz.viz.long_sequences.attention_map": (
            lambda: ls.attention_map(third, ["a", "b", "c"], "head 0"), "head 0"),
        "tfviz.viz.long_sequences.linformer_chart": (
            lambda: ls.linformer_chart(np.full((3, 2), 0.5), ["a", "b", "c"]),
            "Weights of each of 3 queries over the 2 pooled rows of keys."),
        "tfviz.viz.long_sequences.error_chart": (
            lambda: ls.error_chart((1, 2), (0.9, 0.5), (0.5, 0.1)),
            "Relative output error against k = 1, 2: mean-pooled keys and values, and the "
            "closest rank-k map."),
        "tfviz.viz.lab.curves_chart": (
            lambda: lab.curves_chart(("1: lr 0.01", "2: lr 0.001"), ((2.0, 1.5), (2.0, 1.9)),
                                     ((0, 2), (0, 2)), ((0.1, 0.5), (0.1, 0.2))),
            "Training loss (left) and held-out accuracy (right) against steps, for 2 runs: "
            "1: lr 0.01; 2: lr 0.001."),
        "tfviz.viz.lab.attention_over_time": (
            lambda: lab.attention_over_time(np.stack([third, third]), (0, 100), ("a", "b", "c"),
                                            "layer 0, head 1"),
            "layer 0, head 1: one head's attention weights, queries as rows and keys as columns, "
            "at each of 2 checkpoints; the checkpoint slider picks one."),
        # lesson 15's fine-tuning comparison writes its own, with every point's numbers
        "tfviz.viz.finetune_runs.params_accuracy_chart": (
            lambda: pytest.importorskip("tfviz.viz.finetune_runs").params_accuracy_chart(
                ["head only", "full"], [130, 104_000], [0.6, 0.9], 0.5),
            ("head only", "130", "60.0%", "full", "104,000", "90.0%")),
        "tfviz.viz.lab.expert_load_chart": (
            lambda: lab.expert_load_chart((0, 100), np.array([[0.5, 0.5], [0.7, 0.3]]), "layer 0"),
            "layer 0"),
    }


CASES = _cases()


def test_every_builder_a_lesson_draws_is_checked_here():
    drawn = set().union(*(drawn_builders(p.read_text(), "vega") for p in LESSONS))
    assert len(drawn) >= 15  # the lessons' Vega-Lite charts outside the instant views
    assert drawn <= set(CASES), f"add a case for {sorted(drawn - set(CASES))}"


def test_the_check_reads_both_import_forms():
    source = ("from tfviz.viz import lab as lv\nfrom tfviz.viz.pipeline import predictions_chart\n"
              "vega(lv.curves_chart, a)\nvega(predictions_chart, p, title=t)\nchart(other, x)\n")
    assert drawn_builders(source, "vega") == {"tfviz.viz.lab.curves_chart",
                                              "tfviz.viz.pipeline.predictions_chart"}


@pytest.mark.parametrize("builder", sorted(CASES))
def test_every_chart_a_lesson_draws_has_a_description(builder):
    build, words = CASES[builder]
    description = _spec(build())["description"]
    if isinstance(words, str):
        assert description == words
    else:  # a description written from the data: each of these numbers in it
        assert all(w in description for w in words), description


def test_the_drawing_path_adds_the_description():
    """``widgets._vega_spec`` (what ``vega`` draws) carries it, for altair and dict builders."""
    from tfviz.ui.widgets import _vega_spec
    from tfviz.viz import forward, pipeline

    spec = _vega_spec("t.params", ({"a": 1},), {"title": "Parameters by part"}, _builder=forward.params_chart)
    assert spec["description"] == "Parameters by part"
    rows = [(1, "a", 0.5)]
    spec = _vega_spec("t.preds", (rows,), {"title": "Next"}, _builder=pipeline.predictions_chart)
    assert spec["description"] == "Next" and spec["title"] == "Next"


def test_an_instant_chart_cannot_be_built_without_a_description():
    body = {"mark": "point"}
    assert instant.spec(body, params=[], datasets={"d": [{}]}, description="Points.")["description"] == "Points."
    with pytest.raises(ValueError, match="description"):
        instant.spec(body, params=[], datasets={"d": [{}]}, description="  ")


def test_every_instant_chart_a_lesson_draws_passes_its_own_description():
    """Each ``spec(...)`` call of the instant builders names a description in words."""
    calls = []
    for path in sorted((ROOT / "tfviz" / "viz").glob("instant*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "spec":
                words = {k.arg: k.value for k in node.keywords}.get("description")
                text = ast.unparse(words) if words is not None else ""
                calls.append((path.name, node.lineno, text))
    assert len(calls) >= 30
    bare = [(f, line) for f, line, text in calls if len(text.strip("'\" ")) < 10]
    assert not bare, f"instant charts without a description: {bare}"
    drawn = set().union(*(drawn_builders(p.read_text(), "instant") for p in LESSONS))
    assert {b.rsplit(".", 2)[-2] for b in drawn} <= {p.stem for p in (ROOT / "tfviz" / "viz").glob("instant*.py")}
