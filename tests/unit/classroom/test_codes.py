"""Join codes as students type them: however a code is written (case, spaces, dashes, a
pasted link, full-width digits, a look-alike letter), it joins the one class it names, and
nothing else does."""
from __future__ import annotations

import itertools
import random

import pytest

from tfviz.classroom.codes import (CODE_ALPHABET, CODE_LENGTH, format_code, new_code,
                                   parse_code)

# Each group: symbols a student may type for the one symbol of the alphabet listed first.
# Written out by hand, not read from codes.py, so that a change there has to change this.
GROUPS = {"0": "0Oo", "1": "1IiLl", "V": "VvUu"}


def test_the_alphabet_has_one_symbol_of_each_look_alike_group():
    assert len(CODE_ALPHABET) == 32 == len(set(CODE_ALPHABET))
    for shown, typed in GROUPS.items():
        assert [ch for ch in CODE_ALPHABET if ch in typed.upper()] == [shown]
    assert not set("ILOU") & set(CODE_ALPHABET)


@pytest.mark.parametrize("shown,typed", [(s, t) for s, ts in GROUPS.items() for t in ts])
def test_a_look_alike_joins_the_code_on_the_projector(shown, typed):
    code = f"K7QM4XP{shown}"
    assert parse_code(f"K7QM-4XP{typed}") == code
    assert parse_code(f"k7qm 4xp{typed}") == code


@pytest.mark.parametrize("typed", [
    "K7QM-4XPD", "k7qm4xpd", " K7QM 4XPD ", "K7QM–4XPD", "K7QM—4XPD", "K7QM.4XPD", "K7QM_4XPD",
    "K 7 Q M 4 X P D", "K7QM\u00a04XPD", "K7QM\u30004XPD",
    "ＫＷＱＭ４ＸＰＤ".replace("Ｗ", "７"),  # full-width, from a CJK keyboard
    "https://class.example/?join=K7QM-4XPD", "class.example/?model=gpt-tiny&join=k7qm4xpd&x=1",
])
def test_the_ways_a_student_writes_a_code(typed):
    assert parse_code(typed) == "K7QM4XPD"


@pytest.mark.parametrize("bad", [
    "", "K7QM4XP", "K7QM4XPDD", "K7QM4XP!", "K7QM4XPÉ", "<b>K7QM4XPD</b>", "😀" * 8,
    "\u202eK7QM4XPD", "x" * 100_000, None, 12345678, b"K7QM4XPD", "join=", "K7QM4XP/",
])
def test_what_cannot_be_a_code_is_refused(bad):
    assert parse_code(bad) is None


def test_fresh_codes_round_trip_however_they_are_retyped():
    rng = random.Random(0)
    for _ in range(200):
        code = new_code()
        assert len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
        # Retype it: lower case at random, each symbol by one of its look-alikes.
        typed = "".join(rng.choice(GROUPS.get(ch, ch + ch.lower())) for ch in format_code(code))
        assert parse_code(typed) == code


def test_no_two_codes_share_a_typed_form():
    """Folding is a function onto the alphabet: of all the ways to type two symbols, none is
    read as two different codes (checked exhaustively over one position)."""
    typed_forms = {ch: set(GROUPS.get(ch, ch + ch.lower())) for ch in CODE_ALPHABET}
    for a, b in itertools.combinations(CODE_ALPHABET, 2):
        assert not typed_forms[a] & typed_forms[b]
        for t in typed_forms[a]:
            assert parse_code(f"K7QM4XP{t}") == f"K7QM4XP{a}"
