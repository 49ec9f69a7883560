"""Training pieces: batches, BERT masking shares, the letters tokenizer, the schedule, and
bit-for-bit reproducible short runs of the real command."""
import json

import pytest
import torch

from tfviz.tokenizer import load_tokenizer
from tfviz.training.batches import IGNORE, lm_batch, mlm_batch, seq2seq_batch
from tfviz.training.loop import lr_at
from tfviz.tokenizer.task import TaskTokenizer


def test_lm_batch_shifts_and_ignores_padding():
    x, y = lm_batch([[7, 8, 2], [9, 2]])
    assert x.tolist() == [[7, 8, 2], [9, 2, 0]]
    assert y.tolist() == [[8, 2, IGNORE], [2, IGNORE, IGNORE]]


def test_seq2seq_batch_teacher_forcing():
    e, m, d, t = seq2seq_batch([([4, 5, 6], [6, 5, 4]), ([7], [7])], bos_id=1, eos_id=2)
    assert e.tolist() == [[4, 5, 6], [7, 0, 0]] and m.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert d.tolist() == [[1, 6, 5, 4], [1, 7, 0, 0]]
    assert t.tolist() == [[6, 5, 4, 2], [7, 2, IGNORE, IGNORE]]


def test_mlm_masking_is_15_percent_then_80_10_10():
    rows = [list(range(10, 30))] * 3000  # 20 tokens a row -> exactly 3 chosen per row
    x, y, mask = mlm_batch(rows, torch.Generator().manual_seed(0), mask_id=4, vocab_size=600)
    original = torch.tensor(rows)
    chosen = y != IGNORE
    assert chosen.sum(1).eq(3).all()  # round(0.15 * 20) in every row
    assert torch.equal(y[chosen], original[chosen]) and mask.all()
    n = chosen.sum().item()
    masked = (x == 4) & chosen
    kept = (x == original) & chosen
    random = chosen & ~masked & ~kept
    assert masked.sum() / n == pytest.approx(0.8, abs=0.015)
    assert kept.sum() / n == pytest.approx(0.1, abs=0.015)  # (a random draw may also hit the original)
    assert random.sum() / n == pytest.approx(0.1, abs=0.015)
    assert (x[random] >= 7).all()  # random replacements are never special tokens
    assert torch.equal(x[~chosen], original[~chosen])  # the other 85% are untouched


def test_mlm_skips_padding_and_chooses_at_least_one():
    x, y, mask = mlm_batch([[10, 11], [12, 13, 14, 15, 16]], torch.Generator().manual_seed(1),
                           mask_id=4, vocab_size=50)
    assert mask.tolist() == [[1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]
    assert (y[0, 2:] == IGNORE).all() and ((y != IGNORE).sum(1) == 1).all()


@pytest.mark.parametrize("text", ["a b c d", "abcd", "A,B,C,D", " a  bc d\n"])
def test_task_tokenizer_accepts_spaced_and_plain_letters(text):
    tok = TaskTokenizer()
    assert tok.encode(text) == [4, 5, 6, 7]
    assert tok.tokens(text) == ["a", "b", "c", "d"]


def test_task_tokenizer_skips_unknown_and_keeps_special_ids():
    tok = TaskTokenizer()
    assert tok.encode("a9z!b") == [4, 5] and tok.unknown("a9z!b") == ["9", "z", "!"]
    assert tok.encode("<bos>ab<eos>", allow_special=True) == [1, 4, 5, 2]
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.sep_id, tok.vocab_size) == (0, 1, 2, 3, 20)
    assert tok.decode([1, 5, 4, 2]) == "<bos>ba<eos>" and tok.decode([1, 5, 4, 2], skip_special=True) == "ba"
    with pytest.raises(IndexError):
        tok.id_to_token(20)


def test_load_tokenizer_dispatches_on_kind(tmp_path):
    TaskTokenizer().save(tmp_path / "tokenizer.json")
    assert json.loads((tmp_path / "tokenizer.json").read_text())["kind"] == "task"
    tok = load_tokenizer(tmp_path)
    assert isinstance(tok, TaskTokenizer) and tok.encode("ba") == [5, 4]
    from tfviz.tokenizer.served import train_served_tokenizer

    train_served_tokenizer(["the cat sat"] * 20, vocab_size=300).save(tmp_path / "bpe.json")
    assert load_tokenizer(tmp_path / "bpe.json").tokens("the cat") == ["␣the", "␣cat"]


def test_lr_schedule_warms_up_then_decays_to_a_tenth():
    assert lr_at(0, 100, 1.0, 10) == pytest.approx(0.1)
    assert lr_at(10, 100, 1.0, 10) == pytest.approx(1.0)
    assert lr_at(99, 100, 1.0, 10) == pytest.approx(0.1)


@pytest.mark.parametrize("name", ["moe-tiny", "reverse-encdec"])
def test_twenty_steps_twice_give_identical_files(tmp_path, name):
    from tfviz.train import main

    for run in ("a", "b"):
        assert main(["--preset", name, "--steps", "20", "--out", str(tmp_path / run), "--quiet"]) == 0
    # bit for bit: the same seeds, data, shapes and thread count in one process, so the same kernels
    for f in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    a, b = (json.loads((tmp_path / r / "manifest.json").read_text()) for r in "ab")
    a["train"].pop("wall_seconds"), b["train"].pop("wall_seconds")
    assert a == b and a["command"].endswith("--steps 20")
