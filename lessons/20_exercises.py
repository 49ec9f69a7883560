"""Lesson 20: the hand-calculation exercises, checked box by box, with a worked solution."""
import inspect

import streamlit as st

from tfviz.exercises.attention import solve_attention
from tfviz.exercises.engine_check import engine_attention
from tfviz.exercises.registry import EXERCISES
from tfviz.reference import attention
from tfviz.ui import exercise_widgets as ew
from tfviz.ui.lessons import mention, numbered
from tfviz.ui.notes import in_the_notes
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.pickers import stable_select
from tfviz.ui.tables import numbers_table
from tfviz.ui.views import length_marker
from tfviz.viz.exercises import (FORMULAS, arrows_numbers, arrows_opening, attention_setup,
                                 data_tables, exercise_arrows)

st.title("Worked exercises")
st.markdown(
    "Pencil and paper time. Each exercise gives you a handful of small numbers; work the "
    "answer out by hand (a calculator is fine), type it in, and press **Check**. A wrong "
    "answer is not just marked wrong: when it matches a typical slip, such as forgetting to "
    "divide by √d_k, you are told which step went astray. Stuck? Ask for a hint, then open "
    "the solution one step at a time.")

ids = list(EXERCISES)
progress = ew.progress_panel(ids)

titles = {EXERCISES[i].title: i for i in ids}  # a stale label, with or without its ✓, names its exercise
ex_id = stable_select(
    "Exercise", ids, "ex_pick", recover=lambda v: titles.get(str(v).removeprefix("✓ ")),
    format_func=lambda i: f"{'✓ ' if progress.is_solved(i) else ''}{EXERCISES[i].title}")
spec = EXERCISES[ex_id]
st.caption(f"{spec.summary} It practises {mention(spec.lesson)}.")
if (practised := numbered().get(spec.lesson)) is not None:  # the lesson's page, one click away
    st.page_link(f"lessons/{practised.file}", label=f"Lesson {practised.title}",
                 icon=practised.icon or ":material/school:")

original = "The source's own numbers" if spec.has_source else "Our worked example"
mode = st.radio("Which numbers?", ["source", "variant"], key="ex_mode", horizontal=True,
                format_func=lambda m: original if m == "source" else "A fresh variant (class code)")
seed = None
if mode == "variant":
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        seed = ew.class_code_input(
            "Class code", "ex_code",
            help="The same code gives the same numbers to everybody, so a class can compare "
                 "answers. Your teacher's sheet prints the code beside each exercise.")
    right.button("🎲 New numbers", key="ex_new_code", on_click=ew.new_code, args=("ex_code",))
    if seed is None:
        st.caption(f"Until then you see the numbers of “{original.lower()}”.")
elif not spec.has_source:
    st.caption("The source describes this idea without numbers; this example is ours.")

inst = ew.cached_instance(ex_id, seed)
ikey = ew.instance_key(ex_id, seed)
tokens = inst.tokens

st.header(inst.title + ("" if seed is None else f" (class code {seed})"))
st.markdown(inst.prompt)
if ex_id in FORMULAS:
    st.latex(FORMULAS[ex_id])
with st.expander("The data as tables", expanded=True):
    ew.show_tables(data_tables(inst), per_row=2)
answered = ew.answered(inst, ikey)  # boxes checked, or all once the solution is open
in_the_notes("exercises", exercise=ex_id, answered=answered)

st.subheader("Your answers")
st.caption("Type numbers separated by spaces or commas; brackets, fractions like 3/5 and "
           "percentages are fine. Write -inf for −∞.")
agreement = ew.cached_agreement(ex_id, seed) if attention_setup(inst) is not None else None
ew.answer_boxes(inst, ikey, ew.shown_elsewhere(inst, agreement))  # Check reruns the boxes alone

st.subheader("Hints and the worked solution")
level = ew.reveal_buttons(inst, ikey)
full = len(inst.steps) + 1
if level == 1:
    ew.show_hint(inst)
shown = inst.steps[:max(0, level - 1)]
if shown and inst.focus is not None:
    st.caption(f"The row of “{tokens[inst.focus]}”, the word the exercise asks about, "
               "is tinted yellow.")
for number, step in enumerate(shown, start=1):
    ew.show_step(number, step, tokens, inst.focus)
if inst.arrows is not None and (level >= full or any("weights" in s.values for s in shown)):
    st.markdown("**Who attends to whom.** Each line runs from the word asking (left) to a word "
                "it looks at (right); the thicker the line, the larger the weight. The sliders "
                "under the picture choose the head and the word asking.")
    vega(exercise_arrows, inst.arrows)
    length_marker(len(inst.arrows.tokens), arrows_opening(inst.arrows))  # fits the word slider
    numbers_table(arrows_numbers(inst.arrows), key=f"ex_arrow_numbers_{ikey}")
if level >= full:
    ew.show_answers(inst)

if agreement is not None:
    st.subheader("The model agrees")
    st.markdown(
        "The hand calculation is not a toy version of attention: it *is* attention. Here the "
        "same matrices are copied into a one-layer tfviz transformer (no positions, no biases, "
        "the word vectors fed straight in), and the weights and outputs are read back from "
        "the engine's trace, exactly as on the other lessons.")
    ew.agreement_panel(inst, ikey, agreement)
    code = [inspect.getmodule(spec.build), solve_attention, attention, engine_attention]
else:
    code = [inspect.getmodule(spec.build)]
if answered == {f.name for f in inst.answer_fields}:
    show_code(*code)
else:  # its docstrings work this very example
    st.caption("The code behind this exercise works its answers out in its comments, so "
               "“Show the code” waits until every box is checked or the full solution is open.")
