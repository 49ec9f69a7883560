"""Lesson 17's measured memory, its what-if table and its rank-k yardstick, each against an
independent reference: tensors of known size, a model built with the pattern and run by plain
torch, and numpy's SVD."""
import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.experiments import long_sequences as ls
from tfviz.model.transformer import Transformer

PATTERN = dict(window=2, dilation=2, n_global=1, n_random=2, stride=4, seed=0)  # the page's defaults
PROBE = "The animal didn't cross the street because it was too wide. It refers to the"


def test_peak_bytes_of_known_allocations():
    got = ls.peak_bytes({
        "two held": lambda: (torch.empty(1000), torch.empty(2000)),  # 4000 + 8000 bytes at once
        "one after another": lambda: [torch.empty(3000).sum() for _ in range(3)],  # 12000 each, freed
        "nothing": lambda: None})
    assert got["two held"] == 12000
    assert 12000 <= got["one after another"] < 2 * 12000
    assert got["nothing"] == 0


@pytest.mark.parametrize("n", [256, 512])
def test_attention_memory_is_measured_and_grows_as_the_rule_says(n):
    w, d = 16, 32
    small, big = ls.attention_cost([n, 2 * n], window=w, d=d, repeats=1)
    for c in (small, big):
        m = c.n
        # full holds the n×n scores and their softmax (float32) at once, plus n×d outputs
        assert 4 * m * m <= c.full_bytes <= 4 * (2 * m * m + 4 * m * d)
        # the window: n×(w+1) scores a few times over, K and V padded by w rows, the output
        assert 4 * m * (w + 1) <= c.window_bytes <= 4 * (4 * m * (w + 1) + 3 * (m + w) * d)
    assert big.full_bytes / small.full_bytes == pytest.approx(4, rel=0.05)
    assert big.window_bytes / small.window_bytes == pytest.approx(2, rel=0.05)


def test_best_rank_errors_against_numpy_svd():
    rng = np.random.default_rng(3)
    n, H, dh = 9, 2, 4
    q, k, v = (rng.normal(size=(n, H, dh)) for _ in range(3))
    got = ls.best_rank_errors(q, k, v)
    want = []
    for r in range(1, n + 1):
        num = den = 0.0
        for h in range(H):
            s = q[:, h] @ k[:, h].T / np.sqrt(dh)
            A = np.exp(s - s.max(1, keepdims=True))
            A /= A.sum(1, keepdims=True)
            U, S, Vt = np.linalg.svd(A)
            Ar = (U[:, :r] * S[:r]) @ Vt[:r]
            num += ((Ar @ v[:, h] - A @ v[:, h]) ** 2).sum()
            den += ((A @ v[:, h]) ** 2).sum()
        want.append(np.sqrt(num / den))
    np.testing.assert_allclose(got, want, atol=1e-10)  # float64 on both sides
    assert got[-1] == pytest.approx(0, abs=1e-12)  # k = n: the exact map
    assert np.all(np.diff(got) <= 1e-12)  # never worse with more rows


def test_asks_for_it(gpt):
    def asks(text):
        return ls.asks_for_it(text, gpt.token_strings(gpt.read(text).ids))

    assert asks(PROBE) and asks("the dog saw the road because it was wide. it REFERS to   the  ")
    assert not asks("The animal was tired.")
    assert not asks("the dog saw the road because it was wide. she prefers to the")
    assert not asks("flying arrows. It refers to the")  # no "it" with two nouns before it
    assert not asks("")


def _direct(bundle, ids, kind):
    """Logits of a model built with ``kind`` and the shared weights, by plain torch. Its context
    is the text's length, so the model draws its own pattern over exactly those positions, as
    the explorer does (gpt-tiny's sine positions do not depend on the context length)."""
    keys = {"seed": "pattern_seed"}
    cfg = dataclasses.replace(bundle.config, attn_pattern=kind, max_seq_len=len(ids),
                              **{keys.get(k, k): v for k, v in PATTERN.items()})
    model = Transformer(cfg).eval()
    model.load_state_dict(bundle.model.state_dict())
    with torch.no_grad():
        return model(torch.tensor([list(ids)]))[0].double()  # (n, V)


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def test_whatif_loss_and_answer_are_the_model_run_directly(gpt):
    ids = gpt.read(PROBE).ids
    before = {k: v.clone() for k, v in gpt.model.state_dict().items()}
    runs = ls.pattern_whatifs(gpt.model, ids, **PATTERN)
    assert list(runs) == ["full", "sliding", "dilated", "global", "bigbird", "strided", "block"]
    for kind, run in runs.items():
        logits = _direct(gpt, ids, kind)
        probs = torch.softmax(logits[-1], -1)
        assert run.answer == int(probs.argmax())
        assert run.prob == pytest.approx(float(probs.max()), abs=1e-5)
        assert run.loss == pytest.approx(float(F.cross_entropy(logits[:-1], torch.tensor(ids[1:]))),
                                         abs=1e-5)
    assert gpt.token_strings([runs["full"].answer]) == ["␣street"]  # the trained model is right
    table = ls.whatif_table(runs, lambda i: gpt.token_strings([i])[0], True)
    assert table['"it" refers to the …'][0] == "street"
    assert table["change vs full"][0] == 0
    assert gpt.model.cfg.attn_pattern == "full"  # the shared model is unchanged
    for k, v in gpt.model.state_dict().items():
        torch.testing.assert_close(v, before[k], atol=0, rtol=0)


@pytest.mark.parametrize("kind", ["sliding", "dilated", "global", "bigbird", "strided", "block"])
def test_whatif_maps_obey_the_mask_the_explorer_draws(gpt, kind):
    """The what-if reads through exactly the explorer's mask for this text: BigBird's random
    keys too (drawn over the text's n positions, not over the model's whole context)."""
    ids = gpt.read(PROBE).ids
    n = len(ids)
    runs = ls.pattern_whatifs(gpt.model, ids, kinds=(kind,), **PATTERN)
    allowed = ls.causal_pattern(kind, n, **PATTERN)
    maps = runs[kind].patterns  # (L, H, n, n)
    assert maps.shape[-2:] == (n, n)
    assert np.all(maps[..., ~allowed] == 0)
    assert np.all((maps > 0).any((0, 1)) == allowed)  # every allowed key is read by some head
    np.testing.assert_allclose(maps.sum(-1), 1, atol=1e-5)


def test_whatif_of_one_token_has_no_loss(gpt):
    runs = ls.pattern_whatifs(gpt.model, [gpt.encode("it")[0]], kinds=("full", "sliding"))
    table = ls.whatif_table(runs, lambda i: gpt.token_strings([i])[0], False)
    assert table["next-token loss (nats)"] == [None, None]
    assert '"it" refers to the …' not in table
