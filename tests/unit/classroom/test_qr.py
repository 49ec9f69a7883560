"""The class's QR code decodes to the class's address: the SVG the page draws is read back
into modules, painted as a picture, and decoded by OpenCV's QR reader (a decoder written
apart from segno, which made the code)."""
from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET

import cv2
import numpy as np
import pytest

from tfviz.classroom.codes import CODE_ALPHABET, CODE_LENGTH
from tfviz.classroom.qr import QUIET, class_link, only_here, qr_matrix, qr_svg

NS = "{http://www.w3.org/2000/svg}"


def _modules(svg: str) -> np.ndarray:
    """The SVG's black modules as a boolean grid, quiet zone included, read from its one path
    (each run is 'M x y h n v1 h-n z': one row high, n modules wide)."""
    root = ET.fromstring(svg)
    side = int(root.get("viewBox").split()[2])
    grid = np.zeros((side, side), bool)
    (path,) = root.iter(f"{NS}path")
    runs = re.findall(r"M(\d+) (\d+)h(\d+)v1h-(\d+)z", path.get("d"))
    assert "".join(f"M{x} {y}h{n}v1h-{m}z" for x, y, n, m in runs) == path.get("d")
    for x, y, n, m in runs:
        assert n == m
        assert not grid[int(y), int(x):int(x) + int(n)].any()  # runs never overlap
        grid[int(y), int(x):int(x) + int(n)] = True
    return grid


def _decode(grid: np.ndarray, px: int = 8) -> str:
    image = np.where(grid, 0, 255).astype(np.uint8)
    image = np.kron(image, np.ones((px, px), np.uint8))  # each module px × px pixels
    text, _, _ = cv2.QRCodeDetector().detectAndDecode(image)
    return text


@pytest.mark.parametrize("url", [
    "http://10.0.0.5:8501/?join=K7QM4XPD",
    "https://transformers.lecture-hall-3.university.example/tfviz/?join=0V1Z9XPD",
    # Codes drawn from the real alphabet with a fixed seed: test ids must be the same in every
    # pytest-xdist worker (new_code()'s secrets gave each worker other ids, and xdist refuses).
    *(class_link("http://192.168.1.20:8080/teacher",
                 "".join(random.Random(seed).choice(CODE_ALPHABET) for _ in range(CODE_LENGTH)),
                 page="teacher")
      for seed in range(3)),
])
def test_the_svg_decodes_to_the_class_address(url):
    svg = qr_svg(url, label="Join the class")
    grid = _modules(svg)
    assert _decode(grid) == url
    # The drawing is the matrix segno made, inside a white quiet zone of 4 modules.
    inner = grid[QUIET:-QUIET, QUIET:-QUIET]
    assert np.array_equal(inner, np.array(qr_matrix(url)))
    assert not grid[:QUIET].any() and not grid[-QUIET:].any()
    assert not grid[:, :QUIET].any() and not grid[:, -QUIET:].any()


def test_the_decoder_is_not_fooled():
    """The check above can fail: a code with one finder pattern wiped is not read, and the
    code of another address decodes to that address."""
    url = "http://10.0.0.5:8501/?join=K7QM4XPD"
    grid = _modules(qr_svg(url, label="x"))
    assert _decode(_modules(qr_svg(url.replace("K7", "K8"), label="x"))) != url
    broken = grid.copy()
    broken[QUIET:QUIET + 7, QUIET:QUIET + 7] = False
    assert _decode(broken) == ""


def test_the_svg_scales_and_names_itself():
    svg = qr_svg("http://10.0.0.5:8501/?join=K7QM4XPD", label='Join <b>"class"</b> & go')
    root = ET.fromstring(svg)  # well-formed, the label escaped
    assert root.get("width") is None and root.get("height") is None  # the page sizes it
    assert root.get("role") == "img" and root.get("aria-label") == 'Join <b>"class"</b> & go'
    assert root.find(f"{NS}title").text == 'Join <b>"class"</b> & go'
    assert root.get("shape-rendering") == "crispEdges"
    (rect,) = root.iter(f"{NS}rect")
    assert rect.get("fill") == "#fff" and rect.get("width") == root.get("viewBox").split()[2]
    assert "<b>" not in svg


def test_a_short_address_keeps_modules_large():
    """A class address of a typical length stays at version 5 or below (37 modules a side),
    so on a projector each module is at least 1/45 of the code's width."""
    assert len(qr_matrix("http://10.0.0.5:8501/?join=K7QM4XPD")) == 33  # version 4
    assert len(qr_matrix("https://tfviz.cs.uni-example.edu/?join=K7QM4XPD")) == 37  # 5


@pytest.mark.parametrize("url,here", [
    ("http://localhost:8501/", True), ("http://127.0.0.1:8501/", True), ("http://[::1]:80/", True),
    ("http://app.localhost/", True), ("http://10.0.0.5:8501/", False),
    ("https://uni.example/", False), ("not a url", False),
])
def test_only_here(url, here):
    assert only_here(url) is here


def test_class_link_keeps_a_prefix_and_drops_the_page_and_query():
    assert class_link("https://u.example/tfviz/teacher?present=1#x", "K7QM4XPD",
                      page="teacher") == "https://u.example/tfviz/?join=K7QM4XPD"
    assert class_link("http://h:1/", "K7QM4XPD", page="teacher") == "http://h:1/?join=K7QM4XPD"
