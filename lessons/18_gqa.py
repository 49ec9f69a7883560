"""Lesson 18: multi-query and grouped-query attention: fewer K/V heads, a smaller KV cache."""
import streamlit as st

from tfviz.analysis import gqa
from tfviz.decoding.memory import config_kv_cache_bytes, human_bytes
from tfviz.experiments.gqa_decode import cache_of_text, decode_times, every_kv_head, timeable
from tfviz.facts import BIG_MODEL
from tfviz.ui.cache import get_bundle, get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.decoding_cache import decode_timing, own_decode_timing, text_cache
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import instant, view_value
from tfviz.ui.code import show_code
from tfviz.ui.tables import table
from tfviz.viz import heads as ia

sidebar_model, text, sidebar_bundle, sidebar_cfg = lesson_context()  # the sidebar's text; three models of its own
sidebar_facts = sidebar_bundle.facts
# the sidebar's model shares K/V heads (llama-tiny, a Llama folder): step 5 shows its own cache
own_grouped = sidebar_cfg.arch == "decoder" and sidebar_facts.grouped

st.title("MQA and GQA")
st.markdown(
    "When a decoder writes one token at a time it keeps every earlier token's keys and values "
    "(the KV cache, lesson 16). The weights stay the same size, but the cache grows with every "
    "token and every sequence in the batch, and with long texts or large batches it can outgrow "
    "them (step 3 finds where). Multi-query "
    "attention (MQA) keeps all the query heads but gives them one shared key head and one shared "
    "value head. Grouped-query attention (GQA) sits in between: the query heads are split into "
    "groups and each group shares one K/V head. Below, gpt-tiny (ordinary multi-head attention, "
    "4 K/V heads) is compared with two copies trained on the same data, with the same seeds and "
    "steps: gqa-tiny (2 K/V heads) and mqa-tiny (1)."
)
if own_grouped:
    st.info(f"Steps 1 to 4 compare **gpt-tiny**, **gqa-tiny** and **mqa-tiny**. The sidebar's model, "
            f"{sidebar_model}, shares K/V heads too ({sidebar_facts.n_heads} query heads over "
            f"{sidebar_facts.kv_heads}): step 5 measures its own cache.")
elif sidebar_model not in ("gpt-tiny", "gqa-tiny"):
    st.info(f"This lesson always compares **gpt-tiny**, **gqa-tiny** and **mqa-tiny**. The "
            f"sidebar's model, {sidebar_model}, is used again on the other pages; your text is "
            "used here too.")
in_the_notes("gqa")

bundles = {variant: get_bundle(model) for variant, model in gqa.VARIANTS}

with step("1 · The shapes: the queries stay, the keys and values shrink"):
    trace = get_trace("gqa-tiny", text)
    n = len(trace.tokens)
    shapes = [gqa.kv_shapes(v, b.config, n) for v, b in bundles.items()]
    st.table({"variant": [s.variant for s in shapes],
              "model": [bundles[s.variant].name for s in shapes],
              "Q per layer (heads × tokens × d_head)": [" × ".join(map(str, s.q)) for s in shapes],
              "K and V per layer (K/V heads × tokens × d_head)": [" × ".join(map(str, s.kv)) for s in shapes],
              "query heads per K/V head": [s.group for s in shapes],
              "KV cache per token (fp32, bytes)": [s.cache_bytes_per_token for s in shapes]})
    st.caption(f"Your text has {n} tokens in these models. Query head h reads K/V head "
               "h ÷ (query heads per K/V head), rounded down: in GQA heads 0 and 1 share K/V head 0, "
               "heads 2 and 3 share K/V head 1. The model copies each K/V head to its group "
               "(repeat_interleave) and then runs ordinary attention.")
    show_code(gqa.kv_head_of, gqa.kv_shapes)

with step("2 · One map per query head, two K/V heads"):
    st.caption("Each map is one query head of gqa-tiny on your text; its title names the K/V head it "
               "shares. Heads of one group compare their own queries with the same keys, so they may "
               "still look at different tokens. Move the layer and head sliders under the chart: the "
               "maps change in your browser at once.")
    cfg = bundles["GQA"].config
    patterns = trace.stack("pattern")  # (layers, heads, n, n)
    instant(ia.attention_maps, patterns, trace.tokens, names=gqa.head_names(cfg),
            layer=view_value("layer", cfg.n_layers - 1), head=view_value("head", cfg.n_heads - 1),
            groups=[gqa.kv_head_of(h, cfg.n_heads, cfg.kv_heads) for h in range(cfg.n_heads)])
    if not bundles["GQA"].trained:
        st.warning("gqa-tiny is not trained on this installation (no assets/gqa-tiny): these maps "
                   "come from freshly initialised weights. `python -m tfviz.train --preset gqa-tiny` "
                   "trains it.")
    show_code(gqa.head_names)

with step("3 · The trade-off, measured"):
    rows = [gqa.trade_off(v, b) for v, b in bundles.items()]
    table({"variant": [r.variant for r in rows], "model": [r.model for r in rows],
           "K/V heads": [r.kv_heads for r in rows],
           "KV cache per token (bytes)": [r.cache_bytes_per_token for r in rows],
           "validation loss": [r.val_loss for r in rows],
           "parameters": [r.parameters for r in rows]},
          hide_index=True,
          column_config={"validation loss": st.column_config.NumberColumn(format="%.4f")})
    st.caption("Cache bytes: 2 (K and V) × 3 layers × K/V heads × 16 values × 4 bytes, per token. "
               "Validation loss: cross-entropy per token on the same held-out story sentences for all "
               "three, as each bundle's manifest records it (empty if the model is not trained). "
               "Fewer K/V heads also means smaller W^K and W^V, hence fewer parameters.")
    spread = gqa.loss_spread(rows)
    if spread is not None:
        st.markdown(
            f"Here the three losses lie within **{spread:.4f}** nats per token of each other: one "
            "training run each, too close to rank them. Our models are small and our sentences "
            "simple, so even one K/V head holds what they need.")
    st.markdown(
        "On large models the gap is real. Ainslie et al. (2023), who introduced GQA, converted "
        "trained multi-head T5 models to fewer K/V heads and trained them a little longer: with "
        "one K/V head (MQA) quality dropped, while GQA with a few K/V heads came close to the "
        "multi-head model's quality and decoded almost as fast as MQA. Their conversion, which they "
        "call uptraining, is cheap: each group's new key and value projections are the average of "
        "the group's old heads' projections, and the converted model goes on pretraining for about "
        "5% of the steps it was first trained for. Our gqa-tiny and mqa-tiny were trained from "
        "scratch instead, so this page shows no uptraining.")
    c1, c2 = st.columns(2)
    context = c1.number_input("Context length (tokens)", 1, 1_000_000, 2048, step=512, key="gqa_ctx")
    batch = c2.number_input("Sequences in the batch", 1, 1024, 1, key="gqa_batch")
    table({"variant": [r.variant for r in rows],
           "KV cache for this context and batch": [
               human_bytes(r.cache_bytes_per_token * int(context) * int(batch)) for r in rows]},
          hide_index=True)
    st.caption("The cache grows with every token kept and every sequence in the batch; the weights "
               "do not. Lesson 16 does the same sum for published models.")
    st.subheader("Where the cache outgrows the weights")
    crossings = [gqa.config_crossing(b.config) for b in bundles.values()]
    crossings += [gqa.llama_crossing(s) for s in gqa.LLAMA_2]
    table([c.row() for c in crossings], hide_index=True)
    seven = crossings[-2]
    st.caption(
        f"The tokens are counted over the whole batch: one long sequence or many short ones. Our "
        "models count in fp32, the Llama 2 models (Touvron et al. 2023; parameters counted from "
        f"their published sizes) in fp16. {seven.model} at its full context of {seven.context:,} "
        f"tokens holds {human_bytes(seven.full_context_bytes)} of cache against "
        f"{human_bytes(seven.weight_bytes)} of weights; only past about "
        f"{seven.tokens:,.0f} cached tokens, more than {int(seven.full_sequences)} full "
        "sequences at once, is the cache the larger. Fewer K/V heads push that point further out.")
    show_code(gqa.trade_off, human_bytes, gqa.llama_params, gqa.llama_crossing, gqa.config_crossing)

def timing_table(timing) -> None:
    """One row per variant: its K/V heads, cache bytes a token and ms a new token at the
    shortest and longest context timed (steps 4 and 5 show the same table)."""
    short, long = timing.contexts[0], timing.contexts[-1]
    table({"variant": [r.variant for r in timing.rows], "model": [r.model for r in timing.rows],
           "K/V heads": [r.kv_heads for r in timing.rows],
           "KV cache per token (bytes)": [r.cache_bytes_per_token for r in timing.rows],
           f"ms per new token after {short} tokens": [r.ms_per_token[0] for r in timing.rows],
           f"ms per new token after {long} tokens": [r.ms_per_token[-1] for r in timing.rows]},
          hide_index=True,
          column_config={f"ms per new token after {c} tokens": st.column_config.NumberColumn(format="%.3f")
                         for c in (short, long)})


with step("4 · Decode time per token, measured on this machine"):
    timing = decode_timing()
    short, long = timing.contexts[0], timing.contexts[-1]
    timing_table(timing)
    threads = f"{timing.threads} torch thread" + ("s" if timing.threads > 1 else "")
    st.caption(
        f"Measured on this server ({timing.cpu}) at {timing.measured_at}, the first time this page "
        "ran here, and shared by every learner since. Each model reads the same text: a prompt of "
        f"{short} or {long} tokens, then {timing.new_tokens} more tokens one at a time with the KV "
        f"cache; their time divided by {timing.new_tokens}, the median of {timing.repeats} rounds, "
        f"on {threads} as the server runs every page. Other work on the same machine moves these "
        "numbers; the bytes are counted from the cache's own tensors.")
    st.markdown(" ".join(gqa.decode_reading(timing)))
    mha = bundles["MHA"].config
    st.markdown(
        "Where a step's time goes at this size: hundreds of small torch operations, the same for "
        "all three, as Python calls three blocks of modules that multiply 64-wide vectors by small "
        "matrices; each takes microseconds whatever the cache holds. MHA's "
        f"whole cache at {mha.max_seq_len} tokens is "
        f"{human_bytes(config_kv_cache_bytes(mha, mha.max_seq_len))}, small enough to stay in the "
        "processor's own caches. And our attention copies each K/V head to its group before "
        "ordinary attention (step 1), so past their smaller key and value projections GQA and MQA "
        "do MHA's attention arithmetic, plus that copy. A large "
        "model decodes differently: every new token must read all the weights and the whole cache "
        "from memory, and with long texts or many sequences the cache is a large part of those "
        "bytes. There, fewer K/V heads mean fewer bytes to read per token, and that is where GQA's "
        "and MQA's speed comes from.")
    show_code(decode_times, gqa.decode_reading)

if own_grouped:
    with step(f"5 · The cache of {sidebar_model}, the sidebar's model"):
        own = gqa.model_cache(sidebar_model, sidebar_cfg)
        st.markdown(
            f"{gqa.sharing_sentence(own.n_heads, own.kv_heads)} Every token it reads adds, in each of "
            f"its {own.n_layers} layers, a key and a value for each K/V head: 2 × {own.n_layers} × "
            f"{own.kv_heads} × {own.d_head} = **{own.values_per_token:,} numbers**, "
            f"{own.per_token(4):,} bytes in float32 as tfviz runs it, {own.per_token(2):,} in "
            f"16-bit floats, as checkpoints are usually stored and GPUs run them. With a K/V head "
            f"for every query head, as "
            f"multi-head attention has, it would keep {own.group}× as much.")
        table(gqa.model_cache_rows(own), hide_index=True, static=True)
        held, tokens = text_cache(sidebar_model, text)
        st.caption(
            f"Counted from the cache's own tensors after {sidebar_model} read your text: "
            f"{held:,} bytes for {tokens} tokens, {held / tokens:,g} per token"
            + (", as the sum says. " if held == own.per_token(4) * tokens else
               f", not the {own.per_token(4):,} the sum says. ") +
            f"“Full context” is {own.context:,} tokens, the most {sidebar_model} reads; the cache "
            "grows with every token and every sequence of a batch, the weights do not.")
        if sidebar_facts.n_params <= BIG_MODEL and timeable(sidebar_cfg):
            timing = own_decode_timing(sidebar_model)
            short, long = timing.contexts[0], timing.contexts[-1]
            timing_table(timing)
            st.caption(
                f"{sidebar_model} against its multi-head twin: the same weights with each K/V head "
                f"copied for the {own.group} query heads of its group, so it writes exactly the same "
                f"tokens while its cache holds {own.n_heads} heads a layer. Timed as in step 4 "
                f"({timing.new_tokens} new tokens after a prompt of {short} or {long}, the median of "
                f"{timing.repeats} rounds, on {timing.cpu}, at {timing.measured_at}); the bytes are "
                "counted from each cache's own tensors.")
            st.markdown(" ".join(gqa.decode_reading(timing)))
        else:
            st.caption(
                f"Decode time is not measured here for {sidebar_model}: with "
                f"{sidebar_facts.n_params:,} parameters, timing it beside a multi-head twin would "
                f"hold this shared server for minutes and take another "
                f"{human_bytes(4 * sidebar_facts.n_params)} of its memory. Its bytes above are "
                "exact; step 4 says where the time of a step goes.")
        show_code(gqa.model_cache, gqa.model_cache_rows, cache_of_text, every_kv_head)
