"""Teacher's page: printable exercise sheets with class codes and their answer keys, presenter
view, and the live class (join by QR code, the room and its pacing, the answers). Each part is
a step, so in presenter view the join card and the room are slides of their own."""
import streamlit as st

from tfviz.exercises.registry import EXERCISES
from tfviz.exercises.worksheet import MAX_VARIANTS, worksheet
from tfviz.ui import exercise_widgets as ew
from tfviz.ui import live_room, live_teacher
from tfviz.ui.code import show_code
from tfviz.ui.present import step

st.title("Teacher: printable class sheets")
st.markdown(
    "Make a sheet of hand-calculation exercises for a class, with as many variants of each "
    "exercise as you like, so that neighbours do not share numbers. Every variant is printed "
    "with its **class code**. A student opens *20 · Worked exercises*, chooses *A fresh "
    "variant*, and types the code from their sheet: the app then shows exactly the same "
    "numbers, checks their answers box by box and can walk them through the solution. The "
    "answer key lists every answer with its tolerance and the worked steps.")

with step("1 · Printable class sheets"):
    ids = st.multiselect("Exercises on the sheet", list(EXERCISES), key="tc_pick",
                         default=["flying-arrows", "thinking-machines", "causal-mask"],
                         format_func=lambda i: EXERCISES[i].title)
    c1, c2 = st.columns(2)
    n_variants = c1.number_input("Variants of each exercise (N)", 1, MAX_VARIANTS, 3, key="tc_n",
                                 help="Variant a, b, c… of an exercise use consecutive codes.")
    with c2:
        start = ew.class_code_input("Starting class code", "tc_code", default="100",
                                    help="Variant j of every exercise uses this code + j.")

    if not ids:
        st.info("Pick at least one exercise to make a sheet.")
    elif start is not None:
        n_variants = int(n_variants)
        codes = [start + j for j in range(n_variants)]
        st.markdown("Class codes on this sheet: " + ", ".join(
            f"variant **{chr(ord('a') + j % 26)}** → **{code}**" for j, code in enumerate(codes)))
        files = ew.cached_sheets(tuple(ids), n_variants, start)
        stem = f"transformer-sheet-{start}"
        d1, d2, d3, d4 = st.columns(4)
        d1.download_button("⬇️ Sheet (Markdown)", files["sheet.md"], f"{stem}.md",
                           "text/markdown", key="tc_dl_sheet_md", on_click="ignore")
        d2.download_button("⬇️ Sheet (HTML, to print)", files["sheet.html"], f"{stem}.html",
                           "text/html", key="tc_dl_sheet_html", on_click="ignore")
        d3.download_button("⬇️ Answer key (Markdown)", files["key.md"], f"{stem}-key.md",
                           "text/markdown", key="tc_dl_key_md", on_click="ignore")
        d4.download_button("⬇️ Answer key (HTML, to print)", files["key.html"],
                           f"{stem}-key.html", "text/html", key="tc_dl_key_html", on_click="ignore")
        st.caption("The HTML files print cleanly from a browser (File → Print), one exercise per "
                   "block; the Markdown files paste into most course platforms.")

        st.subheader("Preview")
        sheet_tab, key_tab = st.tabs(["Sheet", "Answer key"])
        with sheet_tab, st.container(height=520):
            st.markdown(files["sheet.md"])
        with key_tab, st.container(height=520):
            st.markdown(files["key.md"])

with step("2 · On the projector: presenter view"):
    st.markdown(
        "Before the lecture, switch on **Presenter view** in the sidebar (or add `?present=1` to a "
        "lesson's address). The lesson then fills the screen in large type, one numbered step at a "
        "time: → or PageDown, which most presentation clickers send, moves on (a step taller than "
        "the screen scrolls first), ← or PageUp goes back, and Esc brings the normal page back. "
        "The address keeps the step on screen (`&slide=3`), so a link you share opens there. "
        "Presenter view changes only your own screen.")

with step("3 · Live class"):
    st.markdown(
        "In a lecture, your students can follow your screen in their own browsers. **Start a live "
        "class** below and put the join code on the projector. Students type it under *Join a "
        "live class* in the sidebar. From then on their app goes where yours goes: the lesson "
        "page, the sentence, the model, and the layer and head of the charts, within about a "
        "second. Anyone can press *Explore on my own* to try their own sentence, and *Catch up* "
        "to come back to you.\n\n"
        "While they work on *20 · Worked exercises*, each student's first try at every answer "
        "box comes back to the table below: how many answered, how many were right, and the "
        "slips the checker recognised. No names are sent. To go over a box the class got wrong, "
        "pick it under *A worked step on the projector* (with the class code on their sheets): "
        "the step that computes it appears, with its numbers. A **check-in** asks a few quiz "
        "questions before and after you teach.\n\n"
        "In a lecture hall, put step 4 on the projector (in presenter view it is a slide of its "
        "own): a QR code of the class's address, the code in large type, and the address. Step 5 "
        "counts who is here and who has answered, and who says they are lost (never who); ask one "
        "answer box as the question, give it a countdown that every student sees, and reveal its "
        "results when the room is ready (they stay hidden until then, so nobody copies the first "
        "bar). *End* asks first and names the answers you have not downloaded; after it, they stay "
        "downloadable for a day, then are deleted (as after 4 hours without you touching the "
        "app).\n\n"
        "The join code only lets students watch and send answers. What moves the class is a "
        "secret key that stays in this browser. The class itself is kept by the server's store, "
        "which every replica shares: a student reaches it on any replica, and a restart of the "
        "servers keeps it. This browser remembers your class, so a reconnect keeps you teaching; "
        "on another browser, take it back with the code and the key.")
    live_teacher.teacher_panel()

with step("4 · Join the class"):
    live_teacher.join_panel()

with step("5 · The room"):
    live_room.room_panel()
    live_teacher.class_dashboard()

with step("6 · Take the answers home"):
    live_teacher.downloads()

with step("7 · Check-in: before and after a lesson"):
    live_teacher.checkin_panel()

with step("8 · A worked step on the projector"):
    live_teacher.worked_step_panel()

show_code(worksheet)
