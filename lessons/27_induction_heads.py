"""Lesson 27: induction heads. A random sequence repeated, the loss on each copy, each head's
induction and previous-token scores, and the lab task that grows them."""
import streamlit as st

from tfviz.experiments.inside import induction_view
from tfviz.interpret import induction_report, induction_score, previous_token_score
from tfviz.ui.code import show_code
from tfviz.ui.context import lesson_context
from tfviz.ui.drawing import vega
from tfviz.ui.inside_cache import induction
from tfviz.ui.lessons import by_url
from tfviz.ui.present import step
from tfviz.viz import interpret as iv

LENGTHS = (10, 20, 30, 40)

name, text, bundle, cfg = lesson_context()

st.title("Induction heads")
st.markdown(
    "Draw random tokens and repeat them: t₀ t₁ … t₀ t₁ …. Nothing predicts the first copy. In the "
    "second, a model that can copy knows every next token: at a token's second copy, find its "
    "first copy and predict the token that followed it. Two heads do this together. A **previous-token "
    "head** moves into each position the token just before it; later, an **induction head** "
    "looks for the position whose previous token matches the current one, which is the token "
    "after the earlier copy, and copies it. Its score is the mean attention from each token of "
    "the second copy to that position.")
st.latex(r"\text{induction score} = \frac{1}{n}\sum_{i} A\big[\,n + i,\; i + 1\,\big]")

c1, c2 = st.columns(2)
length = c1.select_slider("Random tokens in each copy", LENGTHS, value=10, key="ih_length")
seed = int(c2.number_input("Random seed", 0, 10_000, 0, key="ih_seed"))
view = induction(name, int(length), seed)
if isinstance(view, str):
    st.info(view)
else:
    rep = view.report
    if rep.notice:
        st.caption(rep.notice)
    with step("1 · The repeated sequence and its loss"):
        names = [f"L{lyr}H{h}: induction {rep.scores[lyr, h]:.2f}, previous token {rep.previous[lyr, h]:.2f}"
                 for lyr, h in view.heads]
        vega(iv.repeated_pattern, view.patterns, names, rep.tokens, rep.losses)
        bos = " after a beginning-of-text token" if rep.offset else ""
        st.markdown(
            f"{rep.n} random tokens of {name}'s vocabulary, twice{bos}. On the right, the loss of "
            f"each next token: {rep.loss_first:.2f} nats on average in the first copy, "
            f"{rep.loss_second:.2f} in the second. "
            + ("The second copy is far easier: the model copies." if rep.loss_second < 0.5 * rep.loss_first
               else "The second copy is hardly easier: this model does not copy much.")
            + " On the left, the select box picks a head: an induction head's map has a stripe "
            f"{rep.n - 1} places left of the diagonal in the second copy, a previous-token head's "
            "sits just below the diagonal.")

    with step("2 · Every head's scores"):
        vega(iv.induction_heads, rep.scores, rep.previous)
        (il, ih) = view.strongest_induction
        line = (f"The strongest induction head is L{il}H{ih} (layer {il}, head {ih}) with "
                f"{rep.scores[il, ih]:.2f}.")
        if il > 0:
            pl, ph = view.strongest_previous_before(il)
            line += (f" Before its layer, the strongest previous-token head is L{pl}H{ph} "
                     f"({rep.previous[pl, ph]:.2f}): the partner it needs, since layer {il} can only "
                     "match on what an earlier layer wrote into each position.")
        else:
            line += " It sits in the first layer, so it has no previous-token head to lean on."
        st.markdown(line)
        show_code(induction_score, previous_token_score, induction_report)

    with step("3 · Grow one yourself"):
        lab = by_url("training-lab")
        st.markdown(
            "The training lab's task *Repeat a random sequence (induction)* trains a two-layer, "
            "attention-only model on such sequences while you watch: for a few hundred steps "
            "nothing happens, then a head's induction score climbs and the loss on the second copy "
            "falls with it, at the same checkpoint.")
        if lab is not None:
            st.page_link(f"lessons/{lab.file}", label="Open the training lab")
