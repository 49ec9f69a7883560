"""The served byte-level tokenizer: exact round trips, fixed special ids, determinism, and the
uncased normaliser the bundled models read through."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.pre_tokenizers import ByteLevel

from tfviz.tokenizer.readable import bytes_to_unicode, readable_token
from tfviz.tokenizer.served import (
    SPECIAL_TOKENS,
    ServedTokenizer,
    merges_from_json,
    train_served_tokenizer,
)

TEXTS = ["the cat sat on the mat.", "the dog didn't sit on the hat!", "cats and dogs sat."] * 20


@pytest.fixture(scope="module")
def tok():
    """Cased, so every string must come back exactly."""
    return train_served_tokenizer(TEXTS, vocab_size=320, uncased=False)


@pytest.fixture(scope="module")
def uncased():
    return train_served_tokenizer(TEXTS, vocab_size=320)


def _reference_normalize(text: str) -> str:
    """An independent uncasing: Python's NFKC, then each character lowercased on its own (HF's
    Lowercase maps characters one by one, so a word-final Σ becomes σ, not Python's ς)."""
    return "".join(ch.lower() for ch in unicodedata.normalize("NFKC", text))


ODD = ["", " ", "  x  ", "hello", " hello", "\n\nnew lines\n", "tab\there", "héllo wörld",
       "😀👨‍👩‍👧 🇫🇷", "שלום עולם", "مرحبا", "<b>x</b> &amp; <script>", "nul\x00char\x7f",
       "[MASK] <pad> [CLS]", "[MASK]world", "Ġ ␣ \ufffd", "a" * 500]


@pytest.mark.parametrize("text", ODD)
def test_round_trip_exact(tok, text):
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_round_trip_any_text(tok, text):
    assert tok.decode(tok.encode(text)) == text


@given(st.lists(st.sampled_from(["[MASK]", "[CLS]", "<pad>", " ", "a", "b", "\n"]), max_size=12).map("".join))
@settings(deadline=None)
def test_round_trip_with_specials(tok, text):
    assert tok.decode(tok.encode(text, allow_special=True)) == text


def test_special_ids_are_first(tok):
    assert [tok.hf.id_to_token(i) for i in range(7)] == list(SPECIAL_TOKENS)
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
    assert (tok.mask_id, tok.cls_id, tok.sep_id) == (4, 5, 6)
    assert tok.special_ids["[MASK]"] == 4


def test_specials_are_text_unless_allowed(tok):
    assert tok.mask_id not in tok.encode("[MASK]")
    assert tok.encode("[CLS] the cat", allow_special=True)[0] == tok.cls_id
    assert tok.tokens("[MASK]world", allow_special=True)[:2] == ["[MASK]", "w"]


def test_matches_raw_hf_when_text_has_no_leading_space(tok):
    for text in ["the cat sat.", "héllo 😀 didn't", "a\nb"]:
        assert tok.encode(text) == tok.hf.encode(text).ids


def test_readable_tokens(tok):
    assert tok.tokens("the cat") == ["␣the", "␣cat"]
    assert tok.tokens("\n") == ["␣", "↵"]
    emoji = tok.tokens("😀")  # never merged: one token per UTF-8 byte, shown in hex
    assert emoji == ["␣", "<F0>", "<9F>", "<98>", "<80>"]
    pairs = tok.token_ids_and_strings("the")
    assert pairs == [(tok.encode("the")[0], "␣the")]
    assert tok.id_to_token(tok.mask_id) == "[MASK]"
    with pytest.raises(IndexError):
        tok.id_to_token(10**6)


def test_readable_helpers():
    assert sorted(bytes_to_unicode().values()) == sorted(ByteLevel.alphabet())
    assert readable_token("Ã©") == "é" and readable_token("Ā") == "␀" and readable_token("ĉ") == "⇥"


def test_decode_middle_slice_keeps_real_space(tok):
    ids = tok.encode("the cat")
    assert tok.decode(ids[1:], strip_prefix_space=False) == " cat"
    assert tok.decode([]) == ""


# Blocks whose characters have been in Unicode for decades (Latin to Mongolian, punctuation and
# symbols, the alphabetic ligatures, full-width forms). Python's unicodedata and HF tokenizers
# ship different Unicode versions, and for about 130 newer characters (e.g. U+1FBF0, a digit
# added in Unicode 13) their NFKC or case tables disagree; none lies in these blocks.
SETTLED = st.one_of(*[st.characters(min_codepoint=a, max_codepoint=b, exclude_categories=("Cs",))
                      for a, b in [(0, 0x1C7F), (0x2000, 0x2BFF), (0xFB00, 0xFB4F), (0xFF00, 0xFFEF)]])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_uncased_round_trip_gives_the_normalised_text(uncased, text):
    assert uncased.decode(uncased.encode(text)) == uncased.normalize(text)


@settings(max_examples=200, deadline=None)
@given(st.text(SETTLED, max_size=80))
def test_normaliser_agrees_with_python_nfkc_and_lowercase(uncased, text):
    assert uncased.normalize(text) == _reference_normalize(text)


@pytest.mark.parametrize("typed,plain", [
    ("The Cat sat ON the mat.", "the cat sat on the mat."),
    ("ＴＨＥ ｃａｔ", "the cat"),  # full-width letters: NFKC folds them
    ("the ﬁsh", "the fish"),  # the "fi" ligature
])
def test_capitals_and_compatibility_forms_read_like_plain_text(uncased, typed, plain):
    assert uncased.encode(typed) == uncased.encode(plain)
    assert uncased.tokens("The") == ["␣the"]  # one token, not byte fragments


def test_specials_survive_normalisation(uncased):
    assert uncased.encode("[MASK] The", allow_special=True) == [uncased.mask_id, *uncased.encode("the")]
    assert uncased.mask_id not in uncased.encode("[MASK]")  # as text it is just characters


def test_uncased_is_saved_with_the_tokenizer(uncased, tmp_path):
    uncased.save(tmp_path / "tok.json")
    again = ServedTokenizer.from_file(tmp_path / "tok.json")
    assert again.uncased and again.encode("The CAT") == uncased.encode("the cat")
    assert not ServedTokenizer.from_json(train_served_tokenizer(TEXTS, 300, uncased=False).to_json()).uncased


def test_training_is_deterministic():
    a = train_served_tokenizer(TEXTS, vocab_size=300).to_json()
    b = train_served_tokenizer(list(TEXTS), vocab_size=300).to_json()
    assert a == b


def test_save_and_load(tok, tmp_path):
    path = tmp_path / "tok.json"
    tok.save(path)
    again = ServedTokenizer.from_file(path)
    assert again.encode("the dog 😀") == tok.encode("the dog 😀")
    assert again.vocab_size == tok.vocab_size <= 320  # fewer if pairs seen twice run out
    assert again.merges() == tok.merges() and len(tok.merges()) == tok.vocab_size - 263


def test_merges_both_json_formats():
    new = '{"model": {"merges": [["a", "b"], ["ab", "c"]]}}'
    old = '{"model": {"merges": ["a b", "ab c"]}}'
    assert merges_from_json(new) == merges_from_json(old) == [("a", "b"), ("ab", "c")]


def test_bad_inputs():
    with pytest.raises(ValueError):
        train_served_tokenizer(TEXTS, vocab_size=100)
    with pytest.raises(ValueError):
        ServedTokenizer(Tokenizer.from_str(_plain_bpe_json()))


def _plain_bpe_json():
    from tokenizers import models

    return Tokenizer(models.BPE(vocab={"a": 0}, merges=[])).to_str()
