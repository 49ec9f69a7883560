"""Lesson 17: long sequences. Quadratic cost, sparse patterns and their reach, a what-if on
the trained model, and Linformer's projection."""
import streamlit as st

from tfviz.experiments import long_sequences as ls
from tfviz.model.masks import (local_halves_differ, pattern_mask, reach_by_layer, reach_matrix,
                               sparse_pattern, strided_halves)
from tfviz.ui.cache import coref_gap_notice, get_trace, read_text
from tfviz.ui.context import lesson_context
from tfviz.ui.experiments_cache import attention_timings, linformer_layers, pattern_whatifs
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
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
    window = c1.slider("Window w (each side)", 0, 8, 2, key="ls_w")
    dilation = c2.slider("Dilation d", 1, 4, 2, key="ls_d")
    n_global = c2.slider("Global tokens", 0, 4, 1, key="ls_g")
    n_random = c3.slider("Random keys (BigBird)", 0, 4, 2, key="ls_r")
    stride = c3.slider("Stride l, block N (Sparse Transformer)", 1, 8, 4, key="ls_s")
    seed = c3.number_input("Random seed", 0, 999, 0, key="ls_seed")
    pattern = dict(window=window, dilation=dilation, n_global=n_global, n_random=n_random,
                   stride=stride, seed=int(seed))
    global_here = (f"Here the first {n_global} position(s) play that part." if n_global else
                   "Here none: the Global tokens slider is at 0.")
    st.markdown(
        f"""
- **Sliding window.** Query i reads key j when they are at most w apart, |i − j| ≤ w. Our w
  counts one side only: an encoder's query reads 2w + 1 keys ({2 * window + 1} here), a
  decoder's w + 1. Longformer and BigBird count w as the whole window, both sides together:
  Longformer's w = 4 is 2 on each side, our w = 2, and BigBird's figure draws w = 3 as the
  token and one neighbour on each side, our w = 1.
- **Dilated window.** The same window with gaps: only keys a multiple of d away, up to w·d
  away. It spans d times as far as a plain window for the same number of keys. Longformer
  gives different heads different dilations, so some watch the close neighbours and some
  look farther.
- **Global (Longformer).** A sliding window, plus a few positions that read every position and
  are read by every position. Which positions are global depends on the task: the [CLS]
  token for classification, every token of the question for question answering.
  {global_here}
- **BigBird.** Three parts: r random keys for each query (r = {n_random} here), a window of w
  keys around it (BigBird's whole-window w), and g global tokens. BigBird gets its global
  tokens in one of two ways. ITC (internal transformer construction) makes tokens already in
  the text global, as this explorer does. ETC (extended transformer construction) adds
  extra tokens, such as [CLS], whose only job is to be global.
- **Strided (Sparse Transformer).** The heads are split. Half of them read locally: the
  previous l = {stride} positions and the token itself, as in Child et al.'s formula. The other
  half read the positions a multiple of {stride} away. One layer holds both halves, so the grid
  shows what its heads read together.
- **Block-local (the notes).** The text is cut into blocks of N positions (N = the stride,
  {stride} here) and a query reads only its own block: key j when ⌊j/N⌋ = ⌊i/N⌋. This is how
  the notes draw the local half of the Sparse Transformer, and it is the local half of Child et
  al.'s other ("fixed") pattern. Unlike a sliding window it never reaches past its block, however
  many layers are stacked: the reach table below shows it stop.
""")
    read_as = st.radio("Read each pattern as", ["an encoder reads it (both ways)",
                                               "a decoder reads it (causal)"],
                       horizontal=True, key="ls_read")
    causal = read_as.startswith("a decoder")
    titles = {"sliding": "sliding window", "dilated": "dilated window", "global": "global (Longformer)",
              "bigbird": "BigBird", "strided": "strided (Sparse Transformer)",
              "block": "block-local (the notes)", "full": "full"}
    cols = st.columns(3)
    for idx, kind in enumerate(titles):
        with cols[idx % 3]:
            vega(lv.mask_chart, pattern_mask(kind, n, causal=causal, **pattern), titles[kind])
    added, kept = ls.random_cells(n, **pattern)
    st.caption(
        "Rows are queries, columns keys, dark cells allowed. "
        + ("This is how the papers draw the patterns: an encoder reads in both directions, so "
           "each grid is symmetric (all but BigBird's, whose random keys are drawn for each query "
           "on its own: i may read j without j reading i) and a global token's row and column "
           "are full. "
           if not causal else
           "A decoder may not read ahead, so everything above the diagonal is cut. The global "
           "token at position 0 then reads only itself, since every other position comes after "
           "it: everyone still reads it, but it has nothing but itself to pass on. ")
        + f"BigBird's random keys add {added} pairs that the window and the global tokens "
        f"did not already allow; {kept} of them survive the causal mask.")
    table(ls.pattern_sizes(n, **pattern), hide_index=True)
    with st.expander("Sparse Transformer's two halves of heads, and the notes' local half"):
        local, strided = strided_halves(n, stride, causal=causal)
        c1, c2, c3 = st.columns(3)
        with c1:
            vega(lv.mask_chart, local, f"local heads: |i − j| ≤ {stride}")
        with c2:
            vega(lv.mask_chart, strided, f"strided heads: i − j a multiple of {stride}")
        with c3:
            vega(lv.mask_chart, pattern_mask("block", n, causal=causal, stride=stride),
                 f"the notes' local heads: ⌊i/{stride}⌋ = ⌊j/{stride}⌋")
        differ = local_halves_differ(n, stride, causal=causal)
        st.caption("The strided pattern in the grid above is the first two put together. The "
                   "notes draw the local half as the third: a query's own block instead of the "
                   f"{stride} positions before it. Here the two local halves differ in {differ} of "
                   f"the {n * n} (query, key) pairs: the window moves with its query, the block "
                   "stays where it is, so a query near the start of its block reads little of what "
                   "came before it.")

    st.subheader("What a token has read after L layers")
    # The options are the titles themselves (a format_func over dict.get cannot map a title back to
    # its key, which breaks setting the widget by its label)
    c1, c2 = st.columns(2)
    kind = {t: k for k, t in titles.items()}[c1.selectbox("Pattern", list(titles.values()),
                                                          key="ls_kind")]
    where = c2.radio("Query", ["the last token", "the middle token"], horizontal=True,
                     key="ls_query")
    query = n - 1 if where == "the last token" else n // 2
    n_layers = 6
    vega(lv.reach_chart, reach_by_layer(kind, n, n_layers, query=query, causal=causal, **pattern),
         query)
    reach = ls.reach_table(kind, n, n_layers, query=query, causal=causal, **pattern)
    table({"layers": reach.layers, f"positions read (of {n})": reach.reached,
           "farthest away": reach.farthest, "L·w": reach.lw, "L·d·w": reach.ldw},
          hide_index=True)
    st.caption(
        f"Each row is one more layer; red cells are the positions query {query} has read by "
        "then, directly or through a position that read them a layer earlier. Both columns "
        "come from multiplying the boolean masks layer after layer, not from a formula. "
        "\"Positions read\" counts them (the query itself included). \"Farthest away\" is a "
        "distance: how far from the query the farthest position it has read sits. A sliding "
        f"window's follows L·w and a dilated one's L·d·w until an end of the {n} tokens stops "
        "them. The notes' receptive field L × w is not that distance but a span, counted with "
        "Longformer's whole-window w (w/2 keys a side). Our w is one-sided, so a sliding window "
        "lets an encoder's middle token reach L·w on each side: 2·L·w + 1 positions in all, the "
        "notes' L × w with their w = 2 × ours (plus the query). A distance can flatter a "
        "pattern: the dilated window reaches L·d·w away while reading only L·w + 1 positions "
        "as a decoder, and a decoder's global token is reached at once but has read nothing.")

    st.markdown(f"**Every query at once.** How many (query, key) pairs are joined after L "
                f"layers: query i has read key j, directly or through other positions.")
    pairs = ls.pairs_table(kind, n, n_layers, **pattern)
    table({"layers": pairs.layers, f"pairs joined, encoder (of {pairs.all_encoder})": pairs.encoder,
           f"pairs joined, decoder (of {pairs.all_decoder})": pairs.decoder}, hide_index=True)
    c1, c2 = st.columns(2)
    every = reach_matrix(kind, n, 2, causal=causal, **pattern)  # (2, n, n)
    for col, layers in zip((c1, c2), (1, 2)):
        with col:
            vega(lv.mask_chart, every[layers - 1], f"{titles[kind]}: read after {layers} "
                 f"layer{'s' if layers > 1 else ''}")
    joined = {c: ls.layers_to_join_all(pairs, causal=c) for c in (False, True)}
    said = {c: (f"after {joined[c]} layer{'s' if joined[c] != 1 else ''}" if joined[c]
                else f"not within {n_layers} layers") for c in joined}
    st.caption(
        f"The two grids: dark cells are the keys each query (row) has read after one layer and "
        f"after two, {'as a decoder' if causal else 'as an encoder'} reads {titles[kind]}. "
        f"Every query has read every key it may: as an encoder reads {titles[kind]}, "
        f"{said[False]}; as a decoder reads it, {said[True]}. A global token shows why the "
        "encoder is fast: in layer 1 it reads every position, and in layer 2 every position "
        "reads it, so all pairs are joined after two layers. In a decoder it reads only "
        "itself, so only the window carries information, a few positions a layer.")
    show_code(reach_by_layer, reach_matrix, ls.reach_table, ls.pairs_table, sparse_pattern)

with step(f"3 · What if {name} read through a sparse pattern?"):
    if cfg.arch == "encoder-decoder":
        st.info("This model is an encoder-decoder; the what-if runs its decoder's self-attention only "
                "on decoder-only models. Pick gpt-tiny in the sidebar.")
    else:
        st.caption(f"{name} was trained with full attention. Here copies of it read your text "
                   "through each pattern, with the explorer's settings above: nothing is "
                   "retrained, so this shows what the mask alone changes. The shared model is "
                   "never touched. "
                   + (f"{name} is an encoder, so it reads each pattern both ways."
                      if cfg.arch == "encoder" else
                      f"{name} is a decoder, so it reads each pattern causally, whichever "
                      "reading the explorer shows."))
        reading = read_text(name, text)
        runs = pattern_whatifs(name, text, **pattern)
        tokens = tuple(bundle.token_strings(reading.ids))
        layer = view_value("layer", cfg.n_layers - 1, cfg.n_layers - 1)
        head = view_value("head", cfg.n_heads - 1)
        vega(lv.whatif_maps, runs["full"].patterns, runs[kind].patterns, tokens, titles[kind],
             layer=layer, head=head)
        st.caption("Move the layer and head sliders under the maps (or use the arrow keys on "
                   "them): the maps change in your browser at once. Rows are queries, columns "
                   "keys; a brighter cell is more weight. Under a pattern a query's forbidden keys "
                   "get weight 0 and its other weights grow so the row still adds up to 1. Pick "
                   "the pattern in the explorer above.")
        if cfg.arch == "encoder":
            st.info(f"{name} is an encoder: it fills in hidden words instead of predicting the "
                    "next one, so there is no next-token loss or answer to compare here. Pick "
                    "gpt-tiny in the sidebar for those.")
        else:
            answers = ls.asks_for_it(text, tokens) and reading.notice is None
            if answers and (gap_note := coref_gap_notice(name, text)):
                st.info(gap_note)  # why "the teacher ..." gets a noun it was trained on
            table(ls.whatif_table(runs, lambda i: bundle.token_strings([i])[0], answers),
                  hide_index=True, static=True)  # HTML: it follows the sentence (widgets.table)
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
        "Linformer multiplies K and V by (k × n) matrices E and F, so each query scores k rows "
        "instead of n keys: cost n·k. Linformer learns E and F during training, and the model "
        "learns to read through them. Nothing here is trained, so we need a fixed choice: "
        "**mean-pooling**. Row r of E (and of F) averages the r-th of k runs of neighbouring "
        f"positions, so every pooled key stands for its run. It runs on {name}'s real queries, "
        "keys and values of one layer, without the causal mask (Linformer is an encoder "
        "method). The error measures what the pooling alone costs. Why not random matrices, "
        "the other untrained choice? A random N(0, 1/k) matrix mixes every position into every "
        "row; on the default sentence its output is farther off than an output of zeros, at "
        "every k and in every layer of gpt-tiny.")
    if cfg.arch == "encoder-decoder":
        st.info("Pick a decoder or encoder model (gpt-tiny, bert-tiny) to run Linformer on its "
                "self-attention.")
    else:
        n_tok = len(get_trace(name, text).tokens)
        rows_k = st.slider("Projected rows k", 1, max(2, n_tok), max(1, n_tok // 2), key="ls_k")
        lin = linformer_layers(name, text, rows_k)
        vega(lv.linformer_views, lin.maps, lin.pooled, lin.best, tokens, layer=layer, head=head)
        st.caption(
            "The map: each query's weights over the k pooled rows, in text order, for the layer "
            "and head of the sliders under it (they move with the what-if's above). The chart: "
            "relative output error over all heads of the layer (the size of the difference from "
            "full attention's output, divided by the size of that output; 1 is as far off as an "
            "output of zeros), with the dashed line at the k of the map; its title gives both "
            "errors there, mean-pooling (vermillion) and the closest rank-k map (blue). Pooling "
            "is exact at k = n, where every run is one "
            "position. The blue line is a yardstick: each head's real attention matrix cut to "
            "its k largest singular values (truncated SVD, the closest matrix of rank k), times "
            "V. A method that reads k projected rows can only make maps of rank k or less, so "
            "this line shows roughly what well-chosen projections could reach; it is 0 at k = n. "
            "The gap between the lines is what learning E and F, and a model trained to read "
            "through them, can win.")
        show_code(ls.linformer, ls.pooling, ls.best_rank_errors, ls.linformer_layers)

in_the_notes("long-sequences")
