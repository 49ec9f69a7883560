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

sections: dict[str, list] = {}
for lesson in available():
    if lesson.file != HOME:
        sections.setdefault(lesson.section, []).append(lesson)
columns = st.columns(len(sections))
for column, (section, lessons) in zip(columns, sections.items()):
    with column:
        st.subheader(section)
        for lesson in lessons:
            st.page_link(f"lessons/{lesson.file}", label=lesson.title, icon=lesson.icon or None)
