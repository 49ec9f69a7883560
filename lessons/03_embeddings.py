"""Lesson 3 · Embeddings and positions: token ids become vectors, and vectors learn their place."""
import streamlit as st

from tfviz.analysis.positions import (alibi, formula_table, permutation, similarity_by_distance,
                                      sinusoid_table)
from tfviz.experiments.order import permutation_check
from tfviz.experiments.rope import rope_pair_angles, rope_scores
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.experiments_cache import positionless
from tfviz.ui.notes import in_the_notes
from tfviz.ui.widgets import chart, plotly, show_code, vega
from tfviz.viz.positions import (alibi_figure, pe_heatmap, permutation_figures, rope_chart,
                                 similarity_chart, vectors_heatmap)

MAX_PERM_TOKENS = 24


st.title("Embeddings and positions")
model, text, bundle, cfg = lesson_context()
trace = get_trace(model, text)
tokens = trace.tokens

# ----- embedding lookup ---------------------------------------------------------------------
st.subheader("From token id to vector")
st.markdown(
    f"The model keeps a table **E** with one row of {cfg.d_model} numbers for each of its "
    f"{cfg.vocab_size} tokens. Turning a token into a vector is just reading its row: no "
    "arithmetic at all. Training moves these rows so that tokens used alike end up alike."
)
first = int(trace.ids[0])
embed = trace["hook_embed"]
c1, c2 = st.columns([2, 3])
c1.latex(r"x_k = E[\,t_k\,] \in \mathbb{R}^{%d}" % cfg.d_model)
c2.markdown(f"Token 0 is **{tokens[0]!r}** with id **{first}**, so x₀ is row {first} of E: "
            f"`[{', '.join(f'{v:.3f}' for v in embed[0][:4])}, …]`")
chart(vectors_heatmap, embed, tokens, title=f"Embedding rows of your {len(tokens)} tokens")

# ----- sinusoidal positions -----------------------------------------------------------------
st.subheader("Why positions are needed, and the sine recipe")
st.markdown(
    "Attention compares every token with every other, but nothing in that comparison says "
    "*where* a token stands: shuffle the words and each one sees the same crowd. So we add a "
    "position vector p_k to each embedding. The original transformer builds p_k from waves: "
    "pair i of dimensions turns at its own speed, fast for the first pairs, slower and slower "
    "for later ones."
)
st.latex(r"PE(k, 2i) = \sin\!\Big(\frac{k}{n^{2i/d}}\Big) \qquad "
         r"PE(k, 2i+1) = \cos\!\Big(\frac{k}{n^{2i/d}}\Big) \qquad \tilde x_k = x_k + PE(k)")


@safe_fragment
def sine_explorer():
    a, b, c = st.columns(3)
    base = a.select_slider("base n", [10, 100, 1000, 10000, 100000], 10000, key="emb_base")
    d = b.slider("width d", 2, 128, 64, step=2, key="emb_d")
    n_pos = c.slider("positions shown", 8, 128, 64, key="emb_positions")
    table = sinusoid_table(n_pos, d, base)
    chart(pe_heatmap, table, title=f"PE table: {n_pos} positions × {d} dimensions, n = {base}")
    curves = {f"sine, n={base}, d={d}": similarity_by_distance(table)}
    if "hook_pos_embed" in trace and len(tokens) > 1:
        curves[f"{model} (your text)"] = similarity_by_distance(trace["hook_pos_embed"])
    vega(similarity_chart, curves)
    st.caption("Neighbouring positions get similar vectors and the likeness fades with "
               "distance; for the sine table it depends only on the distance, not on where "
               "the pair sits. A model using the same recipe draws the same line.")
    show_code(sinusoid_table, similarity_by_distance)


sine_explorer()

st.markdown("**By hand: d = 4, n = 100, for the sentence “I am a Robot”.** With d = 4 there "
            "are two pairs; their angles are k/100⁰ = k/1 and k/100^(2/4) = k/10.")
st.dataframe(formula_table(d=4, base=100), hide_index=True, width="stretch")
show_code(formula_table)

# ----- the model's own positions ------------------------------------------------------------
st.subheader(f"The positions {model} adds")
if "hook_pos_embed" in trace:
    kind = ("a learned table: one trained row per position, like a second embedding table"
            if cfg.positional == "learned" else f"the sine table with n = {cfg.pos_base:g}")
    st.markdown(f"This model adds {kind}. Here are the rows it added to your tokens:")
    chart(vectors_heatmap, trace["hook_pos_embed"], tokens,
          title="Position vectors added to your tokens")
else:
    st.info(f"{model} adds no position vectors to its inputs (positional = "
            f"{cfg.positional!r}); position enters inside attention instead, see below.")
st.markdown(
    "**Learned positions** (BERT, GPT-2) skip the formula: row k of a trainable table is "
    "position k's vector, fitted along with everything else. They are flexible, but a position "
    "past the longest training sentence has no row, so they cannot go beyond it."
)
in_the_notes("embeddings")

# ----- RoPE ---------------------------------------------------------------------------------
st.subheader("RoPE: rotate instead of add")
st.markdown(
    "Rotary embeddings leave the token vectors alone and **turn** each query and key by an "
    "angle proportional to its position (pair i of dimensions turns by θᵢ per step). Turning "
    "q by mθ and k by nθ changes their dot product only through the difference n − m, so "
    "attention sees *how far apart* two tokens are. We borrow a real query and key from "
    "layer 0, head 0 of the model on your text."
)
st.latex(r"(R_{m\theta}\,q)\cdot(R_{n\theta}\,k) = q^\top R_{(n-m)\theta}\,k,\qquad "
         r"\theta_i = n_{\text{base}}^{-2i/d}")


@safe_fragment
def rope_demo():
    q = trace["q", 0][0, 0]
    k = trace["k", 0][min(1, len(tokens) - 1), 0]
    dist = st.slider("distance m − n", 0, 12, 3, key="emb_rope_dist")
    rows = [r for d in sorted({0, dist, dist + 4})
            for r in rope_scores(q, k, d, range(d, d + 40, 4), cfg.pos_base)]
    vega(rope_chart, rows)
    angles = rope_pair_angles(dist, len(q), cfg.pos_base)
    st.caption(f"At position {dist}, the {len(angles)} pairs are turned by "
               f"{', '.join(f'{a:.2f}' for a in angles[:4])}, … radians (pair 0 fastest).")
    show_code(rope_scores)


rope_demo()

# ----- ALiBi --------------------------------------------------------------------------------
st.subheader("ALiBi: a penalty for distance")
st.markdown(
    "ALiBi adds nothing to the vectors. It subtracts a penalty from each attention score that "
    "grows with the distance between query and key, with a different slope per head: steep "
    "heads look near, gentle heads look far."
)
st.latex(r"\text{score}_{ij} = \frac{q_i\cdot k_j}{\sqrt{d_k}} - m_h\,|i-j|,\qquad "
         r"m_h = 2^{-8(h+1)/H}")
shown = list(tokens[:12])
slopes, bias = alibi(cfg.n_heads, len(shown))
chart(alibi_figure, bias, slopes, shown)
show_code(alibi)

# ----- order blindness ----------------------------------------------------------------------
st.subheader("Without positions, attention is order-blind")
st.markdown(
    "Let us test the claim. We build a fresh copy of this model with **no** position "
    "information, feed it your tokens, then the same tokens in a new order. If the model is "
    "order-blind, each token's output is unchanged, only moved: the two pictures match. "
    "(We switch off the causal mask for this test, because “only look left” is itself a clue "
    "about order.)"
)


@safe_fragment
def order_test():
    ids = list(trace.ids[:MAX_PERM_TOKENS])
    kind = st.selectbox("New order", ["reverse", "rotate", "shuffle"], key="emb_perm")
    if st.button("Shuffle again", key="emb_reshuffle"):
        st.session_state["emb_seed"] = st.session_state.get("emb_seed", 0) + 1
    order = permutation(len(ids), kind, st.session_state.get("emb_seed", 0))
    check = permutation_check(positionless(model), ids, order)
    left, right = permutation_figures(check.original, check.permuted, order,
                                      tokens[:MAX_PERM_TOKENS])
    st.markdown("**The model without positions** (first dimensions of each token's output)")
    a, b = st.columns(2)
    with a:
        plotly(left)
    with b:
        plotly(right)
    st.success(f"Largest difference: {check.max_gap:.1e} (rounding noise). Same outputs, "
               "just moved along with their tokens.")
    if cfg.positional != "none":
        real = permutation_check(bundle.model, ids, order)
        st.markdown(f"The same test on **{model}** itself, which does know positions: the "
                    f"largest difference is **{real.max_gap:.2f}**, so reordering really "
                    "changes what each token computes.")
    show_code(permutation_check)


order_test()
