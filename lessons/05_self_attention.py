"""Lesson 5: one query token walked through self-attention, with the model's own numbers."""
import streamlit as st

from tfviz.analysis import attention as att
from tfviz.analysis import attention_matrix as atm
from tfviz.analysis import contextual as cx
from tfviz.analysis.coref import find_coref_positions
from tfviz.config import RunOptions
from tfviz.ui.cache import read_text
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.experiments_cache import SELF_ATTENTION_TOKENS, first_tokens_trace
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, length_marker, linked_value, view_opening, view_value
from tfviz.textinput import clean_text
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.pickers import stable_select
from tfviz.ui.tables import table
from tfviz.viz import contextual as vc
from tfviz.viz import self_attention as ia

name, text, bundle, cfg = lesson_context()

st.title("Self-attention, step by step")
st.markdown(
    "Self-attention lets every token build a new version of itself out of the other tokens. "
    "Each token asks a question (its **query** q), advertises what it holds (its **key** k) "
    "and offers some content (its **value** v). A query is compared with every key; the "
    "better the match, the more of that key's value flows into the query's new vector. "
    "Below, one token of your text goes through that recipe, and every number is read out of "
    "the model while it runs."
)
st.latex(r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(%s+M\right)V" % bundle.facts.scaled_tex())
if bundle.facts.attention_multiplier is not None:  # Granite: its own factor in place of 1/√d_k
    st.caption(f"{name} {bundle.facts.score_scale} (lesson 6).")

VIEWS = ["One query, step by step", "All tokens as matrices", "Flying arrows"]
WHAT_IF_DEFAULTS = {"sa_scale": cfg.scale_attn, "sa_causal": cfg.causal, "sa_temp": 1.0}
if st.session_state.get("sa_for_model") != name:  # a new model starts from its own settings
    st.session_state.update(WHAT_IF_DEFAULTS, sa_for_model=name)
for key, value in WHAT_IF_DEFAULTS.items():  # widget values are forgotten on other pages
    st.session_state.setdefault(key, value)


@safe_fragment
def walkthrough() -> None:
    with st.expander("What if…? (reruns the model with a change; its weights stay as they are)",
                     expanded=False):
        c1, c2, c3 = st.columns(3)
        multiplier = bundle.facts.attention_multiplier  # Granite's, in place of 1/√d_k
        scale = c1.toggle("Divide by √d_k" if multiplier is None else f"Scale the scores (× {multiplier:g})",
                          key="sa_scale")
        causal = c2.toggle("Causal mask (no peeking ahead)", key="sa_causal")
        temperature = c3.slider("Softmax temperature T", 0.1, 5.0, step=0.1, key="sa_temp",
                                help="The scores are divided by T before the softmax: below 1 sharper, above 1 flatter.")
    options = RunOptions(scale=scale, causal=causal, temperature=temperature)
    trace = first_tokens_trace(name, text, SELF_ATTENTION_TOKENS, options)
    n, read = len(trace.tokens), len(read_text(name, text).ids)
    if n < read:
        st.info(f"{name} reads {read} tokens of your text. This page follows the first {n}: "
                f"every head of every layer weighs each token against every other, {read}² = "
                f"{read * read:,} weights a head, more than a page can show or a server compute "
                "for every learner. The other lessons read the whole text.")
    found = find_coref_positions(trace.tokens)
    # Where the charts open: a shared link's view, else layer 0, head 0 and the sentence's
    # own query (its "it", else its last token), which travels in the data
    # (tfviz.viz.kit.instant_length): the charts' specs then hold nothing of the sentence.
    opening = view_opening(cfg, "sa_layer")  # a deep model sends one layer at a time
    only = opening.only
    view = {**opening.view, "query": linked_value("query"), "layer_data": only is not None}
    opens_on = found.probe if found else n - 1
    shift = None  # with a what-if on: how far it moved each query from the model's own run
    if options.canonical(cfg) != RunOptions():
        shift = att.query_shift(trace, first_tokens_trace(name, text, SELF_ATTENTION_TOKENS),
                                None if only is None else (only,))
        moved = att.moved_layers(shift, None if only is None else (only,))
        st.caption("The change acts in every layer, so each layer after the first also reads "
                   "vectors the layers before it now compute differently. "
                   + (f"Here the queries of layer{'s' if len(moved) > 1 else ''} "
                      f"{' and '.join(', '.join(map(str, moved)).rsplit(', ', 1))} differ from "
                      "the model's own run; " if moved else
                      "Here no query differs from the model's own run; ")
                   + "the line under q says whether the query on show moved.")
    # every layer (or a deep model's chosen one), head and query: the browser picks the view
    every = att.all_queries(trace, None if only is None else (only,))
    if cfg.arch == "encoder-decoder":
        st.caption("This model has an encoder and a decoder; you are looking at the decoder's "
                   "self-attention. Its cross-attention, where the decoder's queries meet keys "
                   "and values made from the encoder's output, is among the steps of lesson 12 "
                   "(Full forward walk).")
    st.caption(f"Choose the {'layer, ' if only is None else ''}head and query token under any "
               "chart (the arrow keys move them too): every chart on this page follows at once, "
               "in your browser.")
    # All three views are sent once; switching tabs, like moving a view control, runs nothing.
    tab_one, tab_matrix, tab_arrows = st.tabs(VIEWS)
    with tab_one:
        one_query(every, {**view, "default_query": opens_on}, shift)
    with tab_matrix:
        matrices(trace, view)
    with tab_arrows:
        st.markdown("Each line leaves the query on the left and lands on a key on the right; "
                    "the thicker and darker it is, the more attention that key receives.")
        instant(ia.flying_arrows, every, **view, default_query=opens_on)
    length_marker(n, opens_on)  # fits the query sliders to this sentence (drawn last: no gap)


# What the position term of a model that scores distance inside attention adds (lesson 3).
POSITION_TERMS = {
    "relative": "a^K_{j−i} is the key vector Shaw's relative positions learned for the distance "
                "j − i (lesson 3): the “q · k” row below already holds the whole q·(k + aᴷ).",
    "t5_bias": "b_h(j − i) is the number T5's table gives this head for the bucket of the distance "
               "j − i (lesson 3): the “÷” row below already holds it, added after the division.",
    "alibi": "m_h·|i − j| is ALiBi's penalty for distance (lesson 3): the “÷” row below already "
             "holds it, taken off after the division.",
}


def one_query(every, view, shift=None) -> None:
    # pre-LN: every token's query, key and value come from its normalised copy, not x itself
    facts = bundle.facts
    ln = r"\mathrm{RMS}" if facts.norm_kind == "rmsnorm" else r"\mathrm{LN}"
    x_i, x_j = ("x_i", "x_j") if facts.norm == "post" else (rf"{ln}(x_i)", rf"{ln}(x_j)")
    st.subheader("Query, keys and values")
    if facts.positions == "rope":  # the scores read q and k turned by their positions
        st.latex(rf"q_i = R_i\,({x_i}\,W^Q),\quad k_j = R_j\,({x_j}\, W^K),\quad v_j = {x_j}\, W^V"
                 rf"\qquad (d_k = {every.d_k})")
        st.caption("R_i turns a vector, one pair of dimensions at a time, by angles that grow with "
                   "its position i (RoPE, lesson 3): the q and k below are the turned ones, which "
                   "the scores read." + (" Before the turn, each head's q and k go through an RMSNorm "
                                     "of their own (QK-norm)." if facts.qk_norm else ""))
    else:
        st.latex(rf"q_i = {x_i}\,W^Q,\quad k_j = {x_j}\, W^K,\quad v_j = {x_j}\, W^V"
                 rf"\qquad (d_k = {every.d_k})")
    if cfg.kv_heads != cfg.n_heads:
        st.caption("Grouped-query attention: several query heads share one key/value head (the "
                   "chart's titles name it).")
    instant(ia.query_vectors, every, **view, shift=shift)

    st.subheader("Scores, scale, mask, softmax")
    temp = "" if every.temperature == 1.0 else f"/ {every.temperature:g}"
    score = {"relative": r"s_j = q_i\cdot (k_j + a^K_{j-i})"}.get(facts.positions, r"s_j = q_i\cdot k_j")
    bias = {"t5_bias": r" + b_h(j - i)", "alibi": r" - m_h\,|i - j|"}.get(facts.positions, "")
    st.latex(rf"{score} \;\to\; \frac{{s_j}}{{{every.divisor:.4g}}}{bias} \;\to\; "
             r"+M_{ij}\;(0\text{ or }-\infty) \;\to\; "
             rf"\alpha_j = \frac{{e^{{\tilde s_j{temp}}}}}{{\sum_m e^{{\tilde s_m{temp}}}}}")
    if facts.positions in POSITION_TERMS:
        st.caption(POSITION_TERMS[facts.positions])
    instant(ia.score_steps, every, **view)

    st.subheader("Weighted sum of the values")
    shaw = facts.positions == "relative"
    st.latex(r"z_i = \sum_j \alpha_j \big(v_j + a^V_{j-i}\big)" if shaw else r"z_i = \sum_j \alpha_j v_j")
    instant(ia.weighted_sum, every, **view)
    st.caption("The ten keys with the most weight get a row each; the rest are added up in one "
               "row. " + ("The last row is the z the model recorded. With Shaw's relative positions "
                          "it also adds Σ α_j aⱽ, the value vector of each key's distance (lesson 3), "
                          "which the rows above, α_j v_j, leave out: they do not add up to it."
                          if shaw else "The last row is their total: the head's output for this "
                                       "token, exactly the z the model recorded."))
    show_code(att.query_walkthrough, att.all_queries, att.softmax)


def matrices(trace, view) -> None:
    only = view["only_layer"]
    forms, error = atm.matrix_forms(trace, bundle.weights(), None if only is None else (only,))
    x_is = ("the block's input (post-LN: the residual stream before the block)"
            if cfg.norm == "post" else f"{bundle.facts.norm_name} of the block's input (pre-LN)")
    facts = bundle.facts
    st.markdown("All queries are handled at once by stacking the token vectors as rows of a "
                f"matrix X, {x_is}. Then three matrix products make Q, K and V:")
    st.latex(r"Q = XW^Q,\quad K = XW^K,\quad V = XW^V,\quad "
             r"Z = \mathrm{softmax}\!\left(%s + M\right)V" % facts.scaled_tex())
    shapes = atm.matrix_shapes(len(trace.tokens), cfg.d_model, cfg.d_head)
    st.table({"step": [r[0] for r in shapes], "shapes": [r[1] for r in shapes],
              "here": [r[2] for r in shapes]})
    if facts.positions in ("relative", "t5_bias", "alibi"):
        st.caption(f"Check: X W^Q + b computed here matches the model's own Q, K and V, and A V "
                   + ("plus the distances' Σ α aⱽ " if facts.positions == "relative" else "")
                   + f"its z, to within {error:.1e}. With {facts.positions_name} the scores also "
                   "hold a position term (lesson 3), so A is the model's own pattern, not the "
                   "softmax of this Q Kᵀ alone.")
    elif ("rot_q", 0) not in trace:
        st.caption(f"Check: X W^Q + b computed here matches the model's own Q, K, V and Z to "
                   f"within {error:.1e}, in every " + ("layer and head." if only is None
                                                      else f"head of layer {only}."))
    else:
        st.caption("With RoPE the scores are R(Q) R(K)ᵀ: every row of Q and K is turned by its "
                   "position before the product (lesson 3). Q and K here are before the turn; "
                   "A is the model's own pattern.")
    instant(ia.matrix_views, forms, trace.tokens, layer=view["layer"], head=view["head"],
            only_layer=only, layer_data=only is not None)
    show_code(atm.matrix_form)


with step("1 · One query of your text, through one head"):
    walkthrough()

with step("2 · The source's worked example"):
    st.markdown("Two words, *Thinking* and *Machines*. The query of *Thinking* scores 112 against "
                "its own key and 96 against the other; the head size is 64, so √d_k = 8. "
                "Change the numbers to see how the scale and the softmax respond.")
    c1, c2, c3 = st.columns(3)
    s1 = c1.number_input("score with key 1", value=112.0, step=4.0, key="sa_ex_s1")
    s2 = c2.number_input("score with key 2", value=96.0, step=4.0, key="sa_ex_s2")
    d_k = c3.number_input("d_k", min_value=1, max_value=4096, value=64, step=1, key="sa_ex_dk")
    ex = att.worked_example((s1, s2), int(d_k))
    st.latex(rf"\frac{{{s1:g}}}{{\sqrt{{{d_k}}}}} = {ex.scaled[0]:.4g},\quad "
             rf"\frac{{{s2:g}}}{{\sqrt{{{d_k}}}}} = {ex.scaled[1]:.4g}\quad\to\quad "
             rf"\mathrm{{softmax}} = ({ex.weights[0]:.2f},\ {ex.weights[1]:.2f})")
    st.table({"key": ["Thinking", "Machines"], **ex.columns()})
    in_the_notes("self-attention")
    show_code(att.worked_example)


def two_contexts() -> None:
    st.markdown(
        "A table of word vectors, such as word2vec or the model's own token embedding, gives a word "
        "**one** vector wherever it stands: *record* in \"I record the record\" gets the same row "
        "twice, and the row of *it* cannot know what *it* stands for. That vector is **static**. "
        "Self-attention makes it **contextual**: each block adds to a token's vector what it read "
        "from the other tokens, so the same word in two contexts leaves the block as two vectors. "
        "Below, one token of your text is compared with the same token in a second text (or "
        "later in your own), stage by stage.")
    if st.session_state.get("ctx_for") != (name, text):  # a new sentence opens on its partner
        st.session_state.update(ctx_other=cx.partner_text(text), ctx_for=(name, text))
    raw = st.text_input("Second text (leave it as your own text to compare a word that occurs "
                        "twice in it)", key="ctx_other", max_chars=2000)
    other, notice = clean_text(raw)
    if notice and other:
        st.info(notice)
    trace_a = first_tokens_trace(name, text, SELF_ATTENTION_TOKENS)
    alone = not other or other == text
    trace_b = trace_a if alone else first_tokens_trace(name, other, SELF_ATTENTION_TOKENS)
    skip = {s for s in vars(bundle.facts.specials).values() if s}
    pairs = (cx.word_pairs(trace_a.ids, trace_a.tokens, skip=skip) if alone else
             cx.word_pairs(trace_a.ids, trace_a.tokens, trace_b.ids, trace_b.tokens, skip=skip))
    if not pairs:
        st.info("No token of your text occurs twice in it" if alone else
                "The two texts share no token" + (" (the second one has no text)" if not other else "")
                + ". Type a second text that uses one of your words, for example your own text "
                "with one word changed.")
        return
    labels = [f"{p.word} (token {p.pos_a} and {p.pos_b})" for p in pairs]
    default = next((i for i, p in enumerate(pairs) if p.word.lower() == "it"), len(pairs) - 1)
    choice = stable_select("The word to follow", range(len(pairs)), "ctx_word",
                           format_func=lambda i: labels[i], default=default)
    pair = pairs[choice]
    same = cx.same_word(trace_a, pair.pos_a, trace_b, pair.pos_b)
    names = ("your text", "your text again") if alone else ("your text", "the second text")
    vega(vc.cosine_by_stage, same, *names)
    first, last = same.stages[0], same.stages[-1]
    st.markdown(
        f"The token embedding of *{same.word}* is one row of the table, so its two vectors "
        f"{'are equal to the last bit' if first.same else 'have cosine ' + format(first.cos, '.4f')}. "
        + (f"After the last block their cosine is **{last.cos:.4f}**"
           + (": the same vector, to the last bit." if last.same else "")))
    if same.same_prefix and cfg.causal:
        st.caption(
            f"{name} is a decoder: a token reads only itself and the tokens before it. Up to "
            f"*{same.word}* the two texts are the same, so it leaves every block as the same vector "
            "in both; the word that tells them apart comes later. Choose a token after the change, "
            "or open an encoder (its tokens read both ways) to see this word take on its context.")
    elif cfg.arch == "encoder-decoder":
        st.caption("This model has an encoder and a decoder; these are the decoder's vectors.")
    table(same.columns(names))
    st.caption("Nearest: the other tokens of the same text whose vectors at that stage point most "
               "the same way (cosine). At the token embedding they are whatever the table happens "
               "to hold; after the blocks, they show what the word's vector took in from its text.")
    nouns = [cx.noun_pull(t, p) for t, p in ((trace_a, pair.pos_a), (trace_b, pair.pos_b))]
    if same.word.lower() == "it" and all(nouns) and not (same.same_prefix and cfg.causal):
        st.markdown("Which noun does *it* lean towards after the last block? " + " ".join(
            f"In {where}: *{n.nearer}* (cosine {n.nearer_cos:.3f} against "
            f"{n.farther_cos:.3f} for *{n.farther}*)."
            for where, n in zip(names, nouns)))
    show_code(cx.same_word, cx.word_pairs)


def no_projections() -> None:
    st.markdown(
        "Before W^Q, W^K and W^V, there is a simpler attention: score two tokens by the dot "
        "product of their own vectors, sᵢⱼ = xᵢ·xⱼ, softmax each row, and add up the vectors "
        "themselves, zᵢ = Σⱼ αᵢⱼ xⱼ. A vector's dot product with itself is its squared length, "
        "usually the biggest number in its row, so each token mostly attends to **itself**. "
        "The three learned projections let a token ask for something other than what it is.")
    scale = st.toggle("Divide by √d as well", key="np_scale",
                      help="The scale tames the scores; it does not move the largest one.")
    trace = first_tokens_trace(name, text, SELF_ATTENTION_TOKENS)
    x = trace["hook_resid_pre", 0]  # (n, d): what the first block reads
    plain = cx.plain_attention(x, causal=cfg.causal, scale=scale)
    patterns = trace["pattern", 0]  # (heads, n, n)
    heads_share = cx.self_share(patterns, cfg.causal)
    vega(vc.plain_against_heads, plain.weights, patterns, trace.tokens,
         head=view_value("head", cfg.n_heads - 1))  # a shared link's head
    where = ("every query but the first (a decoder's first token sees only itself)"
             if cfg.causal else "every query")
    st.markdown(f"Weight a token puts on itself, on average over {where}: "
                f"**{plain.self_share:.1%}** with no projections, **{heads_share:.1%}** in "
                f"{name}'s first layer (mean over its {cfg.n_heads} heads).")
    st.caption("x here is what the first block receives: the token's embedding"
               + (" plus its position's vector" if bundle.facts.positions in ("learned", "sinusoidal")
                  else "")
               + (f", times the model's embedding_multiplier {bundle.facts.embedding_multiplier:g}"
                  if bundle.facts.embedding_multiplier != 1.0 else "") + ". The model's heads read it through their projections"
               + (f" after {bundle.facts.norm_name}" if cfg.norm == "pre" else "") + ".")
    show_code(cx.plain_attention, cx.self_share)


with step("3 · The same word, two vectors: static and contextual"):
    safe_fragment(two_contexts)()

with step("4 · What if there were no W^Q, W^K, W^V?"):
    safe_fragment(no_projections)()
