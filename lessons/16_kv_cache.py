"""Lesson 16: the KV cache. Generation from the learner's prompt with and without it, timed on
this CPU; the cache's tensors growing; the new token's 1 × t row; the cost over lengths beside
the formula; a memory calculator for published models."""
import streamlit as st

from tfviz.analysis import kv_cache_cost as kcost
from tfviz.decoding import PUBLISHED_MODELS, config_kv_cache_bytes
from tfviz.decoding.memory import human_bytes
from tfviz.decoding.generate import continuation_text
from tfviz.experiments import kv_cache as kc
from tfviz.experiments import kv_cache_lengths as klen
from tfviz.ui import decoding_cache as runs
from tfviz.ui.cache import get_bundle
from tfviz.lab.opened import is_run_name, prompt_part, room_after
from tfviz.ui.context import lesson_context
from tfviz.ui.model_offer import offer
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import fit_marker, instant, linked_value
from tfviz.ui.code import show_code
from tfviz.ui.pickers import prompt_box, prompt_ids
from tfviz.ui.tables import table
from tfviz.viz import kv_cache as ikv

FALLBACK = "gpt-tiny"  # the page needs a decoder; encoders and the encoder-decoder use this one

sidebar_model, text, _, sidebar_cfg = lesson_context()
# A decoder generates: gpt-tiny, moe-tiny, or a training-lab run's decoder (tfviz.ui.own_model).
name = sidebar_model if sidebar_cfg.arch == "decoder" else FALLBACK
bundle = get_bundle(name)
facts = bundle.facts  # how its steps are timed, and how large it is
cfg = bundle.config
L, H, Hkv, dh = cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.d_head

st.title("The KV cache")
st.markdown(
    "A decoder writes one token at a time, and each new token must attend to every token before "
    "it. Those earlier tokens' keys and values never change: a causal mask means no earlier "
    "token ever looks at a later one, so nothing a new token brings can alter them. So instead "
    "of running the whole text through the model again at every step, the model can **keep** "
    "each layer's keys and values and, at each step, compute only the newest token's query, key "
    "and value. That store is the **KV cache**. It trades memory for time.")
if sidebar_model != name:
    st.info(f"**{sidebar_model}** is not a decoder: it does not write text one token at a time, so "
            f"this page uses **{name}**, our small decoder ({L} layers, {H} heads of {dh}). The "
            f"other pages keep using {sidebar_model}.")
    offer(name, key="kv_switch")
in_the_notes("kv-cache")

# --- 1 · the idea ---------------------------------------------------------------------------
with step("1 · One new row instead of a whole matrix"):
    st.markdown(
        f"Say t tokens have been read. **Without a cache**, the step runs all t tokens through every "
        f"layer: Q, K and V are t × {dh} per head, and the scores QKᵀ are a whole t × t matrix per "
        f"head, although only its last row is new. **With the cache**, the step runs the newest token "
        f"only: its query q is 1 × {dh}, its key and value are appended to the stored ones, and q "
        f"Kᵀ is a single 1 × t row per head. In {name}, every layer stores a key and a value for "
        f"each of its {Hkv} K/V heads, each {dh} numbers long, for every token read so far.")
    st.latex(r"\begin{gathered}\underbrace{q_t}_{1\times d_{head}}\;\underbrace{K_{\le t}^{\top}}_{d_{head}\times t}"
             r"=\underbrace{s_t}_{1\times t},\qquad a_t=\mathrm{softmax}\!\left(%s"  # the model's own scale
             r"\right)\underbrace{V_{\le t}}_{t\times d_{head}}\\"  # two lines: one is too wide at 32 px
             rf"\text{{cache: }}{L}\ \text{{layers}}\times 2\times {Hkv}\ \text{{K/V heads}}\times t\times {dh}"
             r"\end{gathered}" % bundle.facts.scaled_tex("s_t").replace("d_k", "d_{head}"))

# --- 2 · your prompt, both ways ---------------------------------------------------------------
with step("2 · Your prompt, generated both ways"):
    prompt, prompt_note = prompt_box("kv", prompt_part(text) if is_run_name(name) else text)
    left, right = st.columns([3, 1])
    if is_run_name(name):  # a lab run reads few tokens: room for the answer, the prompt kept whole
        room = room_after(bundle, prompt)
        new_tokens = left.slider("New tokens at most", 1, max(room, 2), room, key=f"kv_new_run{room}")
    else:
        new_tokens = left.slider("New tokens at most", 1, 40, 20, key="kv_new")
    if right.button("Measure again", key="kv_again", icon=":material/timer:",
                    help="Time both runs once more (the times change with the server's load)."):
        st.session_state["_kv_run"] = st.session_state.get("_kv_run", 0) + 1
    run = st.session_state.get("_kv_run", 0)

    ids = prompt_ids(bundle, prompt, prompt_note, new_tokens,
                     "This section waits for it; the cost over lengths and the memory "
                     "calculator below work without it.")

    if ids is not None:
        side = runs.side_by_side(name, ids, new_tokens, run)
        steps = side.steps
        said = bundle.tokenizer.decode(side.prompt_ids)
        c1, c2 = st.columns(2)
        c1.markdown("**With the KV cache**")
        c1.code(said + continuation_text(bundle, side.prompt_ids, side.cached_ids), language=None,
                wrap_lines=True)
        c2.markdown("**Re-reading everything at each step**")
        c2.code(said + continuation_text(bundle, side.prompt_ids, side.uncached_ids), language=None,
                wrap_lines=True)
        logit_gap, row_gap = side.logit_gap, side.row_gap
        if side.identical:
            st.success(
                f"**The same {len(side.cached_ids)} tokens, compared id by id** (each run chose its "
                f"own token at each step, greedily). At no step did the two runs' logits differ by "
                f"more than {logit_gap:.1e}: float32 rounding, because the cached run adds the same "
                f"products in another order. The new token's attention row, computed from the cached "
                f"keys, matches the last row of the full run's attention pattern to {row_gap:.1e} in "
                f"every layer and head.", icon=":material/check_circle:")
        else:
            st.warning(
                f"**The two runs part at new token {side.first_difference + 1}.** Their logits "
                f"differed by up to {logit_gap:.1e} at some step, and a near-tie between two "
                "candidates went the other way: float32 rounding, because the cached run adds "
                "the same products in another order.", icon=":material/warning:")
        m1, m2, m3 = st.columns(3)
        m1.metric("Total time with the cache", f"{side.ms_cached:.1f} ms")
        m2.metric("Total time re-reading", f"{side.ms_uncached:.1f} ms")
        m3.metric("Re-reading takes", "–" if side.slowdown is None else f"{side.slowdown:.2f}×")
        labels = bundle.token_strings(list(side.prompt_ids + side.cached_ids))
        # opens on step 1, the first one that reads the cache; moving right grows it. Laid out
        # for new_tokens steps, so a prompt of another length swaps its data (length-free)
        instant(ikv.steps_chart, steps, side.rows, labels, (L, Hkv, dh), most=new_tokens,
                step=linked_value("step"))
        st.caption(
            "Move **Step** under the chart: the browser shows that step's times, the cache as it "
            "stands after it, and the row of weights the newest token's query puts on every key. "
            "Step 0 reads the whole prompt in both runs (the cache starts empty); from step 1 on the "
            f"cached run feeds one token, the other all t. Each time is {facts.timing} of the "
            "step, measured live on this server, shared with other learners, so the times jump"
            + (": with a model this small most of a step is fixed overhead (Python, one call per "
               "layer), not arithmetic." if facts.size_class != "large" else
               f". At {facts.n_params / 1e6:,.0f}M parameters a step is mostly arithmetic and "
               "memory traffic, not Python overhead.")
            + " Section 3 shows where the difference grows.")
        table(side.table(bundle.token_strings), hide_index=True)
        st.caption(f"Cache bytes are counted from the cache's own tensors: 2 × {L} × {Hkv} × t × {dh} "
                   f"numbers of 4 bytes, {config_kv_cache_bytes(cfg, 1):,} bytes per token. "
                   + (f"Generation stopped when the model wrote {bundle.token_strings(side.cached_ids[-1:])[0]}."
                      if side.stop_reason == "eos" else ""))
        show_code(kc.side_by_side, kc.new_query_rows)
        # fits the step slider to the steps taken (drawn last: no gap)
        fit_marker({"step": {"n": len(steps), "default": min(1, len(steps) - 1)}})

# --- 3 · how the cost grows -------------------------------------------------------------------
with step("3 · How the cost grows with t"):
    st.markdown(
        "What one step computes, in multiply-adds of its matrix products. With the cache, the step "
        "reads 1 token: the projections, the feed-forward block and the LM head cost the same at "
        "every step, and only the attention term grows, as t. Without it, the step reads all t "
        "tokens: everything else grows as t, and the attention scores, a t × t matrix per head, as t².")
    st.latex(r"\text{with cache: } c + 2\,L\,H\,d_{head}\,t \;=\; O(t)\qquad\qquad"
             r"\text{without: } c\,t + 2\,L\,H\,d_{head}\,t^2 \;=\; O(t^2)")
    st.caption(f"c is the cost of one token outside attention in {name}: "
               f"{kcost.step_macs(cfg, 1, True)['rest']:,} multiply-adds (projections, "
               + (f"the router and all {cfg.n_experts} experts, which tfviz runs on every token "
                  f"although only {cfg.moe_top_k} count, " if cfg.is_moe else "feed-forward, ")
               + f"LM head over {cfg.vocab_size} tokens). With d_head = {dh}, the t² term passes c·t only "
               f"past t ≈ {kcost.step_macs(cfg, 1, True)['rest'] // (2 * L * H * dh):,} tokens, so a "
               "small model shows the quadratic late.")
    choices, start = klen.length_choices(cfg)
    top = st.select_slider("Longest length timed", choices, value=start,
                           key="kv_top",
                           help=f"{name} reads {cfg.max_seq_len} tokens. Longer lengths time a copy "
                                "with a longer position table: its outputs there mean nothing (it was "
                                "never trained on them), but the arithmetic, and so the time, is real.")
    cost = runs.cost(name, top, run)
    instant(ikv.cost_chart, [c.t for c in cost], [c.ms_cached for c in cost], [c.ms_uncached for c in cost],
            [c.macs_cached for c in cost], [c.macs_uncached for c in cost])
    table([c.row() for c in cost], hide_index=True)
    last = cost[-1]
    st.caption(
        f"One step at t = {last.t}: the formula counts {last.macs_ratio:,.0f}× more "
        f"multiply-adds without the cache; the clock says {last.ms_ratio:,.1f}×. "
        f"Each time is {facts.timing} (after one untimed run) of a single step, taken live on "
        "this server's CPU; the tokens are a fixed sentence repeated to length t, since which "
        "tokens they are changes nothing in the time. "
        + ("The clock gains less than the count because a one-token step of a model this small is "
           "mostly fixed overhead; a large model's step is all arithmetic and memory traffic. "
           if facts.size_class != "large" else
           f"At {facts.n_params / 1e6:,.0f}M parameters a step is mostly arithmetic and memory "
           "traffic, so the clock follows the count more closely than a tiny model's does. ")
        + "bench/bench_generate.py times whole generations (BENCHMARKS.md).")
    show_code(kcost.step_macs, klen.cost_over_lengths, klen.stretched)

# --- 4 · memory ------------------------------------------------------------------------------
with step("4 · What the cache costs in memory"):
    st.markdown(
        "The time saved is paid for in memory: every layer keeps a key and a value per K/V head "
        "and token, for every sequence in the batch. For large models and long contexts the cache "
        "can outgrow the weights. Grouped-query attention (lesson 18) shrinks it by sharing K/V "
        "heads among query heads.")
    st.latex(r"\text{bytes} = 2 \times \text{layers} \times \text{K/V heads} \times d_{head} \times "
             r"\text{tokens} \times \text{batch} \times \text{bytes per value}")
    OWN = "your own numbers"
    presets = {m.name: m for m in PUBLISHED_MODELS}

    def _fill_from_model() -> None:
        m = presets.get(st.session_state.get("kv_model"))
        if m is not None:
            st.session_state.update(kv_layers=m.n_layers, kv_heads=m.n_kv_heads, kv_dhead=m.d_head,
                                    kv_tokens=m.cached_tokens)

    first = PUBLISHED_MODELS[2]  # Llama-2-7B: the worked example below
    for key, value in (("kv_layers", first.n_layers), ("kv_heads", first.n_kv_heads),
                       ("kv_dhead", first.d_head), ("kv_tokens", first.cached_tokens), ("kv_batch", 1)):
        st.session_state.setdefault(key, value)
    pick = st.selectbox("Model", [*presets, OWN], index=2, key="kv_model", on_change=_fill_from_model,
                        help="Picking a model fills in its sizes, as its paper gives them; then change any.")
    c1, c2, c3 = st.columns(3)
    layers = c1.number_input("Layers", 1, 1000, key="kv_layers")
    kv_heads = c2.number_input("K/V heads", 1, 1024, key="kv_heads")
    d_head = c3.number_input("d_head", 1, 4096, key="kv_dhead")
    c4, c5, c6 = st.columns(3)
    tokens = c4.number_input("Context (tokens)", 1, 10_000_000, key="kv_tokens")
    batch = c5.number_input("Batch (sequences)", 1, 4096, key="kv_batch")
    dtype = c6.selectbox("Bytes per value", list(kcost.BYTES_PER_VALUE), index=1, key="kv_dtype")
    mem = kcost.cache_memory(int(layers), int(kv_heads), int(d_head), int(tokens), int(batch),
                             kcost.BYTES_PER_VALUE[dtype])
    st.metric("KV cache", human_bytes(mem.total))
    st.markdown(f"{mem.product} = **{mem.total:,} bytes** = {human_bytes(mem.total)} "
                f"({mem.total / 1e9:,.3g} GB, decimal).")
    if pick in presets and presets[pick].n_kv_heads != presets[pick].n_heads:
        m = presets[pick]
        st.caption(f"{m.name} has {m.n_heads} query heads sharing {m.n_kv_heads} K/V heads: with one "
                   f"K/V head per query head its cache would be {m.n_heads // m.n_kv_heads}× larger.")
    if pick in presets and presets[pick].window is not None:
        m = presets[pick]
        st.caption(f"{m.name} reads up to {m.context:,} tokens, but each token attends only to the "
                   f"last {m.window:,} (a sliding window). Older keys and values are never read "
                   f"again, so a rolling cache holds at most {m.cached_tokens:,} tokens' worth, "
                   "however long the text: the calculator starts from that, and so does its row "
                   "below.")
    table(kcost.published_table(), hide_index=True,
          column_order=["model", "layers", "query heads", "K/V heads", "d_head", "context",
                        "tokens cached", "per token", "at full context", "source"],
          column_config={"bytes per token": None, "bytes at full context": None})  # presenter view too
    st.caption(f"Sizes as the papers give them; fp16 (2 bytes per value), one sequence. “At full "
               "context” is the cache for the tokens cached: the whole context, or the sliding "
               "window where a model has one. For scale: "
               f"{name} holds {config_kv_cache_bytes(cfg, 1):,} bytes per token in fp32, "
               f"{human_bytes(config_kv_cache_bytes(cfg, cfg.max_seq_len))} at its full context "
               f"of {cfg.max_seq_len}.")
    show_code(kcost.cache_memory, kcost.published_table)
