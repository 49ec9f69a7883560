"""Tables, arrows and the engine comparison for the practice pages (no streamlit)."""
import numpy as np
import pytest

from tfviz.exercises import EXERCISES, make_instance, solve_attention, solve_multihead
from tfviz.exercises.attention import select
from tfviz.viz.exercises import (arrows_numbers, attention_setup, data_tables, engine_agreement,
                                 exercise_arrows, value_tables)
from tfviz.viz.kit.instant import spec_tokens
from tfviz.viz.kit.style import token_labels

FLYING_X = [[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]]


def _tables(pairs):
    return dict(pairs)


def test_flying_arrows_data_tables_are_labelled_with_the_words():
    tables = _tables(data_tables(make_instance("flying-arrows")))
    X = tables["Input vectors X (one row per word)"]
    assert list(X.index) == ["flying", "arrows"]
    assert list(X.columns) == [f"dim {j}" for j in range(1, 7)]
    assert X.to_numpy().tolist() == np.array(FLYING_X, float).tolist()
    W = tables["Weight matrices: W^Q | W^K | W^V"]
    assert list(W.columns) == ["W^Q·1", "W^Q·2", "W^K·1", "W^K·2", "W^V·1", "W^V·2"]
    expected = np.concatenate([select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5])], axis=1)
    assert np.array_equal(W.to_numpy(), expected)


def test_how_are_you_has_one_weight_table_per_head():
    titles = [t for t, _ in data_tables(make_instance("how-are-you"))]
    assert titles == ["Input vectors X (one row per word)", "Head 1: W^Q | W^K | W^V",
                      "Head 2: W^Q | W^K | W^V"]


def test_causal_mask_scores_have_words_on_both_axes():
    inst = make_instance("causal-mask")
    (title, table), = data_tables(inst)
    assert title.startswith("Scores")
    assert list(table.index) == list(table.columns) == ["the", "cat", "sat"]
    assert table.to_numpy().tolist() == [[2, 1, 0], [1, 3, -1], [0, 2, 1]]


def test_other_exercises_tables():
    tm = _tables(data_tables(make_instance("thinking-machines")))
    scores = tm["Scores of the query with each key"]
    assert scores.to_numpy().tolist() == [[112.0, 96.0]]
    assert list(scores.columns) == ["with “Thinking”", "with “Machines”"]
    assert tm["Settings"].loc["d_k (size of a query or key)", "value"] == "64"
    ln = _tables(data_tables(make_instance("layernorm")))
    vec = ln["Given vectors: x, γ, β"]
    assert vec.loc["x"].tolist() == [2, 4, 6, 8] and vec.loc["β"].tolist() == [0, 1, 0, -1]
    beam = _tables(data_tables(make_instance("beam-search")))
    probs = beam["Next-token probabilities after each prefix"]
    assert probs.loc["(start)"].tolist() == [0.2, 0.8] and probs.loc["AB", "P(A)"] == 0.95
    bpe = _tables(data_tables(make_instance("bpe-merges")))
    assert bpe["Corpus (word → how often it occurs)"].loc["meat"].tolist() == [5]
    params = _tables(data_tables(make_instance("parameter-count")))["Settings"]
    assert params.loc["|V| (vocabulary size)", "value"] == "37000"
    moe = _tables(data_tables(make_instance("moe-gate")))
    assert list(moe["Router matrix W_r (one row per expert)"].index) == [
        f"expert {i}" for i in range(1, 5)]
    pos = _tables(data_tables(make_instance("positional-table")))
    assert pos["Words and their positions"]["word"].tolist() == ["I", "am", "a", "Robot"]


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
@pytest.mark.parametrize("seed", [None, 3])
def test_every_exercise_and_step_gives_tables(exercise_id, seed):
    inst = make_instance(exercise_id, seed)
    assert data_tables(inst)
    for step in inst.steps:
        for title, table in value_tables(step.values, inst.tokens):
            assert title and table.shape[0] >= 1


def test_value_tables_match_the_worked_numbers():
    inst = make_instance("flying-arrows")
    softmax_step = next(s for s in inst.steps if s.title == "Softmax")
    (title, table), = value_tables(softmax_step.values, inst.tokens)
    assert title == "attention weights"
    assert list(table.index) == list(table.columns) == ["flying", "arrows"]
    assert table.loc["flying"].tolist() == [0.8044, 0.1956]  # the source's worked numbers
    mask = make_instance("causal-mask").steps[0]
    (_, masked), = value_tables(mask.values, ("the", "cat", "sat"))
    assert masked.loc["the", "cat"] == -np.inf and masked.loc["sat", "cat"] == 2
    beam = make_instance("beam-search").steps[1]
    (_, cands), = value_tables(beam.values)
    assert cands.loc["BA", "probability"] == 0.44 and list(cands.index)[:2] == ["BA", "BB"]
    scalars = value_tables({"count": 14, "pair": ("e", "a"), "std": 2.2360679})
    assert scalars[0][1]["value"].tolist() == ["14", "e, a", "2.2361"]


def _arrow_weights(spec: dict) -> dict[tuple[int, int], np.ndarray]:
    """(head, query) -> the weights the flying arrows carry (NaN: a key the mask hides)."""
    return {(r["head"], r["q"]): np.array([np.nan if x == "" else float(x) for x in r["w"].split(",")])
            for r in spec["datasets"]["weights"]}


def test_exercise_arrows_are_lesson_5s_flying_arrows_opening_on_the_asked_word():
    inst = make_instance("flying-arrows")
    spec = exercise_arrows(inst.arrows)
    first = spec["datasets"]["weights"][0]
    assert spec_tokens(spec) == token_labels(inst.arrows.tokens)
    assert first["dq"] == inst.arrows.focus == 0  # "flying", the word the exercise asks about
    carried = _arrow_weights(spec)
    np.testing.assert_allclose(carried[0, 0], inst.arrows.weights[0, 0], atol=5e-5)  # 4 decimals
    assert np.round(carried[0, 0], 2).tolist() == [0.8, 0.2]  # "flying" gives itself 0.80, "arrows" 0.20
    params = {p["name"]: p for p in spec["params"]}
    assert "bind" not in params["layer"] and params["layer"]["value"] == 0  # one layer: no slider
    assert params["head"]["bind"]["max"] == inst.arrows.weights.shape[0] - 1


def test_exercise_arrows_hide_later_words_and_carry_every_head():
    inst = make_instance("how-are-you")  # "are" may see "how" and itself, not "you"
    spec = exercise_arrows(inst.arrows)
    carried = _arrow_weights(spec)
    w = inst.arrows.weights
    assert set(carried) == {(h, q) for h in range(w.shape[0]) for q in range(w.shape[1])}
    for (h, q), row in carried.items():  # every weight to 4 decimals, masked keys empty
        np.testing.assert_allclose(row, np.where(w[h, q] > 0, w[h, q], np.nan), atol=5e-5)
    assert np.isnan(carried[1, 1][2]) and not np.isnan(carried[1, 1][:2]).any()
    mask = make_instance("causal-mask")  # no asked word: the last one, which sees most
    assert exercise_arrows(mask.arrows)["datasets"]["weights"][0]["dq"] == len(mask.arrows.tokens) - 1


def test_attention_setup_only_for_exercises_with_matrices():
    runnable = {e for e in EXERCISES if attention_setup(make_instance(e)) is not None}
    assert runnable == {"flying-arrows", "how-are-you"}
    X, heads, causal = attention_setup(make_instance("how-are-you"))
    assert X.shape == (3, 4) and len(heads) == 2 and causal
    assert attention_setup(make_instance("flying-arrows"))[2] is False


def test_engine_agreement_with_a_stand_in_engine_reports_the_gap():
    inst = make_instance("flying-arrows")
    right = solve_attention(FLYING_X, select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5]))

    def off_by_a_bit(X, heads, causal=False):
        return [right.weights + 0.001], [right.output]

    agreement = engine_agreement(inst, engine=off_by_a_bit)
    assert agreement.max_difference == pytest.approx(0.001)
    table = agreement.table
    assert table["what"].tolist() == ["weights of “flying”", "output of “flying”"]
    assert table["hand solver"].tolist() == ["[0.8044, 0.1956]", "[0.6089, 0.1956]"]
    assert table["engine"].tolist()[0] == "[0.8054, 0.1966]"
    assert engine_agreement(make_instance("layernorm")) is None


@pytest.mark.parametrize("seed", [None, 11])
def test_engine_agrees_with_the_hand_solver(seed):
    inst = make_instance("how-are-you", seed)
    agreement = engine_agreement(inst)
    assert agreement.max_difference < 1e-5
    assert agreement.table["head"].tolist() == [1, 1, 2, 2]
    X, heads, _ = attention_setup(inst)
    hand = solve_multihead(X, heads, causal=True)
    focus = inst.focus
    np.testing.assert_allclose(hand.heads[0].weights[focus], inst.field("weights").expected)
    np.testing.assert_allclose(hand.concat[focus], inst.field("concat").expected)


def test_every_exercise_has_its_headline_formula():
    from tfviz.viz.exercises import FORMULAS

    assert set(FORMULAS) == set(EXERCISES)
    assert all(f.count("{") == f.count("}") for f in FORMULAS.values())  # balanced LaTeX groups


def test_the_arrows_numbers_are_each_heads_weights_by_word():
    inst = make_instance("how-are-you")
    tables = arrows_numbers(inst.arrows)
    w = inst.arrows.weights
    assert [t.name for t in tables] == [f"attention weights · layer 0, head {h}" for h in range(w.shape[0])]
    for h, t in enumerate(tables):
        np.testing.assert_array_equal(t.values, w[h])  # the same numbers, no arithmetic between
        assert t.rows == t.cols == tuple(token_labels(inst.arrows.tokens))
