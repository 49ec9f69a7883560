"""Lesson 11: sparse mixture of experts: the open model's routing rule, where each token goes,
the load per expert and capacity, the routing rules side by side on the same logits, and what
experts learn."""
import streamlit as st

from tfviz.analysis import moe as ma
from tfviz.analysis import moe_rules as mr
from tfviz.config import RunOptions
from tfviz.lab.opened import reads_letters
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import class_tables
from tfviz.ui.model_offer import offer
from tfviz.ui.present import step
from tfviz.ui.views import instant, length_marker, linked_value, view_opening
from tfviz.ui.code import show_code
from tfviz.ui.tables import table
from tfviz.viz import moe as ivm


name, text, bundle, cfg = lesson_context()
facts = bundle.facts

st.title("Mixture of experts")
st.markdown(
    "A mixture-of-experts (MoE) layer swaps the single feed-forward network of a block for "
    "several of them, the **experts**, plus a small **router**. For every token on its own "
    "the router scores the experts, and only the best k of them run. The model gets the "
    "parameters of many networks while each token pays for just k."
)
st.latex(r"h(x) = W_r\,x \qquad y = \sum_{i \in \mathcal{T}} w_i\,E_i(x)")
st.markdown("h(x) holds one score (logit) per expert, 𝒯 is the set of the k experts the router "
            "chooses and w their weights. Models differ in how they get 𝒯 and w from h: "
            "**softmax → top-k** keeps the softmax probabilities of the k best (with **k = 1** "
            "this is a **Switch** layer), **softmax → top-k → renormalise** divides them by their "
            "sum (Mixtral), **top-k → softmax** takes a softmax over the k best logits alone "
            "(Granite).")

if not cfg.is_moe:
    st.info(f"**{name}** is a dense model: every block has one feed-forward network "
            f"({facts.activation_name}) and no router, so there is no routing to show here. "
            "The sidebar's **moe-tiny** is a small decoder with experts in every block.")
    offer("moe-tiny", key="moe_switch", label="Switch to moe-tiny")
    show_code(ma.routing, mr.route, ma.capacity_of, ma.class_expert_table, ma.concentration)
else:
    E, L, built = facts.n_experts, cfg.n_layers, facts.moe_top_k
    rule = mr.model_rule(facts.moe_router, facts.moe_renormalized)
    k = st.slider("Experts per token (top-k)", 1, E, built, key="moe_topk",
                  help=f"{name} was built with k = {built}. Changing it here only "
                       "changes this one forward pass; the model itself stays as it is.")
    trace = get_trace(name, text, RunOptions(moe_top_k=k))
    n = len(trace.tokens)
    routes = [ma.routing(trace, layer) for layer in range(L)]
    compared = mr.compare([r.logits for r in routes], k)
    opening = view_opening(cfg, "moe_layer")  # a deep model sends one layer at a time
    only, layer0 = opening.only, opening.layer  # a shared link's view

    with step("1 · The router's rule"):
        st.markdown(f"**{name}** routes by **{mr.RULE[rule].label}**, {mr.RULE[rule].used_by}: "
                    f"{facts.routing}.")
        st.latex(mr.RULE[rule].formula)
        sums = {mr.PLAIN: "its weights are **not renormalised**: they add up to the chosen "
                          "experts' share of p, less than 1 unless every expert is chosen",
                mr.RENORMALISED: "its weights are **renormalised**: divided by their sum, so "
                                 "they add up to 1",
                mr.TOPK_SOFTMAX: "its weights add up to 1 by construction, a softmax over the "
                                 "chosen k alone: there is nothing to renormalise"}[rule]
        capacity = ("it sets **no capacity**: every token is served by all of its k experts "
                    "and none is ever dropped, as in Mixtral and Granite"
                    if facts.moe_capacity is None else
                    f"it has a **capacity factor of {facts.moe_capacity:g}**: an expert that is "
                    "already full drops a token's slot (step 3)")
        st.markdown(f"- it was built to send each token to {built} of its {E} experts, in "
                    f"each of its {L} blocks;\n- {sums};\n- {capacity}.")
        if k != built:
            st.caption(f"This page runs it with k = {k} (the slider above), by the same rule.")
        if rule == mr.TOPK_SOFTMAX:
            st.caption(f"Its router never computes p = softmax(h) over all {E} experts; the "
                       "charts below show that p beside the weights, to compare with the "
                       "other rules.")

    with step("2 · Where each token goes"):
        tick = {mr.PLAIN: "each tick sits on top of its bar, since w = p",
                mr.RENORMALISED: "each tick stands above its bar, since w is p divided by the "
                                 "chosen experts' share of p",
                mr.TOPK_SOFTMAX: "each tick stands above its bar, since the softmax over the "
                                 "chosen logits alone equals p divided by the chosen experts' "
                                 "share of p"}[rule]
        crosses = ("" if facts.moe_capacity is None else ", a cross a choice that was turned "
                   "away because the expert was already full")
        st.markdown(f"Each row is a token and holds its {E} gate probabilities p = softmax(h) "
                    f"(they sum to 1). A dot marks the {k} expert{'s' if k > 1 else ''} the "
                    f"token was sent to{crosses}. Under the map, the token you **follow** has its "
                    "gates as bars, with a black tick at the weight w the rule gave each "
                    f"chosen expert: {tick}" + (" (with k = all experts, the share is 1)."
                                                if k == E and rule != mr.PLAIN else ".")
                    + " Move **Layer** and **Follow one token** under the chart: it changes "
                      "in your browser at once.")
        instant(ivm.routing_chart, routes, trace.tokens, layer=layer0,
                pos=linked_value("pos"),  # None: the sentence's first token, from the data
                drops=facts.moe_capacity is not None, only_layer=only)
        length_marker(n, pos=0)  # fits the token slider to this sentence

    with step("3 · Load per expert, and capacity"):
        cap = ma.capacity_of(cfg.moe_capacity_factor, n, k, E)
        if cap is None:
            st.markdown(f"**{name}** sets no capacity, so no token is ever dropped: an expert "
                        "serves every token that chose it, however many did.")
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
        instant(ivm.load_chart, routes, cap, layer=layer0, only_layer=only)
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
        elif cap is not None:
            st.success(f"No token was dropped in any of the {L} layers: every expert had room for "
                       "everyone who chose it.")
        served, even = ma.layer_load(n, k, E)
        counted = (f"Each token counts once, for its one expert, so a layer's row adds up to {n}"
                   if k == 1 else f"Each token counts once for each of its {k} experts, so a "
                   f"layer's row adds up to {n} · {k} = {served}")
        st.markdown(f"Every layer at once: each cell counts the tokens of your text an expert "
                    f"served. {counted}" + (" less its drops" if cap is not None else "")
                    + "; the colour compares a cell with an even share of what its layer served, "
                      f"1/{E} of the row" + ("" if cap is not None else f" ({even:.3g} tokens)")
                    + ".")
        instant(ivm.load_map_chart, routes)
        st.caption("Training adds a small load-balancing loss that rewards spreading tokens evenly, "
                   "so that no expert is swamped while others sit idle.")

    with step("4 · Two rules, the same logits"):
        st.markdown(
            f"Mixtral and Granite get their weights in opposite orders. Mixtral takes a softmax "
            f"over all the experts, keeps the k most probable and divides them by their sum; "
            f"Granite keeps the k largest logits and takes a softmax over those alone. Here "
            f"both, and softmax → top-k without renormalising, run on the same router logits: "
            f"{name}'s own, for your text, with k = {k}. softmax keeps the order of h, so all "
            "three choose the same experts, and the softmax's denominator cancels:")
        st.latex(r"\frac{p_i}{\sum_{j \in \mathcal{T}} p_j} = "
                 r"\frac{e^{h_i} / Z}{\sum_{j \in \mathcal{T}} e^{h_j} / Z} = "
                 r"\frac{e^{h_i}}{\sum_{j \in \mathcal{T}} e^{h_j}}, \qquad "
                 r"Z = \sum_{\text{all } j} e^{h_j}")
        instant(ivm.rules_chart, compared, trace.tokens, own=rule, layer=layer0,
                pos=linked_value("pos"), only_layer=only)
        length_marker(n, pos=0)
        same, pairs = compared.same_count
        lines = [f"**The same experts**: top-k of p and top-k of h chose the same "
                 + ("expert" if k == 1 else f"{k} experts") + f" for {same} of the {pairs} "
                 "(token, layer) pairs"
                 + ("." if same == pairs else "; the others hold two logits too close for "
                    "float32's softmax to tell apart."),
                 f"**The same weights**: the largest difference between softmax → top-k → "
                 f"renormalise and top-k → softmax, over every token, layer and expert, is "
                 f"**{compared.rule_gap:.1e}**"
                 + (": float32 rounding, 0 in exact arithmetic." if compared.rule_gap else
                    (": with one expert, both weights are exactly 1." if k == 1 else "."))]
        low, high, mean = compared.mass_range
        if k < E:
            lines.append(f"**Not renormalised, they differ**: softmax → top-k's weights add up "
                         f"to Σ p over the chosen experts, here between {low:.3f} and "
                         f"{high:.3f} (mean {mean:.3f}), so each is that fraction "
                         "of the renormalised weight, and the experts' output reaches the "
                         "residual stream shrunk by it. The largest difference from the "
                         f"renormalised weights is **{compared.plain_gap:.3f}**.")
        else:
            lines.append(f"With k = {E} every expert is chosen: Σ p = 1, and all three rules "
                         f"agree (largest difference {compared.plain_gap:.1e}).")
        st.success("\n\n".join(lines))
        if k == 1:
            st.caption("With k = 1, renormalising makes every weight 1: the router's logits then "
                       "choose the expert but no longer scale its output (nor get a gradient "
                       "through it). The Switch Transformer keeps w = p for that reason.")
        own = ma.own_rule_gap(routes, compared)
        st.caption(f"{name} uses {mr.RULE[rule].label}: recomputed here from its router logits, "
                   f"those weights match the model's own (mlp.hook_expert_weights) to {own:.1e} "
                   "over every choice it served.")
        show_code(mr.route, mr.compare)

    with step("5 · What do the experts specialise in?"):
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
            tables = class_tables(name, k)
            instant(ivm.class_chart, tables, layer=layer0, only_layer=only)
            shown = range(L) if only is None else (only,)  # a deep model: the picked layer
            st.markdown("**Concentration**: the share of a class's tokens that went to its favourite "
                        f"expert (1.0 = always the same expert, 1/{E} = spread evenly), in "
                        + ("every layer." if only is None else f"layer {only}."))
            table([{"layer": layer, **row} for layer in shown
                   for row in ma.class_summary(tables[layer][0], tables[layer][2])], hide_index=True,
                  column_config={"concentration": st.column_config.NumberColumn(format="%.3f")})
            st.caption("A high concentration only means specialisation when different classes favour "
                       "different experts; if one expert takes nearly everything, every class looks "
                       "concentrated on it.")
            recorded = [ma.table_from_manifest(bundle.manifest, layer) for layer in range(L)]
            if all(table is not None for table in recorded):
                with st.expander("The same table, recorded when the model was trained"):
                    instant(ivm.class_chart, recorded, layer=layer0, only_layer=only,
                            title="Token class × expert (training)")
            with st.expander("The sample sentences"):
                st.write("\n".join(f"- {s}" for s in ma.SAMPLE_SENTENCES))
            show_code(ma.routing, ma.capacity_of, ma.class_expert_table, ma.concentration)

