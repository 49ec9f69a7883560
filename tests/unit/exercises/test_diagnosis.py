"""Every exercise: right answers accepted, each listed slip recognised, garbage harmless."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfviz.exercises.core import Instance, answer_field
from tfviz.exercises.registry import EXERCISES, make_instance

SEEDS = [None, *range(12)]

# Every slip each exercise promises to recognise (at least one variant must show each).
PROMISED = {
    "flying-arrows": {"no_scale", "divide_dk", "wrong_axis", "keys_not_values"},
    "how-are-you": {"no_scale", "divide_dk", "wrong_axis", "no_mask", "keys_not_values",
                    "heads_swapped"},
    "positional-table": {"swap", "exponent_i", "degrees"},
    "thinking-machines": {"no_scale", "divide_dk", "no_exp", "no_softmax"},
    "parameter-count": {"no_bias", "no_wo", "tied_twice", "no_ln"},
    "beam-search": {"greedy", "last_only", "added"},
    "layernorm": {"sample_var", "variance", "no_affine", "beta_first", "no_center",
                  "by_variance"},
    "moe-gate": {"chosen_only", "lowest", "renormalized", "not_renormalized", "gate_ignored",
                 "equal_weights", "dense", "raw_logits"},
    "bpe-merges": {"ignore_freq", "no_recount", "no_eow"},
    "causal-mask": {"wrong_triangle", "diagonal", "zero_fill", "no_mask", "wrong_axis"},
    "rope": {"exponent_i", "dim_index", "positive_exponent", "no_position", "sin_sign", "degrees",
             "halves", "k_not_rotated", "no_rotation", "score_sign"},
    "rmsnorm": {"centred", "sum_squares", "no_eps", "no_root", "by_std", "no_gamma"},
    "swiglu": {"swapped", "sigmoid", "silu_on_up", "silu_after", "no_up", "no_gate",
               "no_activation", "no_down"},
    "gqa-cache": {"query_heads", "no_kv_factor", "no_layers", "bits"},
    "dla-by-hand": {"no_center", "own_scale", "unscaled", "no_gamma"},
    "patching-map": {"from_one", "transposed", "smallest", "raw_half", "no_baseline",
                     "not_restored"},
    "induction-score": {"same_copy", "summed", "from_n_minus_1", "self_weight", "with_first"},
}


def as_text(field, values, places=None) -> str:
    if field.kind == "words":
        return ", ".join(values)
    out = []
    for v in np.ravel(values):
        if math.isinf(v):
            out.append("−∞" if v < 0 else "inf")
        else:
            out.append(repr(float(v)) if places is None else f"{v:.{places}f}")
    return " ".join(out)


def instances():
    for ex_id in EXERCISES:
        for seed in SEEDS:
            yield ex_id, seed


@pytest.mark.parametrize("ex_id, seed", list(instances()))
def test_right_answers_and_every_slip(ex_id, seed):
    inst = make_instance(ex_id, seed)
    assert isinstance(inst, Instance) and inst.prompt and inst.steps
    if seed is not None:
        assert inst.clean, "a variant must keep every slip, each told apart"
    for f in inst.answer_fields:
        fb = inst.check(f.name, as_text(f, f.expected))
        assert fb.correct, (f.name, fb)
        if f.kind == "numbers":  # rounded to 2 places, as a learner would type it
            assert inst.check(f.name, as_text(f, f.expected, places=2)).correct or f.tol == 0
        for m in f.mistakes:
            fb = inst.check(f.name, as_text(f, m.values))
            assert not fb.correct and m.name in fb.mistake.split("+"), (f.name, m.name, fb)
            assert fb.diagnosis


@pytest.mark.parametrize("ex_id", list(EXERCISES))
def test_every_promised_slip_is_shown_somewhere(ex_id):
    seen = set()
    for seed in SEEDS:
        inst = make_instance(ex_id, seed)
        for f in inst.answer_fields:
            for m in f.mistakes:
                if inst.check(f.name, as_text(f, m.values)).mistake:
                    seen.add(m.name)
    assert seen == PROMISED[ex_id]


def test_a_slip_with_the_right_numbers_is_never_reported():
    f = answer_field("w", "weights", [0.5, 0.5], {"no_scale": ([0.5, 0.5], "never shown"),
                                                  "close": ([0.505, 0.5], "too close"),
                                                  "far": ([0.9, 0.1], "shown")})
    assert [m.name for m in f.mistakes] == ["far"]
    assert f.declared == ("no_scale", "close", "far")
    inst = Instance("x", "x", "x", {}, (f,), ())
    assert inst.check("w", "0.5 0.5").correct and not inst.clean
    # the notes' own BPE corpus: recounting gives the same counts as not recounting
    bpe = make_instance("bpe-merges")
    assert "no_recount" not in [m.name for m in bpe.field("counts").mistakes]


def test_wrong_but_undiagnosed_answer_points_at_entries():
    inst = make_instance("flying-arrows")
    fb = inst.check("output", "0.61 0.9")
    assert not fb.correct and fb.valid and fb.diagnosis is None and "Entry 2" in fb.message


def test_shape_is_reported_on_a_wrong_count():
    fb = make_instance("causal-mask").check("weights", "1 0 0")
    assert not fb.correct and not fb.valid  # not an answer to this box: nothing to grade
    assert fb.expected_shape == (3, 3) and "3×3" in fb.message


def test_unknown_box():
    fb = make_instance("layernorm").check("nope", "1")
    assert not fb.correct and not fb.valid and "no answer box" in fb.message


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(EXERCISES)), st.text(max_size=200))
def test_garbage_never_raises(ex_id, text):
    inst = make_instance(ex_id)
    for f in inst.answer_fields:
        fb = inst.check(f.name, text)
        assert isinstance(fb.message, str)


@pytest.mark.parametrize("text", ["", "\x00", "x" * 100_000, "<script>", "😀😀", None, 12])
def test_nasty_inputs(text):
    for ex_id in EXERCISES:
        inst = make_instance(ex_id)
        for f in inst.answer_fields:
            fb = inst.check(f.name, text)
            assert not fb.correct and not fb.valid
            assert fb.message.endswith(f"This box wants {f.format_hint}.")


def test_instances_pickle_for_caching():
    import pickle

    for ex_id in EXERCISES:
        inst = pickle.loads(pickle.dumps(make_instance(ex_id, 2)))
        f = inst.answer_fields[-1]
        assert inst.check(f.name, as_text(f, f.expected)).correct


def test_instances_are_read_only():
    inst = make_instance("flying-arrows")
    with pytest.raises(ValueError):
        inst.field("output").expected[0] = 1.0
    with pytest.raises(ValueError):
        inst.arrows.weights[0, 0, 0] = 1.0
