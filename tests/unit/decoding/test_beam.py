"""beam_search against a brute force that scores every continuation of a tiny model.

The brute force never uses the KV cache: it runs the full model on each prefix, scores every
continuation up to the length, then replays what beam search promises (at each step, keep the
beam_width best candidates by summed log-prob, finished ones included), not the global optimum.
"""
import itertools

import numpy as np
import pytest
import torch

import tfviz
from tests.support.tiny_lm import tiny_bundle
from tfviz.decoding import beam_search, beam_search_tree, generate

EOS = 2


def all_scores(bundle, prompt_ids, length):
    """{continuation: summed log-prob} for every continuation up to ``length`` new tokens that
    has no <eos> before its end. The full model reads every prefix (no cache), all the
    prefixes of one length in one batch."""
    V = bundle.config.vocab_size
    scores, frontier = {(): 0.0}, [()]
    for _ in range(length):
        with torch.no_grad():
            logits = bundle.model(torch.tensor([list(prompt_ids) + list(s) for s in frontier]))
        logp = torch.log_softmax(logits[:, -1].double(), -1).tolist()  # (prefixes, V)
        grown = []
        for seq, row in zip(frontier, logp):
            for v in range(V):
                scores[seq + (v,)] = scores[seq] + row[v]
                if v != EOS:
                    grown.append(seq + (v,))
        frontier = grown
    return scores


def replay(scores, beam_width, steps):
    """The kept set after each step, from the brute-force scores alone (ties: earlier candidate)."""
    V, beams, kept_per_step = 8, [()], []
    for _ in range(steps):
        if all(b and b[-1] == EOS for b in beams):
            break
        candidates = []
        for b in beams:
            candidates += [b] if b and b[-1] == EOS else [b + (v,) for v in range(V)]
        beams = sorted(candidates, key=lambda c: -scores[c])[:beam_width]  # sorted() is stable
        kept_per_step.append(beams)
    return kept_per_step


@pytest.fixture(scope="module", params=range(5), ids=lambda s: f"seed{s}")
def tiny(request):
    """(bundle, prompt, brute-force scores up to 5 new tokens) for one tiny model."""
    bundle = tiny_bundle(request.param)
    prompt = bundle.encode("ab")
    return bundle, prompt, all_scores(bundle, prompt, 5)


@pytest.mark.parametrize("beam_width", [1, 2, 3, 5])
def test_beam_keeps_the_top_candidates_at_every_step(tiny, beam_width):
    bundle, prompt, scores = tiny
    result = beam_search_tree(bundle, prompt, beam_width=beam_width, max_new_tokens=5)
    expected = replay(scores, beam_width, 5)
    assert len(result.tree) == len(expected)
    for step, want in zip(result.tree, expected):
        got = [h.new_ids for h in step.beams]
        assert got == want
        np.testing.assert_allclose([h.logprob for h in step.beams], [scores[w] for w in want],
                                   atol=1e-5)
    final = beam_search(bundle, prompt, beam_width=beam_width, max_new_tokens=5)
    assert [ids for ids, _ in final] == expected[-1]
    assert [lp for _, lp in final] == sorted((lp for _, lp in final), reverse=True)  # best first
    finished = all(ids[-1] == EOS for ids in expected[-1])
    assert result.stop_reason == ("finished" if finished else "length")


def test_the_tree_records_every_expansion(tiny):
    bundle, prompt, scores = tiny
    result = beam_search_tree(bundle, prompt, beam_width=3, max_new_tokens=5)
    parents, parent_sums = [()], [0.0]
    for step in result.tree:
        want_parent, want_token, want_total = [], [], []
        for i, p in enumerate(parents):
            tokens = [-1] if p and p[-1] == EOS else list(range(8))  # a finished one is carried
            want_parent += [i] * len(tokens)
            want_token += tokens
            want_total += [scores[p + ((t,) if t >= 0 else ())] for t in tokens]
        assert step.parent.tolist() == want_parent and step.token.tolist() == want_token
        np.testing.assert_allclose(step.total, want_total, atol=1e-5)
        carried = step.token < 0
        assert (step.logprob[carried] == 0).all()
        np.testing.assert_allclose(step.total, np.take(parent_sums, step.parent) + step.logprob,
                                   rtol=0, atol=1e-12)  # total = parent's sum + this token's (one addition)
        assert step.kept.sum() == min(3, len(want_token)) and step.kept[list(step.rows)].all()
        parents, parent_sums = [h.new_ids for h in step.beams], [h.logprob for h in step.beams]


def test_finished_beams_compete_on_their_sum():
    """Seed 3: "<eos>" at once is a finished beam carried to the end, and the best one; seed 4:
    it is kept at step 0, then pruned by unfinished beams whose sums stay higher."""
    carried = beam_search_tree(tiny_bundle(3), [3, 4], beam_width=3, max_new_tokens=5)
    assert carried.hypotheses[0].new_ids == (EOS,)
    assert all((s.token[list(s.rows)] == -1).any() for s in carried.tree[1:])
    pruned = beam_search_tree(tiny_bundle(4), [3, 4], beam_width=3, max_new_tokens=5)
    assert (EOS,) in [h.new_ids for h in pruned.tree[0].beams]
    assert (EOS,) not in [h.new_ids for h in pruned.hypotheses]


def test_beam_width_one_is_greedy():
    gpt = tfviz.load("gpt-tiny")
    for bundle, prompt in [(gpt, "the dog"), (gpt, "once upon a time the cat"),
                           (tiny_bundle(2), [3, 4]), (tiny_bundle(4), [3, 4])]:
        g = generate(bundle, prompt, max_new_tokens=8)
        [(ids, logprob)] = beam_search(bundle, prompt, beam_width=1, max_new_tokens=8)
        assert ids == g.new_ids


def test_gpt_tiny_beams_score_what_the_model_says():
    gpt = tfviz.load("gpt-tiny")
    prompt = gpt.encode("the animal didn't cross the street because it was too")
    for ids, logprob in beam_search(gpt, prompt, beam_width=3, max_new_tokens=6):
        with torch.no_grad():
            logits = gpt.model(torch.tensor([prompt + list(ids)]))[0]  # (T, V) full re-read
        logp = torch.log_softmax(logits.double(), -1)
        ref = sum(logp[len(prompt) - 1 + t, tok].item() for t, tok in enumerate(ids))
        assert logprob == pytest.approx(ref, abs=1e-4)


def test_beam_stops_when_the_context_is_full():
    bundle = tiny_bundle(0, max_seq_len=6)
    result = beam_search_tree(bundle, [3, 4, 5, 6], beam_width=3, max_new_tokens=5)
    unfinished = [h for h in result.hypotheses if h.new_ids[-1] != EOS]
    assert result.stop_reason == "context" and unfinished
    assert all(len(h.new_ids) == 2 for h in unfinished)  # 4 + 2 = the context of 6


@pytest.mark.parametrize("kwargs, match", [
    ({"beam_width": 0}, "beam_width"), ({"max_new_tokens": -1}, "max_new_tokens")])
def test_beam_arguments_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        beam_search(tiny_bundle(0), [3], **kwargs)
    with pytest.raises(ValueError, match="gpt-tiny, moe-tiny"):
        beam_search(tfviz.load("bert-tiny"), "the dog")


def test_no_new_tokens_gives_the_bare_prompt():
    assert beam_search(tiny_bundle(0), [3], max_new_tokens=0) == [((), 0.0)]
    assert list(itertools.islice(beam_search_tree(tiny_bundle(0), [3], 2, 0).tree, 1)) == []
