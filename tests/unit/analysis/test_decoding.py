"""tfviz.analysis.decoding: the LM head recomputed against torch, the beam tree's layout against
the search it draws, greedy against beam search, and the words of each generation step."""
import numpy as np
import pytest
import torch

import tfviz
from tests.support.tiny_lm import tiny_bundle
from tfviz.analysis.decoding import (GreedyVsBeam, beam_tree, greedy_vs_beam, greedy_vs_beam_verdict,
                                    lm_head, step_notes)
from tfviz.decoding import beam_search_tree, generate
from tfviz.decoding.generate import step_contexts


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


@pytest.mark.parametrize("text", ["the animal didn't cross the street because it was too tired.",
                                  "a", "Ünïcode ✓ <b>bold</b> שלום"])
def test_lm_head_is_h_times_e_transposed(gpt, text):
    tr = gpt.trace(text)
    r = lm_head(tr, gpt.weights(), gpt.token_strings)
    h = torch.from_numpy(tr["blocks.2.hook_resid_post"]).double()  # (T, d)
    want = h @ gpt.model.embed.weight.detach().double().T  # (T, V)
    np.testing.assert_allclose(r.recomputed, want.numpy(), rtol=0, atol=1e-9)  # both float64
    assert r.tied and r.head_shape == (64, 600) and r.gap < 1e-4  # float32 model vs float64
    p = torch.softmax(torch.from_numpy(tr.logits).double(), -1)  # (T, V)
    order = torch.sort(-p, dim=-1, stable=True).indices[:, :10]
    np.testing.assert_array_equal(r.top_ids, order.numpy())
    np.testing.assert_allclose(r.top_probs, torch.gather(p, 1, order).numpy(), atol=1e-12)  # float64
    # the trace's own logits, picked
    np.testing.assert_allclose(r.top_logits, np.take_along_axis(tr.logits, order.numpy(), 1), atol=1e-6)
    assert r.top_tokens[0] == tuple(gpt.token_strings(order[0].tolist()))


def test_an_untied_head_uses_its_own_matrix():
    tiny = tiny_bundle(1)
    tr = tiny.trace("abcab")
    r = lm_head(tr, tiny.weights(), tiny.token_strings)
    assert not r.tied and r.head_shape == (16, 8)
    np.testing.assert_allclose(r.recomputed, r.logits, atol=1e-5)
    wrong = r.hidden @ tiny.weights()["W_E"].T.astype(float)  # E is not what this head uses
    assert np.abs(wrong - r.logits).max() > 0.1


def layout(bundle, prompt, width, depth, per_beam=3):
    search = beam_search_tree(bundle, prompt, width, depth)
    greedy = generate(bundle, prompt, max_new_tokens=depth)
    return search, greedy, beam_tree(search, bundle.token_strings, greedy.new_ids, per_beam=per_beam)


@pytest.mark.parametrize("prompt, width", [("once upon a time", 3), ("the dog jumped", 2),
                                           ("it refers to", 4), ("the dog", 1)])
def test_the_tree_draws_every_kept_beam_and_each_parents_best_children(gpt, prompt, width):
    search, greedy, tree = layout(gpt, prompt, width, 6)
    assert tree.scored == tuple(len(s.total) for s in search.tree)
    assert tree.rows == max(sum(n.step == t for n in tree.nodes) for t in range(len(search.tree) + 1))
    previous = {0}  # the kept slots of the column before
    for t, s in enumerate(search.tree, start=1):
        column = sorted((n for n in tree.nodes if n.step == t), key=lambda n: n.slot)
        assert [n.slot for n in column] == list(range(len(column)))
        assert sum(n.kept for n in column) == len(s.beams)
        assert {n.parent_slot for n in column} <= previous
        by_parent = {}
        for n in column:
            by_parent.setdefault(n.parent_slot, []).append(n)
        for children in by_parent.values():
            totals = [n.total for n in children]
            assert totals == sorted(totals, reverse=True)  # best first under each parent
            assert sum(not n.kept for n in children) <= 3
        # the drawn totals and ranks are the search's own
        order = np.argsort(-s.total, kind="stable")  # rank 1 = order[0]
        for n in column:
            row = order[n.rank - 1]
            assert s.total[row] == n.total and bool(s.kept[row]) == n.kept
            assert s.token[row] == n.token and s.logprob[row] == n.logprob
        assert sum(n.best for n in column) == 1  # the winner's prefix, or its carry
        previous = {n.slot for n in column if n.kept}
    cmp = greedy_vs_beam(search, greedy.new_ids, [0.0] * len(greedy.new_ids))
    for t in range(1, len(search.tree) + 1):  # greedy is drawn while it stays in the beam
        on = [n for n in tree.nodes if n.step == t and n.greedy]
        if t <= len(greedy.new_ids) and (cmp.pruned_at is None or t - 1 <= cmp.pruned_at):
            assert len(on) == 1
            assert on[0].kept == (cmp.pruned_at is None or t - 1 < cmp.pruned_at)


def test_greedy_against_beam_on_known_prompts(gpt):
    """gpt-tiny's own behaviour (its weights ship in assets/): a beam that ends at once wins on
    'once upon a time'; on 'the dog jumped' greedy's prefix is pruned at step 3 and its text
    ends up more likely than the beam's (beam search is not exhaustive)."""
    for prompt, width, parted, pruned, beam_wins in [("once upon a time", 3, 1, None, True),
                                                     ("the dog jumped", 2, 0, 2, False)]:
        search = beam_search_tree(gpt, prompt, width, 8)
        g = generate(gpt, prompt, max_new_tokens=8)
        ids = gpt.encode(prompt) + list(g.new_ids)
        with torch.no_grad():
            logp = torch.log_softmax(gpt.model(torch.tensor([ids]))[0].double(), -1)  # full re-read
        n = len(gpt.encode(prompt))
        lps = [logp[n - 1 + i, tok].item() for i, tok in enumerate(g.new_ids)]
        cmp = greedy_vs_beam(search, g.new_ids, lps)
        assert (cmp.parted, cmp.pruned_at) == (parted, pruned)
        assert cmp.beam_ids == search.hypotheses[0].new_ids and cmp.greedy_ids == g.new_ids
        assert (cmp.beam_logprob > cmp.greedy_logprob) == beam_wins


def test_same_continuations_do_not_part(gpt):
    search = beam_search_tree(gpt, "the dog", 1, 5)
    g = generate(gpt, "the dog", max_new_tokens=5)
    cmp = greedy_vs_beam(search, g.new_ids, [0.0] * 5)
    assert cmp.parted is None and cmp.pruned_at is None


def test_step_notes_say_what_each_step_did(gpt):
    g = generate(gpt, "the dog", strategy="sample", top_p=0.8, temperature=1.5, seed=2, max_new_tokens=6)
    notes = step_notes(g.steps, step_contexts(gpt, g), strategy="sample", temperature=1.5,
                       top_p=0.8, vocab=600)
    assert len(notes) == len(g.steps)
    for s, (context, how) in zip(g.steps, notes):
        chosen = s.tokens[s.candidates.index(s.chosen)]
        assert context.endswith(f" ▸ {chosen}")
        assert f"(the nucleus, {s.n_kept} token" in how and "temperature 1.5" in how
        assert f"{s.chosen_prob:.3f} after" in how and f"holding {s.kept_mass:.3f}" in how
    assert notes[0][0].startswith("the dog ▸")
    greedy = generate(gpt, "the dog", max_new_tokens=2)
    first = step_notes(greedy.steps, step_contexts(gpt, greedy), strategy="greedy", vocab=600)[0][1]
    assert first == f"Greedy takes the most probable token: ␣didn (p = {greedy.steps[0].before[0]:.3f})."


def test_greedy_vs_beam_verdict_says_which_text_is_more_likely_and_why():
    agree = GreedyVsBeam((3, 4), -1.25, (3, 4), -1.25, None, None)
    assert greedy_vs_beam_verdict(agree, " the dog", " the dog", 3) == (
        "Here greedy and beam search agree: both write “the dog” (sum of log p = -1.250). "
        "Try a wider beam or another prompt.")
    # greedy more likely, never pruned; the beam's best is shorter (it finished early)
    greedy_wins = GreedyVsBeam((3, 4, 5), -2.0, (9,), -2.5, 0, None)  # 9: the end token
    text = greedy_vs_beam_verdict(greedy_wins, " a b c", "", 3)
    assert "beam search's best is “(nothing: it ends at once)” (-2.500)" in text
    assert "They part at new token 1. Here greedy's text is the more likely one" in text
    # tokens that decode to no text (a padded vocabulary's rows) are not "nothing"
    no_text = GreedyVsBeam((3, 4, 5), -2.0, (3, 4, 6), -1.0, 2, None)
    assert "beam search's best is “(3 tokens with no text)” (-1.000)" in greedy_vs_beam_verdict(no_text, "", "", 3)
    assert "left the beam" not in text and text.endswith("adds a negative log-probability.")
    beam_wins = GreedyVsBeam((3, 4), -3.0, (3, 7), -1.0, 1, 0)
    text = greedy_vs_beam_verdict(beam_wins, " a b", " a z", 4)
    assert "left the beam at step 1: 4 other partial continuations" in text
    assert text.endswith("Beam search found the more likely text, as it is meant to.")
