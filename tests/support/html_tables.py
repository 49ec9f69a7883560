"""Every ``<table>`` of an HTML text as rows of cell texts, as a browser reads them (entities
decoded, header cells included): for the pages' HTML tables and the printable sheets."""
from __future__ import annotations

from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self.cell)
            self.cell = None


def html_tables(page: str) -> list[list[list[str]]]:
    """Every table of ``page``: a list of rows, each a list of its cells' texts.

    >>> html_tables("<table><tr><th>a</th><td>&lt;b&gt;</td></tr></table><p>x</p>")
    [[['a', '<b>']]]
    """
    parser = _Tables()
    parser.feed(page)
    return parser.tables
