"""Lesson 24: the logit lens. What each layer would predict next, and where the answer appears."""
import streamlit as st

from tfviz.experiments.inside import lens_view
from tfviz.interpret import logit_lens
from tfviz.labels import safe_label
from tfviz.ui.code import show_code
from tfviz.ui.context import lesson_context
from tfviz.ui.drawing import vega
from tfviz.ui.inside_cache import lens
from tfviz.ui.lessons import by_url
from tfviz.ui.present import step
from tfviz.ui.tables import table
from tfviz.ui.views import view_value
from tfviz.viz import interpret as iv

SHOWN = 20  # positions on the map: the last ones of a longer text

name, text, bundle, cfg = lesson_context()
facts = bundle.facts

here = cfg.arch == "encoder"  # an encoder predicts the token at each position, not the next
nxt_word = "at each position" if here else "next"
st.title("Logit lens")
if facts.final_norm:
    ending = (f"its final {facts.norm_name}, then the unembedding W_U"
              f"{' (the embedding matrix itself, transposed)' if facts.tied else ''}")
else:
    ending = ("the unembedding W_U directly: it has no final norm"
              + (", since each of its blocks already ends in one (post-LN)" if not facts.pre_ln else ""))
st.markdown(
    f"After each block, **{name}** holds one vector per token: the residual stream. Only the last "
    f"one becomes the prediction, through {ending}. The logit lens sends every earlier stream "
    "through those same last steps, as if the model stopped there: what would it predict "
    f"{nxt_word} after the embeddings, after block 0, … after block {cfg.n_layers - 1} (blocks count "
    "from 0, as everywhere in this course)? The last row is the model's "
    "real prediction; the rows below it show when that answer appears.")
st.latex(r"\text{lens}_\ell = \mathrm{softmax}\big(%s\,W_U\big)"
         % (r"\mathrm{norm}(x_\ell)" if facts.final_norm else r"x_\ell"))

view = lens(name, text)
if isinstance(view, str):
    st.info(f"The logit lens cannot read {name}: {view}")
else:
    T = len(view.tokens)
    first = max(0, T - SHOWN)
    with step("1 · Every layer's guess"):
        if first:
            st.caption(f"Your text has {T} tokens; the map shows the last {SHOWN}.")
        cut = slice(first, T)
        vega(iv.lens_map, view.tokens[cut], view.layers, tuple(row[cut] for row in view.top),
             view.top_prob[:, cut], view.final_prob[:, cut], show=view_value("show", 1), here=here)
        last = T - 1
        final = view.top[-1][last]
        st.markdown(
            f"Each column is a position and each row a stage, the embeddings at the bottom. A cell "
            f"names the token that stage would predict {nxt_word}. At the last position ("
            f"“{safe_label(view.tokens[last])}”), {name} predicts “{safe_label(final)}” "
            f"(probability {view.top_prob[-1, last]:.2f}); that answer is on top from "
            f"**{view.appears(last)}** on. Switch the buttons under the map to colour each cell by "
            "the probability of the final prediction instead: it shows how the answer grows "
            "before it wins.")

    with step("2 · When the answer appears"):
        rows = range(first, T)
        early, late = view.settled_at_embeddings, view.settled_after_last
        table(view.columns(rows), hide_index=True)
        st.markdown(
            f"Of {T} positions, {early} already {'has its' if early == 1 else 'have their'} final "
            "answer at the embeddings (the token alone suggests it, like a common next word) and "
            f"{late} only {'gets' if late == 1 else 'get'} it after the last block. Positions whose answer appears late are "
            "where the layers did the work of reading the context.")
        show_code(logit_lens, lens_view)

    then = by_url("direct-attribution")
    if then is not None:
        st.page_link(f"lessons/{then.file}", label=f"Next: {then.title}, which part wrote the answer")
