"""Fine-tuning bert-tiny three ways (lesson 15): the LoRA layer against torch by hand, the
trained counts against the formulas and against the model's own tensors, the frozen weights
untouched, the shared model untouched, and full fine-tuning well above chance."""
from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

import tfviz
from tfviz.lab.runs import LabRunner
from tfviz.lab.settings import LabSettings
from tfviz.training import finetune as ftt
from tfviz.training.finetune import (DEFAULT_MODES, MODES, FinetuneSettings, LoRALinear, classifier,
                                     encode_examples, expected_trained, fine_tune, train_mode,
                                     trained_count)
from tfviz.training.finetune_job import FinetuneJob

SMALL = FinetuneSettings(steps=30, train_size=256, heldout_size=64)  # seconds, not a real budget


@pytest.fixture(scope="module")
def bert():
    torch.set_num_threads(1)
    return tfviz.load("bert-tiny")


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_lora_starts_as_the_frozen_layer_and_adds_x_a_b():
    torch.manual_seed(0)
    base = nn.Linear(6, 5)
    lora = LoRALinear(base, rank=2)
    x = torch.randn(3, 4, 6)  # (B, T, d_in)
    assert lora.A.shape == (6, 2) and lora.B.shape == (2, 5)
    assert torch.count_nonzero(lora.B) == 0 and torch.count_nonzero(lora.A) == 12  # A random, B zero
    assert torch.equal(lora(x), base(x))  # B = 0: exactly the frozen layer, bit for bit
    with torch.no_grad():
        lora.B.copy_(torch.randn(2, 5))
    W, b = base.weight.T, base.bias  # torch keeps W as d_out × d_in
    by_hand = torch.einsum("bti,io->bto", x, W) + b + torch.einsum("bti,ir,ro->bto", x, lora.A, lora.B)
    torch.testing.assert_close(lora(x), by_hand, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(lora(x), base(x))


def test_the_classifier_body_returns_the_last_layers_vectors(bert):
    text = "the cats chased the dog."
    net = classifier(bert.model, "head only")
    ids = torch.tensor([bert.encode(text)])
    h = net.body(ids, attention_mask=torch.ones_like(ids))  # (1, T, d)
    last = bert.trace(text)[f"blocks.{bert.config.n_layers - 1}.hook_resid_post"]
    torch.testing.assert_close(h[0], torch.as_tensor(last).reshape(h[0].shape), rtol=1e-5, atol=1e-5)
    assert bert.model.unembed is None  # the shared model keeps its LM head


@pytest.mark.parametrize("rank, p", [(1, 1), (4, 10), (16, 20)])
def test_trained_counts_equal_the_formulas(bert, rank, p):
    cfg = bert.config
    head = cfg.d_model * 2 + 2  # 64 · 2 weights and 2 biases
    full = head + sum(x.numel() for x in bert.model.parameters())
    by_hand = {"head only": head,
               # p input vectors of d
               "prompt tuning": head + p * cfg.d_model,
               # p keys and p values, each of n_kv_heads · d_head = 64, in each of the 2 layers
               "prefix tuning": head + cfg.n_layers * 2 * p * cfg.kv_heads * cfg.d_head,
               # A (64 × r) and B (r × 64) beside W_Q and W_V, in each of the 2 layers
               "LoRA": head + cfg.n_layers * 2 * rank * (cfg.d_model + cfg.d_model),
               "full": full, "from scratch": full}
    start = torch.arange(5, 5 + p)
    for mode in MODES:
        net = classifier(bert.model, mode, rank, start=start)
        assert trained_count(net) == expected_trained(cfg, mode, rank, p=p) == by_hand[mode], mode
    assert by_hand["full"] == 138_498 and expected_trained(cfg, "LoRA", 4) == 2_178


def test_lora_changes_nothing_before_its_first_step(bert):
    """Same seed: the same head in every mode, and B = 0, so all three score alike at step 0."""
    ids, mask, _ = encode_examples(bert.tokenizer, [("the cat chased the dogs.", 1),
                                                    ("The chef did not cross the road because it was so wide.", 0)])
    scores = [classifier(bert.model, mode, 4, seed=3)(ids, mask) for mode in ("head only", "LoRA", "full")]
    # the same weights and inputs in this thread; LoRA's B = 0 adds exact zeros
    torch.testing.assert_close(scores[1], scores[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(scores[2], scores[0], rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["head only", "LoRA"])
def test_frozen_weights_stay_as_they_were(bert, mode):
    from tfviz.data.classify import make_examples

    train = encode_examples(bert.tokenizer, make_examples("number", 128, seed=0))
    net = classifier(bert.model, mode, 4)
    before, head = _state(bert.model), net.head.weight.detach().clone()
    train_mode(net, train, FinetuneSettings(steps=20), ftt.LEARNING_RATES[mode])
    body = {k.replace(".base.", "."): v for k, v in net.body.state_dict().items()
            if not k.endswith((".A", ".B"))}
    assert body.keys() == before.keys()
    for k, v in before.items():
        assert torch.equal(body[k], v), k  # the copy's pretrained weights did not move
        assert torch.equal(bert.model.state_dict()[k], v), k  # nor the bundle's
    assert not torch.equal(net.head.weight, head)  # the head did train
    if mode == "LoRA":
        assert all(torch.count_nonzero(b.attn.W_q.B) > 0 and torch.count_nonzero(b.attn.W_v.B) > 0
                   for b in net.body.blocks)


def test_a_short_run_reports_what_it_trained_and_leaves_the_model_alone(bert):
    before = _state(bert.model)
    seen = []
    result = fine_tune(bert.model, bert.tokenizer, SMALL, on_progress=lambda m, s: seen.append((m, s)))
    assert [m.mode for m in result.modes] == list(DEFAULT_MODES) == ["head only", "LoRA", "full"]
    for m in result.modes:
        assert m.trained == m.expected == expected_trained(bert.config, m.mode, SMALL.rank)
        assert 0 <= m.accuracy <= 1 and m.seconds > 0
    # the same head at step 0, and B = 0: all three start from the same held-out accuracy
    assert len({m.accuracy_before for m in result.modes}) == 1
    assert seen[0] == ("head only", 1) and seen[-1] == ("full", SMALL.steps) and len(seen) == 3 * SMALL.steps
    assert all(torch.equal(bert.model.state_dict()[k], v) for k, v in before.items())  # full trained a copy


def test_full_fine_tuning_is_well_above_chance_on_held_out_sentences(bert):
    """The default budget's full fine-tune, the lesson's own, on 600 held-out sentences.

    Here it solves all 600 (BENCHMARKS.md). Another CPU or torch build may round its sums
    differently in the last bits, and training then follows a slightly different path; but the
    run fits its training set (final loss about 1e-4 here), and the floor of 0.70 sits 30 points
    below what it reaches and 20 above chance, which 600 coin tosses pass with probability
    below 1e-20. A rounding difference does not cost a fitted model 30 points."""
    settings = FinetuneSettings()
    from tfviz.data.classify import make_examples

    train = encode_examples(bert.tokenizer, make_examples(settings.task, settings.train_size, settings.seed))
    heldout = encode_examples(bert.tokenizer, make_examples(settings.task, settings.heldout_size,
                                                            ftt.HELDOUT_SEED, "heldout"))
    net = classifier(bert.model, "full", settings.rank, settings.seed)
    train_mode(net, train, settings, ftt.LEARNING_RATES["full"])
    assert ftt.accuracy(net, *heldout) > 0.70


class Holding:
    """A lab run's training that lasts until ``release`` is set: it holds a slot of the runner."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, settings, log, stop, threads) -> None:
        self.release.wait(30)


def test_the_job_waits_its_turn_in_the_labs_queue_and_can_be_stopped(bert):
    hold = Holding()
    runner = LabRunner(max_running=1, train_fn=hold)
    runner.submit("someone", LabSettings())  # a lab run holds the only slot
    tiny = FinetuneSettings(steps=3, train_size=64, heldout_size=16)
    job = FinetuneJob(bert.model, bert.tokenizer, tiny, runner.ticket("fine-tune"))
    assert not job.wait(0.5)
    queued = job.status()
    assert queued.state == "queued" and queued.progress == 0 and queued.position == 1
    assert runner.counts() == (1, 1)  # the lab run trains, the fine-tune waits in the same line
    hold.release.set()
    assert job.wait(60)
    done = job.status()
    assert done.state == "done" and done.progress == 1 and done.result.settings == tiny
    assert done.position is None
    assert runner.join(10) and runner.counts() == (0, 0)  # its slot was given back

    hold = Holding()
    runner = LabRunner(max_running=1, train_fn=hold)
    runner.submit("someone", LabSettings())
    behind = runner.submit("another", LabSettings())  # queued before the next fine-tune
    stopped = FinetuneJob(bert.model, bert.tokenizer, tiny, runner.ticket("fine-tune"))
    assert stopped.status().position == 2 and behind.position == 1
    stopped.stop()
    assert stopped.status().state == "stopped" and stopped.status().result is None
    assert runner.counts() == (1, 1)  # it left the queue; the lab run behind it did not
    hold.release.set()
    assert runner.join(30) and runner.counts() == (0, 0)


def test_settings_are_checked():
    with pytest.raises(ValueError):
        FinetuneSettings(task="sentiment")
    with pytest.raises(ValueError):
        FinetuneSettings(rank=0)
    with pytest.raises(ValueError):
        classifier(nn.Linear(1, 1), "prefix")
