"""Lesson 11: sparse mixture of experts: routing, load, capacity, and what experts learn."""
import streamlit as st

from tfviz.analysis import moe as ma
from tfviz.config import RunOptions
from tfviz.ui.cache import get_trace, model_names
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import class_table
from tfviz.ui.widgets import chart, layer_head_pickers, show_code, token_select, vega
from tfviz.viz import moe as mv
from tfviz.viz.style import token_labels


def _switch_model(to: str) -> None:
    st.session_state["model"] = to


name, text, bundle, cfg = lesson_context()

st.title("Mixture of experts")
st.markdown(
    "A mixture-of-experts (MoE) layer swaps the single feed-forward network of a block for "
    "several of them, the **experts**, plus a small **router**. For every token on its own "
    "the router scores the experts, and only the best k of them run. The model gets the "
    "parameters of many networks while each token pays for just k."
)
st.latex(r"h(x) = W_r\,x \qquad p_i(x) = \frac{e^{h(x)_i}}{\sum_j e^{h(x)_j}} \qquad "
         r"y = \sum_{i \in \mathcal{T}} p_i(x)\,E_i(x)")
st.markdown("𝒯 is the set of the k experts with the largest gates. With **k = 1** this is a "
            "**Switch** layer: one expert per token, scaled by its gate.")

if not cfg.is_moe:
    st.info(f"**{name}** is a dense model: every block has one ordinary feed-forward network "
            "and no router, so there is no routing to show here. The sidebar's **moe-tiny** "
            "is the same kind of small decoder with experts in every block.")
    if "moe-tiny" in model_names():
        st.button("Switch to moe-tiny", key="moe_switch", on_click=_switch_model,
                  args=("moe-tiny",), type="primary")
else:
    E = cfg.n_experts
    layer, _ = layer_head_pickers(cfg.n_layers, head=False)
    k = st.slider("Experts per token (top-k)", 1, E, cfg.moe_top_k, key="moe_topk",
                  help=f"{name} was built with k = {cfg.moe_top_k}. Changing it here only "
                       "changes this one forward pass; the model itself stays as it is.")
    trace = get_trace(name, text, RunOptions(moe_top_k=k))
    labels = token_labels(trace.tokens)  # plain: widgets show text as typed
    r = ma.routing(trace, layer)

    st.header("Where each token goes")
    st.markdown(f"Each row is a token and holds its {E} gate probabilities (they sum to 1). "
                f"A dot marks the {k} expert{'s' if k > 1 else ''} the token was sent to, a "
                "cross a choice that was turned away because the expert was already full.")
    chart(mv.routing_heatmap, r.probs, r.chosen_mask(), r.dropped_mask(), trace.tokens,
          title=f"Gate probabilities p, layer {layer}, top-{k}")

    pos = token_select("Follow one token", trace.tokens, "moe_token")
    chosen = [int(e) for e in r.indices[pos]]
    st.latex(r"h(x) = [" + ",\ ".join(f"{v:.2f}" for v in r.logits[pos]) + r"] \quad\Rightarrow\quad "
             r"p = [" + ",\ ".join(f"{v:.3f}" for v in r.probs[pos]) + "]")
    st.latex(r"\mathcal{T} = \{" + ", ".join(map(str, chosen)) + r"\} \quad\Rightarrow\quad y = "
             + " + ".join(f"{w:.3f}\\,E_{{{e}}}(x)" for w, e in zip(r.weights[pos], chosen)))
    if r.dropped[pos].any():
        st.warning("At least one of this token's experts was full: that part of y is zero, and "
                   "the token only keeps what the residual connection carries past the layer.")

    st.header("Load and capacity")
    cap = ma.capacity_of(cfg.moe_capacity_factor, len(labels), k, E)
    if cap is None:
        st.markdown("This model sets no capacity, so no token is ever dropped.")
    else:
        st.markdown("To keep the work of every expert bounded, each expert takes at most "
                    "*capacity* tokens per batch. First choices are served before second "
                    "choices, earlier tokens first; whatever does not fit is **dropped**.")
        st.latex(rf"\text{{capacity}} = \left\lceil \text{{factor}} \cdot \frac{{\text{{tokens}} "
                 rf"\cdot k}}{{E}} \right\rceil = \left\lceil {cfg.moe_capacity_factor:g} \cdot "
                 rf"\frac{{{len(labels)} \cdot {k}}}{{{E}}} \right\rceil = {cap}")
    vega(mv.load_chart, r.counts, r.dropped_per_expert(), cap,
         title=f"Tokens per expert, layer {layer} (dashed line: capacity)")
    drops = ma.dropped_tokens(r, trace.tokens)
    if drops:
        st.markdown(f"**{len(drops)} choice(s) dropped:**")
        st.dataframe(drops, hide_index=True)
    else:
        st.success("No token was dropped: every expert had room for everyone who chose it.")
    st.caption("Training adds a small load-balancing loss that rewards spreading tokens evenly, "
               "so that no expert is swamped while others sit idle.")

    st.header("What do the experts specialise in?")
    st.markdown(
        "In large Switch-style models, experts were seen to pick up token types: one takes "
        "punctuation, another verbs, another little function words, another descriptive "
        "words. Here is the same count for our model: the sample sentences below are routed, "
        "and every token is labelled with the class of the word it belongs to."
        + ("" if bundle.trained else " This model is not trained yet, so expect no pattern.")
    )
    classes, experts, counts = class_table(name, layer, k)
    chart(mv.class_expert_heatmap, classes, experts, ma.row_shares(counts), counts,
          title=f"Token class × first-choice expert, layer {layer}")
    st.markdown("**Concentration**: the share of a class's tokens that went to its favourite "
                f"expert (1.0 = always the same expert, 1/{E} = spread evenly).")
    st.dataframe(ma.class_summary(classes, counts), hide_index=True)
    st.caption("A high concentration only means specialisation when different classes favour "
               "different experts; if one expert takes nearly everything, every class looks "
               "concentrated on it.")
    recorded = ma.table_from_manifest(bundle.manifest, layer)
    if recorded is not None:
        with st.expander("The same table, recorded when the model was trained"):
            chart(mv.class_expert_heatmap, recorded[0], recorded[1], ma.row_shares(recorded[2]),
                  recorded[2], title="Token class × expert (training)")
    with st.expander("The sample sentences"):
        st.write("\n".join(f"- {s}" for s in ma.SAMPLE_SENTENCES))

show_code(ma.routing, ma.capacity_of, ma.class_expert_table, ma.concentration)
