"""Every kind of tokenizer a bundle can hold implements the Tokenizer protocol, in its
attributes and in what they do: round trips, special tokens first, special ids in range."""
import pytest

from tfviz.bundle import ASSETS, bundled_names
from tfviz.tokenizer import Tokenizer, load_tokenizer
from tfviz.tokenizer.byte import ByteTokenizer
from tfviz.tokenizer.served import ServedTokenizer, train_served_tokenizer
from tfviz.tokenizer.task import TaskTokenizer

KINDS = {
    "byte": ByteTokenizer,
    "task": TaskTokenizer,
    "served": lambda: train_served_tokenizer(["the cat sat on the mat"] * 20, vocab_size=300),
    **{f"assets/{name}": (lambda name=name: load_tokenizer(ASSETS / name)) for name in bundled_names()},
}


@pytest.fixture(scope="module", params=sorted(KINDS))
def tok(request):
    return KINDS[request.param]()


def test_bundled_tokenizers_are_the_kinds_we_expect():
    kinds = {name: type(load_tokenizer(ASSETS / name)) for name in bundled_names()}
    # the task model reads digits; every story model (and its lesson-18 variants) the served BPE
    assert kinds.pop("reverse-encdec") is TaskTokenizer
    assert {"bert-tiny", "gpt-tiny", "moe-tiny", "gqa-tiny", "mqa-tiny"} <= set(kinds)
    assert set(kinds.values()) == {ServedTokenizer}


def test_satisfies_the_protocol(tok):
    assert isinstance(tok, Tokenizer)


def test_not_a_tokenizer_without_the_special_ids():
    class NoIds:
        specials = ("<pad>",)
        vocab_size = 1

        def normalize(self, text): return text
        def encode(self, text): return []
        def decode(self, ids): return ""
        def id_to_token(self, token_id): return "<pad>"
        def tokens(self, text): return []

    assert not isinstance(NoIds(), Tokenizer)


@pytest.mark.parametrize("text", ["abc", "Abc", "cab ab"])
def test_round_trip_of_a_simple_string(tok, text):
    ids = tok.encode(text)
    assert ids and all(isinstance(i, int) and 0 <= i < tok.vocab_size for i in ids)
    # TaskTokenizer ignores spaces, as a learner typing "c a b" means "cab"
    expected = tok.normalize(text).replace(" ", "") if isinstance(tok, TaskTokenizer) else tok.normalize(text)
    assert tok.decode(ids) == expected
    assert tok.tokens(text) == [tok.id_to_token(i) for i in ids]


def test_normalize_lowercases_only_uncased_tokenizers(tok):
    expected = "Abc" if isinstance(tok, ByteTokenizer) else "abc"
    assert tok.normalize("Abc") == expected


def test_specials_take_the_first_ids(tok):
    assert len(tok.specials) >= 3 and len(set(tok.specials)) == len(tok.specials)
    assert [tok.id_to_token(i) for i in range(len(tok.specials))] == list(tok.specials)
    assert tok.id_to_token(len(tok.specials)) not in tok.specials  # the first ordinary token


def test_special_ids_are_in_range_and_named_by_their_token(tok):
    assert (tok.specials[tok.pad_id], tok.specials[tok.bos_id], tok.specials[tok.eos_id]) == (
        "<pad>", "<bos>", "<eos>")
    if tok.mask_id is None:
        assert "[MASK]" not in tok.specials
    else:
        assert tok.specials[tok.mask_id] == "[MASK]"
    assert all(0 <= i < len(tok.specials) for i in (tok.pad_id, tok.bos_id, tok.eos_id))
