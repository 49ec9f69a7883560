"""The welcome page: what tfviz is and the map of every lesson."""
import streamlit as st

from tfviz.ui.lessons import HOME, available

st.title("See a transformer think")
st.markdown(
    "A transformer turns text into a guess about the next word through a few dozen very "
    "ordinary steps: look-ups, dot products, averages, a softmax. Here a small transformer we "
    "trained ourselves shows you **every one of those numbers** for the sentence you type in "
    "the sidebar. Start with the tour, or jump to any lesson below."
)
st.page_link("lessons/01_tour.py", label="Start the tour", icon=":material/arrow_forward:")
st.caption("Tip for teachers: every setting you pick is kept in the page address, so a link "
           "you share opens the same view, with the same numbers, for every student.")

# The map: three sections a row. Six side by side do not fit beside the sidebar (a heading
# breaks inside a word, a lesson's title is cut); three have 250 px each at 1280 × 800, where
# the longest title takes two lines, and on a phone each section sits under the last.
PER_ROW = 3
sections: dict[str, list] = {}
for lesson in available():
    if lesson.file != HOME:
        sections.setdefault(lesson.section, []).append(lesson)
names = list(sections)
for first in range(0, len(names), PER_ROW):
    for column, section in zip(st.columns(PER_ROW, gap="medium"), names[first:first + PER_ROW]):
        with column:
            st.subheader(section)
            for lesson in sections[section]:
                st.page_link(f"lessons/{lesson.file}", label=lesson.title, icon=lesson.icon or None)
