"""Lesson 4 · Attention as soft lookup: a hashtable gives one value, attention blends them all."""
import streamlit as st

from tfviz.analysis.lookup import (effective_count, effective_counts, hard_lookup,
                                   one_hot_of_best, soft_lookup, temperature_sweep, toy_table)
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.lessons import available
from tfviz.ui.present import step
from tfviz.ui.views import instant, length_marker, linked_value, view_opening
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz.lookup import lookup_weights
from tfviz.viz.lookup import key_plane, sweep_chart, weights_chart

TEMPERATURES = [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]

st.title("Attention as a soft lookup")
st.markdown(
    "Think of a Python dictionary. You hand it a **query**; it finds the **key** that matches "
    "exactly and returns that key's **value** — one value, or nothing. Attention is the same "
    "idea made soft: the query is compared with *every* key, each comparison gives a score, "
    "and the answer is a **blend of all the values**, weighted by how well each key matched."
)
c1, c2 = st.columns(2)
c1.markdown("**Hashtable**")
c1.latex(r"\text{lookup}(q) = v_j \quad\text{for the one } j \text{ with } k_j = q")
c2.markdown("**Attention**")
c2.latex(r"\alpha_j = \mathrm{softmax}_j\!\Big(\frac{q\cdot k_j}{\tau}\Big),\qquad "
         r"\text{out} = \sum_j \alpha_j\, v_j")

entries = toy_table()


@safe_fragment
def toy():
    a, b, c = st.columns(3)
    qx = a.slider("query, dimension 1", -2.0, 2.0, 0.6, 0.1, key="lk_qx")
    qy = b.slider("query, dimension 2", -2.0, 2.0, 0.2, 0.1, key="lk_qy")
    tau = c.select_slider("temperature τ (smaller = sharper)", TEMPERATURES, 1.0, key="lk_tau")
    query = [qx, qy]
    soft = soft_lookup(query, entries.keys, entries.values, tau)
    hard = hard_lookup(query, entries.keys, entries.values)
    left, right = st.columns(2)
    with left:
        vega(key_plane, entries.names, entries.keys, query, soft.weights)
    with right:
        vega(weights_chart, entries.names, soft.weights, hard.weights)
    table([{"entry": n, "q·k": f"{s:.2f}", "q·k / τ": f"{s / tau:.2f}",
            "softmax weight α": f"{w:.3f}", "hard lookup weight": f"{h:g}"}
           for n, s, w, h in zip(entries.names, soft.scores, soft.weights, hard.weights)])
    fmt = lambda v: ", ".join(f"{x:.2f} {name}" for x, name in zip(v, entries.value_names))  # noqa: E731
    best = entries.names[hard.best]
    m1, m2 = st.columns(2)
    m1.metric("Hard lookup answer (best key only)", fmt(hard.output), help=f"the value of {best}")
    m2.metric("Attention answer (blend of all values)", fmt(soft.output),
              help=f"mixes about {effective_count(soft.weights):.1f} values")
    st.markdown("Now make τ small: the softmax piles nearly all weight on the best key, and "
                "the blend becomes the hard lookup's single value. Make τ large: every value "
                "counts almost equally and the answer drifts to the average.")
    vega(sweep_chart, temperature_sweep(query, entries.keys, entries.values, TEMPERATURES),
         current=tau)
    show_code(soft_lookup, hard_lookup, temperature_sweep)


with step("1 · A toy table you can query"):
    st.markdown("Four entries. Each key is a point in a 2-d “meaning” plane; each value holds two "
                "facts, so a blend is easy to read (half cat, half car = 2 legs and 2 wheels). "
                "A real hashtable answers only when the query *equals* a key; since you can slide "
                "the query anywhere, we compare attention with its closest strict cousin, the "
                "**hard lookup**: take the value of the single best-matching key.")
    table([{"entry": n, "key": f"({k[0]:.1f}, {k[1]:.1f})",
            **{vn: f"{v:g}" for vn, v in zip(entries.value_names, vals)}}
           for n, k, vals in zip(entries.names, entries.keys, entries.values)])
    toy()

with step("2 · The same thing inside the model"):
    model, text, _, cfg = lesson_context()
    trace = get_trace(model, text)
    st.markdown(
        "In the model each token makes its own query, key and value from its vector, and each "
        "query looks up all the keys at once. Choose a layer, a head and a query token under the "
        "chart (the arrow keys move them too; the chart follows in your browser): the bars show "
        "which tokens it blends, next to the single token a hard lookup would have returned."
    )
    patterns = trace.stack("pattern")  # (L, H, n, n)
    n = len(trace.tokens)
    opening = view_opening(cfg, "lk_layer")  # a deep model sends one layer at a time
    instant(lookup_weights, patterns, trace.tokens, effective_counts(patterns), **opening.view,
            query=linked_value("query"))  # None: the sentence's last token, from the data
    length_marker(n, n - 1)  # fits the query slider to this sentence (the chart is length-free)
    if cfg.causal:
        st.caption("This model only lets a token look at itself and earlier tokens, so later "
                   "ones get weight 0.")
    show_code(effective_count, one_hot_of_best)
    if "05_self_attention.py" in {lesson.file for lesson in available()}:
        st.page_link("lessons/05_self_attention.py", label="Next: where q, k and v come from",
                     icon="➡️")
