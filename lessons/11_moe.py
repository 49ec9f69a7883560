"""Lesson 11: sparse mixture of experts: routing, load, capacity, and what experts learn."""
import streamlit as st

from tfviz.analysis import moe as ma
from tfviz.config import RunOptions
from tfviz.lab.opened import reads_letters
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import class_table
from tfviz.ui.model_offer import offer
from tfviz.ui.present import step
from tfviz.ui.views import instant, length_marker, linked_value, view_value
from tfviz.ui.widgets import show_code, table
from tfviz.viz import instant_moe as ivm


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
    st.info(f"**{name}** is a dense model: every block has one feed-forward network "
            f"({bundle.facts.activation_name}) and no router, so there is no routing to show here. "
            "The sidebar's **moe-tiny** is a small decoder with experts in every block.")
    offer("moe-tiny", key="moe_switch", label="Switch to moe-tiny")
    show_code(ma.routing, ma.capacity_of, ma.class_expert_table, ma.concentration)
else:
    E, L = cfg.n_experts, cfg.n_layers
    k = st.slider("Experts per token (top-k)", 1, E, cfg.moe_top_k, key="moe_topk",
                  help=f"{name} was built with k = {cfg.moe_top_k}. Changing it here only "
                       "changes this one forward pass; the model itself stays as it is.")
    trace = get_trace(name, text, RunOptions(moe_top_k=k))
    n = len(trace.tokens)
    routes = [ma.routing(trace, layer) for layer in range(L)]
    layer0 = view_value("layer", L - 1)  # where the charts open: a shared link's view

    with step("1 · Where each token goes"):
        st.markdown(f"Each row is a token and holds its {E} gate probabilities (they sum to 1). "
                    f"A dot marks the {k} expert{'s' if k > 1 else ''} the token was sent to, a "
                    "cross a choice that was turned away because the expert was already full. "
                    "Move **Layer** under the chart and pick the token to **follow**: the chart "
                    "changes in your browser at once.")
        instant(ivm.routing_chart, routes, trace.tokens, layer=layer0,
                pos=linked_value("pos"))  # None: the sentence's first token, from the data
        length_marker(n, pos=0)  # fits the token slider to this sentence

    with step("2 · Load and capacity"):
        cap = ma.capacity_of(cfg.moe_capacity_factor, n, k, E)
        if cap is None:
            st.markdown("This model sets no capacity, so no token is ever dropped.")
        else:
            st.markdown("To keep the work of every expert bounded, an expert serves at most "
                        "*capacity* tokens. We count it as the sentence goes: once it has seen the "
                        "first t tokens, an expert may have served at most ⌈factor · t · k / E⌉ "
                        "of them, and a choice that does not fit is **dropped** (the token keeps "
                        "only its residual). Switch Transformer counts over a whole batch instead; "
                        "in a decoder that would let the number of *later* tokens decide whether "
                        "an earlier one is served, a real leak from the future (lesson 8), and a "
                        "KV-cached step would drop differently from a re-read (lesson 16). For "
                        f"your {n} tokens the budget ends at:")
            st.latex(rf"\text{{capacity}} = \left\lceil \text{{factor}} \cdot \frac{{\text{{tokens}} "
                     rf"\cdot k}}{{E}} \right\rceil = \left\lceil {cfg.moe_capacity_factor:g} \cdot "
                     rf"\frac{{{n} \cdot {k}}}{{{E}}} \right\rceil = {cap}")
        instant(ivm.load_chart, routes, cap, layer=layer0)
        drops = [{"layer": layer, **row} for layer, r in enumerate(routes)
                 for row in ma.dropped_tokens(r, trace.tokens, cfg.moe_capacity_factor)]
        if drops:
            st.markdown(f"**{len(drops)} choice(s) dropped**, over all {L} layers:")
            table(drops, hide_index=True)
            st.caption("Each was dropped because its expert had already served as many of the "
                       "tokens before it as the budget by then allows. Early in a sentence that "
                       "budget is small, so an expert can turn a token away while its bar stays "
                       "far below the dashed line, which is the budget at the end of the "
                       "sentence.")
        else:
            st.success(f"No token was dropped in any of the {L} layers: every expert had room for "
                       "everyone who chose it.")
        st.caption("Training adds a small load-balancing loss that rewards spreading tokens evenly, "
                   "so that no expert is swamped while others sit idle.")

    with step("3 · What do the experts specialise in?"):
        if reads_letters(bundle.tokenizer):  # a lab run of a letter task: no words to class
            st.info(f"**{name}** reads only its task's symbols, so the word classes of this "
                    "section mean nothing to it. The training lab's expert-load chart shows how "
                    "its tokens spread over the experts as it learned; sections 1 and 2 show "
                    "where each token of your text goes.")
        else:
            st.markdown(
                "In large Switch-style models, experts were seen to pick up token types: one takes "
                "punctuation, another verbs, another little function words, another descriptive "
                f"words. Here is the same count for {name}: the sample sentences below are routed, "
                "and every token is labelled with the class of the word it belongs to."
                + ("" if bundle.trained else " This model is not trained yet, so expect no pattern.")
            )
            tables = [class_table(name, layer, k) for layer in range(L)]
            instant(ivm.class_chart, tables, layer=layer0)
            st.markdown("**Concentration**: the share of a class's tokens that went to its favourite "
                        f"expert (1.0 = always the same expert, 1/{E} = spread evenly), in every layer.")
            table([{"layer": layer, **row} for layer, (classes, _, counts) in enumerate(tables)
                   for row in ma.class_summary(classes, counts)], hide_index=True,
                  column_config={"concentration": st.column_config.NumberColumn(format="%.3f")})
            st.caption("A high concentration only means specialisation when different classes favour "
                       "different experts; if one expert takes nearly everything, every class looks "
                       "concentrated on it.")
            recorded = [ma.table_from_manifest(bundle.manifest, layer) for layer in range(L)]
            if all(table is not None for table in recorded):
                with st.expander("The same table, recorded when the model was trained"):
                    instant(ivm.class_chart, recorded, layer=layer0,
                            title="Token class × expert (training)")
            with st.expander("The sample sentences"):
                st.write("\n".join(f"- {s}" for s in ma.SAMPLE_SENTENCES))
            show_code(ma.routing, ma.capacity_of, ma.class_expert_table, ma.concentration)

