"""The "In the notes" box: where the course notes differ from the page, and what is right.

Closed by default: it serves a learner who studies the course's notes (slides, handouts)
beside the app, and nobody else needs it to follow the page."""
from __future__ import annotations

import streamlit as st

from tfviz.notes_errata import Erratum, errata_for

PURPOSE = ("For readers of the course notes (the slides and handouts the course comes with): "
           "where they say something different from this page, what is right. The page does "
           "not need them.")


def callout_label(errata: list[Erratum]) -> str:
    """The closed box's title: what it is, and how much is inside.

    >>> callout_label([None]), callout_label([None, None])
    ('In the notes: 1 place where the course notes differ', 'In the notes: 2 places where the course notes differ')
    """
    n = len(errata)
    return f"In the notes: {n} place{'' if n == 1 else 's'} where the course notes differ"


def callout_text(errata: list[Erratum]) -> str:
    """The box's markdown: what it is for, then one bullet per erratum (where, what the notes
    write, what is right, why)."""
    bullets = "\n".join(f"- *{e.place[0].upper()}{e.place[1:]}:* the notes {e.notes}. "
                        f"**Right:** {e.right}. {e.why}" for e in errata)
    return f"{PURPOSE}\n\n{bullets}"


def in_the_notes(url: str, exercise: str | None = None,
                 answered: frozenset[str] = frozenset()) -> None:
    """Show the errata of the page at ``url`` (for the exercises page: of one exercise), if any.

    An exercise's entry that states some of its answers waits until those boxes are
    ``answered``; a caption says that it is waiting."""
    errata = errata_for(url, exercise)
    waiting = [e for e in errata if exercise and not set(e.gives_away) <= answered]
    errata = [e for e in errata if e not in waiting]
    if errata:
        with st.expander(callout_label(errata), icon=":material/menu_book:"):
            st.markdown(callout_text(errata))
    if waiting:
        one = len(waiting) == 1
        st.caption(f"{'One more note' if one else f'{len(waiting)} more notes'} on where the "
                   f"course notes slip {'shows' if one else 'show'} here once you have checked "
                   "the boxes it would answer, or opened the full worked solution.")
