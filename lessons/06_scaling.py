"""Lesson 6: why attention divides by √d_k: a random-vector experiment, then the live model."""
import streamlit as st

from tfviz.analysis import scaling as sc
from tfviz.config import RunOptions
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.demo_cache import dot_product_variance, saturation
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, view_opening
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz import scaling as isc

name, text, bundle, cfg = lesson_context()
D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

st.title("Why divide by √d_k?")
st.markdown(
    "A score q·k adds up d_k products, one per dimension. If each component of q and k is a "
    "random number with mean 0 and variance 1, each product also has variance 1, and the "
    "variances of independent terms add up. So the score's variance is d_k, and its typical "
    "size is √d_k. Wide heads would produce huge scores just because they are wide. "
    "Dividing by √d_k undoes exactly that growth."
)
st.latex(r"\mathrm{Var}(q\cdot k)=\sum_{i=1}^{d_k}\mathrm{Var}(q_i k_i)=d_k"
         r"\qquad\Longrightarrow\qquad"
         r"\mathrm{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right)=\frac{d_k}{d_k}=1")
in_the_notes("scaling")

with step("1 · Measure it"):
    c1, c2 = st.columns(2)
    n_samples = c1.slider("Random (q, k) pairs per d_k", 500, 20000, 4000, step=500,
                          key="sc_samples")
    seed = c2.number_input("Random seed", 0, 10_000, 0, key="sc_seed")
    rows = dot_product_variance(D_KS, int(n_samples), int(seed))
    vega(isc.variance_chart, rows)
    table(isc.variance_rows(rows))
    show_code(sc.dot_product_variance)

with step("2 · What large scores do to softmax"):
    st.markdown(
        "Softmax compares scores through their differences, and big differences make it pick a "
        "single winner. A one-hot softmax is also a dead end for learning: its gradient with "
        "respect to the scores is the Jacobian below, and when one p is 1 and the rest are 0, "
        "every entry of that matrix is 0. The model would get no signal about which key to prefer."
    )
    st.latex(r"\frac{\partial p_i}{\partial s_j} = p_i(\delta_{ij}-p_j)"
             r"\quad\Longleftrightarrow\quad J=\mathrm{diag}(p)-pp^\top")
    d_k_row = st.select_slider("d_k for the example row", options=list(D_KS), value=64, key="sc_dk")
    raw, p_without, p_with = sc.example_row(d_k_row, seed=int(seed))
    vega(isc.example_row_chart, raw, p_without, p_with, d_k_row)
    c1, c2 = st.columns(2)
    c1.metric("Largest gradient entry, without the scale",
              f"{sc.max_gradient(p_without):.2e}")
    c2.metric("Largest gradient entry, with the scale", f"{sc.max_gradient(p_with):.2e}")
    st.markdown("Averaged over many random rows of 8 keys:")
    vega(isc.saturation_chart, saturation(D_KS, int(seed)))
    show_code(sc.saturation, sc.softmax_jacobian, sc.max_gradient)

with step("3 · Your text, with and without the scale"):
    facts = bundle.facts
    # what the legends and the table call the scale: ÷√d_k, or a Granite's × attention_multiplier
    scale_word = "÷√d_k" if facts.attention_multiplier is None else f"× {facts.attention_multiplier:g}"
    if facts.attention_multiplier is None:
        scale = (f"{name} uses heads of d_k = {facts.d_head}, so the scale divides every score by "
                 f"√{facts.d_head} ≈ {facts.score_divisor:.2f}.")
    else:  # Granite: a multiplier of its own config in place of 1/√d_k
        scale = (f"{name} uses heads of d_k = {facts.d_head}, but as a Granite it "
                 f"{facts.score_scale}. Its scores are scaled by a number of its config, not by "
                 "the rule above.")
    st.markdown(
        f"{scale} Switch the scale off for one run and compare. "
        "The entropy of a row says how spread out that query's attention is: log₂(number of "
        "keys) when it looks at all keys evenly, 0 when it looks at a single key."
    )
    st.latex(r"H(\text{row}) = -\sum_j \alpha_j \log_2 \alpha_j")
    st.caption("Move the layer and head sliders under the chart (or use the arrow keys on them): "
               "the maps, the entropies and their means change in your browser at once.")
    on = get_trace(name, text, RunOptions(scale=True))
    off = get_trace(name, text, RunOptions(scale=False))
    maps = [t.stack("pattern") for t in (on, off)]  # (L, H, n, n) each
    opening = view_opening(cfg, "sc_layer")  # a deep model sends one layer at a time
    instant(isc.scale_on_off, *maps, *[sc.row_entropy(m) for m in maps], on.tokens,
            **opening.view, scale=scale_word)
    st.markdown("Mean entropy of every head's rows, with and without the scale:")
    three_decimals = st.column_config.NumberColumn(format="%.3f")
    entropies = sc.entropy_by_head(*maps, scale=scale_word)
    table(entropies, column_config={
        column: three_decimals for column in entropies if column not in ("layer", "head")})
    off_by = "√d_k" if facts.attention_multiplier is None else f"{facts.score_divisor:.4g}"
    st.caption(f"Turning the scale off multiplies every score by {off_by}, which is the same as a "
               f"softmax temperature of 1/{off_by} ≈ {1 / facts.score_divisor:.2f}: the maps "
               + ("sharpen." if facts.score_divisor > 1 else "change." if facts.score_divisor < 1
                  else "stay as they are."))
    show_code(sc.row_entropy, sc.entropy, sc.entropy_by_head)
