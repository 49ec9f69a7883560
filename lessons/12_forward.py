"""Lesson 12: the learner's text through every stage of the model, one step at a time."""
import streamlit as st

from tfviz.analysis import forward as fw
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import numbers_table, table
from tfviz.viz.kit import chart_numbers
from tfviz.viz import forward as fwv


name, text, bundle, cfg = lesson_context()
trace = get_trace(name, text)

st.title("The full forward walk")
st.markdown(
    "Everything from the earlier lessons, in the order the model does it, on your own text. "
    "Step through with the **Step** slider under the chart (click it, then use the arrow "
    "keys): each step says what happens, gives the formula and the shape of the tensor, and "
    "shows the model's actual numbers (hover a cell of a small map for its exact value; "
    "big maps arrive as pictures, so that they switch at once). Every step is "
    "already in your browser, so moving the slider or the head shown in the attention steps "
    "redraws at once."
)
facts = bundle.facts
if fw.modern(cfg) and cfg.arch == "decoder":
    parts = [f"{facts.norm_name} before each sublayer" + (" and after the last block" if facts.final_norm else "")]
    if facts.positions == "rope":
        scaling = f", {facts.rope_scaling} scaling" if facts.rope_scaling else ""
        parts.append(f"RoPE (base {facts.rope_base:g}{scaling}) turning q and k inside attention")
    parts.append(f"{facts.n_heads} query heads over {facts.kv_heads} key/value head"
                 + ("s" if facts.kv_heads > 1 else "") + (" (grouped-query attention)" if facts.grouped else ""))
    parts.append(f"a mixture of {facts.n_experts} {facts.activation_name} experts, {facts.moe_top_k} per token"
                 if facts.is_moe else f"a {facts.activation_name} feed-forward")
    parts.append({"none": "no biases", "qkv only": "biases on q, k and v only", "all": "biases"}[facts.biases])
    parts.append("the embedding matrix reused as the unembedding" if facts.tied else "an unembedding of its own")
    scaled = []  # a Granite's multipliers, each a step or a formula of the walk
    if facts.embedding_multiplier != 1.0:
        scaled.append(f"the embeddings multiplied by {facts.embedding_multiplier:g}")
    if facts.attention_multiplier is not None:
        scaled.append(f"the scores multiplied by {facts.attention_multiplier:g} in place of ÷√d_k")
    if facts.residual_multiplier != 1.0:
        scaled.append(f"each sublayer's output multiplied by {facts.residual_multiplier:g} before it is added")
    if facts.logits_scaling != 1.0:
        scaled.append(f"the logits divided by {facts.logits_scaling:g}")
    if scaled:
        parts.append("Granite's multipliers: " + ", ".join(scaled))
    st.info(f"**{name}** is built like Llama, Mistral and Qwen: " + "; ".join(parts) + ". So the "
            "walk shows each norm as a step of its own, and each block only adds to the stream.")
if cfg.arch == "encoder-decoder":
    st.info(f"**{name}** is an encoder-decoder. The encoder reads your text; the decoder "
            "writes the answer one token at a time and reads the encoder's output through "
            "cross-attention. Here the decoder is fed `<bos>` followed by the model's own "
            "greedy answer (the most likely token at every step), so every stage, cross-attention "
            "included, has real numbers to show.")
    table([{"side": "encoder reads (your text)", "tokens": " ".join(trace.enc_tokens)},
           {"side": "decoder reads (<bos> + the model's answer)",
            "tokens": " ".join(trace.tokens)}], hide_index=True)
    in_the_notes("forward-walk")

with step("1 · Your text through the model, stage by stage"):
    blocks = None  # every block; a deep model's walk goes through the one chosen here
    if cfg.n_layers > fw.WALK_ALL_BLOCKS:
        block = st.slider("Block shown in the walk", 0, cfg.n_layers - 1, 0, key="fw_block")
        blocks = [block]
        st.caption(f"**{name}** has {cfg.n_layers} blocks that each take the same steps with "
                   f"their own weights. The walk goes from your text into block {block}, as "
                   f"the blocks before it left the stream, then on to the output after the "
                   f"last block: one block's numbers travel to your browser, not "
                   f"{cfg.n_layers}'s. Choose another block above.")
    steps = [fw.forward_steps(trace, head=h, token_strings=bundle.token_strings, blocks=blocks)
             for h in range(cfg.n_heads)]  # the attention steps differ by head; the rest is shared
    n = len(steps[0])
    instant(fwv.walk_chart, steps, step=max(1, view_value("step", n, 1)),
            head=view_value("head", cfg.n_heads - 1))
    numbers_table(chart_numbers.forward_walk(steps), key="fw_numbers")

    with st.expander("All steps at a glance"):
        table([{"step": i + 1, "what": s.title, "shape": s.shape}
               for i, s in enumerate(steps[0])], hide_index=True)

with step("2 · Where the parameters are"):
    counted = fw.grouped_params(cfg)
    total = fw.param_total(cfg)
    st.markdown(
        "Counting the learned numbers part by part, with the parameter counter from the worked "
        "exercises. Sinusoidal positions are a fixed formula, so they cost nothing; the output "
        "layer costs nothing when it reuses the embedding matrix (tied weights)."
        + (" In a MoE model the feed-forward part holds every expert plus the router, although "
           "each token only uses k of the experts." if cfg.is_moe else "")
    )
    vega(fwv.params_chart, counted, title=f"Parameters of {name} by part (total {total:,})")
    table([{"part": part, "parameters": count} for part, count in fw.param_parts(cfg).items()],
          hide_index=True)
    actual = fw.model_param_count(bundle.weights())
    if actual == total:
        st.success(f"Check: the model itself holds {actual:,} numbers, exactly the counted {total:,}.")
    else:
        st.warning(f"The counter says {total:,} but the model holds {actual:,}.")

    show_code(fw.forward_steps, fw.grouped_params, fw.model_param_count)
