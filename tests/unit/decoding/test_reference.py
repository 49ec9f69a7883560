"""The decoding API (issue #16) against second implementations written here in torch, each
built another way than the library:

- the filters as Hugging Face ``transformers`` writes its warpers: logits set to -inf, top-p
  cut from the *tail* of an ascending sort (cumsum <= 1 - p), not walked from the head;
- sampled generation as a loop that re-reads the whole sequence (no KV cache), filters with
  the torch warpers and draws by inverse CDF with the same numpy generator;
- beam search as a loop that re-reads every hypothesis, scores all of them as one
  (beams, vocab) tensor and keeps the best by a stable sort of the flattened sums;
- the per-token loss as ``torch.nn.functional.cross_entropy`` on the shifted targets;
- the LM head as the hidden state times the embedding matrix.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tests.support.tiny_lm import tiny_bundle
from tfviz.decoding import (beam_search, generate, is_tied, lm_loss_per_token,
                            next_token_distribution, prompt_with_room, unembedding)

PROMPTS = ["the dog", "once upon a time", "it refers to",
           "the animal didn't cross the street because it was too"]


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def ranked(p: torch.Tensor) -> torch.Tensor:
    """Token ids from most to least probable, ties by the lower id (a stable sort of -p)."""
    return torch.sort(-p, stable=True).indices


def hf_warp(logits, temperature=1.0, top_k=None, top_p=None) -> torch.Tensor:
    """Temperature, top-k, top-p the way transformers' warpers do it, on float64 logits; the
    sort keeps ties in id order so both sides break them alike."""
    z = torch.as_tensor(logits, dtype=torch.float64) / temperature
    if top_k is not None:
        drop = ranked(torch.softmax(z, -1))[top_k:]
        z = z.clone()
        z[drop] = -torch.inf
    if top_p is not None:
        order = ranked(torch.softmax(z, -1)).flip(0)  # ascending: the least probable first
        tail = torch.softmax(z, -1)[order].cumsum(0)
        remove = tail <= 1 - top_p + 1e-12  # the tail holds at most 1 - p: the rest reaches p
        remove[-1] = False  # always keep the most probable token
        z = z.clone()
        z[order[remove]] = -torch.inf
    return torch.softmax(z, -1)


SETTINGS = [dict(), dict(temperature=0.6), dict(top_k=4), dict(top_p=0.75),
            dict(temperature=1.7, top_k=30, top_p=0.6), dict(temperature=0.3, top_p=0.99),
            dict(top_k=1), dict(top_p=0.05)]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("prompt", PROMPTS)
def test_filters_equal_the_hf_warpers_on_gpt_tiny_logits(gpt, prompt, settings):
    with torch.no_grad():
        logits = gpt.model(torch.tensor([gpt.encode(prompt)]))[0, -1]  # (V,)
    got = next_token_distribution(logits.numpy(), **settings)
    want = hf_warp(logits.double(), **settings).numpy()
    np.testing.assert_array_equal(got > 0, want > 0)  # the same tokens survive
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)  # float64 sums in another order


@pytest.mark.parametrize("seed", range(5))
def test_the_nucleus_is_the_smallest_set_reaching_p(seed):
    """On random logits: the kept tokens hold >= p, and without the least probable of them
    they would not; nothing outside the set is more probable than a token in it."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, 80)
    p = torch.softmax(torch.tensor(z), -1).numpy()
    for top_p in (0.1, 0.5, 0.8, 0.95):
        kept = next_token_distribution(z, top_p=top_p) > 0
        assert p[kept].sum() >= top_p - 1e-12
        assert p[kept].sum() - p[kept].min() < top_p
        assert p[~kept].max(initial=0) <= p[kept].min()


def reference_generate(bundle, prompt, n, seed, **settings):
    """Sampled generation without the KV cache: the full model re-reads the sequence every
    step; the torch warpers filter; one uniform draw per token inverts the CDF (what numpy's
    Generator.choice does with p), so the same seed must give the same ids."""
    rng = np.random.default_rng(seed)
    ids = bundle.encode(prompt)
    start = len(ids)
    for _ in range(n):
        with torch.no_grad():
            logits = bundle.model(torch.tensor([ids]))[0, -1]  # (V,) every token re-read
        p = hf_warp(logits.double(), **settings).numpy()
        cdf = p.cumsum()
        ids.append(int(np.searchsorted(cdf / cdf[-1], rng.random(), side="right")))
        if ids[-1] == bundle.tokenizer.eos_id:
            break
    return tuple(ids[start:])


@pytest.mark.parametrize("settings", [dict(temperature=1.4), dict(top_k=5), dict(top_p=0.8),
                                      dict(temperature=0.7, top_k=10, top_p=0.9)])
@pytest.mark.parametrize("seed", [0, 3, 11])
def test_sampled_generation_equals_a_cacheless_torch_loop(gpt, settings, seed):
    for prompt in PROMPTS[:3]:
        g = generate(gpt, prompt, strategy="sample", max_new_tokens=15, seed=seed, **settings)
        assert g.new_ids == reference_generate(gpt, prompt, 15, seed, **settings)
        assert generate(gpt, prompt, strategy="sample", max_new_tokens=15, seed=seed,
                        use_cache=False, **settings).new_ids == g.new_ids


def reference_beam(bundle, prompt_ids, width, steps):
    """Beam search as one (beams, V) tensor a step, every hypothesis re-read in full."""
    eos, V = bundle.tokenizer.eos_id, bundle.config.vocab_size
    beams = [((), 0.0)]
    for _ in range(steps):
        if all(b and b[-1] == eos for b, _ in beams):
            break
        scores = torch.full((len(beams), V + 1), -torch.inf, dtype=torch.float64)  # col V: carry
        for i, (seq, total) in enumerate(beams):
            if seq and seq[-1] == eos:
                scores[i, V] = total
                continue
            with torch.no_grad():
                logits = bundle.model(torch.tensor([list(prompt_ids) + list(seq)]))[0, -1]
            scores[i, :V] = total + torch.log_softmax(logits.double(), -1)
        flat = scores.flatten()  # row-major: parent first, then token, as the library ranks ties
        best = torch.sort(-flat, stable=True).indices[:width]
        beams = [(beams[int(k) // (V + 1)][0] + ((int(k) % (V + 1),) if int(k) % (V + 1) < V else ()),
                  float(flat[k])) for k in best if torch.isfinite(flat[k])]
    return beams


@pytest.mark.parametrize("width", [1, 2, 3, 5])
@pytest.mark.parametrize("prompt", PROMPTS)
def test_beam_search_equals_a_cacheless_torch_loop(gpt, prompt, width):
    ids = gpt.encode(prompt)
    got = beam_search(gpt, ids, beam_width=width, max_new_tokens=7)
    want = reference_beam(gpt, ids, width, 7)
    assert [h.new_ids for h in got] == [seq for seq, _ in want]
    # cached one token at a time against full re-reads: float32 sums in another order
    np.testing.assert_allclose([h.logprob for h in got], [lp for _, lp in want], atol=1e-4)


def test_beam_search_on_the_tiny_model_with_finished_beams():
    """Seeds 3 and 4 of the 8-token model finish beams early (tests/unit/decoding/test_beam.py)."""
    for seed in (3, 4):
        tiny = tiny_bundle(seed)
        got = beam_search(tiny, [3, 4], beam_width=3, max_new_tokens=5)
        want = reference_beam(tiny, [3, 4], 3, 5)
        assert [h.new_ids for h in got] == [seq for seq, _ in want]


def test_per_token_loss_equals_torch_cross_entropy(gpt):
    text = "the animal didn't cross the street because it was too tired."
    r = lm_loss_per_token(gpt, text)
    row = gpt.encode(text) + [gpt.tokenizer.eos_id]
    with torch.no_grad():
        logits = gpt.model(torch.tensor([row[:-1]]))[0]  # (T, V)
    ce = F.cross_entropy(logits.double(), torch.tensor(row[1:]), reduction="none")
    np.testing.assert_allclose(r.losses, ce.numpy(), rtol=0, atol=1e-9)  # the same float64 maths
    assert r.mean == pytest.approx(float(F.cross_entropy(logits.double(), torch.tensor(row[1:]))))
    assert r.perplexity == pytest.approx(float(torch.exp(ce.mean())))


def test_the_lm_head_is_the_embedding_matrix(gpt):
    model = gpt.model
    assert is_tied(model) and unembedding(model) is model.embed.weight and model.unembed is None
    assert "W_U" not in gpt.weights()
    tr = gpt.trace("the dog sat")
    h = torch.from_numpy(tr[f"blocks.{gpt.config.n_layers - 1}.hook_resid_post"])  # (T, d)
    with torch.no_grad():  # float32 products summed in another order than F.linear: ~1e-6
        np.testing.assert_allclose((h @ model.embed.weight.T).numpy(), tr.logits, atol=1e-5)
    tiny = tiny_bundle(0)  # an untied head: its own matrix, another tensor
    assert not is_tied(tiny.model) and unembedding(tiny.model) is tiny.model.unembed.weight


def test_a_long_prompt_keeps_its_end(gpt):
    text = "the cat rested near the lake. " * 30
    ids, notice = prompt_with_room(gpt, text, 20)
    assert len(ids) == 108 and ids == tuple(gpt.encode(text)[-108:]) and "last 108" in notice
    assert prompt_with_room(gpt, "the dog", 20) == (tuple(gpt.encode("the dog")), None)
    assert len(prompt_with_room(gpt, text, 500)[0]) == 1  # never nothing to continue
    with pytest.raises(ValueError, match="empty"):
        prompt_with_room(gpt, "", 5)


def test_each_step_keeps_the_models_own_probabilities_and_the_kept_mass(gpt):
    g = generate(gpt, "the dog", strategy="sample", temperature=0.6, top_k=12, top_p=0.7, seed=1,
                 max_new_tokens=5)
    for s in g.steps:
        with torch.no_grad():
            logits = gpt.model(torch.tensor([list(g.ids[:s.position])]))[0, -1].double()  # re-read
        plain = torch.softmax(logits, -1)  # temperature 1, no filter
        warm = torch.softmax(logits / 0.6, -1)
        kept = hf_warp(logits, temperature=0.6, top_k=12, top_p=0.7) > 0
        # the step read its KV cache, the re-read the whole sequence: float32 logits summed in
        # another order (÷0.6 makes it more), so a float32 tolerance
        np.testing.assert_allclose(s.plain, plain[list(s.candidates)].numpy(), atol=1e-5)
        assert s.kept_mass == pytest.approx(float(warm[kept].sum()), abs=1e-5)
        assert s.n_kept == int(kept.sum())
