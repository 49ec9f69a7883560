"""Lesson 10: the position-wise feed-forward network, and why attention needs it."""
import streamlit as st

from tfviz.analysis import ffn as fa
from tfviz.ui.cache import get_trace, model_names
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.lessons import available, by_url
from tfviz.ui.widgets import chart, layer_head_pickers, show_code, token_select, vega
from tfviz.viz import ffn as fv
from tfviz.viz.style import token_labels


def _switch_model(to: str) -> None:
    st.session_state["model"] = to


name, text, _, cfg = lesson_context()
trace = get_trace(name, text)
labels = token_labels(trace.tokens)  # plain: widgets show text as typed
act_name, act_latex = fa.activation_info(cfg)

st.title("The feed-forward network")
st.markdown(
    "After attention has let tokens exchange information, every token goes through the same "
    "small two-layer network **on its own**: widen the vector, bend it with a nonlinearity, "
    "and project it back. No information moves between tokens here; this is where the model "
    "does per-token computation."
)
st.latex(r"\mathrm{FFN}(x) = \max(0,\; xW_1 + b_1)\,W_2 + b_2")
st.markdown(
    f"In **{name}**: W₁ is {cfg.d_model}×{cfg.d_ff} and W₂ is {cfg.d_ff}×{cfg.d_model}, so "
    f"each token's vector is widened to d_ff = {cfg.d_ff} hidden units (\"neurons\") and "
    f"back to d = {cfg.d_model}. The nonlinearity is **{act_name}**"
    + (" (the max(0, ·) above)." if cfg.activation == "relu" else
       ", a smooth cousin of ReLU used by BERT: it lets small negative values through "
       "instead of cutting them to exactly zero.")
)
st.latex(act_latex)

layer, head = layer_head_pickers(cfg.n_layers, cfg.n_heads)
tokens_n = len(labels)

if not fa.has_dense_ffn(trace, layer):
    st.info(f"**{name}** has no single feed-forward network: each block replaces it with "
            f"{cfg.n_experts} expert networks and a router that sends every token to "
            f"{cfg.moe_top_k} of them. The experts are the subject of the next lesson.")
    if by_url("mixture-of-experts") in available():
        st.page_link("lessons/11_moe.py", label="Lesson 11 · Mixture of experts", icon="🔀")
    if "gpt-tiny" in model_names():
        st.button("Show the neurons of gpt-tiny instead", key="ffn_switch",
                  on_click=_switch_model, args=("gpt-tiny",))
else:
    @safe_fragment
    def neurons(layer: int) -> None:
        st.header("Which neurons fire?")
        acts = fa.neuron_acts(trace, layer)
        n = st.slider("Neurons shown", 4, min(32, cfg.d_ff), min(12, cfg.d_ff), key="ffn_top")
        chosen = fa.top_neurons(acts, n)
        st.markdown(f"The {n} neurons of layer {layer} with the largest value anywhere in your "
                    f"text (mlp.hook_post, after the {act_name}):")
        chart(fv.neuron_heatmap, acts, trace.tokens, chosen,
              title=f"Hidden activations, layer {layer}: tokens × top neurons")
        st.markdown(
            "How many of the neurons are switched on (> 0) for each token? "
            + ("ReLU sets every negative value to exactly 0, so a token usually uses only "
               "part of the layer." if cfg.activation == "relu" else
               "GELU leaves small negative values, so here \"on\" means strictly positive.")
        )
        vega(fv.active_chart, trace.tokens, fa.fraction_active(acts),
             title=f"Share of the {cfg.d_ff} neurons above zero, layer {layer}")
        st.markdown("Each token's three strongest neurons:")
        st.dataframe(fa.top_table(trace.tokens, acts, 3), hide_index=True)

    neurons(layer)

st.header("Without it, attention only re-averages")
st.markdown(
    "Each head's output for a token is a **weighted average** of value vectors: the weights "
    "come out of a softmax, so they are never negative and they add up to 1. A weighted "
    "average like that cannot leave the range of the vectors it averages, coordinate by "
    "coordinate. Stack attention layers with nothing in between and you only ever get "
    "averages of (linear maps of) averages. The feed-forward network's nonlinearity is what "
    "lets a block compute something new from the mix."
)
st.latex(r"z_i = \sum_j \alpha_{ij}\, v_j, \qquad \alpha_{ij} \ge 0, \qquad \sum_j \alpha_{ij} = 1")

pos = token_select("Query token", trace.tokens, "ffn_token", default=tokens_n - 1)
mix = fa.attention_mixing(trace, layer, head, pos)
c1, c2, c3 = st.columns(3)
c1.metric("smallest weight", f"{mix.min_weight:.4f}")
c2.metric("sum of weights", f"{mix.weight_sum:.6f}")
c3.metric("z inside the values' range", "yes" if mix.inside else "no")
st.dataframe({"key token": labels[: len(mix.weights)], "weight α": mix.weights}, hide_index=True)
vega(fv.mixing_chart, mix.values, mix.weights, mix.z, trace.tokens,
     title=f"Head {head}, layer {layer}: values seen by {labels[pos]} (ticks) "
           "and their mix z (dots)")
st.caption(f"Rebuilt z vs the model's own attn.hook_z: largest difference "
           f"{mix.model_gap:.1e}.")
check = fa.convexity_check(trace, layer)
st.success(f"Across all {check['pairs']} (token, head) pairs of layer {layer}: the smallest "
           f"weight is {check['min weight']:.4f}, every row sums to 1 (within "
           f"{check['largest |sum − 1|']:.1e}), and {check['inside']} of {check['pairs']} "
           "outputs lie inside their values' range.")

show_code(fa.top_neurons, fa.fraction_active, fa.mixing, fa.attention_mixing)
