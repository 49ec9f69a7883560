"""Lesson 7: many heads side by side, how they are joined, what each one does, and "it"."""
import streamlit as st

from tfviz.analysis import coref
from tfviz.analysis import gqa
from tfviz.analysis import heads as hd
from tfviz.experiments import pruning
from tfviz.lab.opened import reads_letters
from tfviz.ui.cache import coref_gap_notice, get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import heads_pruned, heldout_count, training_counts
from tfviz.ui.state import EXAMPLES
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, length_marker, linked_value, view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz import heads as attv
from tfviz.viz.kit.style import token_labels

name, text, bundle, cfg = lesson_context()
facts = bundle.facts
trace = get_trace(name, text)
labels = token_labels(trace.tokens)  # charts draw text as typed
n, h, dh, d = len(labels), cfg.n_heads, cfg.d_head, cfg.d_model
# grouped-query attention: the K/V head each query head reads (its own under plain multi-head)
kv_of = [gqa.kv_head_of(head, facts.n_heads, facts.kv_heads) for head in range(facts.n_heads)]

st.title("Multi-head attention")
st.markdown(
    "One attention head produces one weighting of the tokens, so it can follow one kind of "
    "relation at a time. A layer therefore runs several heads side by side, each with its own "
    + ("small W^Q, W^K, W^V, " if not facts.grouped else
       f"small W^Q (in {name} the {facts.n_heads} query heads share {facts.kv_heads} key/value "
       f"head{'s' if facts.kv_heads > 1 else ''}, step 1), ")
    + "and lets each look for something different: the previous word, "
    "the subject of the sentence, a rare word. "
    + ("It costs no more than one big head, because the heads simply share out the d dimensions "
       "between them." if h * dh == d else
       f"In {name} the {h} heads of {dh} dimensions make {h * dh} columns, not d = {d}: its W^Q "
       "maps each token's d numbers to h · d_head of them, and W^O maps them back.")
)

with step("1 · Splitting into heads is a reshape"):
    if h * dh == d:
        st.latex(rf"Q \in \mathbb{{R}}^{{n\times d}} \;\to\; \mathbb{{R}}^{{n\times h\times d/h}} \;\to\; "
                 rf"\mathbb{{R}}^{{h\times n\times d/h}}\qquad n={n},\ d={d},\ h={h},\ d/h={dh}")
    else:  # a head size of its own (Qwen3, Gemma): Q has h · d_head columns, not d
        st.latex(rf"Q \in \mathbb{{R}}^{{n\times h d_{{head}}}} \;\to\; \mathbb{{R}}^{{n\times h\times d_{{head}}}}"
                 rf" \;\to\; \mathbb{{R}}^{{h\times n\times d_{{head}}}}\qquad n={n},\ h={h},\ "
                 rf"d_{{head}}={dh},\ d={d}")
    q_full = hd.query_matrix(trace, 0)  # every layer has the same shapes
    per_token, per_head = hd.split_heads(q_full, h)
    views = ["Q = X W^Q", "cut each row into h pieces", "make heads the first axis"]
    arrays = [q_full, per_token, per_head]
    if facts.grouped:  # fewer K/V heads: K (and V) are cut into fewer pieces than Q
        k_full = hd.key_matrix(trace, 0)
        views += ["K = X W^K (V the same)", "cut each row into K/V-head pieces", "make K/V heads the first axis"]
        arrays += [k_full, *hd.split_heads(k_full, facts.kv_heads)]
    st.table({"view": views, "shape": [" × ".join(map(str, a.shape)) for a in arrays]})
    st.caption(f"After the transpose, head i owns the slice Q[i] of shape "
               f"{per_head.shape[1]}×{per_head.shape[2]}: dimensions i·{dh} … (i+1)·{dh} − 1 of every "
               f"token's query (head 1: dimensions {dh}…{2 * dh - 1}). The head axis now behaves like "
               "a batch axis.")
    if facts.grouped:
        st.markdown(
            f"**{name} shares keys and values between query heads** (grouped-query attention). "
            f"{gqa.sharing_sentence(facts.n_heads, facts.kv_heads)} Each query head keeps its own "
            "W^Q and draws its own map; the heads of a group compare their own queries with the "
            "same keys and blend the same values. The model copies each K/V head to its group "
            "(repeat_interleave) and then runs ordinary attention. Lesson 18 measures what the "
            "sharing saves.")
    in_the_notes("multi-head")
    show_code(hd.query_matrix, hd.split_heads, *((hd.key_matrix, gqa.kv_head_of) if facts.grouped else ()))


with step("2 · Every head of the layer at once"):
    st.caption("Move the layer and head sliders under the chart (or use the arrow keys on them): "
               "the maps change in your browser at once.")
    L, H = cfg.n_layers, cfg.n_heads
    layer0, head0 = view_value("layer", L - 1), view_value("head", H - 1)
    patterns = trace.stack("pattern")  # (layers, heads, n, n)
    stats = [hd.head_stats(patterns[layer]) for layer in range(L)]
    instant(attv.attention_maps, patterns, trace.tokens, names=[[s.label for s in row] for row in stats],
            layer=layer0, head=head0, groups=kv_of if facts.grouped else None)
    if facts.grouped:
        st.caption((f"The maps come in {facts.kv_heads} boxes, one per key/value head, each in its "
                    "own colour: the query heads in a box" if facts.kv_heads > 1 else
                    "The maps come in one box, in one colour, as every query head shares the one "
                    "key/value head: they all")
                   + " read the same keys, yet their own queries can still make them look at "
                   "different tokens.")

    st.subheader("What kind of head is it?")
    st.markdown(
        "Researchers who looked at trained models found recurring habits: heads that look at the "
        "neighbouring token (positional), heads that follow grammar (syntactic), and heads that "
        "point to rare words. A few simple averages over the rows of each map give a first guess, "
        "here for every head of every layer:"
    )
    plain = token_labels(trace.tokens)  # tables and altair show text as typed
    flat = [(layer, s) for layer, row in enumerate(stats) for s in row]
    roles = {"layer": [layer for layer, _ in flat], "head": [s.head for _, s in flat],
             **({"K/V head": [kv_of[s.head] for _, s in flat]} if facts.grouped else {}),
             "→ previous token": [s.previous for _, s in flat], "→ same token": [s.same for _, s in flat],
             "→ first token": [s.first for _, s in flat],
             "spread (0 focused … 1 uniform)": [s.entropy for _, s in flat],
             "favourite key": [plain[s.favourite] for _, s in flat],
             "→ favourite": [s.favourite_share for _, s in flat], "label": [s.label for _, s in flat]}
    counts = training_counts(name)  # None: no training corpus we can rebuild (a folder, a lab run)
    rare_note = ""
    if counts is not None:
        rarest = pruning.rarest_keys(trace.ids, counts, cfg.causal)
        shares = [pruning.rare_share(patterns[layer], rarest, cfg.causal) for layer in range(L)]
        roles["→ rarest token"] = [float(shares[layer][0][s.head]) for layer, s in flat]
        even = shares[0][1]  # the same for every head: it depends on the text and the mask only
        least = plain[int(rarest[-1])]
        rare_note = (f" **→ rarest token** is a head's mean weight on the key its query may see "
                     f"that {name}'s training text used least (Voita et al. 2019 found heads that "
                     f"point at it); for the last query of your text that is {least} "
                     f"({counts.get(int(trace.ids[int(rarest[-1])]), 0):,} times in training). A head "
                     f"spreading its weight evenly would put {even:.3f} there.")
    three_decimals = st.column_config.NumberColumn(format="%.3f")  # columns that read down evenly
    table(roles, hide_index=True, column_config={
        name: three_decimals for name, values in roles.items() if isinstance(values[0], float)})
    st.caption(f"A head gets a role label when at least {hd.ROLE_THRESHOLD:.0%} of its weight goes "
               f"there on average; 'broad' means rows at least {hd.BROAD_THRESHOLD:.0%} as spread as "
               "uniform. An untrained model's heads are mostly broad." + rare_note)
    if counts is None:
        st.caption(f"Rare-word heads: {name} has no training text this app can rebuild, so which "
                   "tokens are rare for it is not known here.")
    show_code(hd.head_stats, hd.label_head, pruning.rarest_keys, pruning.rare_share)

with step("3 · Joining the heads: concatenate, then W^O"):
    # two lines: on one, the formula is wider than a projector's screen at presenter view's size
    st.latex(r"\begin{gathered}\mathrm{MultiHead}(X) = \big[\,z^{(1)} \oplus z^{(2)} \oplus \dots "
             r"\oplus z^{(h)}\,\big]\,W^O \\ "
             rf"n\times h d_{{head}} \cdot h d_{{head}}\times d = "
             rf"{n}\times{h * dh} \cdot {h * dh}\times{d} = {n}\times{d}\end{{gathered}}")
    st.markdown("Multiplying the concatenation by W^O is the same as giving each head its own block "
                "of rows of W^O and adding the results, so each head's share can be measured:")
    has_bias = "b_O" in bundle.weights()
    st.latex(r"\mathrm{out}_i = \sum_{h} z^{(h)}_i\, W^O_{h}" + (r" + b^O" if has_bias else ""))
    found = coref.find_coref_positions(trace.tokens)
    lengths, gap = hd.share_lengths(trace, bundle.weights())
    opens_on = found.probe if found else n - 1  # travels in the data: the spec is length-free
    instant(attv.head_shares, lengths, trace.tokens, layer=layer0, head=head0,
            query=linked_value("query"), default_query=opens_on)
    length_marker(n, opens_on)  # fits the token slider to this sentence
    m = bundle.facts.residual_multiplier
    st.caption("Check: for every layer and token, the heads' shares" + (" plus b^O" if has_bias else "")
               + " equal the model's attention output"
               + (f" (its hook_attn_out divided by {m:g}: a Granite multiplies the output by its "
                  f"residual_multiplier {m:g} before adding it to the stream)" if m != 1.0 else "")
               + f" to within {gap:.1e}.")
    show_code(hd.head_contributions, hd.output_weights, hd.share_lengths)


def _use_sentence(example: str) -> None:
    st.session_state["text"] = EXAMPLES[example]


with step("4 · What does “it” refer to?"):
    st.markdown(
        "In *the animal didn't cross the street because it was too tired*, “it” is the animal; "
        "with *too wide*, it is the street. A head that resolves this should send the weight of "
        "“it” to the right noun. Below: for every layer and head, how much “it” attends to each "
        "noun (summed over the noun's tokens)."
    )
    letters_only = reads_letters(bundle.tokenizer)  # a lab run's model of a letter task
    b1, b2 = st.columns(2)
    if not letters_only:
        b1.button("Use the “tired” sentence", key="mh_tired", on_click=_use_sentence,
                  args=("Coreference (tired)",))
        b2.button("Use the “wide” sentence", key="mh_wide", on_click=_use_sentence,
                  args=("Coreference (wide)",))
    probe_kind = st.radio("Query token", ["it", "last"], horizontal=True, key="mh_probe",
                          format_func={"it": "“it”", "last": "the last token"}.get)
    spans = coref.coref_spans(trace.tokens, probe=probe_kind)
    if spans is None and letters_only:
        st.info(f"**{name}** reads only its task's symbols, not words, so there is no “it” to "
                "follow here. Choose a shared model in the sidebar for this part, or train the "
                "lab's “Who is it?” task and open that run.")
    elif spans is None:
        st.info("Your text is not a sentence of the form “the X … the Y because it …”, or it does "
                "not fit in this model's context. Press one of the buttons above to load one.")
    else:
        probe_span, agent, place = spans
        probe = probe_span[-1]
        if gap_note := coref_gap_notice(name, text):
            st.info(gap_note)
        words = coref.token_words(trace.tokens)
        nouns = [next(w for w, toks in words if toks == span) for span in (agent, place)]
        weights = coref.antecedent_weights(trace, probe, [agent, place])  # (layers, heads, 2)
        best = coref.best_head(weights[..., 0] - weights[..., 1])
        vega(attv.coref_figure, weights, nouns, best=best, probe=labels[probe])
        answer = coref.answer_for(trace.tokens)
        role_of = {"agent": nouns[0], "place": nouns[1]}
        right, picked = role_of.get(answer), role_of.get(coref.head_pick(weights[best]))
        verdict = ("" if not right else f" In this sentence “it” means **{right}**"
                   + (", and that is this head's top choice." if picked == right else
                      f", but this head's top choice is “{picked}”: it gets this one wrong."
                      if picked else ", but this head weighs both nouns the same."))
        st.markdown(f"Largest gap: **layer {best[0]}, head {best[1]}** gives “{nouns[0]}” "
                    f"{weights[best][0]:.3f} and “{nouns[1]}” {weights[best][1]:.3f}." + verdict)
        if cfg.causal and probe_kind == "it":
            st.caption("Careful: in a decoder “it” comes *before* “tired” or “wide” and cannot "
                       "see it, so “it” attends the same way in both sentences. Choose “the last "
                       "token” to ask a position that has read the adjective.")
        if not bundle.trained:
            st.caption("These weights come from a model that has not been trained yet, so no head "
                       "knows the answer; the trained model is on its way.")

        st.subheader("Which head changes its mind?")
        st.markdown("A head that always looks at the first noun scores the same in both sentences. "
                    "A head that follows the meaning moves towards the animal for *tired* and "
                    "towards the street for *wide*. Comparing the two sentences finds it:")
        gaps = [coref.antecedent_gap(get_trace(name, EXAMPLES[k]), probe_kind)
                for k in ("Coreference (tired)", "Coreference (wide)")]
        if gaps[0] is None or gaps[1] is None:
            st.info("The two example sentences do not fit this model's tokens or context.")
        else:
            st.latex(r"\Delta_{\ell h} = \big(\alpha_{\text{animal}} - \alpha_{\text{street}}\big)"
                     r"_{\text{tired}} - \big(\alpha_{\text{animal}} - \alpha_{\text{street}}\big)"
                     r"_{\text{wide}}")
            (sl, sh), moved = coref.switching_head(*gaps)
            if not coref.switches(moved):  # nothing moved: no head to name
                st.info("No head changes at all: from this query the two sentences look identical "
                        "(the adjective comes later). Choose “the last token” above.")
            else:
                st.metric(f"Layer {sl}, head {sh} moves the most", f"Δ = {moved:+.3f}",
                          help="+2 would be a perfect switch: all on the animal for tired, all on "
                               "the street for wide. 0 means the head ignores the adjective.")
        show_code(coref.find_coref_positions, coref.antecedent_weights, coref.switching_head)


with step("5 · How many heads does it need? Pruning"):
    st.markdown(
        "Michel et al. (2019) asked whether sixteen heads are really better than one, and found "
        "that many heads of a trained model can be removed with little harm. Here is the same "
        "experiment on this model, with nothing retrained: remove each head alone (its output set "
        "to zero) to see how much the loss rises without it, then remove them one after another, "
        "least missed first, and watch the loss.")
    total = cfg.n_layers * cfg.n_heads
    if not cfg.causal or cfg.arch == "encoder-decoder":
        st.info(f"{name} is not a decoder-only model, so it has no next-token loss to watch here. "
                "Choose a decoder in the sidebar, such as gpt-tiny or llama-tiny.")
    elif total > pruning.MAX_HEADS:
        st.info(f"{name} has {total} heads: the what-if runs the model {2 * total + 1} times, which "
                f"takes too long on a shared server. It runs on models of up to {pruning.MAX_HEADS} heads.")
    else:
        sentences = heldout_count(name)
        source = (f"{sentences} held-out sentences, the first of those its validation loss was "
                  "measured on" if sentences else "your text (this model has no held-out "
                  "sentences the app can rebuild)")
        st.caption(f"The loss is the mean next-token cross-entropy over {source}.")
        if not sentences and len(trace.ids) < 2:
            st.info("Your text is a single token: there is no next token to predict. Type a "
                    "longer text.")
        elif st.button(f"Run the what-if ({2 * total + 1} runs of {name})", key="mh_prune"):
            st.session_state["mh_pruned_for"] = name
        if st.session_state.get("mh_pruned_for") == name and (sentences or len(trace.ids) >= 2):
            result = heads_pruned(name, None if sentences else text)
            vega(attv.pruning_chart, result, name)
            tolerance = 0.05
            gone = result.removable(tolerance)
            st.markdown(
                f"The whole model: loss **{result.base:.3f}**. Removing heads in this order, "
                f"**{gone} of {total}** can go before the loss rises more than {tolerance} nats; "
                f"with every head gone it is {result.losses[-1]:.3f}.")
            table(result.columns(), hide_index=True)
        show_code(pruning.prune, pruning.heldout_loss)
