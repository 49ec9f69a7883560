"""Lesson 13: encoder, decoder, encoder-decoder. reverse-encdec reads a source once with its
encoder and writes it backwards one token at a time with its decoder; cross-attention joins them."""
import pandas as pd
import streamlit as st

from tfviz.analysis import encdec as ed
from tfviz.config import preset
from tfviz.decoding import seq2seq as s2s
from tfviz.model.attention import Attention
from tfviz.model.transformer import Transformer
from tfviz.textinput import MAX_TYPED_CHARS
from tfviz.ui.cache import get_bundle
from tfviz.ui.context import lesson_context
from tfviz.ui.decoding_cache import SEQ2SEQ_MODEL as MODEL, translation
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import fit_marker, instant, linked_value
from tfviz.ui.code import show_code
from tfviz.ui.tables import numbers_table, table
from tfviz.viz.kit import chart_numbers
from tfviz.viz import encdec as ie

EXAMPLE = "hello"  # five letters of a-p, and a word, so the reversal is easy to read
sidebar_model, sidebar_text, _, _ = lesson_context()
bundle = get_bundle(MODEL)
cfg, tok = bundle.config, bundle.tokenizer
evaluation = bundle.evaluation  # what its training run measured on held-out sources

st.title("Encoder, decoder, encoder-decoder")
st.markdown(
    "The first Transformer had two halves. The **encoder** reads the whole input at once and "
    "turns it into one vector per token, the *memory*. The **decoder** writes the output one "
    "token at a time; at every step it looks back at what it has written so far (masked "
    "self-attention) and reads the memory (**cross-attention**: queries from the decoder, keys "
    "and values from the encoder's top layer). Later models kept only one half: BERT is an "
    "encoder, GPT a decoder. This page takes a small encoder-decoder apart."
)
if sidebar_model != MODEL:
    st.info(f"This lesson always uses **{MODEL}**, our small encoder-decoder ({cfg.enc_layers} "
            f"encoder and {cfg.n_layers} decoder layers, {cfg.n_heads} heads, d = {cfg.d_model}). "
            f"The sidebar's model, {sidebar_model}, is used again on the other pages.")
in_the_notes("encoder-decoder")

# --- 1 · the task ------------------------------------------------------------------------------
with step("1 · The task: write the source backwards"):
    letters = " ".join(s2s.LETTERS)
    st.markdown(
        f"{MODEL} was trained on 20,000 random sources of 2 to {s2s.MAX_SOURCE} letters taken from "
        f"the 16 letters **{letters}**, and the answer to each is the same letters in reverse "
        "order: `abcd` → `dcba`. Nothing else: it knows no words, only this alphabet and four "
        "special tokens. Its decoder starts from `<bos>` (begin) and stops by writing `<eos>` (end)."
        + (f" On {evaluation.heldout_examples} sources it never saw in training it gave the exact "
           f"reverse {evaluation.exact_match:.0%} of the time."
           if evaluation.exact_match is not None else "")
    )
    if not bundle.trained:
        st.warning(f"{MODEL} has no trained weights here, so its answers are random.")
    default = EXAMPLE
    if sidebar_model == MODEL and not s2s.check_source(sidebar_text).error:
        default = sidebar_text  # the sidebar already holds a source for this model
    st.session_state.setdefault("ed_source", default)
    raw = st.text_input("Source (letters a to p)", key="ed_source", max_chars=MAX_TYPED_CHARS,
                        help=s2s.ALLOWED)
    check = s2s.check_source(raw)
    if check.error:
        st.error(check.error, icon=":material/block:")
        st.caption(f'Below, the page shows the example "{EXAMPLE}" until your source can be read.')
        source = EXAMPLE
    else:
        source = check.letters
        if check.notice:
            st.caption(check.notice)

    run = translation(source)
    n, T = len(run.source_ids), len(run.steps)
    correct = run.output == source[::-1]
    verdict = "the exact reverse" if correct else f"not the reverse (that would be `{source[::-1]}`)"
    st.markdown(f"Source `{source}` ({n} token{'s' if n > 1 else ''}) → the model writes "
                f"**`{run.output}`**, {verdict}, in {T} decoding steps (the last one writes `<eos>`).")
    show_code(s2s.check_source)

# --- 2 · the encoder ---------------------------------------------------------------------------
with step("2 · The encoder runs once"):
    sharp, even = ed.row_peaks(run.enc_patterns)
    src = run.source_tokens
    st.markdown(
        f"The encoder reads all {n} source tokens in one pass. Its self-attention has **no mask**: "
        "every token may look at every other token, before and after it. Whether a row spreads its "
        "weight over the source or gives most of it to one token is learned, not forced."
        + (f" On your source, **layer {sharp.layer}, head {sharp.head}** gives **{sharp.weight:.2f}** "
           f"of `{src[sharp.query]}`'s weight to `{src[sharp.key]}` alone, while the most even row "
           f"(layer {even.layer}, head {even.head}, from `{src[even.query]}`) gives no token more "
           f"than {even.weight:.2f}; an even spread would give each 1/n = {1 / n:.2f}." if n > 1 else "")
        + f" After {cfg.enc_layers} layers the encoder leaves one vector of "
        f"d = {cfg.d_model} numbers per token: the memory, n × d = {n} × {cfg.d_model}. That is all "
        "the decoder ever gets to see of the source, and it is computed once, however many tokens "
        "the decoder writes."
    )
    score = ed.anti_diagonal_head(run.cross_attention())
    instant(ie.encoder_chart, run.enc_patterns, run.memory, src, opens=(sharp.layer, sharp.head),
            layer=linked_value("layer"), head=linked_value("head"))
    # the chart is laid out for 16 tokens and opens on this source's head: the sliders follow it
    fit_marker({"layer": {"n": cfg.enc_layers, "default": sharp.layer},
                "head": {"n": cfg.n_heads, "default": sharp.head}})
    numbers_table(chart_numbers.encoder(run.enc_patterns, run.memory, src), key="ed_enc_numbers",
                  default=sharp.layer * cfg.n_heads + sharp.head)
    st.caption(f"The chart opens on layer {sharp.layer}, head {sharp.head}, the head named above. "
               "Move the Layer and Head sliders under a chart (or use the arrow keys on them): the "
               "charts on this page follow them in your browser at once.")

# --- 3 · the decoder ---------------------------------------------------------------------------
with step("3 · The decoder writes one token per step"):
    st.markdown(
        "Step 1 feeds the decoder `<bos>` alone; it predicts the first letter. Step 2 feeds `<bos>` "
        "and that letter, and so on: each step adds **one row** to each attention map, the new "
        "token's query. Its self-attention may only look at the tokens written so far (the causal "
        "mask, grey above the diagonal). Its cross-attention looks at every source token: the "
        "query comes from the decoder (one new row per step, so t × d after t steps), the keys "
        f"and values from the memory (n × d = {n} × {cfg.d_model}). Move **Step** under the chart "
        "to watch both maps grow; the row outlined is the one this step adds. The decoder charts "
        "open on the head that reads backwards (below)."
    )
    st.latex(r"\text{CrossAttn}(Z, M) = \mathrm{softmax}\!\Big(\frac{(Z W^Q)(M W^K)^\top}{\sqrt{d_k}}"
             r"\Big)\, M W^V \qquad Z \in \mathbb{R}^{t \times d},\ M \in \mathbb{R}^{n \times d}")
    read = bundle.token_strings(run.decoder_ids)
    written = bundle.token_strings(run.new_ids)
    notes = ed.step_notes(cfg, read, written, [s.probs[0] for s in run.steps], n)
    candidates = [bundle.token_strings(s.candidates) for s in run.steps]
    instant(ie.decoder_chart, run.self_attention(), run.cross_attention(), read, run.source_tokens,
            notes, candidates, [s.probs for s in run.steps],
            [s.candidates.index(s.chosen) for s in run.steps], (score.layer, score.head),
            step=linked_value("step") or 1, layer=linked_value("layer"), head=linked_value("head"))
    fit_marker({"step": {"n": T, "default": 1, "from": 1},  # the chart is laid out for 16 steps
                "layer": {"n": cfg.n_layers, "default": score.layer},
                "head": {"n": cfg.n_heads, "default": score.head}})
    numbers_table(chart_numbers.decoder(run.self_attention(), run.cross_attention(), read, src),
                  key="ed_dec_numbers", default=score.layer * cfg.n_heads + score.head)

    scores = ed.anti_diagonal_scores(run.cross_attention())
    held_out = evaluation.anti_diagonal_head
    st.subheader("The head that reads backwards")
    st.markdown(
        f"To write the source backwards, step t needs the t-th source letter from the end: the "
        f"cross-attention map should light up along its **anti-diagonal**, from top right to "
        f"bottom left. On your "
        f"source, **layer {score.layer}, head {score.head}** does it best: it puts on average "
        f"**{score.score:.3f}** of its weight on exactly that letter (the mean over the {run.letter_steps} "
        "steps that write a letter)."
        + (f" Over {evaluation.heldout_examples or 'the'} held-out sources its training run found "
           f"layer {held_out.layer}, head {held_out.head}, with {held_out.score:.3f}."
           if held_out else "")
        + " The decoder charts above open on that head."
    )
    table(ed.score_rows(scores), hide_index=True)
    st.caption("Each cell: that head's mean cross-attention weight on the mirrored source letter, "
               "on your source. A head that spread its weight evenly would score 1/n = "
               f"{1 / n:.3f}.")
    show_code(ed.anti_diagonal_scores, ed.step_shapes)

# --- 4 · K and V once ------------------------------------------------------------------------------
with step("4 · Cross-attention's keys and values are computed once"):
    st.markdown(
        "The memory does not change while the decoder writes, so neither do the keys M W^K and "
        "values M W^V that each decoder layer's cross-attention makes from it. They are computed "
        "at the first step, kept beside the keys and values the decoder keeps of its own earlier "
        "tokens (lesson 16 calls that store the KV cache), and reused at every later step; only "
        "the new query row is new. Here the same answer is run twice: "
        "once that way, and once projecting the memory again at every step."
    )
    again = translation(source, reuse_cross_kv=False)
    gap = run.largest_logit_gap(again)
    same = run.new_ids == again.new_ids
    table([
        {"way": "computed once, reused", "K, V projections per layer": run.kv_projections,
         "steps": len(run.steps), "answer": run.output},
        {"way": "projected again every step", "K, V projections per layer": again.kv_projections,
         "steps": len(again.steps), "answer": again.output}], hide_index=True)
    st.markdown(
        f"{'The same tokens' if same else 'Different tokens'}, and the largest difference between "
        f"the two runs' logits is **{gap:.1e}**"
        + (": the reused keys and values are exactly the ones a fresh projection gives. "
           if gap == 0 else ". ")
        + f"Each projection is an n × d by d × d product per layer ({n} × {cfg.d_model} by "
          f"{cfg.d_model} × {cfg.d_model}, twice: K and V); for a long document and a long answer, "
          "skipping it at every step saves real time."
    )
    show_code(Attention.source_kv, Transformer.run, s2s.translate)

# --- 5 · three stacks ----------------------------------------------------------------------------
with step("5 · Encoder-only, decoder-only, encoder-decoder"):
    kinds = ed.architectures({name: preset(name) for name in ("bert-tiny", "gpt-tiny", MODEL)})
    st.table(pd.DataFrame([{"stack": a.name, "each block": a.blocks, "examples": a.examples,
                            "in this app": a.ours} for a in kinds]).set_index("stack"))
    instant(ie.architectures_chart, [(a.name, a.masks) for a in kinds], ["a", "b", "c", "d"],
            ["<bos>", "d", "c", "b"])
    st.caption(
        "Blue: the query may attend to that key; grey (−∞): masked. An encoder sees the whole text, "
        "so it fits understanding tasks (classify, find, fill in a blank). A decoder sees only the "
        "past, so it can generate text one token at a time. The encoder-decoder does both: the "
        "encoder reads the source freely, the decoder writes causally and reads the source through "
        "cross-attention, which needs no mask, because the whole source is known before the first "
        "token is written."
    )
    show_code(ed.attention_masks)
