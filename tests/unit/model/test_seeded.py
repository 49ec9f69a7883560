"""A seed gives the same weights even while other threads build seeded models: torch's global
generator is one per process, and tfviz.model.seeded keeps seeded draws from interleaving (a
server builds a learner's lab model while its warm-up or another learner builds others)."""
from __future__ import annotations

import threading

import torch

from tfviz.config import ModelConfig
from tfviz.model import Transformer
from tfviz.model.seeded import seeded


def _weights(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_a_seeded_build_is_the_same_while_other_threads_build_other_seeds():
    cfg = ModelConfig(n_layers=2, vocab_size=200, d_model=64, n_heads=4, init_seed=0)
    alone = _weights(Transformer(cfg))
    stop, built, errors = threading.Event(), [], []

    def others(seed: int) -> None:  # other learners' models, built again and again
        try:
            while not stop.is_set():
                Transformer(ModelConfig(n_layers=2, vocab_size=200, d_model=64, n_heads=4,
                                        init_seed=seed))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=others, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    try:
        for _ in range(20):
            built.append(_weights(Transformer(cfg)))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    for weights in built:  # bit for bit: the same draws from the same seed, in the same order
        assert all(torch.equal(a, b) for a, b in zip(alone, weights))


def test_seeded_leaves_the_global_generator_as_it_was():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with seeded(7):
        inside = torch.rand(3)
    assert torch.equal(torch.rand(3), expected)  # the caller's stream goes on untouched
    with seeded(7):
        assert torch.equal(torch.rand(3), inside)  # and a seed gives the same draws again
