"""The browser's own code: the JS and CSS files in ``tfviz/ui/assets/``, read once per process,
and the only two ways a page gets them.

- :func:`stylesheet`: a file's rules in a ``<style>`` element (``st.html``).
- :func:`module_script`: a file as an inline ES module, followed by one call,
  ``start(window, CONFIG)``, whose settings travel as JSON data, never pasted into the code.
  :func:`in_index_page` puts such a module into Streamlit's own ``index.html``, ahead of
  Streamlit's script (``tfviz.ui.index_page``).
  The same file is what node's test runner imports (``tests/js``), so its pure functions are
  tested as the browser runs them. Components (``st.components.v2``) take :func:`asset` itself.

st.html's sanitiser (DOMPurify) removes a script or style element whose text holds something
like markup (``<`` then a letter, ``/`` or ``!``); ``tests/test_browser_code.py`` checks that no
file here does.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

ASSETS = Path(__file__).parent / "assets"


@functools.cache
def asset(name: str) -> str:
    """The text of ``tfviz/ui/assets/<name>``, read the first time it is asked for (the files
    do not change while the server runs)."""
    return (ASSETS / name).read_text(encoding="utf-8")


def config_json(config: dict) -> str:
    """Settings as a JSON literal that can sit inside a script element: ``<`` is written
    ``\\u003c``, so no value can end the element or look like markup.

    >>> config_json({"keys": ["layer"], "text": "</script>"})
    '{"keys": ["layer"], "text": "\\\\u003c/script>"}'
    """
    return json.dumps(config).replace("<", "\\u003c")


def module_script(name: str, config: dict) -> str:
    """The HTML that runs ``assets/<name>`` as an inline module, then ``start(window, config)``
    (every such file exports ``start``). For ``st.html(..., unsafe_allow_javascript=True)``."""
    return f'<script type="module">\n{asset(name)}\nstart(window, {config_json(config)});\n</script>'


# Streamlit's own script element in its index.html; modules run in document order, so one put
# in front of it runs before Streamlit starts
STREAMLIT_SCRIPT = '<script type="module" crossorigin src="./static/js/index.'


def in_index_page(name: str, config: dict, index_html: str) -> str:
    """Streamlit's ``index_html`` with :func:`module_script` ``(name, config)`` run before
    Streamlit's own script, or ``index_html`` unchanged if that script is not where we expect
    it (a Streamlit release that builds its page differently)."""
    at = index_html.find(STREAMLIT_SCRIPT)
    if at < 0:
        return index_html
    return f"{index_html[:at]}{module_script(name, config)}\n    {index_html[at:]}"


def stylesheet(name: str) -> str:
    """The HTML of ``assets/<name>``'s rules, for ``st.html``: a style element takes no room."""
    return f"<style>\n{asset(name)}</style>"
