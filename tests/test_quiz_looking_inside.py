"""The quiz's looking-inside questions: each numeric answer and slip recomputed with torch or
tfviz.interpret, and each choice answer that makes a claim about a model checked on one.

Float64 on both sides where the numbers are worked by formula (1e-9); the llama-tiny figures a
prompt quotes are checked at the precision the prompt states them.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tfviz.exercises.quiz import QUESTIONS, grade_numeric, question_by_id
from tfviz.interpret import (Patching, ablate_head, direct_logit_attribution, induction_score,
                             logit_lens, patch)
from tfviz.interpret.common import final_norm, to_logits

CLEAN = "the animal didn't cross the street because it was too tired. it refers to the"
CORRUPT = "the animal didn't cross the street because it was too wide. it refers to the"


def test_each_idea_has_questions_in_its_own_section():
    lessons = {q.lesson for q in QUESTIONS if q.section == "Looking inside"}
    assert lessons == {24, 25, 26, 27}
    for lesson in lessons:
        assert sum(q.lesson == lesson for q in QUESTIONS) >= 2


def test_dla_share_and_its_slips_with_torch():
    q = question_by_id("dla-share")
    p, u, s = torch.tensor([2.0, 0, -1, 3], dtype=torch.float64), torch.tensor([1.0, 2, 0, -1],
                                                                               dtype=torch.float64), 4.0
    assert q.answer == pytest.approx(float(((p - p.mean()) / s) @ u), abs=1e-9)
    slips = [float((p / s) @ u), float((p - p.mean()) @ u), float(p @ u)]
    assert [m.value for m in q.mistakes] == pytest.approx(slips, abs=1e-9)
    for value in slips:
        assert grade_numeric(q, f"{value:.3f}").diagnosis
    # the share is the head's part of a real split: a second part b makes x = p + b, whose
    # LayerNorm's scale is s, and the two shares add up to LN(x) · u
    b = torch.tensor([2.0, -4.0, 5.0, -7.0], dtype=torch.float64)  # x = [4, -4, 4, -4]
    x = p + b
    assert float(x.std(unbiased=False)) == pytest.approx(s)
    b_share = float(((b - b.mean()) / s) @ u)
    assert q.answer + b_share == pytest.approx(float(torch.nn.functional.layer_norm(x, (4,)) @ u), abs=1e-6)


def test_patching_fraction_and_its_slips():
    q = question_by_id("patching-fraction")
    got = Patching(values=np.array([3.2]), clean=5.0, corrupt=-1.0, hook="hook_resid_pre",
                   by="layer", tokens=()).restored()[0]
    assert q.answer == pytest.approx(got, abs=1e-12)
    assert [m.value for m in q.mistakes] == pytest.approx([3.2 / 5, 1 - got, 4.2 / 5], abs=1e-12)


def test_induction_score_question_against_interpret():
    q = question_by_id("induction-score-mean")
    n = 4
    pattern = np.zeros((2 * n, 2 * n))
    pattern[0, 0] = 1.0
    for i, w in enumerate((0.9, 0.8, 0.7, 0.6)):
        pattern[n + i, i + 1], pattern[n + i, 0] = w, 1 - w
    assert q.answer == pytest.approx(float(induction_score(pattern, n)), abs=1e-12)
    assert [m.value for m in q.mistakes] == pytest.approx([3.0, 0.7], abs=1e-12)


@pytest.mark.parametrize("name", ["llama-tiny", "gpt-tiny"])
def test_the_lens_claims_on_models(name):
    """The last row is the logits; early rows read the final norm with their own statistics,
    which differs from freezing the last layer's scale."""
    b = tfviz.load(name)
    tr = b.trace(CLEAN)
    lens = logit_lens(tr, b)
    np.testing.assert_allclose(lens[-1], tr.logits, rtol=1e-5, atol=1e-4)
    assert np.abs(lens[0] - tr.logits).max() > 1.0
    if b.config.final_norm:
        W = b.weights()
        x = tr["blocks.0.hook_resid_post"][-1].astype(np.float64)
        frozen = (x - x.mean() if b.config.norm_type == "layernorm" else x) / float(
            tr["ln_final.hook_scale"][-1]) * W["ln_final.w"]
        assert np.abs(to_logits(tr, W, frozen) - lens[1, -1]).max() > 0.1
        np.testing.assert_allclose(to_logits(tr, W, final_norm(tr, W, x)), lens[1, -1])


def test_post_ln_and_direct_versus_total_claims_on_models():
    gpt = tfviz.load("gpt-tiny")
    with pytest.raises(ValueError, match="not a sum"):
        direct_logit_attribution(gpt.trace(CLEAN), -1, 5, weights=gpt)
    llama = tfviz.load("llama-tiny")
    a = ablate_head(llama, CLEAN, 0, 2)  # the numbers the question quotes
    assert (round(a.share, 2), round(a.before, 1), round(a.fall, 1)) == (0.65, 11.5, 8.6)
    dla = direct_logit_attribution(llama.trace(CLEAN), -1, a.token, weights=llama)
    assert dla.top("head") == "L0H2" and dla[dla.top()] > 3 * dla["L0H2"]  # an MLP wrote most


def test_patching_a_shared_token_at_block_0_changes_nothing():
    b = tfviz.load("gpt-tiny")
    p = patch(b, CLEAN, CORRUPT, "hook_resid_pre")
    assert p.tokens[2] == b.token_strings(b.encode(CLEAN))[2]
    assert abs(p.values[0, 2] - p.corrupt) < 1e-4  # float32 batch vs single run
    assert abs(p.restored()[0, 11] - 1) < 1e-4  # the changed word's own position: all of it
