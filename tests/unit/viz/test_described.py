"""Every chart has a text alternative (WCAG 2.2 AA, 1.1.1): Vega makes a spec's
``description`` the chart's accessible name, what a screen reader says first.

- No chart can be built without one (``tfviz.viz.kit.charts.chart`` refuses).
- Every other Vega-Lite chart a lesson draws goes through ``tfviz.ui.drawing.vega``, which
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

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.style import described

ROOT = Path(__file__).resolve().parents[3]
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
    from tfviz.ui.demo_cache import rnn_vs_transformer_view
    from tfviz.exercises import make_instance
    from tfviz.viz import block, forward, heads, lab, long_sequences as ls, lookup, masking, pretraining
    from tfviz.viz.exercises import exercise_arrows
    from tfviz.viz import pipeline as vp, positions, scaling as vs
    from tfviz.viz import vision as vv

    third = np.full((3, 3), 1 / 3)
    return {
        "tfviz.viz.exercises.exercise_arrows": (  # lesson 5's flying arrows, for an exercise
            lambda: exercise_arrows(make_instance("flying-arrows").arrows),
            "Lines from the chosen query to every key, as wide as the attention weight."),
        "tfviz.viz.pipeline.predictions_chart": (
            lambda: vp.predictions_chart([(5, "␣dog", 0.4), (7, "␣cat", 0.35)],
                                         title="After 'the', the next token is probably…"),
            "After 'the', the next token is probably… The most likely next tokens and their "
            "probabilities: ␣dog 0.400, ␣cat 0.350."),
        "tfviz.ui.demo_cache.rnn_vs_transformer_view": (  # the tour's, through its cached builder
            lambda: rnn_vs_transformer_view(5, 4),
            "RNN vs transformer as the sentence grows: sequential steps and the longest path "
            "between two tokens for sentences of 2 tokens up to the length the slider under the "
            "chart picks (at most 5); an RNN's grow with the length, a transformer's stay at 1."),
        "tfviz.viz.pipeline.rnn_vs_transformer_chart": (
            lambda: vp.rnn_vs_transformer_chart(pipeline.rnn_vs_transformer(range(2, 6)), shown=4),
            "RNN vs transformer as the sentence grows: sequential steps and the longest path "
            "between two tokens for sentences of 2 tokens up to the length the slider under the "
            "chart picks (at most 5); an RNN's grow with the length, a transformer's stay at 1."),
        "tfviz.viz.lookup.weights_chart": (
            lambda: lookup.weights_chart(["a → 1", "b → 2"], np.array([0.7, 0.3]), np.array([1.0, 0.0])),
            "For each entry, the weight a hard lookup puts on its value beside the weight "
            "attention's softmax puts on it."),
        "tfviz.viz.positions.similarity_chart": (
            lambda: positions.similarity_chart({"sine": np.array([1.0, 0.9, 0.8])}),
            "Cosine similarity of two position vectors against the distance between their "
            "positions, one line per table: sine."),
        "tfviz.viz.positions.rope_chart": (
            lambda: positions.rope_chart(
                [{"query position": m, "key position": m - 1, "distance": 1, "q·k after rotation": 0.5}
                 for m in (1, 2, 3)], title="RoPE: the same q and k placed at other positions"),
            "RoPE scores q·k against the query's position, one line per distance between query "
            "and key."),
        "tfviz.viz.positions.distance_vectors_chart": (
            lambda: positions.distance_vectors_chart(np.ones((5, 2)), np.zeros((5, 2)), range(-2, 3),
                                                     [True, True, True, False, False], title="S"),
            "Shaw et al.'s learned vectors of one layer: one row per distance j − i from -2 to 2, "
            "the 2 numbers of the key vector a^K and then the 2 of the value vector a^V; a black "
            "frame holds the rows from -2 to 0, the distances training could read."),
        "tfviz.viz.positions.distance_preference_chart": (
            lambda: positions.distance_preference_chart([-1, 0], np.ones((2, 3, 2)), [4, 5], title="P"),
            "For each of 2 layers, each head's position term q·aᴷ/√d averaged over many query and "
            "key pairs, against the distance j − i between them, one line a head; a large dot "
            "marks each head's highest."),
        "tfviz.viz.positions.bucket_chart": (
            lambda: positions.bucket_chart([{"distance": 0, "bucket": 0, "bucketing": "decoder",
                                             "label": "0"}], title="B"),
            "T5's bucket of every distance j − i, one stepped line per way of bucketing (decoder): "
            "one bucket per distance near the query, then ever wider ranges of distances sharing one."),
        "tfviz.viz.positions.bucket_bias_chart": (
            lambda: positions.bucket_bias_chart([0, -1, -2], np.zeros((2, 3)), 1, title="T"),
            "The bias each of 2 heads adds to a score, against how far back the key is, from 0 to "
            "2; a dashed line at 1 back marks the farthest distance training read."),
        "tfviz.viz.positions.vectors_heatmap": (
            lambda: positions.vectors_heatmap(np.eye(2, 3), ["a", "b"], title="E rows"),
            "One row of 3 numbers per token, blue negative and red positive."),
        "tfviz.viz.positions.pe_heatmap": (
            lambda: positions.pe_heatmap(np.zeros((4, 2)), title="PE"),
            "The sine table of position vectors: one row per position k, one column per "
            "dimension j, values from −1 to 1."),
        "tfviz.viz.positions.position_cosine_heatmap": (
            lambda: positions.position_cosine_heatmap(np.eye(5), 3, title="C"),
            "Cosine similarity of every pair of the first 5 learned position rows; a black frame "
            "marks the first 3, the rows training reached."),
        "tfviz.viz.positions.rope_turn_figure": (
            lambda: positions.rope_turn_figure(np.ones(8), np.ones(8), np.ones(8), np.ones(8), 1, 0),
            "For each of the first pairs of dimensions, the query q and the key k as arrows from "
            "the origin, dotted before RoPE turned them and solid after: pair 0 is dimensions 0 "
            "and 1; pair 1 is dimensions 2 and 3; pair 2 is dimensions 4 and 5; pair 3 is "
            "dimensions 6 and 7."),
        "tfviz.viz.positions.rope_frequency_chart": (
            lambda: positions.rope_frequency_chart(
                [{"pair i": i, "scheme": s, "θ_i (radians per position)": t / f,
                  "wavelength (positions per turn)": 6.28 / t}
                 for s, f in (("plain", 1), ("linear ×4", 4)) for i, t in enumerate((1.0, 0.1))]),
            "The angle each pair of dimensions turns per position, against the pair's index, on "
            "a log scale: one line per scheme (plain, linear ×4). Later pairs turn more slowly."),
        "tfviz.viz.positions.rope_reach_chart": (
            lambda: positions.rope_reach_chart(
                [{"pair i": i, "scheme": s, "reads as": 511 / f} for s, f in (("plain", 1), ("linear ×4", 4))
                 for i in range(2)], 511, 128),
            "For each pair of dimensions, the position that position 511 is turned like, one line "
            "per scheme (plain, linear ×4); a dashed line marks position 127, the last of the "
            "original context."),
        "tfviz.viz.positions.alibi_figure": (
            lambda: positions.alibi_figure(-np.ones((2, 3, 3)), np.array([0.5, 0.25]), ["a", "b", "c"]),
            "ALiBi's distance penalty for each of 2 heads: one query × key map per head, darker "
            "blue for a larger penalty."),
        "tfviz.viz.positions.permutation_map": (
            lambda: positions.permutation_map(np.eye(2), np.eye(2), np.array([1, 0]), ["a", "b"],
                                              reordered_first=True),
            "Outputs of the model without positions, reorder, then run: one row per token, "
            "labelled with where it stood."),
        "tfviz.viz.lookup.key_plane": (
            lambda: lookup.key_plane(["a", "b"], np.eye(2), np.array([1.0, 0.0]), np.array([0.7, 0.3])),
            "The keys as dots in their plane, bigger for more attention weight, and the query as "
            "an arrow from the origin."),
        "tfviz.viz.lookup.sweep_chart": (
            lambda: lookup.sweep_chart([{"temperature": 1.0, "weight on best key": 0.6,
                                         "distance from hard answer": 0.4}], current=1.0),
            "The weight softmax puts on the best-matching key, against the temperature τ on a "
            "log scale; a dashed line marks your τ = 1."),
        "tfviz.viz.heads.coref_figure": (
            lambda: heads.coref_figure(np.full((1, 2, 2), 0.3), ["animal", "street"], best=(0, 1),
                                           probe="8 it"),
            "For every layer and head, the attention weight 8 it puts on each noun (animal, street); "
            "the head with the biggest gap, L0 H1, is marked."),
        "tfviz.viz.masking.logit_change_figure": (
            lambda: masking.logit_change_figure(np.array([0.0, 1.0, 2.0]), ["a", "b", "c"], 1),
            "The largest change of any logit at each of 3 positions after the token at position 1 "
            "was replaced; earlier positions are green and labelled with their change."),
        "tfviz.viz.pretraining.masking_shares_figure": (
            lambda: pretraining.masking_shares_figure(np.full((3, 4), 0.5), (0.15, 0.8, 0.1, 0.1)),
            "The running share of each masking outcome over 3 draws (log scale), each with its "
            "target as a dotted line: chosen (of all positions) 0.15; [MASK] (of the chosen) 0.8; "
            "random token (of the chosen) 0.1; unchanged (of the chosen) 0.1."),
        "tfviz.viz.pretraining.trainable_figure": (
            lambda: pretraining.trainable_figure(["full", "LoRA, r = 8"], [1000, 80], title="t"),
            "How many numbers each way of fine-tuning trains (log scale): full 1,000; LoRA, r = 8 80."),
        "tfviz.viz.scaling.variance_chart": (
            lambda: vs.variance_chart(scaling.dot_product_variance((4, 16), 200, 0)),
            "Variance of q·k grows like d_k; ÷√d_k keeps it at 1: measured variance (points) and "
            "theory (dashed) at d_k = 4, 16."),
        "tfviz.viz.scaling.example_row_chart": (
            lambda: vs.example_row_chart(*scaling.example_row(16, seed=0), 16),
            "One query, 6 random keys, d_k = 16: each key's softmax weight without and with ÷√d_k."),
        "tfviz.viz.scaling.saturation_chart": (
            lambda: vs.saturation_chart(scaling.saturation((4, 16), n_rows=10)),
            "Without the scale, softmax turns one-hot and its gradient vanishes: the largest "
            "softmax weight, the entropy and the largest gradient entry against d_k, with and "
            "without the scale."),
        "tfviz.viz.block.residual_norm_chart": (
            lambda: block.residual_norm_chart({"gpt-tiny": [("embed", 1.0), ("L0 attn", 2.0)]},
                                                  title="Size of the residual stream through the stack"),
            "The mean length of the tokens' vectors in the residual stream after each sublayer, one "
            "line per model: gpt-tiny."),
        "tfviz.viz.block.gamma_beta_heatmap": (
            lambda: block.gamma_beta_heatmap({"L0 ln1": (np.ones(3), np.zeros(3))}, which="beta"),
            "The learned β (shift) of each of the model's 1 LayerNorms (rows), dimension by dimension "
            "(columns)."),
        "tfviz.viz.forward.params_chart": (
            lambda: forward.params_chart({"embeddings": 100, "attention": 200},
                                         title="Parameters of gpt-tiny by part (total 300)"),
            "Parameters of gpt-tiny by part (total 300): embeddings 100, attention 200."),
        "tfviz.viz.long_sequences.mask_chart": (
            lambda: ls.mask_chart(np.tri(4, dtype=bool), "causal"),
            "causal: a grid of 4 queries (rows) by 4 keys (columns); 10 of the 16 pairs may read."),
        "tfviz.viz.long_sequences.reach_chart": (
            lambda: ls.reach_chart(np.array([[0, 0, 1, 1], [1, 1, 1, 1]], dtype=bool)),
            "Which of 4 positions token 3 has read after 1 to 2 layers: 2 after 1, 4 after 2."),
        "tfviz.viz.long_sequences.cost_chart": (
            lambda: ls.cost_chart((64, 128), (1.0, 4.0), (1.0, 2.0)),
            "Measured time (ms) of full and sliding-window attention at n = 64, 128, with dashed "
            "references ∝ n² and ∝ n·w."),
        "tfviz.viz.long_sequences.whatif_maps": (
            lambda: ls.whatif_maps(np.stack([[third]]), np.stack([[third]]), ["a", "b", "c"],
                                   "sliding window"),
            "One head's attention weights as the trained model reads the text with full attention "
            "and through the sliding window pattern, queries as rows and keys as columns; the "
            "layer and head sliders pick the head."),
        "tfviz.viz.long_sequences.linformer_views": (
            lambda: ls.linformer_views(np.full((1, 1, 3, 2), 0.5), np.ones((1, 3)), np.zeros((1, 3)),
                                       ["a", "b", "c"]),
            "Linformer with keys and values mean-pooled to k = 2 rows: each query's weights over "
            "the pooled rows for the chosen layer and head, then the layer's relative output error "
            "against k for mean-pooling and for the closest rank-k map."),
        "tfviz.viz.lab.curves_chart": (
            lambda: lab.curves_chart(("1: lr 0.01", "2: lr 0.001"), ((2.0, 1.5), (2.0, 1.9)),
                                     ((0, 2), (0, 2)), ((0.1, 0.5), (0.1, 0.2))),
            "Training loss (left) and held-out accuracy (right) against steps, for 2 runs: "
            "1: lr 0.01; 2: lr 0.001."),
        "tfviz.viz.lab.attention_forming": (
            lambda: lab.attention_forming([[np.stack([[third]])], [np.stack([[third]])]], (0, 100),
                                          [("a", "b", "c")]),
            "One head's attention weights on a held-out example, queries as rows and keys as "
            "columns, at each of 2 checkpoints of training; sliders pick the checkpoint, the layer "
            "and the head, a select box the example."),
        # lesson 19's charts say what they show; the matrices and bars name their own numbers
        "tfviz.viz.vision.image_grid_figure": (
            lambda: vv.image_grid_figure(
                np.zeros((4, 4, 3)), 2, title="Your image"),
            "The 4×4 image, pixel by pixel, cut by yellow lines into 4 patches of 2×2 pixels, "
            "named p0 to p3 row by row."),
        "tfviz.viz.vision.patches_figure": (
            lambda: vv.patches_figure(np.zeros((4, 12)), 2),
            "The image's 4 patches as the rows of a 4 × 12 matrix: each row holds one patch's 12 "
            "numbers, pixel by pixel, row after row, each pixel's channels in turn, from 0 (dark) "
            "to 1 (bright)."),
        "tfviz.viz.vision.matrix_figure": (
            lambda: vv.matrix_figure(
                np.array([[0.5, -2.0]]), title="class token", y_labels=["[CLS]"], y_title=""),
            "class token: 1 row of 2 numbers, one cell each, blue negative and red positive, on a "
            "scale from −2.00 to 2.00."),
        "tfviz.viz.vision.similarity_figure": (
            lambda: vv.similarity_figure(np.eye(2), 3),
            "Cosine similarity, from −1 to 1, of patch p3's learned position vector with each "
            "patch's, laid out as the 2 × 2 grid of patches; p3 with itself is 1."),
        "tfviz.viz.vision.probabilities_figure": (
            lambda: vv.probabilities_figure(
                ["circle", "square"], np.array([0.25, 0.75]), "circle"),
            "vit-tiny's probability for each class: circle 0.250; square 0.750. The shape drawn "
            "is circle."),
        # lesson 15's fine-tuning comparison writes its own, with every point's numbers
        "tfviz.viz.finetune_runs.params_accuracy_chart": (
            lambda: pytest.importorskip("tfviz.viz.finetune_runs").params_accuracy_chart(
                ["head only", "full"], [130, 104_000], [0.6, 0.9], 0.5),
            ("head only", "130", "60.0%", "full", "104,000", "90.0%")),
        # lesson 10's three activation functions, the model's own drawn thick
        "tfviz.viz.ffn.activation_curves_chart": (
            lambda: pytest.importorskip("tfviz.viz.ffn").activation_curves_chart(
                {"u": np.array([-1.0, 0.0, 1.0]), "ReLU": np.array([0.0, 0.0, 1.0]),
                 "SiLU": np.array([-0.27, 0.0, 0.73])}, own="SiLU"),
            "Three activation functions over the same inputs: ReLU cuts every negative input to 0, "
            "GELU and SiLU let small negative values through and dip below 0."),
        "tfviz.viz.lab.expert_load_chart": (
            lambda: lab.expert_load_chart((0, 100), np.array([[[0.5, 0.5]], [[0.7, 0.3]]])),
            "Each of 2 experts' share of the held-out tokens that chose it first, against training "
            "steps; the layer slider picks one of 1 layers."),
        "tfviz.viz.lab.grad_norms_chart": (
            lambda: lab.grad_norms_chart(("1: with residuals", "2: no residuals"), ((8, 16), (8, 16)),
                                         ((np.array([2.0, 1.0]),) * 2, (np.array([1e-6, 1.0]),) * 2)),
            "The gradient norm of each layer's weights, on a log scale, for 2 runs (1: with "
            "residuals; 2: no residuals), at one of 2 checkpoints of training, which the slider picks."),
        # lesson 15's held-out checks while fine-tuning, every way's last one in words
        "tfviz.viz.finetune_runs.accuracy_curves_chart": (
            lambda: pytest.importorskip("tfviz.viz.finetune_runs").accuracy_curves_chart(
                ["full", "from scratch"], [((0, 0.5), (40, 1.0)), ((0, 0.5), (40, 0.5))], 0.5),
            "Held-out accuracy of each way of fine-tuning against the steps trained, checked 2 "
            "times: full: 100.0% after 40 steps; from scratch: 50.0% after 40 steps."),
        # lesson 5's contextual vectors and attention without projections
        "tfviz.viz.contextual.cosine_by_stage": (
            lambda: pytest.importorskip("tfviz.viz.contextual").cosine_by_stage(
                pytest.importorskip("tfviz.analysis.contextual").SameWord(
                    "it", 2, 2, (pytest.importorskip("tfviz.analysis.contextual").Stage(
                        "token embedding", 1.0, True, (), ()),), True), "your text", "the second text"),
            "The cosine between the two vectors of the token 'it', at each stage of the residual "
            "stream; 1 means the same direction."),
        "tfviz.viz.contextual.plain_against_heads": (
            lambda: pytest.importorskip("tfviz.viz.contextual").plain_against_heads(
                third, np.stack([third]), ["a", "b", "c"]),
            "Two attention maps of the same tokens: scores made from the vectors themselves, and "
            "one head of the model's first layer."),
        # lesson 7's pruning what-if, both ends in words
        "tfviz.viz.heads.pruning_chart": (
            lambda: pytest.importorskip("tfviz.viz.heads").pruning_chart(
                pytest.importorskip("tfviz.experiments.pruning").Pruning(
                    1.0, {(0, 0): 0.1}, ((0, 0),), (1.0, 1.5)), "gpt-tiny"),
            "The next-token loss of gpt-tiny with all 1 heads and after each further head is "
            "removed, from 1.000 to 1.500."),
        # lesson 3's shifted reading: each scheme's two ends in words
        "tfviz.viz.positions.shifted_chart": (
            lambda: pytest.importorskip("tfviz.viz.positions").shifted_chart(
                {"sines": pytest.importorskip("tfviz.experiments.extrapolation").Shifted(
                    (0, 5), (1.0, 4.0), 21)}, 20),
            ("sines from 1.000 at 0 to 4.000 at 5",)),
        # lessons 24-27, looking inside, and the lab's induction task
        "tfviz.viz.interpret.induction_training": (
            lambda: interp().induction_training([0, 20], [np.zeros((2, 2))] * 2, [3.3, 3.2], [3.4, 0.4]),
            "Left: the induction score of each of 4 heads at 2 checkpoints of training, with a "
            "dashed line at 0.5. Right: the held-out loss on the first and on the second copy of "
            "the repeated run at the same checkpoints."),
        "tfviz.viz.interpret.lens_map": (
            lambda: interp().lens_map(["a", "b", "c"], ["embeddings", "block 0"],
                                      [["x", "y", "z"]] * 2, np.full((2, 3), 0.5), np.full((2, 3), 0.25)),
            "The logit lens on 3 tokens: for each position and each of 2 stages (the embeddings, "
            "then after each block), the next token the model would predict if it stopped there, "
            "coloured by the probability the buttons under it choose."),
        "tfviz.viz.interpret.attribution_bars": (
            lambda: interp().attribution_bars(["a", "b"], ["x", "y"], [{"embed": 1.0, "L0H0": 2.0}] * 2,
                                              {"embed": "embeddings", "L0H0": "head"}, [3.0, 3.0],
                                              position=1),
            "Direct logit attribution: for the position the slider picks (of 2), one bar for each "
            "of 2 parts of the model, its direct share of the logit of the model's top next token "
            "there."),
        "tfviz.viz.interpret.patch_map": (
            lambda: interp().patch_map(third[:2], third[:2], ["a", "b", "c"]),
            "Activation patching over 2 layers and 3 positions: each cell is the corrupt run with "
            "one block's input at one position taken from the clean run, coloured by what the "
            "buttons under it choose."),
        "tfviz.viz.interpret.head_patch_map": (
            lambda: interp().head_patch_map(np.zeros((2, 4))),
            "Activation patching by head: 2 layers by 4 heads, each cell the corrupt run with one "
            "head's output taken from the clean run, coloured and labelled by the share of the "
            "clean answer restored."),
        "tfviz.viz.interpret.induction_heads": (
            lambda: interp().induction_heads(np.zeros((2, 4)), np.zeros((2, 4))),
            "Two maps of 2 layers by 4 heads: each head's induction score (left) and "
            "previous-token score (right) on the repeated sequence, labelled with their values."),
        "tfviz.viz.interpret.repeated_pattern": (
            lambda: interp().repeated_pattern([np.tril(np.ones((4, 4))) / 4], ["L1H2"],
                                              ["a", "b", "a", "b"], [1.0, 0.5, 0.1]),
            "Left: the attention weights of the head the select box picks (of 1) on a random "
            "sequence of 4 tokens whose second half repeats the first. Right: the loss of each "
            "token along it."),
    }


def interp():
    from tfviz.viz import interpret
    return interpret


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
    """``drawing.drawn`` (what ``vega`` draws) keeps a builder's description, and gives a
    chart that has none its title's text."""
    from tfviz.ui.drawing import drawn
    from tfviz.viz import forward

    spec = drawn("t.params", ({"a": 1},), {"title": "Parameters by part"}, _builder=forward.params_chart)[0]
    assert spec["description"] == "Parameters by part: a 1."
    bare = drawn("t.bare", ("Bars",), {}, _builder=lambda title: {"title": {"text": title}, "mark": "bar"})[0]
    assert bare["description"] == "Bars"


def test_a_chart_cannot_be_built_without_a_description():
    body = {"mark": "point"}
    assert chart(body, datasets={"d": [{}]}, description="Points.")["description"] == "Points."
    with pytest.raises(ValueError, match="description"):
        chart(body, datasets={"d": [{}]}, description="  ")


def test_every_chart_call_in_viz_passes_its_own_description():
    """Each ``chart(...)`` call of the builders names a description in words."""
    calls = []
    for path in sorted((ROOT / "tfviz" / "viz").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "chart":
                words = {k.arg: k.value for k in node.keywords}.get("description")
                text = ast.unparse(words) if words is not None else ""
                calls.append((path.name, node.lineno, text))
    assert len(calls) >= 60
    bare = [(f, line) for f, line, text in calls if len(text.strip("'\" ")) < 10]
    assert not bare, f"charts without a description: {bare}"
    drawn = set().union(*(drawn_builders(p.read_text(), "instant") for p in LESSONS))
    assert drawn and all(b.startswith("tfviz.viz.") for b in drawn), drawn
