"""The decoding API against references written here: the filters of next_token_distribution,
kv_cache_bytes, the per-token training loss, and determinism without the global RNG.
generate() and beam_search(): tests/unit/decoding/test_generate.py and tests/unit/decoding/test_beam.py."""
import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.decoding import (PUBLISHED_MODELS, beam_search, config_kv_cache_bytes, filter_distribution,
                            generate, kv_cache_bytes, lm_loss_per_token, next_token_distribution)
from tfviz.model import Transformer
from tfviz.reference import softmax
from tfviz.training.objectives import lm_loss


def reference_filter(logits, temperature=1.0, top_k=None, top_p=None):
    """The issue's words, one token at a time: rank by probability (ties: lower id), keep the
    first k, then walk down what is kept until the renormalised total reaches p."""
    p = torch.softmax(torch.tensor(logits, dtype=torch.float64) / temperature, 0).tolist()
    ranked = sorted(range(len(p)), key=lambda i: (-p[i], i))
    kept = ranked[:top_k] if top_k is not None else ranked
    if top_p is not None:
        mass, total, nucleus = sum(p[i] for i in kept), 0.0, []
        for i in kept:
            nucleus.append(i)
            total += p[i] / mass
            if total >= top_p:
                break
        kept = nucleus
    out = np.zeros(len(p))
    out[kept] = [p[i] for i in kept]
    return out / out.sum()


SETTINGS = [dict(), dict(temperature=0.7, top_k=3), dict(temperature=1.3, top_p=0.8),
            dict(temperature=2.0, top_k=5, top_p=0.5), dict(temperature=0.5, top_k=1),
            dict(top_p=1.0), dict(top_k=100, top_p=0.95), dict(top_p=0.01),
            dict(temperature=5.0, top_p=0.3)]


@pytest.mark.parametrize("settings", SETTINGS)
@pytest.mark.parametrize("seed", range(4))
def test_filters_match_the_reference_on_random_logits(settings, seed):
    rng = np.random.default_rng(seed)
    continuous = rng.normal(0, 2, size=50)
    tied = rng.integers(-3, 3, size=50).astype(float)  # many exact ties
    for logits in (continuous, tied):
        np.testing.assert_allclose(next_token_distribution(logits, **settings),
                                   reference_filter(logits.tolist(), **settings), rtol=0, atol=1e-12)


def test_hand_worked_examples():
    e = math.e
    # Ties go to the lower id: ids 1 and 2 tie, top-2 keeps 0 and 1.
    assert next_token_distribution([2.0, 1.0, 1.0, 0.0], top_k=2) == pytest.approx(
        [e / (e + 1), 1 / (e + 1), 0, 0])
    # Four equal tokens (0.25 each, exactly): 0.25 + 0.25 reaches 0.5; 0.51 needs a third.
    assert next_token_distribution([1.0] * 4, top_p=0.5).tolist() == [0.5, 0.5, 0, 0]
    assert next_token_distribution([1.0] * 4, top_p=0.51) == pytest.approx([1 / 3] * 3 + [0])
    # Temperature 2 halves the logits: [ln 4, 0] -> [ln 2, 0] -> 2/3, 1/3.
    assert next_token_distribution([math.log(4), 0.0], temperature=2) == pytest.approx([2 / 3, 1 / 3])
    # Temperature comes first: at T=1 token 0 alone passes top_p=0.6 (0.665), at T=3 it does not.
    assert (next_token_distribution([2.0, 1.0, 0.0], top_p=0.6) > 0).tolist() == [True, False, False]
    assert (next_token_distribution([2.0, 1.0, 0.0], temperature=3, top_p=0.6) > 0).sum() == 2
    # -inf is a token that can never be chosen.
    assert next_token_distribution([0.0, -np.inf, 0.0]).tolist() == [0.5, 0.0, 0.5]


def test_stages_for_a_page():
    f = filter_distribution([3.0, 1.0, 0.0, 2.0, 2.0], top_k=3, top_p=0.7)
    assert f.order.tolist() == [0, 3, 4, 1, 2]
    assert f.in_top_k.tolist() == [True, False, False, True, True]
    top3 = softmax([3.0, 2.0, 2.0])  # 0.576, 0.212, 0.212 after top-k: 0.576 + 0.212 >= 0.7
    assert top3[0] < 0.7 <= top3[0] + top3[1]
    assert f.in_top_p.tolist() == [True, False, False, True, False]
    assert (f.kept == f.in_top_k & f.in_top_p).all() and f.probs.sum() == pytest.approx(1)
    np.testing.assert_allclose(f.before, softmax([3.0, 1.0, 0.0, 2.0, 2.0]))
    with pytest.raises(ValueError):
        f.probs[0] = 1.0  # read-only: a cached result can be shared


@pytest.mark.parametrize("kwargs, match", [
    (dict(temperature=0), "temperature"), (dict(temperature=-1), "temperature"),
    (dict(temperature=float("nan")), "temperature"), (dict(top_k=0), "top_k"),
    (dict(top_k=2.5), "top_k"), (dict(top_k=True), "top_k"), (dict(top_p=0), "top_p"),
    (dict(top_p=1.01), "top_p"), (dict(logits=[[1.0, 2.0]]), "one row"), (dict(logits=[]), "one row"),
    (dict(logits=[1.0, float("nan")]), "finite"), (dict(logits=[-np.inf, -np.inf]), "finite")])
def test_bad_arguments_say_what_is_allowed(kwargs, match):
    with pytest.raises(ValueError, match=match):
        next_token_distribution(**({"logits": [1.0, 2.0]} | kwargs))


def test_kv_cache_bytes_of_published_models():
    llama7 = kv_cache_bytes(n_layers=32, n_kv_heads=32, d_head=128, n_tokens=4096)
    assert llama7 == 2 * 2**30  # 2 GiB per 4096-token sequence in fp16
    assert kv_cache_bytes(12, 12, 64, 1, bytes_per_value=2) == 36 * 2**10  # GPT-2 small: 36 KiB/token
    mha = kv_cache_bytes(80, 64, 128, 4096, batch=8)
    gqa = kv_cache_bytes(80, 8, 128, 4096, batch=8)  # Llama-2-70B: 64 query heads share 8 K/V heads
    assert mha == 8 * gqa == 8 * 8 * 1.25 * 2**30
    assert kv_cache_bytes(80, 1, 128, 4096) * 64 == kv_cache_bytes(80, 64, 128, 4096)  # MQA
    assert kv_cache_bytes(32, 32, 128, 4096, bytes_per_value=4) == 2 * llama7  # fp32
    for m in PUBLISHED_MODELS:
        assert m.n_heads % m.n_kv_heads == 0 and m.context > 0
    with pytest.raises(ValueError, match="n_tokens"):
        kv_cache_bytes(1, 1, 1, -1)


@pytest.mark.parametrize("kv_heads", [None, 2, 1])
def test_kv_cache_bytes_equal_the_cache_the_model_builds(kv_heads):
    """Count the bytes of the real KVCache tensors after a prompt of 11 tokens."""
    cfg = tfviz.preset("gpt-tiny").replace(n_kv_heads=kv_heads)
    model = Transformer(cfg).eval()
    with torch.no_grad():
        _, cache = model.step(torch.arange(7, 18)[None])
    held = sum(t.numel() * t.element_size() for layer in cache.layers for t in layer)
    assert held == config_kv_cache_bytes(cfg, 11) == kv_cache_bytes(3, cfg.kv_heads, 16, 11, 1, 4)


def test_per_token_loss_is_the_training_loss():
    gpt = tfviz.load("gpt-tiny")
    text = "the animal didn't cross the street because it was too tired."
    r = lm_loss_per_token(gpt, text)
    ids = gpt.encode(text)
    assert r.inputs == tuple(ids) and r.targets == (*ids[1:], gpt.tokenizer.eos_id)
    assert r.target_tokens[-1] == "<eos>" and r.input_tokens == tuple(gpt.tokenizer.tokens(text))
    with torch.no_grad():
        _, ce = lm_loss(gpt.model, [ids + [gpt.tokenizer.eos_id]], torch.Generator(), gpt.tokenizer)
    assert r.mean == pytest.approx(float(ce), abs=1e-5)  # what training minimised, on this row
    with torch.no_grad():
        logits = gpt.model(torch.tensor([ids]))[0].numpy()  # (T, V)
    p = softmax(logits)  # the numpy reference, float64 of the same call's logits (this thread)
    want = [-math.log(p[t, y]) for t, y in enumerate(r.targets)]
    np.testing.assert_allclose(r.losses, want, atol=1e-5)
    np.testing.assert_allclose(r.probs, np.exp(-np.array(want)), atol=1e-6)
    bare = lm_loss_per_token(gpt, text, append_eos=False)
    # the same inputs, the same call: the same float32 logits, the losses in float64
    assert bare.targets == tuple(ids[1:]) and bare.losses == pytest.approx(r.losses[:-1], abs=1e-9)


def test_per_token_loss_limits():
    gpt = tfviz.load("gpt-tiny")
    long = lm_loss_per_token(gpt, "the dog sat " * 60)
    assert len(long.inputs) == 128 and "at most 128" in long.notice
    with pytest.raises(ValueError, match="two tokens"):
        lm_loss_per_token(gpt, "the", append_eos=False)
    with pytest.raises(ValueError, match="gpt-tiny, moe-tiny"):
        lm_loss_per_token(tfviz.load("bert-tiny"), "the dog")


def test_no_global_random_state_is_used_or_changed():
    gpt = tfviz.load("gpt-tiny")

    def run():
        g = generate(gpt, "the dog", strategy="sample", temperature=1.5, seed=7, max_new_tokens=6)
        return g.new_ids, beam_search(gpt, "the dog", 2, 3)

    results = []
    for global_seed in (0, 1):
        torch.manual_seed(global_seed)
        np.random.seed(global_seed)
        torch_state, np_state = torch.get_rng_state(), np.random.get_state()
        results.append(run())
        assert torch.equal(torch.get_rng_state(), torch_state)
        assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), np_state))
    assert results[0] == results[1]


@pytest.mark.parametrize("text, cut", [
    ("the cat sat on the mat.", ("the cat sat on the", " mat.")),
    ("It was wide!  ", ("It was", " wide!")),
    ('He said "go."', ("He said", ' "go."')),
    ("the mat .", ("the", " mat .")),
    ("the cat sat on the", None),
    ("Hi.", None),
    ("", None),
])
def test_a_sentence_end_is_cut_with_its_last_word(text, cut):
    from tfviz.decoding.prompt import cut_sentence_end

    assert cut_sentence_end(text) == cut


def test_the_starting_prompt_is_cut_only_where_the_model_would_end():
    from tfviz.decoding.prompt import starting_prompt

    bundle = tfviz.load("gpt-tiny")
    eos = bundle.tokenizer.eos_id
    for text, cut in (("the girl was happy.", True), ("the girl was", False)):
        logits = bundle.trace(text)["logits"][-1]
        assert (int(logits.argmax()) == eos) is cut
        start, gone = starting_prompt(text, logits, (eos,))
        assert (gone is not None) is cut and (start == text) is not cut
