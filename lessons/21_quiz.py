"""Lesson 21: a quiz of conceptual questions, each graded with an explanation."""
import streamlit as st

from tfviz.exercises.quiz import (SECTIONS, grade, make_quiz, question_by_id, score,
                                  shuffle_options, summary_message)
from tfviz.ui import exercise_widgets as ew
from tfviz.ui import live
from tfviz.ui.lessons import numbered
from tfviz.ui.code import show_code

st.title("Quiz: test your knowledge")
st.markdown(
    "Questions about the ideas behind every lesson. Some ask you to pick an option, some to "
    "work out a number. Each answer is explained, and when you pick a tempting wrong option "
    "you learn why it tempts and where it goes wrong. An answer that cannot be read (an empty "
    "box, a word where a number belongs) is not counted: fix it and check again.")

if checkin := live.open_checkin():  # the teacher of this student's live class asks these now
    phase, asked = checkin
    st.header(f"Check-in from your teacher ({phase} the lesson)")
    st.caption("Your first answer to each question goes to your teacher's table, without your "
               "name, beside the class's answers from the other check-in.")
    for number, qid in enumerate(asked, start=1):
        question = shuffle_options(question_by_id(qid), live.CHECKIN_SEED)
        fb = ew.quiz_question(number, len(asked), question, ("checkin", phase, qid))
        live.report_checkin(phase, qid, fb)
        if sent := live.answer_status(f"check-in:{phase}", qid):
            st.caption(sent)
    st.header("Your own quiz")

c1, c2, c3 = st.columns([1, 1, 2])
with c1:
    seed = ew.class_code_input(
        "Quiz code", "qz_code", help="The same code gives the same questions in the same order, "
                                    "so a class can take one quiz together.")
st.session_state.setdefault("qz_n", 8)
n = c2.slider("Number of questions", 1, 20, key="qz_n")
sections = c3.multiselect("Only these sections (leave empty for all)", SECTIONS,
                          key="qz_sections")
if seed is None:
    seed = 1
    st.caption("Meanwhile you get the quiz of code 1.")

quiz = make_quiz(seed, n, sections or None)
if len(quiz) < n:
    st.caption(f"Those sections have {len(quiz)} questions; here they all are.")
round_ = st.session_state.get(ew.QUIZ_ROUND, 0)

results = []
for number, question in enumerate(quiz, start=1):
    results.append(ew.quiz_question(number, len(quiz), question, (seed, round_, question.id)))

graded = [fb for fb in results if fb is not None]
right, answered, percent = score(graded)
st.progress(answered / len(quiz) if quiz else 0.0,
            text=f"{answered} of {len(quiz)} answered, {right} right so far")
if quiz and answered == len(quiz):
    st.subheader("Your score")
    st.metric("Score", f"{right} / {answered}", f"{percent:.0f}%", delta_color="off")
    st.info(summary_message(graded, quiz, pages=numbered()))

b1, b2 = st.columns(2)
b1.button("🔀 New quiz", key="qz_new", on_click=ew.new_quiz, args=("qz_code",),
          help="A fresh code, so new questions in a new order.")
b2.button("↩️ Same questions again", key="qz_again", on_click=ew.new_quiz, args=(None,),
          help="Clear your answers and start this quiz over.")
show_code(make_quiz, grade)
