"""Lesson 8: masks. The causal −∞ triangle, encoder vs decoder, padding, and a no-peeking proof."""
import streamlit as st

from tfviz.analysis import masking as mk
from tfviz.config import RunOptions
from tfviz.experiments.padding import padding_demo
from tfviz.experiments.peeking import peek_experiment
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import padded_batch, peek
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, view_opening
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.pickers import stable_select, token_select
from tfviz.ui.tables import table
from tfviz.viz import masking as attv
from tfviz.viz.kit.style import token_labels


name, text, bundle, cfg = lesson_context()
kind = {"decoder": "a decoder (causal)", "encoder": "an encoder (bidirectional)",
        "encoder-decoder": "an encoder-decoder; its decoder is causal"}[cfg.arch]

st.title("Masking")
st.markdown(
    "A language model learns to predict the next token. If, while training, a position could "
    "look at the tokens after it, it would simply copy the answer. A **decoder** therefore "
    "hides the future: before the softmax, every score of a query with a later key is replaced "
    "by −∞, and e^−∞ = 0, so those keys receive exactly zero weight. An **encoder** (like "
    f"BERT) reads the whole text at once and masks nothing. Your model, **{name}**, is {kind}."
)
st.latex(r"\tilde s_{ij} = \begin{cases} %s & j \le i \\ -\infty & j > i"  # the model's own scale
         r"\end{cases}\qquad \alpha_{ij} = \frac{e^{\tilde s_{ij}}}{\sum_m e^{\tilde s_{im}}}"
         % bundle.facts.scaled_tex(r"q_i\cdot k_j"))

with step("1 · The triangle of −∞"):
    st.caption("Move the layer and head sliders under a chart (or use the arrow keys on them): "
               "every chart of this page follows them in your browser at once.")
    opening = view_opening(cfg, "mk_layer")  # a deep model sends one layer at a time
    only, layer0, head0 = opening.only, opening.layer, opening.head
    causal = get_trace(name, text, RunOptions(causal=True))
    if not cfg.causal:
        st.caption("Your model is an encoder and masks nothing; here it is run once with the "
                   "causal mask switched on, so you can see the triangle.")
    scores = causal.stack("attn_scores")  # (layers, heads, n, n)
    instant(attv.triangle, scores, causal.tokens, layer=layer0, head=head0, only_layer=only)
    hidden = mk.hidden_counts(scores)  # one number: one mask for every head
    st.caption(f"{' to '.join(map(str, hidden))} of {len(causal.tokens) ** 2} cells are −∞ (grey) in "
               "every layer and head: everything above the diagonal. Row i may only use keys 0…i.")
    show_code(mk.causal_mask, mk.masked_cells)

with step("2 · Bidirectional (encoder) vs causal (decoder)"):
    both = [get_trace(name, text, RunOptions(causal=c)) for c in (False, True)]
    instant(attv.two_masks, *[t.stack("pattern") for t in both],
            causal.tokens, layer=layer0, head=head0, only_layer=only)
    st.caption("The first token of a causal model can only look at itself, so its row is a "
               "single 1. In the bidirectional map every row spreads over the whole text.")
    in_the_notes("masking")

with step("3 · Padding masks"):
    st.markdown(
        "To run several texts as one batch they must have the same length, so short ones are "
        "filled up with a padding token. The padding is not text, so every query gets −∞ on the "
        "padding keys, using a 0/1 attention mask (1 = real token)."
    )
    c1, c2 = st.columns(2)
    sent_a = c1.text_input("Sentence 1", "the cat is resting near the lake", key="mk_pad_a", max_chars=200)
    sent_b = c2.text_input("Sentence 2 (shorter)", "the dog jumped", key="mk_pad_b", max_chars=200)
    demo = padded_batch(name, (sent_a, sent_b))
    table({"": ["sentence 1 tokens", "mask", "sentence 2 tokens", "mask"]}
          | {str(j): [demo.tokens[0][j], str(demo.mask[0, j]), demo.tokens[1][j],
                      str(demo.mask[1, j])] for j in range(demo.ids.shape[1])},
          hide_index=True)
    instant(attv.padded_batch, demo.trace.stack("pattern"),  # (layers, sentence, heads, n, n)
            demo.trace.stack("attn_scores")[:, 1], demo.tokens,
            layer=layer0, head=head0, only_layer=only)
    note = ("" if not cfg.is_moe else
            " This model mixes experts: pad tokens pass through the router too, but they come "
            "after the real tokens and each sentence's expert capacity is counted as it goes, so "
            "they never take a real token's place." if cfg.moe_capacity_factor is not None else
            " This model mixes experts: pad tokens pass through the router too, but its experts "
            "have no capacity limit, so a pad token never takes a real token's place.")
    st.caption(f"Running each sentence alone gives the real tokens' logits to within "
               f"{demo.max_change:.1e} of the padded batch.{note}")
    show_code(mk.padding_mask, padding_demo)

with step("4 · Proof by experiment: a decoder cannot peek"):
    st.markdown(
        "Change one token and rerun the model. If the positions before it could see the future, "
        "their outputs would move. Pick a position and a new token:"
    )
    trace = get_trace(name, text)
    labels = token_labels(trace.tokens, escape=True)
    n = len(labels)
    if n < 2:
        st.info("Type at least two tokens of text to run this experiment.")
    else:
        c1, c2, c3 = st.columns(3)
        pos = token_select("Position to change", trace.tokens, "mk_pos", first=1,
                           default=n - 1 if n < 4 else n // 2, where=c1)
        ids = [int(i) for i in trace.ids]
        choices = mk.replacement_candidates(ids, cfg.vocab_size, exclude=ids[pos],
                                           first_id=mk.first_ordinary_id(bundle.tokenizer),
                                           skip=mk.special_ids(bundle.tokenizer))
        label = dict(zip(choices, bundle.token_strings(choices)))  # id -> token string
        ids_by_label = {s: i for i, s in label.items()}  # to read a stale label back
        new_id = stable_select("New token", choices, "mk_new", where=c2, recover=ids_by_label.get,
                               format_func=label.__getitem__)
        no_mask = c3.toggle("Switch the causal mask off", value=False, key="mk_nomask")
        enc_ids = None if trace.enc_ids is None else tuple(int(i) for i in trace.enc_ids)
        result = peek(name, tuple(ids), int(pos), int(new_id), bool(no_mask), enc_ids)
        vega(attv.logit_change_figure, result.change, trace.tokens, pos)
        earlier = result.max_earlier_change
        if result.verdict == "sealed":
            st.success(f"Every position before {labels[pos]} kept exactly the same logits "
                       "(largest change 0.0). Nothing flows backwards from a later token.")
        else:
            st.warning(f"Earlier positions moved by up to {earlier:.3g}: this run could see the future "
                       "(an encoder, or the mask switched off).")
        if cfg.is_moe:
            st.caption("This model mixes experts. Each token's expert arithmetic never depends on "
                       "which other tokens chose the same expert, and "
                       + ("an expert's capacity is counted as the sentence goes (lesson 11), so"
                          if cfg.moe_capacity_factor is not None else
                          "its experts have no capacity limit (lesson 11), so no token is ever "
                          "dropped and")
                       + " a later token can never take an earlier token's place: the proof holds "
                       "to the last bit here too.")
        show_code(peek_experiment)
