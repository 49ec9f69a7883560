"""Lesson 17: long sequences. Quadratic cost, sparse patterns and their reach, a what-if on
the trained model, and Linformer's projection."""
import streamlit as st

from tfviz.experiments import long_sequences as ls
from tfviz.model.masks import receptive_field, reach_by_layer, sparse_pattern
from tfviz.ui.cache import coref_gap_notice, get_trace, read_text
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import attention_timings, pattern_whatifs
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.widgets import show_code, table, vega
from tfviz.viz import long_sequences as lv

name, text, bundle, cfg = lesson_context()

st.title("Long sequences")
st.markdown(
    "Every query of full attention scores every key: n tokens make n² scores per head and "
    "layer. Double the text and attention costs four times as much. Sparse patterns let each "
    "query read only some keys (a window, a few global tokens, a few random ones), so the "
    "cost grows as n·w; stacking layers lets information still travel far.")

with step("1 · The quadratic cost, measured here"):
    c1, c2 = st.columns(2)
    top = c1.select_slider("Longest sequence", [256, 512, 1024, 2048], value=1024, key="ls_top")
    w = c2.slider("Window w", 4, 64, 16, key="ls_cost_w")
    ns = [top // 8, top // 4, top // 2, top]
    costs = attention_timings(tuple(ns), w)
    c1, c2 = st.columns(2)
    with c1:
        vega(lv.cost_chart, tuple(ns), tuple(c.full_ms for c in costs),
             tuple(c.window_ms for c in costs), "time (ms)")
    with c2:
        vega(lv.cost_chart, tuple(ns), tuple(c.full_mb for c in costs),
             tuple(c.window_mb for c in costs), "peak memory (MB)")
    table(ls.cost_table(costs), hide_index=True)
    st.caption(
        "One head, 32 numbers per query, float32 (4 bytes a number). Solid lines are measured on "
        "this server's CPU (kept for ten minutes); the dashed lines grow as n² and as n·w and are "
        "scaled to pass through the measured point at the largest n, so a measured line that "
        "follows its dashed one grows as that rule says. Times are shared with other learners and "
        "jump around. Memory is measured by PyTorch's profiler: the most the call held at once. "
        "Full attention holds two n × n matrices (the scores and their softmax), about 2·n²·4 "
        "bytes; the window holds n × (w+1) scores plus copies of K and V padded by w rows, so it "
        "grows in a straight line with n. The count of scores is exact. "
        "bench/bench_attention_cost.py measures both at larger n (BENCHMARKS.md).")
    show_code(ls.full_attention, ls.window_attention)

with step("2 · Pattern explorer"):
    c1, c2, c3 = st.columns(3)
    n = c1.slider("Sequence length", 8, 64, 32, key="ls_n")
    window = c1.slider("Window w", 0, 8, 2, key="ls_w")
    dilation = c2.slider("Dilation d", 1, 4, 2, key="ls_d")
    n_global = c2.slider("Global tokens", 0, 4, 1, key="ls_g")
    n_random = c3.slider("Random keys (BigBird)", 0, 4, 2, key="ls_r")
    stride = c3.slider("Stride (Sparse Transformer)", 1, 8, 4, key="ls_s")
    seed = c3.number_input("Random seed", 0, 999, 0, key="ls_seed")
    pattern = dict(window=window, dilation=dilation, n_global=n_global, n_random=n_random,
                   stride=stride, seed=int(seed))
    titles = {"sliding": "sliding window", "dilated": "dilated window", "global": "global (Longformer)",
              "bigbird": "BigBird", "strided": "strided (Sparse Transformer)", "full": "full"}
    cols = st.columns(3)
    for idx, kind in enumerate(["sliding", "dilated", "global", "bigbird", "strided", "full"]):
        with cols[idx % 3]:
            vega(lv.mask_chart, ls.causal_pattern(kind, n, **pattern), titles[kind])
    st.caption("Rows are queries, columns keys, dark cells allowed; the causal triangle is "
               "applied as in a decoder.")

    st.subheader("How far the last token reaches")
    # The options are the titles themselves (a format_func over dict.get cannot map a title back to
    # its key, which breaks setting the widget by its label)
    kind = {t: k for k, t in titles.items()}[st.selectbox("Pattern", list(titles.values()), key="ls_kind")]
    n_layers = 6
    rows = reach_by_layer(kind, n, n_layers, **pattern)
    vega(lv.reach_chart, rows)
    reach = ls.reach_table(kind, n, n_layers, window, dilation,
                           **{k: v for k, v in pattern.items() if k not in ("window", "dilation")})
    table({"layers": reach.layers, "reached by composing masks": reach.composed,
           "L·w": reach.lw, "L·d·w": reach.ldw}, hide_index=True)
    st.caption("Each row is one more layer; red cells are the positions the last token has read "
               "by then. The reach is computed by multiplying the boolean masks layer after layer, not by a formula: a sliding "
               f"window follows L·w and a dilated one L·d·w until the start of the {n} tokens stops "
               "them; global tokens and strides reach the start in one or two layers.")
    show_code(reach_by_layer, receptive_field, sparse_pattern)

with step(f"3 · What if {name} read through a sparse pattern?"):
    if cfg.arch == "encoder-decoder":
        st.info("This model is an encoder-decoder; the what-if runs its decoder's self-attention only "
                "on decoder-only models. Pick gpt-tiny in the sidebar.")
    else:
        st.caption(f"{name} was trained with full attention. Here copies of it read your text "
                   "through each pattern, with the explorer's settings above: nothing is "
                   "retrained, so this shows what the mask alone changes. The shared model is "
                   "never touched.")
        reading = read_text(name, text)
        runs = pattern_whatifs(name, text, tuple(sorted(pattern.items())))
        tokens = tuple(bundle.token_strings(reading.ids))
        c1, c2 = st.columns(2)
        layer = c1.slider("Layer", 0, cfg.n_layers - 1, cfg.n_layers - 1,
                          key="ls_layer") if cfg.n_layers > 1 else 0
        head = c2.slider("Head", 0, cfg.n_heads - 1, 0, key="ls_head") if cfg.n_heads > 1 else 0
        for col, shown in zip(st.columns(2), ("full", kind)):
            with col:
                vega(lv.attention_map, runs[shown].patterns[layer, head], tokens,
                     f"{titles[shown]}: layer {layer}, head {head}")
        st.caption("Rows are queries, columns keys; a darker cell is more weight. Under a pattern "
                   "a query's forbidden keys get weight 0 and its other weights grow so the row "
                   "still adds up to 1. Pick the pattern in the explorer above.")
        if cfg.arch == "encoder":
            st.info(f"{name} is an encoder: it fills in hidden words instead of predicting the "
                    "next one, so there is no next-token loss or answer to compare here. Pick "
                    "gpt-tiny in the sidebar for those.")
        else:
            answers = ls.asks_for_it(text, tokens) and reading.notice is None
            if answers and (gap_note := coref_gap_notice(name, text)):
                st.info(gap_note)  # why "the teacher ..." gets a noun it was trained on
            table(ls.whatif_table(runs, lambda i: bundle.token_strings([i])[0], answers),
                  hide_index=True)
            notes = ["Loss: the mean surprise (cross-entropy, in nats) of the model at each "
                     "next word of your text; lower is better."]
            if len(reading.ids) < 2:
                notes.append("Your text is a single token, so there is no next token to "
                             "predict and no loss (shown as None).")
            if answers:
                notes.append("Your text ends with \"refers to the\", so the model's most "
                             "probable next word is its answer to what \"it\" refers to.")
            elif reading.notice:
                notes.append("Your text was cut to the model's context, so its last words are "
                              "not read and the model's answer is not shown.")
            else:
                notes.append("To see the model's answer to what \"it\" refers to, write an "
                             "\"it\" sentence with two nouns and end it with \"It refers to "
                             "the\" (the sidebar example "
                             "\"Coreference, with the probe\" does): its most probable next "
                             "word is then its answer.")
            st.caption(" ".join(notes))
        show_code(ls.with_pattern, ls.pattern_whatifs, ls.next_token_loss)

with step("4 · Linformer: project keys and values to k rows"):
    st.markdown(
        "Linformer multiplies K and V by fixed (k × n) matrices, so each query scores k rows "
        "instead of n keys: cost n·k. Here the projections are random and seeded, applied to "
        f"{name}'s real queries, keys and values of one layer, without the causal mask (Linformer "
        "is an encoder method). **This is not a trained Linformer**: the model never learned to "
        "work through a projection, so the error measures what the approximation itself costs.")
    if cfg.arch == "encoder-decoder":
        st.info("Pick a decoder or encoder model (gpt-tiny, bert-tiny) to run Linformer on its "
                "self-attention.")
    else:
        base = get_trace(name, text)
        q, k, v = (base[nm, layer] for nm in ("q", "k", "v"))
        n_tok = q.shape[0]
        rows_k = st.slider("Projected rows k", 1, max(2, n_tok), max(1, n_tok // 2), key="ls_k")
        lin = ls.linformer(q, k, v, rows_k)
        vega(lv.linformer_chart, lin.maps[head], tokens)
        ks = list(range(1, n_tok + 1))
        best = ls.best_rank_errors(q, k, v)
        vega(lv.error_chart, tuple(ks), tuple(ls.linformer(q, k, v, kk).error for kk in ks),
             tuple(float(e) for e in best))
        st.caption(
            f"The map: layer {layer}, head {head} (the sliders above), each query's weights over "
            f"the k = {rows_k} projected rows. The chart: relative output error over all heads "
            "of the layer (the size of the difference from full attention's output, divided by "
            f"the size of that output; 1 is as far off as an output of zeros). At k = {rows_k}: "
            f"random projection (orange) {lin.error:.3f}, closest rank-k map (blue) "
            f"{best[min(rows_k, n_tok) - 1]:.3f}. The random projection stays far from 0 even at "
            "k = n: it mixes the keys instead of keeping them apart. The blue line is a "
            "yardstick: each head's real attention matrix cut to its k largest singular values "
            "(truncated SVD, the closest matrix of rank k), times V. A method that reads k "
            "projected rows can only make maps of rank k or less, so this line shows roughly "
            "what well-chosen projections could reach; it is 0 at k = n. Linformer learns its "
            "projections, and the model learns to work through them, during training, so a "
            "trained one does far better than the orange line.")
        show_code(ls.linformer, ls.projection, ls.best_rank_errors)

in_the_notes("long-sequences")
