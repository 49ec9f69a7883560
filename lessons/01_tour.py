"""Lesson 1 · Tour: the whole trip from your text to the model's next-token guess."""
import streamlit as st

from tfviz.analysis.pipeline import (first_ordinary_position, mask_token_id, pipeline_stages,
                                     probabilities, rnn_vs_transformer, top_predictions,
                                     vector_length_rows, vector_lengths)
from tfviz.experiments.masked import masked_trace
from tfviz.ui.cache import get_bundle, get_tour_numbers, get_trace
from tfviz.ui.context import chosen
from tfviz.ui.demo_cache import rnn_vs_transformer_view
from tfviz.ui.lessons import available
from tfviz.ui.model_offer import offer
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import presenting, step
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.pickers import token_select
from tfviz.ui.tables import table
from tfviz.viz.pipeline import STAGE_ARROW, predictions_chart, stage_html
from tfviz.viz.tokens import token_chips_html

# Which lesson explains each stage (linked only when that page exists).
LESSON_OF = {
    "tokens": ("02_tokenizer.py", "Tokenizer (BPE)"),
    "embed": ("03_embeddings.py", "Embeddings and positions"),
    "pos": ("03_embeddings.py", "Embeddings and positions"),
    "blocks": ("09_layernorm.py", "Residual and LayerNorm"),
    "attn": ("05_self_attention.py", "Self-attention step by step"),
    "ffn": ("10_ffn.py", "Feed-forward"),
    "logits": ("12_forward.py", "Full forward walk"),
    "next": ("12_forward.py", "Full forward walk"),
}
MOE_LESSON = ("11_moe.py", "Mixture of experts")
RNN_LONGEST = 128  # the longest sentence the RNN-vs-transformer chart can show


st.title("A tour of a transformer")
st.markdown(
    "This app opens up a small transformer and shows you every number it computes on **your** "
    "text, one stage at a time. Follow the trip below from the words you typed to the model's "
    "guess, then click any stage to study it in its own lesson."
)

model, text = chosen()
# The default sentence's numbers are stored with the model: a fresh server draws this page
# without torch (tfviz.analysis.tour_numbers). The branches for an encoder or a model without
# a head, which no learner meets first, trace it.
tour = get_tour_numbers(model, text)
cfg = tour.config
files = {lesson.file for lesson in available()}

with step("1 · From text to a prediction"):
    kind = {"decoder": "a decoder (it predicts the next token)",
            "encoder": "an encoder (it fills in hidden tokens, like BERT)",
            "encoder-decoder": "an encoder-decoder (it reads a source, then writes an answer)"}
    st.caption(f"Model **{model}** is {kind[cfg.arch]}: {cfg.n_layers} blocks, {cfg.n_heads} "
               f"heads, {cfg.d_model} numbers per token. Shapes read (tokens, numbers per token).")
    if cfg.arch == "encoder-decoder":
        st.info("This model first runs your text through an encoder stack; the blocks below are "
                "the decoder's, which also look at the encoder's output (cross-attention).")

    for n, stage in enumerate(tour.stages):
        if n:
            st.html(STAGE_ARROW)
        with st.container(border=True):
            chips = token_chips_html(tour.tokens, tour.ids) if stage.key == "tokens" else ""
            st.html(stage_html(stage.title, stage.note, stage.shape, chips))
            file, label = MOE_LESSON if stage.key == "ffn" and cfg.is_moe else LESSON_OF[stage.key]
            if file in files:
                st.page_link(f"lessons/{file}", label=f"Lesson: {label}",
                             icon=":material/arrow_forward:")
            if stage.key == "attn" and "04_lookup.py" in files:
                st.page_link("lessons/04_lookup.py", label="Lesson: attention as lookup",
                             icon=":material/arrow_forward:")


with step("2 · The model's guess"):
    if not cfg.lm_head:
        trace = get_trace(model, text)
        last = f"blocks.{cfg.n_layers - 1}.hook_resid_post"
        st.info(f"**{model}** was saved without a head (a BERT's `BertModel`), so it makes no "
                f"guess: it ends at its last block, with one vector of {cfg.d_model} numbers per "
                "token. A folder saved with its masked-LM head (`BertForMaskedLM`) shows its "
                "guess for a hidden token here.")
        table(vector_length_rows(trace.tokens, trace[last]), hide_index=True)
        st.caption(f"What it does give: each token's vector after the last block (`{last}`), "
                   "here by its length. Fine-tuning puts a new head on vectors like these "
                   "(lesson 15).")
        offer("bert-tiny", key="tour_switch", label="Switch the sidebar to bert-tiny, which has a head")
        show_code(pipeline_stages, vector_lengths)
    else:
        st.latex(r"p(w) = \mathrm{softmax}(z)_w = \frac{e^{z_w}}{\sum_{v} e^{z_v}}")
        if cfg.arch == "encoder":
            from tfviz.ui.experiments_cache import masked  # imports torch: only an encoder needs it

            bundle = get_bundle(model)
            trace = get_trace(model, text)
            mask_id = mask_token_id(bundle.tokenizer)
            st.markdown("An encoder sees the whole sentence at once, so it is trained to fill in "
                        "a **hidden** token. Pick one to hide behind [MASK]; the bars show what the "
                        "model thinks was there.")
            position = token_select("Token to hide", trace.tokens, "tour_mask_pos",
                                default=first_ordinary_position(trace.ids, bundle.tokenizer))
            if mask_id is None:
                st.warning("This tokenizer has no [MASK] token, so we show the guess at that "
                           "position without hiding it.")
                row = trace.logits[position]
            else:
                row = masked(model, text, int(position)).logits[position]
            title = f"What hides at position {position}? (the answer was {trace.tokens[position]!r})"
            preds = top_predictions(row, 5, bundle.tokenizer.id_to_token)
        else:
            st.markdown("The last position's row of logits becomes probabilities for the token that "
                        "comes **next**. Here are the five most likely:")
            preds = list(tour.predictions)
            title = f"After {tour.tokens[-1]!r}, the next token is probably…"
        vega(predictions_chart, preds, title=title)
        if not tour.trained:
            st.caption("These weights are still random (the trained model is not installed yet), so "
                       "the guesses are guesses in the dark.")
        show_code(pipeline_stages, top_predictions, probabilities, masked_trace)


with step("3 · Why not a recurrent network?"):
    st.markdown(
        "A recurrent network (RNN) reads one token at a time and must finish token *t − 1* "
        "before it can start token *t*. Self-attention looks at all tokens at once, and links "
        "every pair of tokens directly, however far apart they are."
    )
    c1, c2 = (st.container(), st.container()) if presenting() else st.columns(2)  # big type
    c1.latex(r"\text{sequential steps: } O(n) \text{ (RNN)} \;\text{vs}\; O(1)")
    c2.latex(r"\text{longest path between two tokens: } O(n) \;\text{vs}\; O(1)")
    T = len(tour.tokens)
    # its slider moves in the browser (no script run); it starts at your text's length, which
    # the chart keeps within its own ends
    vega(rnn_vs_transformer_view, RNN_LONGEST, shown=max(16, T))
    st.markdown(
        f"For your text of **{T} tokens**, an RNN layer takes **{T} steps** one after another, "
        f"and the first token's information needs **{max(T - 1, 0)} hops** to reach the last. "
        "A transformer layer takes **1 step** for all tokens together, and any token reaches any "
        "other in **1 hop**. The price: every pair is compared, so the work grows like n²."
    )
    in_the_notes("tour")
    show_code(rnn_vs_transformer)
