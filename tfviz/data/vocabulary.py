"""Which of a learner's words did a model never read in training?

A model trained on our generated corpus knows a few hundred words. Typed text often holds
others ("teacher's", "xylophone"). The tokenizer still reads them, as smaller pieces, so
nothing breaks, but the model's guesses about them are guesses, and the app says so.

    >>> unknown_words("The Teacher didn't cross the river.", {"the", "didn't", "cross", "river"})
    ['teacher']

The "it" probe is narrower still: its training sentences used eight agents, eight places
and twelve adjectives, so a known word in a new role ("teacher" as the one who did not
cross) is also new to the model in that pattern.

    >>> roles = {"agents": ["animal"], "places": ["street"], "verbs": ["cross"],
    ...          "agent_adjectives": ["tired"], "place_adjectives": ["wide"]}
    >>> [g.word for g in pattern_gaps("The teacher didn't cross the street because it was too tired.", roles)]
    ['teacher']
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")  # letters of any script, with one apostrophe
_WORD_OR_COMMA = re.compile(_WORD.pattern + "|,")
# "the <agent> didn't|did not <verb> the <place>, because it was too|so|very <adjective>"
_PATTERN = re.compile(r"\b(?:the|a) (?P<agent>\w+) (?:didn't|did not) (?P<verb>\w+) "
                      r"(?:the|a) (?P<place>\w+)(?: ,)? because it (?:was|is) (?:(?:too|so|very) )?"
                      r"(?P<adjective>\w+)")
# role -> (the manifest's lists of words that filled it in training, how the app names it)
ROLES = {"agent": (("agents",), "the first noun"), "verb": (("verbs",), "the verb"),
         "place": (("places",), "the second noun"),
         "adjective": (("agent_adjectives", "place_adjectives"), "the adjective that decides")}


def normalized_words(text: str, commas: bool = False) -> list[str]:
    """Words as an uncased model reads them: NFKC, lower case, apostrophes kept
    ("Didn't" -> "didn't"); digits, punctuation and emoji are not words (commas are kept
    as words of their own with ``commas=True``)."""
    low = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    return (_WORD_OR_COMMA if commas else _WORD).findall(low)


def unknown_words(text: str, known: Iterable[str]) -> list[str]:
    """The words of ``text`` that are not in ``known``, each once, in the order typed."""
    known = set(known)
    seen: list[str] = []
    for word in normalized_words(text):
        if word not in known and word not in seen:
            seen.append(word)
    return seen


class PatternGap(NamedTuple):
    word: str
    role: str  # "agent", "verb", "place" or "adjective"
    role_text: str  # how the app names the role
    trained: tuple[str, ...]  # the words that role used in training


def pattern_gaps(text: str, coref: dict) -> list[PatternGap]:
    """Words that fill a role of the "it" pattern in ``text`` but never filled it in training.

    ``coref`` is a manifest's ``vocabulary.coref``: the trained words of each role. Text
    that does not follow the pattern gives [].
    """
    found = _PATTERN.search(" ".join(normalized_words(text, commas=True)))
    if not found:
        return []
    gaps = []
    for role, (keys, role_text) in ROLES.items():
        trained = tuple(w for k in keys for w in coref.get(k, ()))
        if found[role] not in trained:
            gaps.append(PatternGap(found[role], role, role_text, trained))
    return gaps



def unknown_words_notice(model: str, words: list[str], shown: int = 8) -> str | None:
    """The sidebar's sentence about ``unknown_words``, or None when every word is known.

    >>> unknown_words_notice("gpt-tiny", ["teacher's", "xylophone"])
    "gpt-tiny never read these words in training: **teacher's**, **xylophone**. It still reads them, as smaller pieces it does know, so what it does with them is a guess."
    """
    if not words:
        return None
    listed = ", ".join(f"**{w}**" for w in words[:shown])
    more = f" and {len(words) - shown} more" if len(words) > shown else ""
    return (f"{model} never read these words in training: {listed}{more}. It still reads them, "
            "as smaller pieces it does know, so what it does with them is a guess.")


def pattern_gap_notice(gaps: list[PatternGap]) -> str | None:
    """The coreference lesson's sentence about ``pattern_gaps``, or None.

    >>> g = PatternGap("teacher", "agent", "the first noun", ("animal", "dog"))
    >>> print(pattern_gap_notice([g]))
    In the "it" sentences this model learned from, "teacher" was never the first noun (those were animal, dog), so its answer here is a guess, not something it was taught.
    """
    if not gaps:
        return None
    parts = [f'"{g.word}" was never {g.role_text} (those were {", ".join(g.trained)})' for g in gaps]
    return (f'In the "it" sentences this model learned from, {"; ".join(parts)}, so its answer '
            "here is a guess, not something it was taught.")
