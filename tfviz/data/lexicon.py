"""The words our story corpus may use, their inflected forms, and each word's class.

All words are lowercase. Regular inflection gives BPE shared endings to find:

    plural("fox") -> "foxes"      past("chase") -> "chased"     ing("dance") -> "dancing"
    s_form("carry") -> "carries"  comparative("wide") -> "wider" superlative("lazy") -> "laziest"

``word_class`` labels a word (or a token such as "␣cats" or " didn") for tables that
compare token classes, e.g. which expert a mixture-of-experts layer sends nouns to:

    word_class("cats") -> "noun"   word_class("walked") -> "verb"   word_class("?") -> "punct"
    word_class("the") -> "function"   word_class("slowly") -> "other"   word_class("xyz") -> "other"
"""

from __future__ import annotations

from types import MappingProxyType

# The coreference pattern's words (see coref.py).
AGENTS = ("animal", "chicken", "chef", "cat", "dog", "robot", "horse", "child")
PLACES = ("street", "road", "river", "bridge", "field", "hall", "track", "lake")
AGENT_ADJS = ("tired", "hungry", "scared", "sleepy", "weak", "lazy")
PLACE_ADJS = ("wide", "busy", "long", "wet", "dark", "steep")
COREF_VERBS = ("cross", "enter", "leave", "reach")

# Words for the other sentences.
CREATURES = ("bird", "fox", "friend", "teacher", "farmer", "baker", "painter")
THINGS = ("ball", "box", "tree", "house", "apple", "book", "cake", "hat", "boat", "door", "window")
TRANSITIVE = ("watch", "follow", "chase", "help", "visit", "push", "pull", "paint", "clean", "like", "kick", "carry")
INTRANSITIVE = ("walk", "jump", "play", "rest", "wait", "shout", "climb", "dance", "hurry")
GRADABLE = ("small", "old", "young", "quick", "loud", "cold", "warm", "soft", "kind", "calm",
            "tall", "fast", "slow", "bright", "happy",
            "wide", "long", "dark", "steep", "weak", "hungry", "sleepy", "lazy", "busy")
ADVERBS = ("quickly", "slowly", "quietly", "loudly", "happily", "softly", "calmly", "again", "today")
NUMBERS = ("two", "three", "four")
FUNCTION = ("the", "a", "some", "is", "are", "was", "were", "did", "didn't", "didn", "'t", "n't",
            "not", "and", "but", "because", "when", "then", "it", "too", "so", "very", "than", "of", "in",
            "on", "near", "over", "under", "across", "into", "to", "from", "with", "by")
PREPOSITIONS = ("in", "on", "near", "over", "under", "across", "into", "by")
PUNCT = (".", ",", "?", "!")

NOUNS = AGENTS + PLACES + CREATURES + THINGS
CLASSES = ("punct", "verb", "noun", "adj", "function", "other")
_IRREGULAR_PLURAL = {"child": "children"}
_VOWELS = set("aeiou")


def _consonant_y(word: str) -> bool:
    return word.endswith("y") and len(word) > 1 and word[-2] not in _VOWELS


def plural(noun: str) -> str:
    """"cat" -> "cats", "box" -> "boxes", "child" -> "children"."""
    if noun in _IRREGULAR_PLURAL:
        return _IRREGULAR_PLURAL[noun]
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun[:-1] + "ies" if _consonant_y(noun) else noun + "s"


def s_form(verb: str) -> str:
    """"walk" -> "walks", "watch" -> "watches", "carry" -> "carries"."""
    return plural(verb)


def past(verb: str) -> str:
    """"walk" -> "walked", "chase" -> "chased", "hurry" -> "hurried"."""
    if verb.endswith("e"):
        return verb + "d"
    return verb[:-1] + "ied" if _consonant_y(verb) else verb + "ed"


def ing(verb: str) -> str:
    """"walk" -> "walking", "dance" -> "dancing", "carry" -> "carrying"."""
    return verb[:-1] + "ing" if verb.endswith("e") and not verb.endswith("ee") else verb + "ing"


def comparative(adj: str) -> str:
    """"small" -> "smaller", "wide" -> "wider", "happy" -> "happier"."""
    if adj.endswith("e"):
        return adj + "r"
    return adj[:-1] + "ier" if _consonant_y(adj) else adj + "er"


def superlative(adj: str) -> str:
    """"small" -> "smallest", "wide" -> "widest", "happy" -> "happiest"."""
    if adj.endswith("e"):
        return adj + "st"
    return adj[:-1] + "iest" if _consonant_y(adj) else adj + "est"


def _build_lexicon() -> dict[str, str]:
    lex: dict[str, str] = {}
    for w in FUNCTION:
        lex[w] = "function"
    for w in ADVERBS + NUMBERS:
        lex[w] = "other"
    for n in NOUNS:
        lex[n] = lex[plural(n)] = "noun"
    for v in TRANSITIVE + INTRANSITIVE:
        for form in (v, s_form(v), past(v), ing(v)):
            lex[form] = "verb"
    for v in COREF_VERBS + ("refer", "refers"):
        lex[v] = "verb"
    for a in GRADABLE:
        lex[a] = lex[comparative(a)] = lex[superlative(a)] = "adj"
    for a in AGENT_ADJS + PLACE_ADJS:
        lex[a] = "adj"
    for p in PUNCT:
        lex[p] = "punct"
    return lex


LEXICON = MappingProxyType(_build_lexicon())  # read-only: word -> class


def word_class(word: str) -> str:
    """Class of a word or token: "punct", "verb", "noun", "adj", "function" or "other".

    Leading spaces and the display markers "␣"/"Ġ" are ignored, so tokens work too.
    Anything made only of punctuation is "punct"; unknown words and word pieces are "other".
    """
    w = word.strip().lstrip("␣Ġ").strip().lower()
    if not w:
        return "other"
    if w in LEXICON:
        return LEXICON[w]
    if all(not c.isalnum() and not c.isspace() for c in w):
        return "punct"
    return "other"
