"""Lesson 17: long sequences. Quadratic cost, sparse patterns and their reach, a what-if on
the trained model, and Linformer's projection."""
import numpy as np
import streamlit as st

from tfviz.experiments import long_sequences as ls
from tfviz.analysis.coref import antecedent_gap
from tfviz.model.masks import receptive_field, reach_by_layer, sparse_pattern
from tfviz.trace import run_with_trace
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import attention_timings
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
    vega(lv.cost_chart, tuple(c.n for c in costs), tuple(c.full_ms for c in costs),
         tuple(c.window_ms for c in costs))
    table({"n": [c.n for c in costs], "full (ms)": [round(c.full_ms, 2) for c in costs],
           "window (ms)": [round(c.window_ms, 2) for c in costs],
           "scores held, full (n²)": [c.full_cells for c in costs],
           "scores held, window (n·(w+1))": [c.window_cells for c in costs]}, hide_index=True)
    st.caption("Measured on this server's CPU, one thread per operation as the server runs every "
               "model (kept for ten minutes), shared with other learners, so the times jump around; the count of scores held is exact. bench/bench_attention_cost.py measures "
               "it properly (BENCHMARKS.md).")
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
        st.caption(f"{name} was trained with full attention. Here a copy runs with the pattern "
                   "chosen above: nothing is retrained, so this shows what the mask alone breaks.")
        base = get_trace(name, text)
        ids = list(bundle.read(text).ids)
        model = ls.with_pattern(bundle.model, kind, **pattern)
        sparse = run_with_trace(model.eval(), ids, tokens=bundle.token_strings(ids))
        L = cfg.n_layers - 1
        c1, c2 = st.columns(2)
        with c1:
            vega(lv.mask_chart, np.round(base["pattern", L][0], 4) > 0.02, "full (weights > 0.02)")
        with c2:
            vega(lv.mask_chart, np.round(sparse["pattern", L][0], 4) > 0.02,
                 f"{titles[kind]} (weights > 0.02)")
        loss_full = ls.next_token_loss(base["logits"], ids)
        loss_sparse = ls.next_token_loss(sparse["logits"], ids)
        st.metric("Next-token loss on your sentence (nats)", f"{loss_sparse:.3f}",
                  delta=f"{loss_sparse - loss_full:+.3f} vs full", delta_color="inverse")
        g_full, g_sparse = antecedent_gap(base), antecedent_gap(sparse)
        if g_full is None:
            st.caption("Your sentence has no 'it' with two nouns before it, so the 'it' answer is not "
                       "shown. Try: the animal didn't cross the street because it was too tired.")
        else:
            st.write(f"Largest antecedent gap of any head for 'it': full {float(np.max(g_full)):.3f}, "
                     f"{titles[kind]} {float(np.max(g_sparse)):.3f}.")
        show_code(ls.with_pattern, ls.next_token_loss)

with step("4 · Linformer: project keys and values to k rows"):
    st.markdown(
        "Linformer multiplies K and V by fixed (k × n) matrices, so each query scores k rows "
        "instead of n keys: cost n·k. Here the projections are random and seeded, applied to "
        f"{name}'s real queries, keys and values of one layer, without the causal mask (Linformer "
        "is an encoder method). **This is not a trained Linformer**: the model never learned to "
        "work through a projection, so the error measures what the approximation itself costs.")
    q, k, v = (base[nm, L] for nm in ("q", "k", "v")) if cfg.arch != "encoder-decoder" else \
        (None, None, None)
    if q is not None:
        n_tok = q.shape[0]
        rows_k = st.slider("Projected rows k", 1, max(2, n_tok), max(1, n_tok // 2), key="ls_k")
        lin = ls.linformer(q, k, v, rows_k)
        vega(lv.linformer_chart, lin.maps[0], tuple(base.tokens))
        ks = list(range(1, n_tok + 1))
        vega(lv.error_chart, tuple(ks), tuple(ls.linformer(q, k, v, kk).error for kk in ks))
        st.caption(f"Head 0 of the last layer. Relative output error at k = {rows_k}: "
                   f"{lin.error:.3f} (the size of the difference from full attention's output, "
                   "divided by the size of that output). Even at k = n the error stays well above 0: "
                   "a random projection mixes the keys instead of keeping them apart. Linformer "
                   "learns its projections during training, so it does much better than this.")
        show_code(ls.linformer, ls.projection)

in_the_notes("long-sequences")
