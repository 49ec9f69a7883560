"""generate() against a naive loop that re-reads the whole sequence, and its draws against
the filtered distribution they come from."""
import numpy as np
import pytest
import torch

import tfviz
from tests.support.tiny_lm import tiny_bundle
from tfviz.decoding import generate, next_token_distribution
from tfviz.decoding.distribution import sample

PROMPTS = ["the dog", "the animal didn't cross the street because it was too",
           "once upon a time the cat"]
SAMPLING = [dict(temperature=1.3), dict(temperature=0.8, top_k=5), dict(top_p=0.9),
            dict(temperature=1.5, top_k=20, top_p=0.8)]


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def naive_greedy(bundle, prompt, n):
    """Re-run the full model on the whole sequence each step and take the argmax."""
    ids = bundle.encode(prompt)
    start = len(ids)
    for _ in range(n):
        with torch.no_grad():
            nxt = int(bundle.model(torch.tensor([ids]))[0, -1].argmax())
        ids.append(nxt)
        if nxt == bundle.tokenizer.eos_id:
            break
    return tuple(ids[start:])


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_equals_a_naive_loop(gpt, prompt):
    assert generate(gpt, prompt, max_new_tokens=12).new_ids == naive_greedy(gpt, prompt, 12)


@pytest.mark.parametrize("settings", [dict(strategy="greedy")] +
                         [dict(strategy="sample", seed=s, **k) for s in (0, 1) for k in SAMPLING])
def test_cached_and_uncached_give_the_same_ids(gpt, settings):
    for prompt in PROMPTS:
        cached = generate(gpt, prompt, max_new_tokens=16, use_cache=True, **settings)
        uncached = generate(gpt, prompt, max_new_tokens=16, use_cache=False, **settings)
        assert cached.new_ids == uncached.new_ids
        for a, b in zip(cached.steps, uncached.steps):
            assert a.candidates == b.candidates
            np.testing.assert_allclose(a.probs, b.probs, atol=1e-5)


@pytest.mark.parametrize("settings", [dict(strategy="greedy"),
                                      dict(strategy="sample", seed=1, temperature=1.5, top_k=20)])
@pytest.mark.parametrize("prompt", PROMPTS + ["the animal didn't cross the street because it was too "
                                              "tired. it refers to"])
def test_moe_cached_and_uncached_give_the_same_ids(settings, prompt):
    """moe-tiny's experts have a capacity. Counted per prefix, with the counts carried in the
    cache, a one-token cached step drops exactly what a re-read of the whole text drops, so
    the two give the same ids (ids, not bits: a step and a re-read may round the last bits
    differently, and these prompts have no near-tie for that to flip)."""
    moe = tfviz.load("moe-tiny")
    cached = generate(moe, prompt, max_new_tokens=12, **settings)
    uncached = generate(moe, prompt, max_new_tokens=12, use_cache=False, **settings)
    if settings["strategy"] == "greedy":
        assert uncached.new_ids == naive_greedy(moe, prompt, 12)
    assert cached.new_ids == uncached.new_ids
    for a, b in zip(cached.steps, uncached.steps):
        assert a.candidates == b.candidates
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-5)


def test_same_seed_same_text_other_seeds_other_texts(gpt):
    texts = [generate(gpt, "the dog", strategy="sample", temperature=2.0, seed=s,
                      max_new_tokens=8).text for s in range(6)]
    again = [generate(gpt, "the dog", strategy="sample", temperature=2.0, seed=s,
                      max_new_tokens=8).text for s in range(6)]
    assert texts == again
    assert len(set(texts)) == 6


def test_generation_stops_at_eos(gpt):
    g = generate(gpt, "the animal didn't cross the street because it was too tired.",
                 max_new_tokens=30)
    eos = gpt.tokenizer.eos_id
    assert g.stop_reason == "eos" and g.new_ids[-1] == eos and eos not in g.new_ids[:-1]
    assert len(g.new_ids) < 30 and g.text == " it refers to the animal."
    assert "<eos>" not in g.text and g.stop_message.startswith("The model chose <eos>")


def test_generation_stops_when_the_context_is_full(gpt):
    tiny = tiny_bundle(4, max_seq_len=6)
    g = generate(tiny, [3, 4], max_new_tokens=10)
    assert tiny.tokenizer.eos_id not in g.new_ids
    assert len(g.new_ids) == 4 and g.stop_reason == "context"
    assert "at most 6 tokens" in g.stop_message
    long = generate(gpt, "the dog sat " * 60, max_new_tokens=5)  # 180 tokens, cut to 128
    assert long.new_ids == () and long.stop_reason == "context"
    assert "reads at most 128" in long.notice and len(long.prompt_ids) == 128


def test_steps_hold_the_filtered_distribution(gpt):
    """Each step's numbers, against the full model re-run on the sequence so far."""
    g = generate(gpt, "the dog", strategy="sample", temperature=1.5, top_k=8, top_p=0.7, seed=4,
                 max_new_tokens=6)
    for step in g.steps:
        with torch.no_grad():
            logits = gpt.model(torch.tensor([list(g.ids[:step.position])]))[0, -1].numpy()
        probs = next_token_distribution(logits, temperature=1.5, top_k=8, top_p=0.7)
        plain = next_token_distribution(logits, temperature=1.5)
        # generate reads one new token against its KV cache, the re-run the whole sequence:
        # float32 logits summed in another order, so a float32 tolerance
        np.testing.assert_allclose(step.probs, probs[list(step.candidates)], atol=1e-5)
        np.testing.assert_allclose(step.before, plain[list(step.candidates)], atol=1e-5)
        assert list(step.candidates[:10]) == sorted(range(len(plain)), key=lambda i: -plain[i])[:10]
        assert step.chosen == g.ids[step.position] and step.chosen_prob > 0
        assert step.n_kept == int((probs > 0).sum()) <= 8
        assert [p > 0 for p in step.probs] == [k and n for k, n in zip(step.in_top_k, step.in_top_p)]
        assert sum(step.in_top_k) == min(8, len(step.candidates))
    assert g.text == gpt.tokenizer.decode(g.ids)[len(gpt.tokenizer.decode(g.prompt_ids)):]


def chi2_999(df):
    """The chi-square distribution's 99.9% quantile by Wilson-Hilferty (3% high at df = 1, closer
    above; 3.0902 is the normal's 99.9% quantile), so the tests need no scipy."""
    return df * (1 - 2 / (9 * df) + 3.0902 * (2 / (9 * df)) ** 0.5) ** 3


def chi_square(counts, probs):
    """Pearson's statistic and degrees of freedom over the tokens the filters kept."""
    kept = probs > 0
    expected = probs[kept] * counts.sum()
    return float(((counts[kept] - expected) ** 2 / expected).sum()), int(kept.sum()) - 1


@pytest.mark.parametrize("settings", SAMPLING)
def test_draws_follow_the_filtered_distribution(gpt, settings):
    """20,000 draws with one generator. A correct sampler exceeds the 99.9% quantile of the
    chi-square distribution once in a thousand seeds; the seed is fixed, so this never flakes,
    and a sampler off by a few percent on a common token fails it by far."""
    with torch.no_grad():
        logits = gpt.model(torch.tensor([gpt.encode("the dog")]))[0, -1].numpy()
    probs = next_token_distribution(logits, **settings)
    rng = np.random.default_rng(0)
    counts = np.bincount([sample(probs, rng) for _ in range(20_000)], minlength=probs.size)
    assert counts[probs == 0].sum() == 0  # never an excluded token
    probs = np.where(probs * 20_000 >= 5, probs, 0.0)  # the chi-square wants >= 5 expected per cell
    stat, df = chi_square(np.where(probs > 0, counts, 0), probs / probs.sum())
    assert stat < chi2_999(df)


def test_generate_draws_follow_the_filtered_distribution(gpt):
    """The first token over 250 seeds, through generate() itself (top-k 3 at temperature 1.5)."""
    with torch.no_grad():
        logits = gpt.model(torch.tensor([gpt.encode("the dog")]))[0, -1].numpy()
    probs = next_token_distribution(logits, temperature=1.5, top_k=3)
    first = [generate(gpt, "the dog", strategy="sample", temperature=1.5, top_k=3, seed=s,
                      max_new_tokens=1).new_ids[0] for s in range(250)]
    counts = np.bincount(first, minlength=probs.size)
    assert counts[probs == 0].sum() == 0
    stat, df = chi_square(counts, probs)
    assert stat < chi2_999(df)


@pytest.mark.parametrize("kwargs, match", [
    (dict(strategy="beam"), "strategy"), (dict(max_new_tokens=-1), "max_new_tokens"),
    (dict(temperature=0), "temperature"), (dict(top_k=0), "top_k"), (dict(top_p=1.5), "top_p")])
def test_bad_arguments_say_what_is_allowed(gpt, kwargs, match):
    with pytest.raises(ValueError, match=match):
        generate(gpt, "the dog", **({"max_new_tokens": 3} | kwargs))


@pytest.mark.parametrize("name", ["bert-tiny", "reverse-encdec"])
def test_only_decoders_generate(name):
    with pytest.raises(ValueError, match=r"\(gpt-tiny, moe-tiny\); .* is an encoder"):
        generate(tfviz.load(name), "abc", max_new_tokens=3)


def test_an_empty_prompt_is_refused(gpt):
    with pytest.raises(ValueError, match="empty"):
        generate(gpt, "", max_new_tokens=3)
