"""Lesson 9: residual connections and LayerNorm (or RMSNorm), with the live model's own statistics."""
import streamlit as st

from tfviz.analysis import layernorm as lna
from tfviz.experiments import wiring
from tfviz.lab.comparisons import COMPARISONS
from tfviz.reference import layer_norm, rms_norm
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import twin_norms
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, length_marker, linked_value, view_opening, view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz import block as ivb


name, text, bundle, cfg = lesson_context()
trace = get_trace(name, text)

st.title("Residual connections and LayerNorm")
st.markdown(
    "A transformer block never *replaces* a token's vector. Each sublayer (attention, then the "
    "feed-forward network) computes a correction, and that correction is **added** to what "
    "was already there. This running sum is called the **residual stream**. Because the input "
    "is carried along untouched, a layer only has to learn what to change, and gradients "
    "have a direct path back through every block."
)
facts = bundle.facts
m_res = facts.residual_multiplier  # Granite's; 1 for every other model
st.latex(r"x_{\ell} \;=\; x_{\ell-1} + " + (rf"{m_res:g}\," if m_res != 1.0 else "")
         + r"\mathrm{Sublayer}(x_{\ell-1})")
scaled = ([f"each sublayer's correction by its residual_multiplier {m_res:g} before adding it"]
          if m_res != 1.0 else []) + (
    [f"the token embeddings by its embedding_multiplier {facts.embedding_multiplier:g} before the "
     "first block"] if facts.embedding_multiplier != 1.0 else [])
if scaled:  # a Granite's multipliers
    st.caption(f"**{name}** multiplies " + ", and ".join(scaled) + ".")
st.page_link("lessons/23_training_lab.py", icon=":material/science:",
             label=f"Does the skip path matter? The training lab's \"{COMPARISONS['residual'].title}\" "
                   "trains the same deep stack with and without it: loss, accuracy and each "
                   "layer's gradient")
rms = facts.norm_kind == "rmsnorm"
N = r"\mathrm{RMS}" if rms else r"\mathrm{LN}"  # the model's own norm in the formulas
LN_FORMULA = (r"\mu = \frac{1}{d}\sum_{j=1}^{d} x_j \qquad "
              r"\sigma = \sqrt{\frac{1}{d}\sum_{j=1}^{d} (x_j-\mu)^2 + \varepsilon} \qquad "
              r"\mathrm{LN}(x) = \frac{x-\mu}{\sigma}\odot\gamma + \beta")
RMS_FORMULA = (r"\mathrm{rms} = \sqrt{\frac{1}{d}\sum_{j=1}^{d} x_j^2 + \varepsilon} \qquad "
               r"\mathrm{RMS}(x) = \frac{x}{\mathrm{rms}}\odot\gamma")
st.markdown(
    "Adding things up again and again lets the numbers drift in size from token to token and "
    "layer to layer. A **norm** tidies each token's vector on its own; nothing is mixed between "
    f"tokens. **{name}** normalises each token with **{facts.norm_name}**"
    + (": it divides the vector by its root mean square and applies a learned gain γ "
       f"(d = {cfg.d_model} numbers). No mean is subtracted and there is no shift β: that is "
       "all of LayerNorm that Llama, Mistral and Qwen kept." if rms else
       ": subtract the vector's mean, divide by its spread, then apply a learned gain γ and "
       f"shift β (each of width d = {cfg.d_model}).")
)
st.latex(RMS_FORMULA if rms else LN_FORMULA)
if rms:
    st.markdown("LayerNorm, the norm of the original paper, GPT-2 and BERT, also takes the mean "
                "away first and adds a learned shift β after γ (section 3 puts the two side by "
                "side on one of your tokens):")
    st.latex(LN_FORMULA)
st.caption(f"ε = {cfg.ln_eps:g} only guards against dividing by zero.")
in_the_notes("layernorm")

with step("1 · Where the norm sits"):
    left, right = st.columns(2)
    with left:
        st.markdown("**Post-LN** (the original paper and our sources): add first, "
                    "then normalise the sum.")
        st.latex(rf"z = {N}_1\big(x + \mathrm{{SelfAttn}}(x)\big)")
        st.latex(rf"y = {N}_2\big(z + \mathrm{{FFN}}(z)\big)")
    with right:
        st.markdown("**Pre-LN** (GPT-2 and most recent models): normalise a copy going *into* "
                    "the sublayer; the stream itself is only ever added to.")
        st.latex(rf"z = x + \mathrm{{SelfAttn}}\big({N}_1(x)\big)")
        st.latex(rf"y = z + \mathrm{{FFN}}\big({N}_2(z)\big)")
    st.info(f"**{name}** is wired **{cfg.norm}-LN**"
            + (f" with a final {facts.norm_name} after the last block." if cfg.final_norm else ".")
            + (" Its decoder blocks have a third norm, after cross-attention."
               if cfg.arch == "encoder-decoder" else ""))

with step("2 · The statistics, layer by layer"):
    opening = view_opening(cfg, "ln_layer")  # a deep model sends one layer at a time
    only, layer0 = opening.only, opening.layer
    st.caption(f"Choose {'the layer, ' if only is None else ''}the {facts.norm_name} and the token "
               "under the charts (the arrow keys work on them too): the charts change in your "
               "browser at once.")
    norm0 = view_value("norm", len(lna.NORM_ORDER) - 1)  # an index in NORM_ORDER (see viz.block)
    params = lna.gamma_beta(bundle.weights())
    every = lna.every_norm(trace, params)
    if rms:
        st.markdown(
            "Before the norm every token has its own mean μ and root mean square (rms). After "
            "dividing by its rms (before γ) every token has a root mean square of 1, whatever "
            "it started with, but its mean is **not** 0: RMSNorm takes nothing away, so each "
            "token keeps μ / rms. "
            + ("In this post-LN model the norm's input is the stream plus the sublayer's output."
               if cfg.norm == "post" else "In this pre-LN model the norm's input is the stream itself."))
    else:
        st.markdown(
            "Before the norm every token has its own mean μ and spread σ. After normalising "
            "(before γ and β) every token has mean 0 and standard deviation 1, whatever it "
            "started with. "
            + ("In this post-LN model the norm's input is the stream plus the sublayer's output."
               if cfg.norm == "post" else "In this pre-LN model the norm's input is the stream itself."))
    instant(ivb.token_stats, every.stats, every.norms, trace.tokens, layer=layer0, norm=norm0,
            kind=every.kind, only_layer=only)
    st.markdown(f"Averages over the tokens, for every {facts.norm_name} in the stack:")
    table(lna.stats_table(trace), hide_index=True)

    st.subheader("The learned γ" if rms else "The learned γ and β")
    untrained = "" if bundle.trained else " This model has not been trained yet, so "
    if rms:
        st.markdown("γ starts at 1; training moves it, dimension by dimension. An RMSNorm has no β."
                    + (untrained + "γ is still 1." if untrained else ""))
        vega(ivb.gamma_beta_heatmap, params, which="gamma", norm_name=facts.norm_name)
    else:
        st.markdown("γ starts at 1 and β at 0; training moves them, dimension by dimension."
                    + (untrained + "they are still 1 and 0." if untrained else ""))
        tab_g, tab_b = st.tabs(["γ (gain)", "β (shift)"])  # plain tabs switch in the browser
        with tab_g:
            vega(ivb.gamma_beta_heatmap, params, which="gamma")
        with tab_b:
            vega(ivb.gamma_beta_heatmap, params, which="beta")

    st.subheader("One token, by hand")
    if rms:
        st.latex(rf"\mathrm{{rms}} = \sqrt{{\tfrac{{1}}{{{cfg.d_model}}}\textstyle\sum_j x_j^2 + \varepsilon}}")
        st.markdown("The chosen token's numbers, step by step, next to what the model itself "
                    "recorded (rms in ln.hook_scale, and its output):")
    else:
        c1, c2 = st.columns(2)
        c1.latex(rf"\mu = \tfrac{{1}}{{{cfg.d_model}}}\textstyle\sum_j x_j")
        c2.latex(rf"\sigma = \sqrt{{\tfrac{{1}}{{{cfg.d_model}}}\textstyle\sum_j (x_j-\mu)^2 + \varepsilon}}")
        st.markdown("The chosen token's numbers, step by step, next to what the model itself "
                    "recorded (μ in ln.hook_mean, σ in ln.hook_scale, and its output):")
    instant(ivb.worked_example, every.mean, every.sigma, every.trace_mean, every.trace_sigma,
            every.steps, every.vectors, every.norms, trace.tokens, d_model=cfg.d_model,
            layer=layer0, norm=norm0, pos=linked_value("pos"),  # None: the first token, from the data
            kind=every.kind, only_layer=only)
    length_marker(len(trace.tokens), pos=0)  # fits the token slider to this sentence
    st.success("Largest difference between the hand calculation and the model, over every layer, "
               f"{facts.norm_name}, token and dimension: {every.max_error:.1e}")

with step("3 · RMSNorm next to LayerNorm, on the same token"):
    pair = lna.every_pair(trace)
    st.markdown(
        "The two norms read the same vector x. **LayerNorm** takes its mean μ away and divides "
        "by its spread σ; **RMSNorm** divides by its root mean square and keeps the mean. "
        "Because the mean of the squares is the variance plus the square of the mean, the two "
        "scales are tied: rms² = σ² + μ². A token whose mean is near 0 comes out of both almost "
        f"the same; the further its mean is from 0, the more they differ. **{name}** uses "
        f"**{facts.norm_name}**, so its own scale is the one in ln.hook_scale; the other is "
        "computed here, on the same token, for comparison.")
    st.latex(r"\mathrm{rms}^2 = \tfrac{1}{d}\textstyle\sum_j x_j^2 + \varepsilon "
             r"= \underbrace{\tfrac{1}{d}\textstyle\sum_j (x_j-\mu)^2 + \varepsilon}_{\sigma^2} + \mu^2")
    instant(ivb.norm_pair_chart, pair.numbers, pair.vectors, pair.norms, trace.tokens,
            kind=every.kind, layer=layer0, norm=norm0, pos=linked_value("pos"), only_layer=only)
    length_marker(len(trace.tokens), pos=0)  # this section's token slider, fitted as section 2's
    st.success(f"rms² = σ² + μ² for every layer, norm and token, to within {pair.identity_gap:.1e}; "
               f"the model's own hook_scale equals its {'rms' if rms else 'σ'} computed here to "
               f"within {pair.own_error:.1e}.")
    show_code(lna.norm_pair, lna.every_pair)

with step("4 · How big is the residual stream?"):
    st.markdown(
        "The chart measures the length ‖x‖ of each token's vector (averaged over tokens) after "
        "every sublayer. With post-LN the stream is renormalised after every sublayer, so its "
        f"size is pinned near √d = {cfg.d_model ** 0.5:.1f} times the typical γ. With pre-LN "
        "the sublayers only ever add, so the stream tends to grow layer after layer and a final "
        "norm tidies it up at the end. The pre-LN model here is a **fresh, untrained copy** "
        "with the same seeded weights, built just for this comparison; the shared model is not touched."
    )
    series = {f"{name} (this model, {cfg.norm}-LN)": lna.residual_norms(trace)}
    twins = twin_norms(name, text)
    if bundle.trained or cfg.norm != "post":
        series["fresh post-LN twin"] = twins["fresh post-LN"]
    series["fresh pre-LN twin"] = twins["fresh pre-LN"]
    vega(ivb.residual_norm_chart, series, title="Size of the residual stream through the stack")
    times = (f", times its embedding_multiplier {facts.embedding_multiplier:g},"
             if facts.embedding_multiplier != 1.0 else "")
    st.caption(("embed = token + position embeddings" + times.rstrip(",") if facts.adds_positions else
                f"embed = the token embeddings{times.rstrip(',')} ({name} adds no position vectors: its "
                f"positions, {facts.positions_name}, act later)")
               + "; L0 attn = after block 0's attention sublayer; L0 ffn = after its feed-forward "
               "sublayer; and so on.")

    show_code(rms_norm if rms else layer_norm, lna.ln_input, lna.every_norm, lna.residual_norms,
              wiring.variant_configs,
              wiring.fresh_twin)
