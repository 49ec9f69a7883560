"""Show byte-level BPE tokens as text a learner can read.

Byte-level BPE (GPT-2, and our served tokenizer) first turns text into UTF-8 bytes and
writes each byte as one printable character, so a tokenizer never meets an unknown
character. The price is odd-looking tokens: a space is stored as "Ġ", so " the"
appears as "Ġthe", and "é" (bytes C3 A9) as "Ã©".

``readable_token`` undoes that mapping and marks invisible characters:

    "Ġthe" -> "␣the"      (a leading space, shown as ␣)
    "Ã©"   -> "é"
    "Ċ"    -> "↵"         (newline);  tab -> "⇥";  other controls -> control pictures, e.g. NUL -> "␀"
    "ð"    -> "<F0>"      (first byte of an emoji on its own: not valid UTF-8, shown in hex)

SentencePiece-style BPE (Llama 2, Mistral, TinyLlama) marks a word's leading space with "▁"
and spells a character it has no token for as its UTF-8 bytes, one "<0xNN>" token each (byte
fallback). ``readable_piece`` shows those the same way:

    "▁the"   -> "␣the"
    "<0x0A>" -> "↵"        (a newline's byte);  "<0xE2>" -> "<E2>" (part of a character)

The result is for display only: text that already contains "␣" looks the same.
"""

from __future__ import annotations

import re


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table: printable bytes map to themselves,
    the other 68 bytes to characters from U+0100 on. 32 (space) -> "Ġ", 65 -> "A"."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_OF_CHAR = {c: b for b, c in bytes_to_unicode().items()}
_SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥", "\x7f": "␡"}


def token_bytes(token: str) -> bytes | None:
    """The bytes a byte-level token stands for. "Ġhi" -> b" hi"; "<pad>" -> b"<pad>".

    Returns None if a character is outside the table (not a byte-level token)."""
    try:
        return bytes(_BYTE_OF_CHAR[c] for c in token)
    except KeyError:
        return None


def show_char(c: str) -> str:
    """Make one character visible: " " -> "␣", "\\x00" -> "␀", "a" -> "a"."""
    if c in _SHOWN:
        return _SHOWN[c]
    if ord(c) < 32:
        return chr(0x2400 + ord(c))  # Unicode "control pictures" block
    return c


def readable_bytes(raw: bytes) -> str:
    """Decode UTF-8 where possible, hex for stray bytes. b"\\xc3\\xa9!" -> "é!"; b"\\xf0" -> "<F0>"."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        for width in (1, 2, 3, 4):
            try:
                out.extend(show_char(c) for c in raw[i : i + width].decode("utf-8"))
                i += width
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append(f"<{raw[i]:02X}>")
            i += 1
    return "".join(out)


def readable_token(token: str) -> str:
    """Byte-level token string -> display string. "Ġthe" -> "␣the"."""
    raw = token_bytes(token)
    return token if raw is None else readable_bytes(raw)


_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def readable_piece(token: str) -> str:
    """SentencePiece-style token -> display string. "▁the" -> "␣the"; "<0x0A>" -> "↵".

    >>> readable_piece("▁the"), readable_piece("<0x0A>"), readable_piece("<0xE2>")
    ('␣the', '↵', '<E2>')
    """
    byte = _BYTE_PIECE.fullmatch(token)
    if byte:
        return readable_bytes(bytes([int(byte.group(1), 16)]))
    return "".join(show_char(c) for c in token.replace("▁", " "))
