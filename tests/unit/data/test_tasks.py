"""Algorithmic task generators and their vocabulary."""

import pytest

from tfviz.data.tasks import DIGITS, LETTERS, TaskVocab, is_heldout, make_copy, make_reverse, make_sort

MAKERS = [make_reverse, make_sort, make_copy]


@pytest.mark.parametrize("make", MAKERS)
def test_deterministic_and_seed_dependent(make):
    assert make(50, seed=1) == make(50, seed=1)
    assert make(50, seed=1) != make(50, seed=2)


@pytest.mark.parametrize("make", MAKERS)
def test_train_and_heldout_are_disjoint_across_seeds(make):
    train = {src for s in range(3) for src, _ in make(300, seed=s, lengths=(3, 4))}
    held = {src for s in range(3) for src, _ in make(100, seed=s, lengths=(3, 4), split="heldout")}
    assert held and train.isdisjoint(held)
    assert all(is_heldout(src) for src in held) and not any(is_heldout(src) for src in train)


@pytest.mark.parametrize("alphabet", [LETTERS, DIGITS])
def test_targets_are_correct(alphabet):
    for src, tgt in make_reverse(200, seed=0, alphabet=alphabet):
        assert list(tgt) == list(reversed(src))
    for src, tgt in make_sort(200, seed=0, alphabet=alphabet):
        assert sorted(tgt) == sorted(src) and list(tgt) == sorted(src, key=alphabet.index)
        assert all(alphabet.index(a) <= alphabet.index(b) for a, b in zip(tgt, tgt[1:]))
    for src, tgt in make_copy(200, seed=0, alphabet=alphabet):
        assert tgt == src


def test_lengths_and_alphabet_respected():
    for src, _ in make_reverse(300, seed=0, lengths=(2, 5), alphabet=DIGITS):
        assert 2 <= len(src) <= 5 and set(src) <= set(DIGITS)


def test_sort_uses_alphabet_order_not_string_order():
    alphabet = ("z", "y", "x")
    for src, tgt in make_sort(50, seed=0, lengths=(4, 4), alphabet=alphabet):
        assert list(tgt) == sorted(src, reverse=True)


def test_vocab_layout_and_round_trip():
    v = TaskVocab(LETTERS)
    assert v.tokens[:4] == ("<pad>", "<bos>", "<eos>", "<sep>")
    assert (v.pad_id, v.bos_id, v.eos_id, v.sep_id) == (0, 1, 2, 3) and v.size == 20
    src, tgt = make_reverse(1, seed=0)[0]
    seq = v.sequence(src, tgt)
    assert seq[0] == "<bos>" and seq[-1] == "<eos>" and seq[len(src) + 1] == "<sep>"
    assert v.decode(v.encode(seq)) == seq
    assert v.decode(v.encode(seq) + [0, 0], skip_special=True) == [*src, *tgt]


@pytest.mark.parametrize("alphabet", [(), ("a", "a"), ("a", "<pad>")])
def test_bad_alphabets(alphabet):
    with pytest.raises(ValueError):
        TaskVocab(alphabet)


def test_bad_arguments_raise_instead_of_looping():
    with pytest.raises(ValueError):
        make_reverse(5, seed=0, lengths=(0, 3))
    with pytest.raises(ValueError):
        make_reverse(5, seed=0, split="test")
    with pytest.raises(ValueError):  # only two possible sources: not enough held-out ones
        make_copy(50, seed=0, lengths=(1, 1), alphabet=("a", "b"), split="heldout")
