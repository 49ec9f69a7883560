"""The browser's own code lives in files (``tfviz/ui/assets``), gets its settings as data, and
reaches the page the way ``tfviz.ui.browser_code`` says. Its logic is tested by node
(``tests/js``) and linted by eslint (``eslint.config.mjs``); this checks the Python side."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tfviz.ui import browser_code
from tfviz.ui.browser_code import ASSETS, asset, config_json, module_script, stylesheet

ROOT = Path(__file__).resolve().parents[1]
TFVIZ = ROOT / "tfviz"
ASSET_FILES = sorted(p for p in ASSETS.iterdir() if p.suffix in (".js", ".css"))

# What JavaScript and CSS look like inside a Python string. Prose about a sliding window or
# torch.profiler.record_function does not match.
JS = re.compile(r"=>|\bfunction\s*\(|\b(?:document|window)\.[A-Za-z_]|addEventListener"
                r"|querySelector")
CSS = re.compile(r"!important|\{\s*[a-z-]+\s*:\s*[^{};\n]+;")
TAGS = re.compile(r"<(?:script|style)\b")


def _python_files(under: Path):
    return sorted(p for p in under.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_javascript_or_css_in_python_strings():
    """Every line of JS and CSS is in a file that eslint and node read; only browser_code
    wraps those files in a script or style element."""
    found = []
    for path in _python_files(TFVIZ):
        rel = path.relative_to(ROOT)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if JS.search(line) or CSS.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
            if path.is_relative_to(TFVIZ / "ui") and path != Path(browser_code.__file__) \
                    and TAGS.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, ("JavaScript or CSS in a Python string. Put it in a file under "
                       "tfviz/ui/assets/ and draw it with tfviz.ui.browser_code "
                       "(module_script / stylesheet / asset), with its settings as data:\n"
                       + "\n".join(found))


def test_the_patterns_catch_what_was_there():
    """The patterns above find the kinds of line that used to sit in Python strings."""
    assert JS.search("  const merged = (url) => {  // url with the current view keys")
    assert JS.search("    for (const el of document.querySelectorAll('.vega-embed svg')) {")
    assert JS.search('export default function ({data, setStateValue}) {')
    assert CSS.search('[data-testid="stMain"] h1 { font-size: 52px !important; }')
    assert CSS.search("body{font-family:sans-serif;max-width:48em}")
    assert TAGS.search('return f"<script>document.cookie = {cookie};</script>"')
    assert not JS.search("sliding: |i - j| <= window. Our window is one-sided")
    assert not JS.search("with torch.profiler.record_function(label):")
    assert not CSS.search('state = {"layer": 1, "head": 0}')


@pytest.mark.parametrize("path", ASSET_FILES, ids=lambda p: p.name)
def test_no_file_looks_like_markup_to_the_sanitiser(path):
    """st.html's sanitiser (DOMPurify) removes a script or style element whose text holds
    ``<`` followed by a letter, ``/`` or ``!``: the file would silently never run."""
    text = path.read_text(encoding="utf-8")
    bad = [f"{path.name}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
           if re.search(r"<[/\w!]", line)]
    assert not bad, "write `a < b` with spaces (the sanitiser would drop the file):\n" + "\n".join(bad)


def _drawn(kind: str) -> dict[str, list[str]]:
    """Asset files named in tfviz/ui's Python by each way of drawing them."""
    pattern = re.compile(kind + r'\(\s*"([\w.-]+)"')
    out: dict[str, list[str]] = {}
    for path in _python_files(TFVIZ / "ui"):
        for name in pattern.findall(path.read_text(encoding="utf-8")):
            out.setdefault(name, []).append(path.name)
    return out


def test_every_drawn_file_exists_and_has_its_entry_point():
    scripts = _drawn("module_script") | _drawn("in_index_page")
    sheets, components = _drawn("stylesheet"), _drawn("asset")
    # view sync, presenter, the teacher's cookie, a student's view move, where the app lives
    # (in Streamlit's index.html), a live class's countdown; the three stylesheets (the live
    # class's join card); the two components (the student's long poll and the teacher's view
    # report).
    assert set(scripts) == {"view_sync.js", "presenter.js", "teacher_cookie.js", "view_move.js",
                            "backend_base.js", "countdown.js"}
    assert set(sheets) == {"readable.css", "presenter.css", "live_join.css"}
    assert set(components) == {"live_watch.js", "view_report.js"}
    for name in scripts:  # module_script appends start(window, CONFIG)
        assert re.search(r"^export function start\(w, config\)", asset(name), re.M), name
    for name in components:  # st.components.v2 calls the module's default export
        assert re.search(r"^export default function", asset(name), re.M), name
    used = set(scripts) | set(sheets) | set(components)
    assert {p.name for p in ASSET_FILES} == used, "a file in tfviz/ui/assets that nothing draws"


def test_a_file_is_read_once():
    assert asset("presenter.css") is asset("presenter.css")
    assert asset("presenter.css") == (ASSETS / "presenter.css").read_text(encoding="utf-8")


def test_settings_travel_as_json_after_the_file():
    html = module_script("view_sync.js", {"keys": ["layer", "head"]})
    assert html.startswith('<script type="module">\n' + asset("view_sync.js"))
    assert html.endswith('\nstart(window, {"keys": ["layer", "head"]});\n</script>')
    # A value cannot end the element or look like markup: "<" travels as \u003c.
    hostile = {"value": "</script><img src=x onerror=alert(1)>"}
    html = module_script("teacher_cookie.js", hostile)
    assert html.count("</script>") == 1 and "<img" not in html
    assert json.loads(config_json(hostile)) == hostile
    assert stylesheet("readable.css") == "<style>\n" + asset("readable.css") + "</style>"


def test_presenter_css_takes_no_settings():
    """The bar's height lives in the stylesheet (a CSS variable), and so do KaTeX's sizes:
    a formula's sub- and superscripts are at least 24 px, each size of KaTeX's eleven named."""
    css = asset("presenter.css")
    assert "%(" not in css and "--tfviz-bar: 60px" in css
    sizes = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.44, 1.728, 2.074, 2.488)  # katex.css's sizeN
    for n, size in enumerate(sizes, start=1):
        assert f".reset-size{n} {{ --tfviz-katex-from: {size}; }}" in css
        assert f".size{n} {{ --tfviz-katex-to: {size}; }}" in css
    assert ("font-size: max(24px, calc(var(--tfviz-katex-to) / var(--tfviz-katex-from) * 1em))"
            " !important" in css)


def test_presenter_katex_sizes_are_katexs_own():
    """Against the KaTeX stylesheet Streamlit ships: for each of its 121 rules
    ``.katex .sizing.reset-sizeA.sizeB{font-size:Xem}``, our two numbers give X (to 5e-6:
    KaTeX rounds them to 5 decimals)."""
    import streamlit

    css = asset("presenter.css")
    ours = {kind: {int(n): float(v) for n, v in re.findall(
        rf"\.{kind}(\d+) {{ --tfviz-katex-{word}: ([\d.]+); }}", css)}
        for kind, word in (("reset-size", "from"), ("size", "to"))}
    shipped = Path(streamlit.__file__).parent / "static" / "static" / "css"
    rules = {(int(a), int(b)): float(em) for f in shipped.glob("*.css") for a, b, em in
             re.findall(r"\.katex \.sizing\.reset-size(\d+)\.size(\d+)\{font-size:([\d.]+)em\}",
                        f.read_text(encoding="utf-8"))}
    assert len(rules) == 121
    for (a, b), em in rules.items():
        assert ours["size"][b] / ours["reset-size"][a] == pytest.approx(em, abs=5e-6), (a, b)
