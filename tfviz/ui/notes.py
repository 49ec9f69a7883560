"""The "In the notes" callout: where the source notes differ from the page, and what is right."""
from __future__ import annotations

import streamlit as st

from tfviz.notes_errata import Erratum, errata_for


def callout_text(errata: list[Erratum]) -> str:
    """The callout's markdown: one bullet per erratum (what the notes write, what is right, why)."""
    bullets = "\n".join(f"- *{e.place[0].upper()}{e.place[1:]}:* the notes {e.notes}. "
                        f"**Right:** {e.right}. {e.why}" for e in errata)
    return ("**In the notes.** If you are reading the course notes beside this page, they say "
            f"something different here:\n\n{bullets}")


def in_the_notes(url: str, exercise: str | None = None,
                 answered: frozenset[str] = frozenset()) -> None:
    """Show the errata of the page at ``url`` (for the exercises page: of one exercise), if any.

    An exercise's entry that states some of its answers waits until those boxes are
    ``answered``; a caption says that it is waiting."""
    errata = errata_for(url, exercise)
    waiting = [e for e in errata if exercise and not set(e.gives_away) <= answered]
    errata = [e for e in errata if e not in waiting]
    if errata:
        st.info(callout_text(errata), icon=":material/menu_book:")
    if waiting:
        one = len(waiting) == 1
        st.caption(f"{'One more note' if one else f'{len(waiting)} more notes'} on where the "
                   f"course notes slip {'shows' if one else 'show'} here once you have checked "
                   "the boxes it would answer, or opened the full worked solution.")
