"""The class's address as a QR code, drawn as SVG for the projector.

A phone's camera reads a QR code when each module (one black or white square) covers a few
pixels of its picture. The code is drawn here so that the page can make it as large as the
screen allows: the SVG has no size of its own (only a ``viewBox``), so it fills whatever box
the page gives it, and ``shape-rendering="crispEdges"`` keeps the modules square at any scale,
with no grey seams between rows. The usual rule is that a QR code reads from about ten times
its width: a code 50 cm wide on the screen reads from 5 m, which on a projected 2 m-high
picture is a quarter of its height.

Legibility, what each choice buys:
- black on white whatever the page's theme (a camera needs the contrast, and an inverted code
  is not read by every phone);
- a quiet zone of 4 white modules all round, as the standard asks, so that the code stands
  apart from whatever is drawn next to it;
- error correction level Q (25 % of the code can be lost), because a projected picture has
  glare, keystone and a head in front of it;
- the class's address is short (``host/?join=CODE``), so the code stays at version 3 or 4
  (29 or 33 modules a side) and each module is large.

>>> link = class_link("https://class.example/teacher", "K7QM4XPD", page="teacher")
>>> link
'https://class.example/?join=K7QM4XPD'
>>> matrix = qr_matrix(link)
>>> len(matrix), len(matrix[0])  # version 4 at level Q: 33 modules a side
(33, 33)
>>> svg = qr_svg(link, label="Join the class")
>>> svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 41 41"')
True
"""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

import segno

QUIET = 4  # modules of white all round, as the QR standard asks
ERROR = "q"  # level Q: a quarter of the code can be lost to glare or a head in front of it


def class_link(page_url: str, code: str, page: str = "") -> str:
    """The address a student opens: the app's root with ``?join=CODE``. ``page_url`` is the
    address of the page the teacher is on (its query dropped); ``page`` its URL path, taken
    off the end.

    >>> class_link("http://10.0.0.5:8501/teacher?x=1", "K7QM4XPD", page="teacher")
    'http://10.0.0.5:8501/?join=K7QM4XPD'
    >>> class_link("https://uni.example/tfviz/", "K7QM4XPD")
    'https://uni.example/tfviz/?join=K7QM4XPD'
    """
    parts = urlsplit(page_url)
    path = parts.path
    if page and path.rstrip("/").endswith("/" + page):
        path = path.rstrip("/")[: -len(page)]
    if not path.endswith("/"):
        path += "/"
    return urlunsplit((parts.scheme, parts.netloc, path, f"join={code}", ""))


def only_here(url: str) -> bool:
    """Whether ``url`` names this computer only (localhost, 127.x, ::1): students' phones
    cannot open it, and the page says so.

    >>> only_here("http://localhost:8501/?join=X"), only_here("http://10.0.0.5:8501/")
    (True, False)
    """
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def qr_matrix(text: str) -> tuple[tuple[bool, ...], ...]:
    """The QR code of ``text`` (level Q, the smallest version that holds it), row by row,
    without the quiet zone: True for a black module."""
    code = segno.make(text, error=ERROR, micro=False, boost_error=False)
    return tuple(tuple(bool(m) for m in row) for row in code.matrix)


def _runs(row) -> list[tuple[int, int]]:
    """(start, length) of each run of black modules: [T, T, F, T] -> [(0, 2), (3, 1)]."""
    runs, start = [], None
    for x, dark in enumerate([*row, False]):
        if dark and start is None:
            start = x
        elif not dark and start is not None:
            runs.append((start, x - start))
            start = None
    return runs


def qr_svg(text: str, label: str) -> str:
    """The QR code of ``text`` as one SVG element, black on white with its quiet zone, sized
    by its container. ``label`` is its text alternative (``role="img"``, ``aria-label`` and a
    ``<title>``), for a screen reader and for anyone whose phone cannot scan it."""
    matrix = qr_matrix(text)
    side = len(matrix) + 2 * QUIET
    d = "".join(f"M{x + QUIET} {y + QUIET}h{n}v1h-{n}z"
                for y, row in enumerate(matrix) for x, n in _runs(row))
    safe = (label.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {side} {side}" role="img" '
            f'aria-label="{safe}" shape-rendering="crispEdges" class="tfviz-qr">'
            f"<title>{safe}</title>"
            f'<rect width="{side}" height="{side}" fill="#fff"/>'
            f'<path fill="#000" d="{d}"/></svg>')
