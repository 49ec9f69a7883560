"""Lesson 3 · Embeddings and positions: token ids become vectors, and vectors learn their place."""
import streamlit as st

from tfviz.analysis.gqa import kv_head_of
from tfviz.analysis.positions import (alibi, formula_table, learned_positions, permutation,
                                      similarity_by_distance, sinusoid_table)
from tfviz.analysis.relative_positions import (bucket_layout, favourite_counts, preference_rows,
                                               shaw_preferences, shaw_rows, t5_preferences)
from tfviz.experiments.relative import position_terms
from tfviz.experiments.extrapolation import loss_at_offset, longest_row, widest_spread
from tfviz.experiments.order import permutation_check
from tfviz.experiments.rope import (example_scalings, position_reads, rope_layout, rope_pair,
                                    rope_scores, scaling_name, score_spread, shift_gap,
                                    shifted_scores, shown_distances, stretch_groups,
                                    stretched_frequencies, trained_context, turn_table)
from tfviz.model.positional import rope_inv_freq
from tfviz.reference import t5_bucket
from tfviz.ui.cache import get_bundle, get_trace, read_text
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.experiments_cache import positionless
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import presenting, step
from tfviz.ui.positions_cache import (LEARNED, RELATIVE, ROPE, SHIFT, SHIFTED_SENTENCES, SINE,
                                     T5, bucket_rows, farthest, learned_table, likeness,
                                     preference_texts, shaw_heads, shaw_table, shift_gaps,
                                     shifted_readings, t5_numbers, trained_rows)
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz.positions import shifted_chart
from tfviz.viz.positions import (ALIBI_TOKENS, alibi_figure, bucket_bias_chart, bucket_chart,
                                 distance_preference_chart, distance_vectors_chart, pe_heatmap,
                                 permutation_map, position_cosine_heatmap, rope_chart,
                                 rope_frequency_chart, rope_reach_chart, rope_turn_figure,
                                 similarity_chart, vectors_heatmap)

MAX_PERM_TOKENS = 24


st.title("Embeddings and positions")
model, text, bundle, cfg = lesson_context()
trace = get_trace(model, text)
tokens = trace.tokens

# ----- embedding lookup ---------------------------------------------------------------------
with step("1 · From token id to vector"):
    st.markdown(
        f"The model keeps a table **E** with one row of {cfg.d_model} numbers for each of its "
        f"{cfg.vocab_size} tokens. Turning a token into a vector is just reading its row: no "
        "arithmetic at all. Training moves these rows so that tokens used alike end up alike."
    )
    first = int(trace.ids[0])
    embed = trace["hook_embed"]
    c1, c2 = st.columns([2, 3])
    c1.latex(r"x_k = E[\,t_k\,] \in \mathbb{R}^{%d}" % cfg.d_model)
    c2.markdown(f"Token 0 is **{tokens[0]!r}** with id **{first}**, so x₀ is row {first} of E: "
                f"`[{', '.join(f'{v:.3f}' for v in embed[0][:4])}, …]`")
    vega(vectors_heatmap, embed, tokens, title="Embedding rows of your {n} tokens")


@safe_fragment
def sine_explorer():
    a, b, c = st.columns(3)
    base = a.select_slider("base n", [10, 100, 1000, 10000, 100000], 10000, key="emb_base")
    d = b.slider("width d", 2, 128, 64, step=2, key="emb_d")
    n_pos = c.slider("positions shown", 8, 128, 64, key="emb_positions")
    pe = sinusoid_table(n_pos, d, base)
    vega(pe_heatmap, pe, title=f"PE table: {n_pos} positions × {d} dimensions, n = {base}")
    curves = {f"sine, n={base}, d={d}": similarity_by_distance(pe)}
    if "hook_pos_embed" in trace and len(tokens) > 1:
        curves[f"{model} (your text)"] = similarity_by_distance(trace["hook_pos_embed"])
    vega(similarity_chart, curves)
    st.caption("Neighbouring positions get similar vectors and the likeness fades with "
               "distance; for the sine table it depends only on the distance, not on where "
               "the pair sits. A model using the same recipe draws the same line.")
    show_code(sinusoid_table, similarity_by_distance)


# ----- sinusoidal positions -----------------------------------------------------------------
with step("2 · Why positions are needed, and the sine recipe"):
    st.markdown(
        "Attention compares every token with every other, but nothing in that comparison says "
        "*where* a token stands: shuffle the words and each one sees the same crowd. So we add a "
        "position vector p_k to each embedding. The original transformer builds p_k from waves: "
        "pair i of dimensions turns at its own speed, fast for the first pairs, slower and slower "
        "for later ones."
    )
    st.latex(r"PE(k, 2i) = \sin\!\Big(\frac{k}{n^{2i/d}}\Big) \qquad "
             r"PE(k, 2i+1) = \cos\!\Big(\frac{k}{n^{2i/d}}\Big) \qquad \tilde x_k = x_k + PE(k)")

    sine_explorer()

    st.markdown("**By hand: d = 4, n = 100, for the sentence “I am a Robot”.** With d = 4 there "
                "are two pairs; their angles are k/100⁰ = k/1 and k/100^(2/4) = k/10.")
    table(formula_table(d=4, base=100), width="stretch")
    show_code(formula_table)

# ----- the model's own positions ------------------------------------------------------------
with step(f"3 · The positions {model} adds"):
    st.markdown(
        "The notes list six ways of giving a transformer positions, and this page shows each on a "
        "trained model: two tables **added to the embeddings**, the sines (step 2) and a learned "
        "table (step 4); and four schemes **inside attention**, which see only how far apart two "
        "tokens are: Shaw et al.'s relative vectors (step 5), T5's bucketed bias (step 6), RoPE "
        "(step 7) and ALiBi (step 8).")
    if "hook_pos_embed" in trace:
        kind = ("a learned table: one trained row per position, like a second embedding table"
                if cfg.positional == "learned" else f"the sine table with n = {cfg.pos_base:g}")
        st.markdown(f"This model adds {kind}. Here are the rows it added to your tokens:")
        vega(vectors_heatmap, trace["hook_pos_embed"], tokens,
              title="Position vectors added to your tokens")
    elif cfg.positional == "none":
        st.info(f"{model} adds no position vectors to its inputs, and has no position information "
                "anywhere else either (positional = 'none').")
    else:
        st.info(f"{model} adds no position vectors to its inputs: it uses "
                f"{bundle.facts.positions_name} (positional = {cfg.positional!r}), see below.")
    in_the_notes("embeddings")

# ----- learned positions, trained -----------------------------------------------------------
with step("4 · Learned positions: what training made of them"):
    learned_rows, rows_reached = learned_table(), trained_rows(LEARNED)
    learned_bundle = get_bundle(LEARNED)
    st.markdown(
        "Instead of a formula, a model can keep a second table with one trainable row per position "
        "(BERT and GPT-2 do) and let training fill it in, like the token table E. To see what "
        f"training makes of such a table we trained **{LEARNED}**: gpt-tiny's size, stories, seeds "
        "and number of steps, but with a learned table where gpt-tiny adds the sine table. Its rows "
        "started as random numbers; nothing told them to resemble each other."
    )
    if learned_bundle.trained:
        ev, sine_loss = learned_bundle.evaluation, get_bundle(SINE).evaluation.val_loss
        st.caption(f"{LEARNED}: held-out loss {ev.val_loss:.3f} per token"
                   + ("" if ev.coref_accuracy is None else
                      f" and {ev.coref_accuracy:.0%} on the “it refers to the” probe")
                   + (f", against gpt-tiny's {sine_loss:.3f} with the sine table (same held-out "
                      "sentences)" if sine_loss is not None else "")
                   + f". `{learned_bundle.recipe.command}` rebuilds it.")
    else:
        st.warning(f"{LEARNED} is not trained on this installation (no assets/{LEARNED}), so the "
                   f"rows below are its random starting values. `python -m tfviz.train --preset "
                   f"{LEARNED}` trains it.")
    vega(similarity_chart, {LEARNED: learned_rows.learned, "sine (gpt-tiny)": learned_rows.sine},
         title=f"Positions 0–{rows_reached - 1}: learned rows and sine rows (d = 64, n = 10000)")
    far = learned_rows.far_cosine
    st.caption(
        f"Mean cosine similarity of rows k and k + distance, over positions 0–{rows_reached - 1}. "
        f"The training sentences were at most {rows_reached} tokens long (plus <eos>), so only these "
        f"rows were ever used. Next-door learned rows came out {likeness(learned_rows.neighbours_trained)} "
        f"({learned_rows.neighbours_trained:.2f} on average for k and k + 1, against "
        f"{learned_rows.sine[1]:.2f} for the sines). From distance 2 on, the learned rows' |cosine| "
        f"averages {far:.2f} (two random vectors of 64 numbers give about 0.10). The sine table fades slowly "
        "and evenly because its formula says so; nothing pushed this table to do the same (compare "
        "the two models' held-out losses above). The learned line is also an average over pairs "
        "that disagree, and its far end rests on a handful of pairs."
    )
    vega(position_cosine_heatmap, learned_rows.cosine, learned_rows.trained,
          title=f"{LEARNED}: cosine of every pair of its first {len(learned_rows.cosine)} position rows")
    st.caption(
        f"Inside the black frame: the {rows_reached} rows training reached. Outside it: rows it never "
        "reached, still close to their random start (neighbours' cosine "
        f"{learned_rows.neighbours_untrained:.2f} on average). That is the price of a learned "
        "table: a position past the longest training sentence has a row, but not a meaningful one, "
        "and past the table's end it has none at all."
    )
    if (n_read := len(read_text(LEARNED, text).ids)) > rows_reached:
        st.info(f"Your text is {n_read} tokens long: in {LEARNED}, tokens from position "
                f"{rows_reached} on get rows that training never shaped.")
    show_code(learned_positions)


def trained_note(name: str, scheme: str) -> None:
    """Where ``name``'s weights come from, with its held-out numbers when it has them."""
    b = get_bundle(name)
    if b.facts.origin == "folder":
        st.caption(f"{name} was trained by others; its folder's weights are used as they are.")
    elif not b.trained:
        st.warning(f"{name} is not trained on this installation: the numbers below come from its "
                   "random starting values." + (f" `python -m tfviz.train --preset {name}` trains it."
                                                if b.facts.origin == "fresh" else ""))
    elif b.evaluation.val_loss is not None:
        ev, sine_loss = b.evaluation, get_bundle(SINE).evaluation.val_loss
        st.caption(f"{name}: gpt-tiny's size, stories, seeds and number of steps, with {scheme} "
                   f"where gpt-tiny adds the sine table. Held-out loss {ev.val_loss:.3f} per token"
                   + ("" if ev.coref_accuracy is None else
                      f", {ev.coref_accuracy:.0%} on the “it refers to the” probe")
                   + (f" (gpt-tiny: {sine_loss:.3f})" if sine_loss is not None else "")
                   + f". `{b.recipe.command}` rebuilds it.")


def sidebar_or(kind: str, ours: str) -> str:
    """The sidebar's model when it uses ``kind`` positions, else our trained ``ours``."""
    return model if cfg.positional == kind else ours


# ----- Shaw et al.'s relative positions -----------------------------------------------------
shaw_name = sidebar_or("relative", RELATIVE)


@safe_fragment
def shaw_vectors():
    rows, scfg = shaw_table(shaw_name), get_bundle(shaw_name).config
    layers = tuple(range(scfg.n_layers))  # layer numbers, not token positions (token_select)
    layer = st.radio("Layer", layers, horizontal=True, key="emb_shaw_layer")
    vega(distance_vectors_chart, rows.keys[layer], rows.values[layer], rows.distances, rows.used,
         title=f"{shaw_name}, layer {layer}: aᴷ and aⱽ for each distance")
    st.caption(
        f"Inside the black frame: the rows for distances {rows.used_from} to {rows.used_to}, "
        "the only ones training could read"
        + (" (a decoder never reads a key after its query, so the rows for keys ahead went unused)"
           if scfg.causal else "")
        + (f". Their entries average |a| = {rows.mean_abs_used:.3f}; the unused rows' average "
           f"{rows.mean_abs_unused:.3f}: still their random start, shrunk a little by weight decay, "
           "like the learned table's unreached rows in step 4." if rows.some_unused else "."))


@safe_fragment
def shaw_heads_view():
    texts = preference_texts(shaw_name, text)
    pref = shaw_heads(shaw_name, texts)
    where = (f"the first {len(texts)} held-out sentences" if len(texts) > 1 else "your text")
    vega(distance_preference_chart, pref.distances, pref.mean, pref.pairs,
         title=f"{shaw_name}: each head's mean q·aᴷ/√d by distance, over {where}")
    k = get_bundle(shaw_name).config.rel_clip
    st.caption(
        f"Each point averages the position part of the score over every (query, key) pair at that "
        f"distance in {where}: {pref.pairs_at(0):,} pairs at distance 0, {pref.pairs_at(-k):,} at "
        f"{k} or more back (the clipped row). It is what the head adds to a key's score for their "
        "distance alone, before the softmax, on top of what the two tokens' contents give; the "
        "large dot is each head's highest.")
    table(preference_rows(pref.best, "mean term"), static=True)
    counts = favourite_counts(pref.best)
    top, n_top = next(iter(counts.items()))
    st.markdown(f"**Favourites.** {n_top} of the {len(pref.best)} heads favour "
                f"**{top}**" + ("" if len(counts) == 1 else
                                ", the others " + ", ".join(f"{lab} ({n})" for lab, n in list(counts.items())[1:]))
                + ". Nothing told them to: the tables started as random numbers, and training "
                "found these distances useful for predicting the next word.")


with step("5 · Shaw et al.: a learned vector for each distance"):
    st.markdown(
        "Shaw, Uszkoreit and Vaswani (2018) put position inside attention and add nothing to the "
        "token vectors. When query i reads key j, the layer looks up their distance j − i in two "
        "small tables and adds what it finds: a vector **aᴷ** to the key, which moves the score, "
        "and a vector **aⱽ** to the value, which moves what is read. Distances beyond k either "
        "way all share the last row: the paper reasons that a precise distance matters little "
        "far away, and the clipping lets a model read texts longer than any it trained on. Each "
        "layer learns its own two tables of 2k + 1 rows, and all the heads of a layer share them, "
        "as in the paper. (The notes' slide names Gopher beside it, for a variant of the idea.)")
    st.latex(r"e_{ij} = \frac{q_i\cdot\big(k_j + a^K_{c(j-i)}\big)}{\sqrt{d_k}},\qquad "
             r"z_i = \sum_j \alpha_{ij}\,\big(v_j + a^V_{c(j-i)}\big),\qquad "
             r"c(x) = \max(-k, \min(k, x))")
    scfg = get_bundle(shaw_name).config
    n_rel = 2 * (2 * scfg.rel_clip + 1) * scfg.d_head
    st.markdown(
        (f"Everything below comes from **{shaw_name}**, the sidebar's model. " if shaw_name == model else
         f"{model} uses {bundle.facts.positions_name}, so everything below comes from **{RELATIVE}**. ")
        + f"It clips at k = {scfg.rel_clip} with heads of d = {scfg.d_head}, so each of its "
          f"{scfg.n_layers} layers learns 2 × {2 * scfg.rel_clip + 1} × {scfg.d_head} = {n_rel:,} "
          f"numbers for positions ({scfg.n_layers * n_rel:,} in all).")
    trained_note(shaw_name, "Shaw et al.'s relative vectors")
    shaw_vectors()
    st.markdown(
        "**What each head came to prefer.** The part of a score that comes from distance alone is "
        "q_i·aᴷ/√d. It depends on the query, so a head's taste for a distance shows in that term "
        "averaged over many pairs of tokens at that distance.")
    shaw_heads_view()
    show_code(shaw_rows, shaw_preferences, position_terms)


# ----- T5's relative position bias ----------------------------------------------------------
t5_name = sidebar_or("t5_bias", T5)


@safe_fragment
def t5_view():
    tcfg = get_bundle(t5_name).config
    t5 = t5_numbers(t5_name)
    reach = farthest(t5_name)
    vega(bucket_chart, bucket_rows(tcfg.rel_buckets, tcfg.rel_max_distance),
         title=f"{tcfg.rel_buckets} buckets, maximum distance {tcfg.rel_max_distance}: the bucket of each distance")
    dec, enc, half = t5.decoder, t5.encoder, tcfg.rel_buckets // 2
    st.caption(
        f"A decoder (causal) gives all {tcfg.rel_buckets} buckets to keys behind the query: the first "
        f"{half} hold the distances 0 to {half - 1} back, one each; the rest hold ranges that grow "
        f"with distance ({dec.labels[half]}, {dec.labels[half + 1]}, … {dec.labels[-2]}), and the "
        f"last, {dec.labels[-1]}, every distance beyond: it starts before {tcfg.rel_max_distance} "
        "because the formula rounds down. An encoder (bidirectional) splits them: half for keys "
        f"behind ({enc.labels[1]} … {enc.labels[half - 1]}), half for keys ahead, one of which "
        "stays empty (distance 0 belongs to the first half). Our buckets are checked against "
        "transformers' own T5 code.")
    vega(bucket_bias_chart, t5.shown, t5.bias, reach,
         title=f"{t5_name}: the bias each head adds, by distance back (the same in every layer)")
    st.caption(
        f"Flat steps are distances that share a bucket. Training read keys at most {reach} back, so "
        f"only the buckets up to {t5.last_reached} were ever trained ({t5.reached_count} of "
        f"{tcfg.rel_buckets}); right of the dashed line the numbers are still close to their "
        "random start.")
    table(preference_rows(t5.prefs, "bias"), static=True)
    st.markdown(
        "**Favourites**, among the buckets training reached: "
        + "; ".join(f"head {p.head} favours **{p.best_label}** ({p.best_value:+.3f})" for p in t5.prefs)
        + ". A bigger bias raises the score of every key at that distance, whatever the tokens "
          "are; the contents of q and k still decide the rest.")


with step("6 · T5: a learned number for each distance bucket"):
    st.markdown(
        "T5 (Raffel et al., 2020) keeps even less: no vectors, just **one number per head for "
        "each bucket of distances**, added to the score of every query–key pair in that bucket. "
        "Near distances get a bucket each; farther ones share buckets that grow wider with "
        "distance (log-spaced), up to a maximum past which all share the last. A decoder's buckets "
        "all look back; an encoder's are split between keys behind and keys ahead. One table "
        "serves every layer of a stack: T5 learns it in the first layer and passes it on. T5 "
        "itself does not divide q·k by √d_k (its starting weights make up for it); our models keep "
        "the division, as configured, and add the bias after it.")
    st.latex(r"s_{ij} = \frac{q_i\cdot k_j}{\sqrt{d_k}} + b_h\big(\mathrm{bucket}(j - i)\big)")
    tcfg = get_bundle(t5_name).config
    st.markdown(
        (f"Everything below comes from **{t5_name}**, the sidebar's model. " if t5_name == model else
         f"{model} uses {bundle.facts.positions_name}, so everything below comes from **{T5}**. ")
        + f"Its table holds {tcfg.rel_buckets} buckets × {tcfg.n_heads} heads = "
          f"{tcfg.rel_buckets * tcfg.n_heads} numbers, T5's own {tcfg.rel_buckets} buckets and "
          f"maximum distance {tcfg.rel_max_distance}.")
    trained_note(t5_name, "T5's bucketed bias")
    t5_view()
    show_code(bucket_layout, t5_preferences, t5_bucket)


# RoPE on the sidebar's model when it turns its q and k (llama-tiny, a Llama folder, a lab run
# trained with RoPE); otherwise on gpt-tiny-rope, gpt-tiny trained with RoPE instead of the sines
rope_name = model if cfg.positional == "rope" else ROPE
rope_bundle = get_bundle(rope_name)
rfacts = rope_bundle.facts
layout = rope_layout(rope_bundle.config)
PAIRING = {"adjacent": "dimension 2i with 2i + 1, as in the RoFormer paper",
           "halves": "dimension i with i + d/2, Llama's “rotate half” layout"}


@safe_fragment
def rope_demo():
    rt = get_trace(rope_name, text)
    rcfg = rt.config
    n = len(rt.tokens)
    a, b, c = st.columns(3)
    head = a.slider("head (layer 0)", 0, rcfg.n_heads - 1, 0, key="emb_rope_head")
    if n > 1:
        i = b.slider("query token (position m)", 0, n - 1, n - 1, key="emb_rope_query")
        j = c.slider("key token (position n)", 0, n - 1, 0, key="emb_rope_key")
    else:
        i = j = 0
    pair = rope_pair(rt, 0, head, i, j)
    before_scale = ("dividing by √d_k" if rfacts.attention_multiplier is None else
                    f"its attention_multiplier {rfacts.attention_multiplier:g} scales it")
    kv_note = (f" (its key and value come from K/V head {kv_head_of(head, rcfg.n_heads, rcfg.kv_heads)}, "
               "which this query head shares with others)" if rfacts.grouped else "")
    st.markdown(f"Query: token {i} **{rt.tokens[i]!r}** at position m = {i}. Key: token {j} "
                f"**{rt.tokens[j]!r}** at position n = {j}. Layer 0, head {head}{kv_note}.")
    shown = tuple(range(min(4, layout.n_pairs)))
    vega(rope_turn_figure, pair.q, pair.q_turned, pair.k, pair.k_turned, i, j, pairs=shown,
         planes=tuple(layout.dims(p) for p in shown),
         title=f"{rope_name}, layer 0, head {head}: the first pairs of q and k, before and after the turn")
    speeds = layout.inv_freq()
    st.caption(f"Dotted: the vector the layer computed from the token (hook_q, hook_k); solid: "
               f"the same vector as the model turned it (hook_rot_q, hook_rot_k). Pair i is "
               f"{PAIRING[layout.pairs]}. Pair 0 turns by {speeds[0]:.4g} "
               f"radian{'' if speeds[0] == 1 else 's'} per position, "
               "later pairs slower and slower, so at most positions only the first pairs move "
               "visibly. The lengths never change: RoPE only turns.")
    table(turn_table(pair, layout), static=None)  # HTML while short: there with the run
    st.caption("Measured on the model's own vectors: the angle of each pair of q before and after "
               f"the turn. “turned by” should equal {i}·θᵢ, wrapped into (−π, π]; a tiny pair "
               "(near the origin) has no clear direction, so its angle is noisy.")

    st.markdown("**Relative position only, as numbers.** Take this very q and k and move both "
                "tokens along by the same s places: the query to m + s, the key to n + s. RoPE "
                "turns each by its own position, and their dot product stays the same:")
    moved = shifted_scores(pair.q, pair.k, i, j, layout)
    table(moved, static=True, column_config={"q·k after rotation": st.column_config.NumberColumn(format="%.6f")})
    st.caption(f"From ({i}, {j}) to ({moved[-1]['query at']}, {moved[-1]['key at']}) the score moves "
               f"by at most {score_spread(moved):.1e}: float32's rounding of angles as "
               f"large as {moved[-1]['query at'] * speeds[0]:,.0f} radians. Only the distance "
               f"m − n = {i - j} is left in it. The model's own score for this pair (hook_scores_raw, "
               f"before {before_scale}) is {pair.score:.6f}. Positions past {rope_name}'s "
               f"context of {rcfg.max_seq_len} tokens turn just as well: the rotation has no end, "
               "only the training does.")

    dist = st.slider("distance m − n", 0, 12, 3, key="emb_rope_dist")
    distances = shown_distances(dist, i, j)
    rows = [r for d in distances for r in rope_scores(pair.q, pair.k, d, range(d, d + 40, 4), layout=layout)]
    own = ({"query position": i, "distance": i - j, "q·k after rotation": pair.score}
           if i >= j else None)
    vega(rope_chart, rows, model_point=own,
         title=f"{rope_name}: the same q and k placed at other positions")
    st.caption(
        f"Each line keeps this q and k and moves the pair along the sentence, the key always "
        f"m − n places behind the query. The lines are flat: only the distance matters. "
        + (f"The black diamond is the score the model computed for your text (q·k = "
           f"{pair.score:.3f}, before {before_scale}): it sits on the line for distance {i - j}."
           if own else "Pick a key at or before the query to see the model's own score on its line.")
    )
    gaps = shift_gaps(text, rope_name)
    (moved_by, filler), (sine_moved_by, sine_filler) = gaps[rope_name], gaps[SINE]
    st.markdown(
        f"**Moving the whole text.** We put {SHIFT} extra tokens (“{filler}”) in front of your "
        f"text, so every token moves {SHIFT} places on, and compare layer 0's scores between your "
        f"own tokens. In **{rope_name}** they change by at most **{moved_by:.1e}**, float32 "
        "rounding: all distances stayed the same. In **gpt-tiny**, which adds the sine table to "
        f"its inputs, the same move" + ("" if sine_filler == filler else f" (with “{sine_filler}”)")
        + f" changes them by up to **{sine_moved_by:.2f}**."
    )
    show_code(rope_pair, turn_table, shifted_scores, rope_scores, shift_gap)


@safe_fragment
def rope_stretch():
    context = rope_bundle.config.max_seq_len
    if layout.scaling is not None:  # the model's own: trained short, stretched to its context
        own = layout.scaling
        trained = trained_context(own, context)
        scalings, far = {own.kind: own}, context - 1
        edge = f"original context: {trained:,} positions"
        st.markdown(
            f"**{rope_name}** stretches its own frequencies: {scaling_name(own)} (rope_scaling in "
            f"its config), from an original context of {trained:,} positions to the {context:,} "
            "it reads.")
    else:
        factor = st.select_slider("stretch factor", [2, 4, 8, 16], 4, key="emb_rope_factor")
        scalings, far, trained = example_scalings(context, factor), factor * context - 1, context
        edge = f"its context: {context} positions"
        st.markdown(
            f"**{rope_name}** reads at most {context} tokens and has no scaling. "
            f"Below, both kinds stretch its frequencies to read {factor}× as many, {factor * context} "
            f"tokens: linear ×{factor:g}, and llama3 ×{factor:g} with Llama 3.1's own settings "
            f"(low and high frequency factors 1 and 4) and {context} as the original length.")
    vega(rope_frequency_chart, stretched_frequencies(layout, scalings),
         title=f"{rope_name}: θ_i of each pair at base {layout.base:,g}, plain and stretched")
    vega(rope_reach_chart, position_reads(layout, scalings, far), far, trained, edge_label=edge)
    lines = []
    for scaling in scalings.values():
        g = stretch_groups(layout, scaling)
        if scaling.kind == "linear":
            lines.append(f"- **linear ×{scaling.factor:g}** (position interpolation) divides every "
                         f"speed by {scaling.factor:g}: position {far:,} turns every pair as position "
                         f"{far / scaling.factor:,.1f} did, inside the original {trained:,}. The price: "
                         f"neighbours now differ by 1/{scaling.factor:g} of a step, in the fast pairs "
                         "too, which told neighbouring tokens apart.")
        else:
            lo = scaling.original_max_position_embeddings / scaling.low_freq_factor
            hi = scaling.original_max_position_embeddings / scaling.high_freq_factor
            lines.append(
                f"- **llama3 ×{scaling.factor:g}** sorts the pairs by wavelength λ (positions per "
                f"full turn). **Kept**: {_pairs(g.kept)}, with λ under {hi:,.0f} positions. Within "
                f"the original {trained:,} positions such a pair goes round more than "
                f"{scaling.high_freq_factor:g} times and takes every angle, so there position "
                f"{far:,} still reads as {far:,}. **Divided** by {scaling.factor:g}: "
                f"{_pairs(g.divided)}, with λ over {lo:,.0f} positions, where it reads as "
                f"{far / scaling.factor:,.1f}."
                + (f" **Blended** between the two: {_pairs(g.blended)}." if g.blended else ""))
    st.markdown("\n".join(lines))
    st.caption("Both charts are computed by the engine's own rope_inv_freq, the function the model "
               "runs (its numbers match transformers' ROPE_INIT_FUNCTIONS to the bit). Hover a "
               "point for its wavelength.")
    show_code(stretched_frequencies, position_reads, stretch_groups, rope_inv_freq)


def _pairs(pairs) -> str:
    """Pairs named for a sentence: "pairs 0–3", "pair 5", or "none"."""
    if not pairs:
        return "none"
    return f"pairs {pairs[0]}–{pairs[-1]}" if len(pairs) > 1 else f"pair {pairs[0]}"


# ----- RoPE ---------------------------------------------------------------------------------
with step("7 · RoPE: rotate instead of add"):
    st.markdown(
        "Rotary embeddings add nothing to the token vectors. Instead, inside every attention layer, "
        "each query and key is **turned**: its dimensions are taken two by two, and pair i is "
        "rotated by θᵢ for every step of position, so a token at position m is turned by m·θᵢ. "
        "Turning q by mθ and k by nθ leaves their dot product depending on n − m only, so a score "
        "sees *how far apart* two tokens are, not where they sit."
    )
    if rope_name == model:
        st.markdown(f"Everything below comes from **{rope_name}**, the sidebar's model, reading your text.")
    else:
        st.markdown(f"{model} uses {bundle.facts.positions_name}, not RoPE, so everything below "
                    f"comes from **{ROPE}**, gpt-tiny trained on the same stories with RoPE instead "
                    "of the sine table, reading your text.")
    partial = (f"; only the first {layout.dim} of each head's {layout.d_head} dimensions turn"
               if layout.dim < layout.d_head else "")
    st.markdown(
        f"**How {rope_name} turns.** Base {rfacts.rope_base:,g} (rope_theta), head size d = "
        f"{layout.d_head}, so {layout.n_pairs} pairs; pair i is {PAIRING[rfacts.rope_pairs]}"
        f"{partial}. " + (f"Its frequencies are stretched ({rfacts.rope_scaling}, see below)."
                          if rfacts.rope_scaling else "No scaling stretches its frequencies."))
    base_tex = f"{rfacts.rope_base:,.0f}".replace(",", "{,}")  # 500{,}000: no space after the comma
    st.latex(r"(R_{m\theta}\,q)\cdot(R_{n\theta}\,k) = q^\top R_{(n-m)\theta}\,k,\qquad "
             r"\theta_i = %s^{-2i/%d}" % (base_tex, layout.dim))
    if rfacts.origin == "folder":
        st.caption(f"{rope_name} was trained by others; its folder's weights are used as they are.")
    elif rope_bundle.trained:
        ev = rope_bundle.evaluation
        if ev.val_loss is not None:  # a recipe without the "it" probe records no accuracy
            probe = ("" if ev.coref_accuracy is None else
                     f", {ev.coref_accuracy:.0%} on the “it refers to the” probe")
            st.caption(f"{rope_name}: held-out loss {ev.val_loss:.3f} per token{probe}; "
                       f"`{rope_bundle.recipe.command}` rebuilds it.")
    else:
        st.warning(f"{rope_name} is not trained on this installation: the queries and keys below "
                   f"come from random weights." + (f" `python -m tfviz.train --preset {rope_name}` "
                                                   "trains it." if rfacts.origin == "fresh" else ""))

    rope_demo()

    st.subheader("Stretching RoPE for longer texts")
    st.markdown(
        "A text longer than any the model trained on brings positions it never saw: its slow "
        "pairs turn to angles they never reached, and its scores there are guesses. A **rope "
        "scaling** slows the frequencies down so that a longer text fits in the angles training "
        "saw: Llama 3.1's config stretches its original 8,192 positions to 131,072 this way.")
    rope_stretch()

# ----- ALiBi --------------------------------------------------------------------------------
with step("8 · ALiBi: a penalty for distance"):
    st.markdown(
        "ALiBi adds nothing to the vectors. It subtracts a penalty from each attention score that "
        "grows with the distance between query and key, with a different slope per head: steep "
        "heads look near, gentle heads look far."
    )
    st.latex(r"\text{score}_{ij} = \frac{q_i\cdot k_j}{\sqrt{d_k}} - m_h\,|i-j|,\qquad "
             r"m_h = 2^{-8(h+1)/H}")
    shown = list(tokens[:ALIBI_TOKENS])
    slopes, bias = alibi(cfg.n_heads, len(shown))
    vega(alibi_figure, bias, slopes, shown)
    show_code(alibi)


@safe_fragment
def order_test():
    ids = list(trace.ids[:MAX_PERM_TOKENS])
    kind = st.selectbox("New order", ["reverse", "rotate", "shuffle"], key="emb_perm")
    if st.button("Shuffle again", key="emb_reshuffle"):
        st.session_state["emb_seed"] = st.session_state.get("emb_seed", 0) + 1
    order = permutation(len(ids), kind, st.session_state.get("emb_seed", 0))
    check = permutation_check(positionless(model), ids, order)
    st.markdown("**The model without positions** (first dimensions of each token's output)")
    a, b = (st.container(), st.container()) if presenting() else st.columns(2)  # big type: stacked
    for where, reordered_first in ((a, False), (b, True)):
        with where:
            vega(permutation_map, check.original, check.permuted, order, tokens[:MAX_PERM_TOKENS],
                 reordered_first=reordered_first)
    st.success(f"Largest difference: {check.max_gap:.1e} (rounding noise). Same outputs, "
               "just moved along with their tokens.")
    if cfg.positional != "none":
        real = permutation_check(bundle.model, ids, order)
        st.markdown(f"The same test on **{model}** itself, which does know positions: the "
                    f"largest difference is **{real.max_gap:.2f}**, so reordering really "
                    "changes what each token computes.")
    show_code(permutation_check)


# ----- order blindness ----------------------------------------------------------------------
with step("9 · Without positions, attention is order-blind"):
    st.markdown(
        "Let us test the claim. We build a fresh copy of this model with **no** position "
        "information, feed it your tokens, then the same tokens in a new order. If the model is "
        "order-blind, each token's output is unchanged, only moved: the two pictures match. "
        "(We switch off the causal mask for this test, because “only look left” is itself a clue "
        "about order.)"
    )

    order_test()


# ----- positions never trained on -----------------------------------------------------------
ABSOLUTE = {SINE: "sine table", LEARNED: "learned table"}
RELATIVE_NAMES = {ROPE: "RoPE", RELATIVE: "Shaw relative", T5: "T5 bias"}


def shifted_step() -> None:
    st.markdown(
        "The notes say a transformer cannot *extrapolate*, go past the lengths it was trained on; "
        "the usual reply is that a formula such as the sine table can be evaluated at any "
        "position, while a learned table has no row past its last. Each is half the story. Here "
        "the story models above read their held-out sentences starting at position k instead of "
        "0: k padding tokens go first and the attention mask hides them from every query, so only "
        "the positions move. Every one of these models trained on sentences that started at 0.")
    if st.button(f"Read {SHIFTED_SENTENCES} held-out sentences from later positions", key="emb_shift_run"):
        st.session_state["emb_shifted"] = True
    if not st.session_state.get("emb_shifted"):
        st.caption("Five models, nine starting positions each: a few seconds, once for the whole "
                   "server.")
        return
    runs = shifted_readings()
    if not runs:
        st.info("None of the story models is trained on this installation (no assets), so there "
                "is nothing to measure.")
        return
    named = {f"{name} ({(ABSOLUTE | RELATIVE_NAMES)[name]})": run for name, run in runs.items()}
    trained = trained_rows(LEARNED) if LEARNED in runs else None
    vega(shifted_chart, named, trained)
    said = []
    for name in (SINE, LEARNED):
        if name in runs:
            run = runs[name]
            low, high = run.later_range
            said.append(f"**{name}** ({ABSOLUTE[name]}) goes from {run.losses[0]:.3f} at position 0 "
                        f"to between {low:.3f} and {high:.3f} when its sentences start "
                        "later")
    flat = [n for n in RELATIVE_NAMES if n in runs]
    if flat:
        spread = widest_spread(runs[n] for n in flat)
        said.append(f"{', '.join(flat)} stay within {spread:.1e} of their loss at position 0 at every k"
                    + (" (their lines lie on top of one another)" if len(flat) > 1 else ""))
    st.markdown("; ".join(said) + ".")
    longest = longest_row(runs.values())
    rows_end = get_bundle(LEARNED).config.max_seq_len
    sine = runs.get(SINE)
    worse = sine is not None and sine.worse_later(0.05)
    st.caption(
        "So which half is right? "
        + ("The sines are computed at every position here, yet a model that trained with them only "
           "ever saw sentences start at 0: what the vectors mean further along was never learned, "
           "and a formula that can be *evaluated* is not one the model can *use*. " if worse else
           "The sines are computed at every position here, and this model copes with them. ")
        + f"{LEARNED}'s table has {rows_end} rows, but those past the {trained or 'ones'} training "
        "reached are still near their random start, and past its last row there is none: such a "
        "text is refused. The relative schemes never see a position, only the distance between a "
        "query and a key, and moving a whole sentence changes no distance. (The longest sentence "
        f"here has {longest} tokens; the largest k keeps it inside the {rows_end}-token context.)")
    show_code(loss_at_offset)


with step("10 · Positions never trained on"):
    safe_fragment(shifted_step)()
