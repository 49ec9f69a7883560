"""The "Show the code" boxes (tfviz.viz.code_html): the HTML shows exactly the source, its
colours mark what Python's own parser says each part is, and each colour is readable."""
from __future__ import annotations

import ast
import html
import inspect
import keyword
import pkgutil
import re
from importlib import import_module
from pathlib import Path

import pytest

import tfviz
from tfviz.viz.code_html import python_html
from tfviz.viz.kit.style import contrast_ratio

CSS = Path(__file__).resolve().parents[3] / "tfviz" / "ui" / "assets" / "readable.css"
SPAN = re.compile(r'<span class="(\w)">(.*?)</span>', re.S)


def _modules():
    """Every module of tfviz that imports without streamlit's script context."""
    for info in pkgutil.walk_packages(tfviz.__path__, "tfviz."):
        if not info.name.startswith("tfviz.ui"):
            yield import_module(info.name)


def _spans(page: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, text in SPAN.findall(page):
        out.setdefault(kind, []).append(html.unescape(text))
    return out


def test_the_html_holds_exactly_the_source_of_every_module():
    """Tags out and entities decoded, what the learner reads is the file itself, character for
    character, for every module the lessons show code from."""
    checked = 0
    for module in _modules():
        source = inspect.getsource(module)
        page = python_html(source)
        assert page.startswith('<pre class="tfviz-code"') and page.endswith("</code></pre>")
        body = page.split("<code>", 1)[1].rsplit("</code>", 1)[0]
        assert html.unescape(re.sub(r"<[^>]+>", "", body)) == source, module.__name__
        checked += 1
    assert checked > 50


def test_the_colours_follow_pythons_own_parse():
    """Against the ast of the same source: every keyword span is a keyword, every string span
    a string literal, every number span a number; each def and class name is marked, and the
    comments are those the source holds."""
    from tfviz.analysis import positions

    source = inspect.getsource(positions)
    spans = _spans(python_html(source))
    assert spans["k"] and all(keyword.iskeyword(k) for k in spans["k"])
    tree = ast.parse(source)
    defined = [n.name for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    assert sorted(spans["f"]) == sorted(defined)
    assert spans["k"].count("def") == sum(isinstance(n, ast.FunctionDef) for n in ast.walk(tree))
    for text in spans["n"]:
        assert isinstance(ast.literal_eval(text), (int, float, complex))
    for text in spans["s"]:
        if not text.lstrip("rbuRBU").startswith(("f", "F")):  # an f-string has fields
            assert isinstance(ast.literal_eval(text), (str, bytes))
    comments = [line.split("#", 1)[1] for line in source.splitlines()
                if "#" in line and line.lstrip().startswith("#")]
    assert all(any(c.strip() in s for s in spans["c"]) for c in comments)
    assert {"len", "range"} & set(spans.get("b", ()))


def test_markup_in_the_source_is_text():
    page = python_html("x = '<script>alert(1)</script>'  # <b>\n")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<b>" not in page


@pytest.mark.parametrize("broken", ["def (\n", "x = '''never closed\n", "\tif x:\n  y\n", ""])
def test_source_the_tokenizer_cannot_read_is_shown_plain(broken):
    page = python_html(broken)
    assert html.unescape(re.sub(r"<[^>]+>", "", page)) == broken


def test_every_colour_reaches_aa_contrast_on_the_box():
    """WCAG's formula (tfviz.viz.kit.style.contrast_ratio) on the colours readable.css gives the box,
    its text and each kind of token."""
    css = CSS.read_text()
    box = re.search(r"\.tfviz-code\s*\{([^}]*)\}", css).group(1)
    background = re.search(r"background:\s*(#[0-9a-fA-F]{6})", box).group(1)
    colours = {"text": re.search(r"(?<![-\w])color:\s*(#[0-9a-fA-F]{6})", box).group(1)}
    for selectors, colour in re.findall(r"((?:\.tfviz-code \.\w,?\s*)+)\{\s*color:\s*(#[0-9a-fA-F]{6})", css):
        for kind in re.findall(r"\.tfviz-code \.(\w)", selectors):
            colours[kind] = colour
    assert set(colours) == {"text", "k", "s", "c", "n", "f", "d", "b"}, colours
    for kind, colour in colours.items():
        assert contrast_ratio(colour, background) >= 4.5, (kind, colour, background)
