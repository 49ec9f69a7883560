"""Python source as highlighted HTML, for the lessons' "Show the code" boxes (pure: text in,
HTML text out).

Streamlit's code element highlights its text in the browser each time a page is drawn, open
box or closed: a third of a second of a lesson page's JavaScript (BENCHMARKS.md, "The
README's test command"). The same colours written into the HTML once, on the server, cost
the browser nothing but reading it. Python's own tokenizer finds the parts, so what is
coloured as a keyword or a string is exactly what Python reads as one.

The colours (``tfviz/ui/assets/readable.css``, ``.tfviz-code``) all reach 4.5:1 on the box's
background (WCAG 2.2 AA, 1.4.3); ``tests/unit/viz/test_code_html.py`` computes each from that file.
"""
from __future__ import annotations

import builtins
import html
import io
import keyword
import token
import tokenize

BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))


def _kind(tok: tokenize.TokenInfo, before: str) -> str | None:
    """The class a token is drawn with ("k" keyword, "s" string, "c" comment, "n" number,
    "f" the name a def or class defines, "b" a builtin, "d" a decorator), or None: plain."""
    if tok.type == token.STRING or tok.type in _FSTRING:
        return "s"
    if tok.type == token.COMMENT:
        return "c"
    if tok.type == token.NUMBER:
        return "n"
    if tok.type == token.NAME:
        if keyword.iskeyword(tok.string):
            return "k"
        if before in ("def", "class"):
            return "f"
        if before == "@":
            return "d"
        if tok.string in BUILTINS:
            return "b"
    if tok.type == token.OP and tok.string == "@" and before in ("", "\n"):
        return "d"
    return None


_FSTRING = {getattr(token, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
            if hasattr(token, name)}


def python_html(source: str, label: str = "Python code") -> str:
    """``source`` as a ``<pre>`` of spans, one class per kind of token (``_kind``), text
    escaped; the box scrolls sideways with a tab stop and a name (``label``), as a long line
    needs on a phone. Text the tokenizer cannot read (not Python) is shown plain.

    >>> python_html("def f(x):  # one\\n    return len('<b>') + 2\\n")
    '<pre class="tfviz-code" role="region" tabindex="0" aria-label="Python code"><code><span class="k">def</span> <span class="f">f</span>(x):  <span class="c"># one</span>\\n    <span class="k">return</span> <span class="b">len</span>(<span class="s">\\'&lt;b&gt;\\'</span>) + <span class="n">2</span>\\n</code></pre>'
    """
    starts = [0]  # where each line tokenize reads begins in ``source`` (rows count from 1)
    for line in io.StringIO(source).readlines():
        starts.append(starts[-1] + len(line))
    at = lambda row, col: starts[min(row, len(starts)) - 1] + col  # noqa: E731
    out, done, before = [], 0, "\n"
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (token.INDENT, token.DEDENT, token.ENDMARKER):
                continue
            out.append(html.escape(source[done:at(*tok.start)], quote=False))  # spaces between
            text = html.escape(tok.string, quote=False)
            kind = _kind(tok, before)
            out.append(f'<span class="{kind}">{text}</span>' if kind and text else text)
            done = at(*tok.end)
            if tok.type not in (token.NL, token.COMMENT):
                before = "\n" if tok.type == token.NEWLINE else tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        out, done = [], 0
    out.append(html.escape(source[done:], quote=False))
    return (f'<pre class="tfviz-code" role="region" tabindex="0" '
            f'aria-label="{html.escape(label)}"><code>{"".join(out)}</code></pre>')
