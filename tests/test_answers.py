"""The answer parsers: lenient on format, strict on content, never an exception."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfviz.exercises.answers import (DEFAULT_TOLERANCE, MAX_LENGTH, close, distinct, parse_number,
                                     parse_numbers)
from tfviz.exercises.words import parse_words


@pytest.mark.parametrize("text, expected", [
    ("[0.61, 0.20]", (0.61, 0.2)),
    ("0.61 0.2", (0.61, 0.2)),
    ("0.61, 0.2", (0.61, 0.2)),
    ("(0.61; 0.2)", (0.61, 0.2)),
    ("  0.61 ,\n 0.2  ", (0.61, 0.2)),
    ("3/5", (0.6,)),
    ("-3/5 −1/4", (-0.6, -0.25)),
    ("−0.5", (-0.5,)),  # unicode minus
    ("– 0.5", (-0.5,)),  # en dash, sign apart from the number
    ("-inf", (-math.inf,)),
    ("−∞", (-math.inf,)),
    ("[[2, -inf], [1, 3]]", (2.0, -math.inf, 1.0, 3.0)),
    ("1e-3 .5 5.", (0.001, 0.5, 5.0)),
    ("88%", (0.88,)),
    ("１２", (12.0,)),  # full-width digits
    ("+2 | 3", (2.0, 3.0)),
])
def test_accepts_common_formats(text, expected):
    result = parse_numbers(text)
    assert result.ok, result.error
    assert result.values == pytest.approx(expected)


@pytest.mark.parametrize("text", [
    "", "   ", "[]", "abc", "😀", "<b>1</b>", "<script>alert(1)</script>", "nan", "1/0",
    "1/2/3", "0.5.5", "\x00", "1\x00", "e", "--1", "1e99999", "9" * 400, "x" * 100_000,
])
def test_rejects_with_a_message(text):
    result = parse_numbers(text)
    assert not result.ok and result.values is None
    assert isinstance(result.error, str) and 0 < len(result.error) < 300


def test_non_text_is_refused():
    for thing in (None, 3, b"1", ["1"]):
        assert not parse_numbers(thing).ok


def test_wrong_count_says_how_many():
    assert parse_numbers("1 2", expected_count=3).error == "Expected 3 numbers but found 2."
    assert parse_number("1 2").error == "Expected 1 number but found 2."


def test_parse_number_value():
    assert parse_number(" −3/4 ").value == -0.75
    assert parse_number("x").value is None


def test_digit_groups_only_for_single_numbers():
    assert parse_number("37,858,304").value == 37858304
    assert parse_number("37 858 304").value == 37858304
    assert parse_numbers("1,000").values == (1.0, 0.0)  # two numbers when more may come


def test_long_input_is_refused_before_scanning():
    assert "too long" in parse_numbers("1 " * MAX_LENGTH).error


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text):
    for result in (parse_numbers(text), parse_numbers(text, 2), parse_number(text),
                   parse_words(text), parse_words(text, 3)):
        assert result.ok == (result.error is None)
        assert result.ok == (result.values is not None)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=True, width=32), min_size=1,
                max_size=8))
def test_round_trip_of_printed_floats(values):
    text = ", ".join(repr(v) for v in values)
    result = parse_numbers(text)
    if any(abs(v) > 1e300 and not math.isinf(v) for v in values):
        return
    assert result.ok, (text, result.error)
    assert close(result.values, values, 1e-9)


def test_tolerance_and_infinities():
    assert DEFAULT_TOLERANCE == 0.01
    assert close([0.805], [0.8044])
    assert not close([0.82], [0.8044])
    assert close([-math.inf, 1], [-math.inf, 1])
    assert not close([-math.inf], [0.0])
    assert not close([math.inf], [-math.inf])
    assert not close([1, 2], [1])
    assert distinct([0.5], [0.53]) and not distinct([0.5], [0.515])


@pytest.mark.parametrize("text, expected", [
    ("ea tea t_", ("ea", "tea", "t</w>")),
    ("'ea', \"TEA\", t</w>", ("ea", "tea", "t</w>")),
    ("[BA, BB]", ("ba", "bb")),
])
def test_words(text, expected):
    assert parse_words(text).values == expected


def test_words_rejects_garbage():
    assert not parse_words("").ok
    assert not parse_words("<b>x</b>").ok
    assert not parse_words("😀").ok
    assert not parse_words("a</w>b").ok
    assert parse_words("a b", expected_count=3).error == "Expected 3 words but found 2."
