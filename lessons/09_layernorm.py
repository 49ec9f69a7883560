"""Lesson 9: residual connections and LayerNorm, with the live model's own statistics."""
import streamlit as st

from tfviz.analysis import layernorm as lna
from tfviz.experiments import wiring
from tfviz.reference import layer_norm
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.experiments_cache import twin_norms
from tfviz.ui.notes import in_the_notes
from tfviz.ui.widgets import chart, layer_head_pickers, show_code, token_select, vega
from tfviz.viz import layernorm as lnv
from tfviz.viz.style import token_labels


name, text, bundle, cfg = lesson_context()
trace = get_trace(name, text)
labels = token_labels(trace.tokens)  # plain: widgets show text as typed

st.title("Residual connections and LayerNorm")
st.markdown(
    "A transformer block never *replaces* a token's vector. Each sublayer (attention, then the "
    "feed-forward network) computes a correction, and that correction is **added** to what "
    "was already there. This running sum is called the **residual stream**. Because the input "
    "is carried along untouched, a layer only has to learn what to change, and gradients "
    "have a direct path back through every block."
)
st.latex(r"x_{\ell} \;=\; x_{\ell-1} + \mathrm{Sublayer}(x_{\ell-1})")
st.markdown(
    "Adding things up again and again lets the numbers drift in size from token to token and "
    "layer to layer. **LayerNorm** tidies each token's vector on its own: subtract the vector's "
    f"mean, divide by its spread, then apply a learned gain γ and shift β (each of width "
    f"d = {cfg.d_model}). Nothing is mixed between tokens."
)
st.latex(r"\mu = \frac{1}{d}\sum_{j=1}^{d} x_j \qquad "
         r"\sigma = \sqrt{\frac{1}{d}\sum_{j=1}^{d} (x_j-\mu)^2 + \varepsilon} \qquad "
         r"\mathrm{LN}(x) = \frac{x-\mu}{\sigma}\odot\gamma + \beta")
st.caption(f"ε = {cfg.ln_eps:g} only guards against dividing by zero.")
in_the_notes("layernorm")

st.header("Where the norm sits")
left, right = st.columns(2)
with left:
    st.markdown("**Post-LN** (the original paper, our sources, and our models): add first, "
                "then normalise the sum.")
    st.latex(r"z = \mathrm{LN}_1\big(x + \mathrm{SelfAttn}(x)\big)")
    st.latex(r"y = \mathrm{LN}_2\big(z + \mathrm{FFN}(z)\big)")
with right:
    st.markdown("**Pre-LN** (GPT-2 and most recent models): normalise a copy going *into* "
                "the sublayer; the stream itself is only ever added to.")
    st.latex(r"z = x + \mathrm{SelfAttn}\big(\mathrm{LN}_1(x)\big)")
    st.latex(r"y = z + \mathrm{FFN}\big(\mathrm{LN}_2(z)\big)")
st.info(f"**{name}** is wired **{cfg.norm}-LN**"
        + (" with a final LayerNorm after the last block." if cfg.final_norm else ".")
        + (" Its decoder blocks have a third norm, after cross-attention." if cfg.arch == "encoder-decoder" else ""))

st.header("The statistics, layer by layer")
layer, _ = layer_head_pickers(cfg.n_layers, head=False)
norms = lna.norms_of(trace, layer)
if st.session_state.get("ln_norm") not in norms:  # e.g. ln_cross after leaving reverse-encdec
    st.session_state["ln_norm"] = norms[0]
norm = st.radio("Which LayerNorm", norms, format_func=lna.NORM_NAMES.get, horizontal=True,
                key="ln_norm")
stats = lna.token_stats(trace, layer, norm)
st.markdown(
    "Before the norm every token has its own mean μ and spread σ. After normalising (before "
    "γ and β) every token has mean 0 and standard deviation 1, whatever it started with. "
    + ("In this post-LN model the norm's input is the stream plus the sublayer's output."
       if cfg.norm == "post" else "In this pre-LN model the norm's input is the stream itself.")
)
vega(lnv.token_stats_chart, trace.tokens, stats.mean_before, stats.std_before, stats.mean_after,
     stats.std_after, title=f"μ and σ per token, layer {layer}, {norm}")
st.markdown("Averages over the tokens, for every LayerNorm in the stack:")
st.dataframe(lna.stats_table(trace), hide_index=True)

st.subheader("The learned γ and β")
st.markdown("γ starts at 1 and β at 0; training moves them, dimension by dimension."
            + ("" if bundle.trained else " This model has not been trained yet, so they are still 1 and 0."))
params = lna.gamma_beta(bundle.weights())
tab_g, tab_b = st.tabs(["γ (gain)", "β (shift)"])
with tab_g:
    chart(lnv.gamma_beta_heatmap, params, which="gamma")
with tab_b:
    chart(lnv.gamma_beta_heatmap, params, which="beta")


@safe_fragment
def worked_example(layer: int, norm: str) -> None:
    st.subheader("One token, by hand")
    pos = token_select("Token", trace.tokens, "ln_token")
    gamma, beta = params[f"L{layer} {norm}"]
    w = lna.worked_token(trace, layer, norm, pos, gamma, beta)
    c1, c2 = st.columns(2)
    c1.latex(rf"\mu = \tfrac{{1}}{{{cfg.d_model}}}\textstyle\sum_j x_j = {w.mean:.4f}")
    c2.latex(rf"\sigma = \sqrt{{\tfrac{{1}}{{{cfg.d_model}}}\textstyle\sum_j (x_j-\mu)^2 + \varepsilon}} = {w.sigma:.4f}")
    st.caption(f"The model recorded μ = {w.trace_mean:.4f} (ln.hook_mean) and σ = "
               f"{w.trace_sigma:.4f} (ln.hook_scale).")
    st.markdown(f"The first dimensions of **{labels[pos]}**, step by step; the last column is "
                "what the model itself produced:")
    st.dataframe(w.table(8), hide_index=True)
    st.success(f"Largest difference between the hand calculation and the model: {w.max_error:.1e}")
    with st.expander(f"All {cfg.d_model} numbers of x"):
        st.dataframe({"x": w.x, "normalised": w.normalized, "output": w.output})


worked_example(layer, norm)

st.header("How big is the residual stream?")
st.markdown(
    "The chart measures the length ‖x‖ of each token's vector (averaged over tokens) after "
    "every sublayer. With post-LN the stream is renormalised after every sublayer, so its "
    f"size is pinned near √d = {cfg.d_model ** 0.5:.1f} times the typical γ. With pre-LN "
    "the sublayers only ever add, so the stream tends to grow layer after layer and a final "
    "LayerNorm tidies it up at the end. The pre-LN model here is a **fresh, untrained copy** "
    "with the same seeded weights, built just for this comparison; the shared model is not touched."
)
series = {f"{name} (this model, {cfg.norm}-LN)": lna.residual_norms(trace)}
twins = twin_norms(name, text)
if bundle.trained or cfg.norm != "post":
    series["fresh post-LN twin"] = twins["fresh post-LN"]
series["fresh pre-LN twin"] = twins["fresh pre-LN"]
vega(lnv.residual_norm_chart, series, title="Size of the residual stream through the stack")
st.caption("embed = token + position embeddings; L0 attn = after block 0's attention sublayer; "
           "L0 ffn = after its feed-forward sublayer; and so on.")

show_code(layer_norm, lna.ln_input, lna.worked_token, lna.residual_norms, wiring.wiring_variants)
