"""Lesson 10: the position-wise feed-forward network, and why attention needs it."""
import streamlit as st

from tfviz.analysis import ffn as fa
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.lessons import available, by_url
from tfviz.ui.model_offer import offer
from tfviz.ui.present import step
from tfviz.ui.views import instant, layer_picker, length_marker, linked_value, view_opening, view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz import ffn as ivf
from tfviz.viz.kit.style import token_labels


name, text, bundle, cfg = lesson_context()
trace = get_trace(name, text)
labels = token_labels(trace.tokens)  # plain: widgets show text as typed
act_name, act_latex = fa.activation_info(cfg)

st.title("The feed-forward network")
facts = bundle.facts
bias = (r" + b_{\text{gate}}", r" + b_{\text{in}}", r" + b_{\text{out}}") if cfg.bias else ("", "", "")
moe = facts.is_moe
# An MoE block's network is one of its experts: a token goes through k of them (lesson 11)
FFN, its = (r"E_i", "each expert's ") if moe else (r"\mathrm{FFN}", "")
if moe:
    st.markdown(
        "After attention has let tokens exchange information, every token goes **on its own** "
        "through a small network. No information moves between tokens here; this is where the model "
        f"does per-token computation. **{name}** is a mixture of experts: each block holds "
        f"**{facts.n_experts} such networks** (experts), each with weights of its own, and a router "
        f"sends every token to {facts.moe_top_k} of them and mixes their outputs (lesson 11). "
        + (f"Each expert is **gated** ({facts.activation_name}, as in Mixtral and Granite): it widens the "
           "vector twice, into a **gate** and an **up** value for every hidden unit (\"neuron\"), "
           f"bends the gate with {fa.GATE_FUNCTIONS[cfg.activation]}, multiplies the two, and "
           "projects the product back down." if facts.gated else
           "Each expert widens the vector, bends it with a nonlinearity, and projects it back.")
    )
if facts.gated:
    gate_fn = fa.GATE_FUNCTIONS[cfg.activation]
    if not moe:
        st.markdown(
            "After attention has let tokens exchange information, every token goes through the same "
            "small network **on its own**. No information moves between tokens here; this is where "
            "the model does per-token computation. "
            f"**{name}**'s network is **gated** ({facts.activation_name}, as in Llama, Mistral and "
            "Qwen): it widens the vector twice, into a **gate** and an **up** value for every hidden "
            f"unit (\"neuron\"), bends the gate with {gate_fn}, multiplies the two, and projects "
            "the product back down."
        )
    sup = "^i" if moe else ""
    st.latex(rf"{FFN}(x) = \big(\mathrm{{{gate_fn}}}(xW_{{\text{{gate}}}}{sup}{bias[0]}) \odot "
             rf"(xW_{{\text{{in}}}}{sup}{bias[1]})\big)\,W_{{\text{{out}}}}{sup}{bias[2]}")
    st.markdown(
        f"In **{name}**: {its}W_gate and W_in are {cfg.d_model}×{cfg.d_ff} and W_out is "
        f"{cfg.d_ff}×{cfg.d_model}, so {'an expert turns ' if moe else ''}each token's vector "
        f"{'into' if moe else 'becomes'} d_ff = {cfg.d_ff} gates and "
        f"{cfg.d_ff} up values and {'back' if moe else 'goes back'} to d = {cfg.d_model}"
        + ("" if cfg.bias else ", and none of the three matrices has a bias")
        + f". The nonlinearity is **{gate_fn}**, on "
        "the gate only: where the gate is large and positive the up value passes almost as it "
        "is, where it is near 0 or negative almost nothing passes. "
        + ("Three matrices instead of two, in every expert." if moe else
           "Three matrices instead of two, so d_ff is usually about 2/3 of the 4·d a ReLU network "
           "would have.")
    )
else:
    if not moe:
        st.markdown(
            "After attention has let tokens exchange information, every token goes through the same "
            "small two-layer network **on its own**: widen the vector, bend it with a nonlinearity, "
            "and project it back. No information moves between tokens here; this is where the model "
            "does per-token computation."
        )
    sup = "^i" if moe else ""  # a dense block: ReLU or a GELU
    st.latex(rf"{FFN}(x) = \max(0,\; xW_1{sup} + b_1{sup})\,W_2{sup} + b_2{sup}" if cfg.activation == "relu" else
             rf"{FFN}(x) = \mathrm{{GELU}}(xW_1{sup} + b_1{sup})\,W_2{sup} + b_2{sup}")
    st.markdown(
        f"In **{name}**: {its}W₁ is {cfg.d_model}×{cfg.d_ff} and W₂ is {cfg.d_ff}×{cfg.d_model}, so "
        f"{'an expert widens ' if moe else ''}each token's vector {'' if moe else 'is widened '}to "
        f"d_ff = {cfg.d_ff} hidden units (\"neurons\") and "
        f"back to d = {cfg.d_model}. The nonlinearity is **{act_name}**"
        + (" (the max(0, ·) above)." if cfg.activation == "relu" else
           ", a smooth cousin of ReLU used by BERT and GPT-2: it lets small negative values "
           "through instead of cutting them to exactly zero.")
    )
st.latex(act_latex)

tokens_n = len(labels)
layer0 = view_value("layer", cfg.n_layers - 1)  # where the charts open: a shared link's view


def activation_curves(whose: str) -> None:
    """The model's own activation (thick) beside the other two, with the sentence that says so."""
    own = fa.curve_name(cfg.activation)
    st.markdown(f"The function {name}'s {whose} apply ({own}"
                + (", to the gate" if facts.gated else "") + ", the thick line) beside the "
                "other two: ReLU cuts every negative input to 0; GELU and SiLU let small "
                "negative values through.")
    vega(ivf.activation_curves_chart, fa.activation_curves(), own=own)


def experts_steps(n_layers: int) -> None:
    """Step 2 on a mixture of experts: each token's first expert, neuron by neuron, then the
    token's experts mixed by their router weights, against the model's own output."""
    only = layer_picker(n_layers, "ffn_steps_layer")  # a deep model sends one layer at a time
    ex = fa.expert_steps(trace, bundle.weights(), layers=None if only is None else (only,))
    steps, k, f = ex.steps, ex.top_k, fa.GATE_FUNCTIONS.get(cfg.activation)
    m_res = facts.residual_multiplier
    st.markdown(
        "The experts record no hooks of their own, so every step here is computed from the "
        "block's input x (" + ("the second norm's output" if facts.pre_ln else
                               "the stream after attention's add & norm")
        + ") and the experts' weights. The table follows the "
        "chosen token's **first-choice expert** (the one its router weighed most; the line under "
        "the table names it) through its strongest neurons"
        + (f": the **gate** x·W_gate goes through {f}, the **up** value x·W_in is computed beside "
           f"it, and the two are multiplied. A neuron with a negative gate passes almost nothing, "
           "however large its up value." if facts.gated else
           f": x·W₁ + b₁, then {act_name}.")
        + f" Then each of the token's {k} expert{'s' if k > 1 else ''} takes its {cfg.d_ff} "
        f"products back down to {cfg.d_model} numbers, and the router's weights mix them"
        + (f"; the block multiplies the mix by its residual_multiplier {m_res:g} before adding it"
           if m_res != 1.0 else "") + ".")
    instant(ivf.neuron_steps_chart, steps.ids, steps.values, steps.share, steps.output,
            steps.model_output, trace.tokens, columns=steps.columns, d_ff=cfg.d_ff,
            layer=layer0 if only is None else only, pos=linked_value("pos"),
            experts=ex.experts, expert_weights=ex.weights, top_k=k, residual_multiplier=m_res,
            only_layer=only, layer_data=only is not None)
    length_marker(tokens_n, pos=0)  # fits the token slider to this sentence
    st.success(f"The way down by hand, Σ w_i · E_i(x) over each token's {k} chosen expert"
               + ("s" if k > 1 else "") + (f" times {m_res:g}" if m_res != 1.0 else "")
               + f", against the model's hook_mlp_out: largest difference {steps.output_error:.1e}, "
               "over every " + ("layer and token." if only is None else f"token of layer {only}.")
               + " The products in the table are among the terms it adds up"
               + (", unless the expert had no room left for the token (its weight is then 0)."
                  if facts.moe_capacity is not None else "."))
    activation_curves("expert neurons")


with step("1 · Which neurons fire?"):
    if not fa.has_dense_ffn(trace):
        st.info(f"**{name}** has no single feed-forward network that every token passes through: "
                f"each block holds {cfg.n_experts} expert networks and a router that sends every token "
                f"to {cfg.moe_top_k} of them, so no one layer of neurons sees every token. Step 2 "
                "follows each token through the expert its router chose first; the routing itself "
                "is the subject of the next lesson.")
        if by_url("mixture-of-experts") in available():
            st.page_link("lessons/11_moe.py", label="Lesson 11 · Mixture of experts", icon="🔀")
        offer("gpt-tiny", key="ffn_switch", label="Show the neurons of gpt-tiny instead")
    else:
        most = min(32, cfg.d_ff)
        views = fa.neuron_views(trace, most)
        after = f"{fa.GATE_FUNCTIONS[cfg.activation]}(gate) × up" if facts.gated else act_name
        on = ("ReLU sets every negative value to exactly 0, so a token usually uses only part "
              "of the layer." if cfg.activation == "relu" else
              f"In a gated block {fa.GATE_FUNCTIONS.get(cfg.activation, '')}(gate) is seldom "
              "exactly 0 and the up value has either sign, so a neuron's product is negative "
              "about as often as positive; \"on\" here means strictly positive, which is not "
              "the same as an open gate." if facts.gated else
              "GELU leaves small negative values, so here \"on\" means strictly positive.")
        st.markdown(
            f"For each layer, the neurons with the largest value anywhere in your text "
            f"(mlp.hook_post, after the {after}). Move **Layer** and **Neurons shown** under "
            "the chart, or use the arrow keys on them: the chart changes in your browser at once. "
            "Below the map: how many of the neurons are switched on (> 0) for each token? " + on
        )
        instant(ivf.neuron_chart, views.ids, views.acts, views.active, trace.tokens, d_ff=cfg.d_ff,
                activation=after, layer=layer0,
                neurons=max(4, view_value("neurons", most, min(12, most))))
        st.markdown("Each token's three strongest neurons, in every layer:")
        table([{"layer": layer, **row} for layer in range(cfg.n_layers)
               for row in fa.top_table(trace.tokens, fa.neuron_acts(trace, layer), 3)],
              hide_index=True)

with step("2 · One token's neurons, step by step"):
    if moe:
        experts_steps(cfg.n_layers)
    else:
        only = layer_picker(cfg.n_layers, "ffn_steps_layer")  # a deep model sends one layer at a time
        steps = fa.neuron_steps(trace, bundle.weights(), layers=None if only is None else (only,))
        if facts.gated:
            st.markdown(
                f"Each neuron of a {facts.activation_name} block takes three steps: its **gate** "
                f"x·W_gate goes through {gate_fn}, its **up** value x·W_in is computed beside "
                f"it, and the two are multiplied. The table follows the chosen token's "
                f"strongest neurons (largest |product|) of the chosen layer through those steps "
                f"(from the model's mlp.hook_pre and mlp.hook_pre_linear, with {gate_fn} "
                f"applied here); then W_out takes all {cfg.d_ff} products back down to "
                f"{cfg.d_model} numbers. A neuron with a negative gate passes almost nothing, "
                "however large its up value.")
        else:
            st.markdown(
                f"Each neuron takes two steps: x·W₁ + b₁, then {act_name}. The table follows the "
                "chosen token's strongest neurons of the chosen layer (from the model's "
                f"mlp.hook_pre, with {act_name} applied here); then W₂ takes all {cfg.d_ff} of "
                f"them back down to {cfg.d_model} numbers.")
        instant(ivf.neuron_steps_chart, steps.ids, steps.values, steps.share, steps.output,
                steps.model_output, trace.tokens, columns=steps.columns, d_ff=cfg.d_ff,
                layer=layer0 if only is None else only, pos=linked_value("pos"),
                only_layer=only, layer_data=only is not None)
        length_marker(tokens_n, pos=0)  # fits the token slider to this sentence
        st.success(f"The last step by hand against the model's mlp.hook_post: largest difference "
                   f"{steps.hidden_error:.1e}; the way down (h · W_out"
                   + (" + b" if cfg.bias else "") + f") against its hook_mlp_out: "
                   f"{steps.output_error:.1e}, over every "
                   + ("layer" if only is None else f"token of layer {only}")
                   + (" and token." if only is None else "."))
        activation_curves("neurons")

with step("3 · Without it, attention only re-averages"):
    st.markdown(
        "Each head's output for a token is a **weighted average** of value vectors: the weights "
        "come out of a softmax, so they are never negative and they add up to 1. A weighted "
        "average like that cannot leave the range of the vectors it averages, coordinate by "
        "coordinate. Stack attention layers with nothing in between and you only ever get "
        "averages of (linear maps of) averages. The feed-forward network's nonlinearity is what "
        "lets a block compute something new from the mix."
    )
    st.latex(r"z_i = \sum_j \alpha_{ij}\, v_j, \qquad \alpha_{ij} \ge 0, \qquad \sum_j \alpha_{ij} = 1")

with step("4 · Every mix stays inside its values"):
    mixes = fa.mixing_views(trace)
    opening = view_opening(cfg, "ffn_mix_layer")  # a deep model sends one layer at a time
    instant(ivf.mixing_chart, mixes.weights, mixes.values, mixes.z, mixes.inside, trace.tokens,
            **opening.view,
            query=linked_value("query"))  # None: the sentence's last token, from the data
    length_marker(tokens_n, tokens_n - 1)  # fits the query slider to this sentence
    st.caption(f"Rebuilt z vs the model's own attn.hook_z, over every layer, head and token: "
               f"largest difference {mixes.model_gap:.1e}.")
    check = mixes.summary()
    st.success(f"Across all {check['triples']} (layer, head, token) triples: the smallest weight is "
               f"{check['min weight']:.4f}, every row sums to 1 (within "
               f"{check['largest |sum − 1|']:.1e}), and {check['inside']} of {check['triples']} "
               "outputs lie inside their values' range.")

    show_code(fa.top_neurons, fa.fraction_active, fa.neuron_steps, fa.step_values, fa.mixing,
              fa.mixing_views)
