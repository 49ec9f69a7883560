"""Lesson 5: one query token walked through self-attention, with the model's own numbers."""
import streamlit as st

from tfviz.analysis import attention as att
from tfviz.analysis.coref import find_coref_positions
from tfviz.config import RunOptions
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.notes import in_the_notes
from tfviz.ui.widgets import chart, layer_head_pickers, show_code, token_select
from tfviz.viz import attention as attv
from tfviz.viz.arrows import arrows_figure
from tfviz.viz.heatmap import attention_heatmap, heatmap
from tfviz.viz.style import token_labels

name, text, bundle, cfg = lesson_context()

st.title("Self-attention, step by step")
st.markdown(
    "Self-attention lets every token build a new version of itself out of the other tokens. "
    "Each token asks a question (its **query** q), advertises what it holds (its **key** k) "
    "and offers some content (its **value** v). A query is compared with every key; the "
    "better the match, the more of that key's value flows into the query's new vector. "
    "Below, one token of your text goes through that recipe, and every number is read out of "
    "the model while it runs."
)
st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}+M\right)V")

VIEWS = ["One query, step by step", "All tokens as matrices", "Flying arrows"]
WHAT_IF_DEFAULTS = {"sa_scale": cfg.scale_attn, "sa_causal": cfg.causal, "sa_temp": 1.0}
if st.session_state.get("sa_for_model") != name:  # a new model starts from its own settings
    st.session_state.update(WHAT_IF_DEFAULTS, sa_for_model=name)
for key, value in WHAT_IF_DEFAULTS.items():  # widget values are forgotten on other pages
    st.session_state.setdefault(key, value)


@safe_fragment
def walkthrough() -> None:
    layer, head = layer_head_pickers(cfg.n_layers, cfg.n_heads)
    with st.expander("What if…? (changes this run only, never the model)", expanded=False):
        c1, c2, c3 = st.columns(3)
        scale = c1.toggle("Divide by √d_k", key="sa_scale")
        causal = c2.toggle("Causal mask (no peeking ahead)", key="sa_causal")
        temperature = c3.slider("Softmax temperature T", 0.1, 5.0, step=0.1, key="sa_temp",
                                help="The scores are divided by T before the softmax: below 1 sharper, above 1 flatter.")
    trace = get_trace(name, text, RunOptions(scale=scale, causal=causal, temperature=temperature))
    labels = token_labels(trace.tokens, escape=True)
    n = len(labels)
    found = find_coref_positions(trace.tokens)
    q_pos = token_select("Query token (the one that asks)", trace.tokens, "sa_query",
                         default=found.probe if found else n - 1)
    walk = att.query_walkthrough(trace, layer, head, q_pos)
    if cfg.arch == "encoder-decoder":
        st.caption("This model has an encoder and a decoder; you are looking at the decoder's "
                   "self-attention. Its cross-attention, where the decoder's queries meet keys "
                   "and values made from the encoder's output, is among the steps of lesson 12 "
                   "(Full forward walk).")

    # Only the open tab runs: hidden tabs' charts were built and drawn on every change too
    # (11 charts instead of 5 for the first view).
    tab_one, tab_matrix, tab_arrows = st.tabs(VIEWS, key="sa_view", on_change="rerun")
    if tab_one.open:
        with tab_one:
            one_query(walk, labels)
    if tab_matrix.open:
        with tab_matrix:
            matrices(trace, layer, head)
    if tab_arrows.open:
        with tab_arrows:
            st.markdown("Each line leaves the query on the left and lands on a key on the right; "
                        "the thicker and darker it is, the more attention that key receives.")
            chart(arrows_figure, walk.weights, trace.tokens, q_pos, allowed=walk.allowed,
                  title=f"Where {labels[q_pos]} looks (layer {layer}, head {head})")


def one_query(walk, labels) -> None:
    i, top = walk.query_pos, int(walk.weights.argmax())
    x_name = "x_i" if cfg.norm == "post" else r"\mathrm{LN}(x_i)"
    st.subheader("1 · Query, keys and values")
    st.latex(rf"q_i = {x_name}\,W^Q,\quad k_j = x_j W^K,\quad v_j = x_j W^V"
             rf"\qquad (d_k = {walk.d_k})")
    if walk.kv_head != walk.head:
        st.caption(f"Grouped-query attention: query head {walk.head} shares key/value head "
                   f"{walk.kv_head} with other query heads.")
    chart(heatmap, walk.q[None], title=f"q for {labels[i]}", y_labels=[labels[i]],
          x_title="dimension", diverging=True, height=200, text=walk.d_k <= 16)
    left, right = st.columns(2)
    with left:
        chart(heatmap, walk.k, title="k for every token", y_labels=labels, diverging=True,
              x_title="dimension", y_title="key token", text=False)
    with right:
        chart(heatmap, walk.v, title="v for every token", y_labels=labels, diverging=True,
              x_title="dimension", y_title="value token", text=False)

    st.subheader("2 · Scores, scale, mask, softmax")
    temp = "" if walk.temperature == 1.0 else f"/ {walk.temperature:g}"
    st.latex(rf"s_j = q_i\cdot k_j \;\to\; \frac{{s_j}}{{{walk.divisor:.4g}}} \;\to\; "
             r"+M_{ij}\;(0\text{ or }-\infty) \;\to\; "
             rf"\alpha_j = \frac{{e^{{\tilde s_j{temp}}}}}{{\sum_m e^{{\tilde s_m{temp}}}}}")
    st.markdown(f"The key with the most weight is **{labels[top]}**:")
    st.latex(rf"q_{{{i}}}\cdot k_{{{top}}} = {walk.raw[top]:.4f} \;\to\; "
             rf"\frac{{{walk.raw[top]:.4f}}}{{{walk.divisor:.4g}}} = {walk.scaled[top]:.4f}"
             rf"\;\to\; \alpha_{{{top}}} = {walk.weights[top]:.4f}")
    hidden = int((~walk.allowed).sum())
    if hidden:
        st.caption(f"{hidden} later key(s) are masked with −∞, so their weight is exactly 0.")
    chart(attv.score_steps_figure, walk)
    st.dataframe(att.walkthrough_rows(walk), hide_index=True)

    st.subheader("3 · Weighted sum of the values")
    st.latex(r"z_i = \sum_j \alpha_j v_j")
    chart(attv.weighted_sum_figure, walk, att.strongest_keys(walk.weights, 10))
    st.caption("The ten keys with the most weight get a row each; the rest are added up in one "
               "row. The last row is their total: the head's output for this token, exactly "
               "the z the model recorded.")
    show_code(att.query_walkthrough, att.softmax)


def matrices(trace, layer, head) -> None:
    mf = att.matrix_form(trace, bundle.weights(), layer, head)
    x_is = ("the block's input (post-LN: the residual stream before the block)"
            if cfg.norm == "post" else "LayerNorm of the block's input (pre-LN)")
    st.markdown("All queries are handled at once by stacking the token vectors as rows of a "
                f"matrix X, {x_is}. Then three matrix products make Q, K and V:")
    st.latex(r"Q = XW^Q,\quad K = XW^K,\quad V = XW^V,\quad "
             r"Z = \mathrm{softmax}\!\left(\tfrac{QK^\top}{\sqrt{d_k}} + M\right)V")
    st.table({"step": [r[0] for r in mf.shapes(cfg.d_model, cfg.d_head)],
              "shapes": [r[1] for r in mf.shapes(cfg.d_model, cfg.d_head)],
              "here": [r[2] for r in mf.shapes(cfg.d_model, cfg.d_head)]})
    if ("rot_q", layer) not in trace:
        st.caption(f"Check: X W^Q + b computed here matches the model's own Q, K, V and Z to "
                   f"within {mf.max_error:.1e}.")
    labels = token_labels(trace.tokens, escape=True)
    left, right = st.columns(2)
    for where, matrix, title in ((left, mf.Q, "Q"), (right, mf.K, "K"), (left, mf.V, "V"),
                                 (right, mf.Z, "Z = A V")):
        with where:
            chart(heatmap, matrix, title=f"{title}  ({matrix.shape[0]}×{matrix.shape[1]})",
                  y_labels=labels, x_title="dimension", y_title="token",
                  diverging=True, text=False)
    chart(attention_heatmap, mf.A, trace.tokens, title=f"A = attention weights "
          f"({mf.A.shape[0]}×{mf.A.shape[1]}), layer {layer}, head {head}")
    show_code(att.matrix_form)


walkthrough()

st.header("The source's worked example")
st.markdown("Two words, *Thinking* and *Machines*. The query of *Thinking* scores 112 against "
            "its own key and 96 against the other; the head size is 64, so √d_k = 8. "
            "Change the numbers to see how the scale and the softmax respond.")
c1, c2, c3 = st.columns(3)
s1 = c1.number_input("score with key 1", value=112.0, step=4.0, key="sa_ex_s1")
s2 = c2.number_input("score with key 2", value=96.0, step=4.0, key="sa_ex_s2")
d_k = c3.number_input("d_k", min_value=1, max_value=4096, value=64, step=1, key="sa_ex_dk")
ex = att.worked_example((s1, s2), int(d_k))
st.latex(rf"\frac{{{s1:g}}}{{\sqrt{{{d_k}}}}} = {ex.scaled[0]:.4g},\quad "
         rf"\frac{{{s2:g}}}{{\sqrt{{{d_k}}}}} = {ex.scaled[1]:.4g}\quad\to\quad "
         rf"\mathrm{{softmax}} = ({ex.weights[0]:.2f},\ {ex.weights[1]:.2f})")
st.table({"key": ["Thinking", "Machines"], "score q·k": ex.scores.tolist(),
          "÷ √d_k": ex.scaled.tolist(), "softmax": [round(w, 4) for w in ex.weights.tolist()]})
in_the_notes("self-attention")
show_code(att.worked_example)
