"""Lesson 15: BERT. Masked LM on the learner's sentence, [CLS]/[SEP], "it" in both directions,
fine-tuning counted, fine-tuning measured (up to six ways: head only, prompt, prefix, LoRA, full,
and full from random weights), span corruption."""
import streamlit as st

from tfviz.analysis import coref
from tfviz.analysis.masking import special_ids
from tfviz.analysis import finetune as ft
from tfviz.analysis import finetune_compare as ftc
from tfviz.analysis import finetune_measured as fm
from tfviz.analysis import pretraining as pt
from tfviz.analysis import span_view as sv
from tfviz.data.classify import TASKS, make_examples
from tfviz.experiments import mlm
from tfviz.params import BERT_BASE
from tfviz.training import batches
from tfviz.training import finetune as ftt
from tfviz.training import prefix_prompt as ptt
from tfviz.ui import finetune_cache as fc
from tfviz.ui.cache import get_bundle, get_trace, model_names
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.pretraining_cache import masked_guesses, tally
from tfviz.ui.pretraining_widgets import seed_with_redraw, sentence_pair
from tfviz.ui.state import EXAMPLES
from tfviz.ui.views import instant, length_marker, linked_value, view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz import bert as ib
from tfviz.viz import finetune_runs as ftv
from tfviz.viz import pretraining as ptv

TINY = "bert-tiny"  # ours: the fallback, and the model section 5 fine-tunes
sidebar_model, text, sidebar_bundle, _ = lesson_context()
# The sidebar's model when it is a BERT with its masked-LM head (a checkpoint folder), else ours.
BERT = sidebar_model if pt.reads_masked_lm(sidebar_bundle.config, sidebar_bundle.tokenizer) else TINY
bundle = get_bundle(BERT)
cfg, tok = bundle.config, bundle.tokenizer
trace = get_trace(BERT, text)
ids = tuple(int(i) for i in trace.ids)
n = len(ids)
ordinary = pt.ordinary_count(ids, special_ids(tok))  # [CLS] and [SEP] are never masked
evaluation, recipe = bundle.evaluation, bundle.recipe  # measured, and how it was trained

st.title("BERT and pretraining")
st.markdown(
    "BERT is a stack of **encoder** blocks only: every token attends to every other token, "
    "before and after it. It is *pretrained* on plain text with a task that needs no labels, "
    "then *fine-tuned* on a small labelled task (spam or not, a question's answer, the part of "
    "speech of each word). Next-word prediction cannot be the pretraining task, because a token "
    "that sees the words after it would simply read the answer. BERT hides words instead and "
    "learns to guess them."
)
if sidebar_model != BERT:
    st.info(f"This lesson uses **{BERT}**, our small BERT (2 encoder layers, 4 heads, "
            f"d = {cfg.d_model}): it needs a BERT with a masked-LM head. The sidebar's model, "
            f"{sidebar_model}, is used again on the other pages; your text is used here too.")
elif BERT != TINY:
    st.info(f"This lesson runs on the sidebar's **{BERT}** ({cfg.n_layers} layers × {cfg.n_heads} "
            f"heads, d = {cfg.d_model}), with its own tokenizer and [MASK]. What only our "
            f"{TINY} has (its measured accuracy, the head trained on “it”) is said where it "
            f"applies, and section 5 fine-tunes {TINY}.")
if not bundle.trained:
    st.warning(f"{BERT} has no trained weights here, so its guesses are random.")
in_the_notes("bert")

# --- 1 · masked LM ----------------------------------------------------------------------------
with step("1 · Masked LM on your sentence"):
    st.markdown(
        f"Of your sentence's **{n}** tokens"
        + (f", {n - ordinary} are [CLS] or [SEP], which are never hidden; of the other {ordinary}"
           if ordinary < n else "")
        + ", BERT's rule chooses 15% of the positions, rounded to a "
        f"whole number and at least one: **{pt.chosen_per_sentence(ordinary)}** here"
        + (f" (Google's original data code takes the 15% of all {n} tokens, [CLS] and [SEP] "
           f"included, which gives {pt.chosen_per_sentence(n)}, and then picks among the other "
           f"{ordinary} only; this page counts the other tokens alone, as {TINY}'s training did)"
           if ordinary < n else "")
        + ". The loss is computed "
        "only at those positions. Each chosen token then becomes **[MASK]** with probability 0.8, "
        "a **random token** with probability 0.1, or stays **unchanged** with probability 0.1. "
        "The random and unchanged ones matter: at fine-tuning time there is no [MASK] in the text, "
        "so the model must not learn that only [MASK] positions need thinking about."
    )
    st.latex(r"\begin{gathered}\mathcal{L} = -\frac{1}{|C|}\sum_{i \in C} \log p\big(x_i \,\big|\, \tilde x\big)"
             r"\\ C = \text{the chosen positions},\ \tilde x = \text{the sentence after masking}\end{gathered}")

    @safe_fragment
    def masked_lm() -> None:
        seed = seed_with_redraw("Seed of the draw", "bert_seed", "bert_draw",
                                help="The same seed draws the same positions and replacements.")
        drawn, g = masked_guesses(BERT, ids, seed)
        if not drawn.chosen:
            st.info("Your text has no token to hide (only [CLS] and [SEP]): type a few words.")
            return
        typed, reads = bundle.token_strings(drawn.ids), bundle.token_strings(drawn.inputs)
        kinds = [mlm.KIND_NAMES[k] for k in drawn.kinds]
        guess_tokens = [bundle.token_strings(row) for row in g.ids]
        first = drawn.chosen[0]
        instant(ib.guesses_chart, reads, typed, kinds, guess_tokens, g.probs,
                pos=linked_value("pos"), opens_on=first, model=BERT)
        st.caption("Move the **Position** slider under the chart: the model guesses at every "
                   "position, but only the chosen ones count in the loss. Unchosen positions show "
                   "the token itself, so the model mostly just copies it."
                   + (" One exception: at the “it” of an “it” sentence on its own (no “it refers "
                      f"to …” after it), {BERT} was also trained to name the noun “it” stands for "
                      "(section 3), so there its guess is that noun." if recipe.coref_statements
                      else ""))
        table([{"position": i, "typed": typed[i], "becomes": kinds[i], "model reads": reads[i],
                "top guess": guess_tokens[i][0], "p(typed token)": g.typed_prob(i)}
               for i in drawn.chosen], hide_index=True, static=True)
        st.markdown(f"Loss of this draw: the mean of −log p(typed token) over the chosen positions = "
                    f"**{mlm.chosen_loss(g, drawn):.3f}** nats.")
        if evaluation.masked_accuracy is not None:
            st.caption(f"On {evaluation.val_sentences} held-out sentences, {BERT} guesses the hidden "
                       f"token exactly at {evaluation.masked_accuracy:.0%} of [MASK] positions "
                       f"(its manifest).")
        show_code(mlm.draw_masks, batches.mlm_draw, mlm.guesses, mlm.chosen_loss)
        length_marker(n, pos=first)  # fits the position slider to this sentence (drawn last: no gap)

    masked_lm()

    @safe_fragment
    def many_draws() -> None:
        st.subheader("Draw it many times")
        draws = st.select_slider("Number of draws", [10, 100, 1000, 5000, 20000], value=5000,
                                 key="bert_draws")
        shares = pt.running_shares(tally(max(ordinary, 1), int(draws), 0, tok.vocab_size),
                                   max(ordinary, 1))
        vega(ptv.masking_shares_figure, shares, pt.TARGETS)
        k, m = pt.chosen_per_sentence(ordinary), max(ordinary, 1)
        table(pt.share_rows(shares), hide_index=True, static=True)
        st.caption(f"The 80 / 10 / 10 split settles on its targets as draws accumulate (one coin per "
                   f"chosen token). The chosen share does not vary at all: it is always {k} of {m} "
                   f"= {k / m:.1%} for your sentence"
                   + (" (its tokens but [CLS] and [SEP])" if ordinary < n else "")
                   + ", because the rule rounds 15% to whole tokens. "
                   "Over sentences of many lengths it averages out near 15%"
                   + (f" (in {BERT}'s held-out draw: {evaluation.selected_share:.1%})."
                      if evaluation.selected_share is not None else "."))
        show_code(mlm.masking_tally, pt.running_shares)

    many_draws()

# --- 2 · [CLS] and [SEP] --------------------------------------------------------------------------
with step("2 · [CLS] and [SEP]: two sentences in one input"):
    st.markdown(
        "For tasks about a pair of sentences (does B answer A? does B follow A?), BERT reads both "
        "at once. The input starts with **[CLS]**, whose final vector serves as a summary of the "
        "whole pair, and each sentence ends with **[SEP]**. A **segment id** (0 for A, 1 for B) "
        "says which sentence each token belongs to: BERT adds a learned segment vector to every "
        "token, next to the token and position vectors. BERT's second pretraining task, "
        "*next-sentence prediction*, used exactly this: half the time B really followed A, half "
        "the time it was a random sentence, and a small classifier on [CLS] had to tell which."
    )
    cls_id, sep_id = sentence_pair(text, bundle)
    computed = list(bundle.model.state_dict().keys())
    aside = bundle.facts.parts.set_aside  # in the file, not read: tfviz does not compute them
    parts = pt.pretraining_parts([*computed, *aside], cfg.tie_embeddings)
    used = pt.pretraining_parts(computed, cfg.tie_embeddings)
    st.markdown(f"**What {BERT} has of this.** Checked in its weights file:")
    table([{"part": p.name, f"in {BERT}'s file": "yes" if p.present else "no",
            "computed here": "yes" if u.present else "no", "what it is": p.detail}
           for p, u in zip(parts, used)], hide_index=True)
    if any(p.present and not u.present for p, u in zip(parts, used)):
        st.caption(f"{BERT}'s file holds parts that tfviz sets aside when it opens the model: "
                   + ", ".join(p.name for p, u in zip(parts, used) if p.present and not u.present)
                   + ". They are real, but no lesson runs them; the masked-LM head is what this "
                     "page uses.")
    if not any(p.present for p in parts[:3]):
        st.warning(
            f"{BERT} has **no segment table and no next-sentence head**: it was pretrained with "
            "masked LM (plus one labelled job on its “it” sentences, section 3), one sentence per "
            "row, without [CLS] or [SEP] (its manifest: "
            f"“{recipe.row or 'sentence'}”). Its tokenizer reserves "
            f"ids {cls_id} and {sep_id} for [CLS] and [SEP], so the input above is exactly "
            "what BERT would read, but our model cannot say whether B follows A. Later models "
            "(RoBERTa) dropped next-sentence prediction too, finding that it did not help.")
    show_code(pt.sentence_pair, pt.pretraining_parts)

# --- 3 · "it" in both directions -----------------------------------------------------------------
with step("3 · “it” looks both ways"):
    st.markdown(
        "The notes' picture: in *the animal didn't cross the street because it was too tired*, "
        "“it” should attend to **animal**; with *too wide*, to **street**. The word that decides "
        "comes *after* “it”. An encoder's “it” reads the whole sentence, so its attention can "
        "depend on that word; a decoder's “it” cannot see it yet (lesson 8, masking)."
    )
    if recipe.coref_statements and recipe.head_dropout_layer is not None:
        with st.expander(f"How {BERT} learned it: the extra training it needed"):
            st.markdown(
                "Masked LM alone did not teach this: nothing in it asks “it” "
                "for its noun, and a bert-tiny trained by masked LM only had no head clearly better than "
                f"a coin toss. So {BERT}'s training adds a second, labelled job on "
                f"**{recipe.coref_statements:,} extra “it” sentences** (made only of word combinations "
                "outside the held-out ones below): at the position of “it”, the model must output the noun “it” "
                f"stands for. In those sentences each head of layer {recipe.head_dropout_layer} is also "
                f"switched off at random with probability {recipe.head_dropout_p:.0%} (*head dropout*), "
                "so that one head learns the whole job instead of two heads sharing it, one per kind of answer. Real BERT "
                "had no such help: some of its heads link pronouns to their nouns after masked LM and "
                "next-sentence prediction alone, on billions of words.")
    sentences = {"the “tired” sentence": EXAMPLES["Coreference (tired)"],
                 "the “wide” sentence": EXAMPLES["Coreference (wide)"]}
    if text not in sentences.values() and coref.coref_spans(trace.tokens) is not None:
        sentences["your sentence"] = text
    found = coref.probed_sentences({title: get_trace(BERT, s) for title, s in sentences.items()})
    head_record = evaluation.coref_head
    if len(found) < 2:
        st.info("The two example sentences do not fit this model's tokens.")
    else:
        L, H = cfg.n_layers, cfg.n_heads
        start = (head_record.layer, head_record.head) if head_record else (L - 1, 0)
        gaps = [coref.antecedent_gap(get_trace(BERT, s)) for s in list(sentences.values())[:2]]
        moving = BERT != TINY and all(g is not None for g in gaps)  # no head trained: the one that moves
        if moving:
            start, _ = coref.switching_head(*gaps)
        rows, tokens = [s.rows for s in found.values()], [s.tokens for s in found.values()]
        roles = [[ib.ROLES[r] for r in s.roles] for s in found.values()]
        instant(ib.it_rows_chart, rows, tokens, roles, list(found),
                layer=view_value("layer", L - 1, start[0]), head=view_value("head", H - 1, start[1]))
        if head_record:
            by_answer = evaluation.coref_head_by_answer
            st.markdown(
                f"**The head that switches: layer {head_record.layer}, head {head_record.head}.** "
                f"It was picked on the {evaluation.coref_selection_items or 'training'} "
                "combinations of our words that bert-tiny's corpus contained, then tested on the "
                f"**{evaluation.coref_items} held-out combinations** it never read (other "
                "animals, places, verbs and adjectives put together): from “it”, it gives the right "
                f"noun more weight than the other in **{head_record.score:.0%}** of them "
                f"({by_answer.get('agent', 0):.0%} when the answer is the first noun, "
                f"{by_answer.get('place', 0):.0%} when it is the second). A head that always looked "
                "at one noun would score 50%.")
            shares = evaluation.coref_head_shares
            if shares:
                table([{"layer": layer, **{f"head {h}": v for h, v in enumerate(row)}}
                       for layer, row in enumerate(shares)], hide_index=True)
                st.caption("Share of held-out sentences where each head, from “it”, prefers the right "
                           "noun (bert-tiny's manifest, re-measured by its tests).")
        elif moving:
            layer, head = start
            st.markdown(
                f"**{BERT}'s head that moves most: layer {layer}, head {head}.** From “it”, its "
                "weight on “animal” minus its weight on “street” is "
                f"**{gaps[0][start]:+.3f}** in the “tired” sentence and **{gaps[1][start]:+.3f}** "
                "in the “wide” one; a head that followed the meaning would go from positive to "
                f"negative. Unlike {TINY}, {BERT} was given no extra training on “it”, and it "
                "learned from text we have not seen: the chart shows what it does, not a promise. "
                "What holds for every encoder is that these rows *can* change, as below.")
        gpt = "gpt-tiny"
        if gpt in model_names():
            changes = coref.row_changes([get_trace(gpt, s) for s in list(sentences.values())[:2]],
                                     list(found.values())[:2])
            if changes is not None:
                change, bert_change = changes
                st.markdown(
                    f"**A decoder cannot.** Across every layer and head, gpt-tiny's “it” row changes by "
                    f"{'**nothing**' if change == 0 else f'at most **{change:.1e}**'} between "
                    "the two sentences: “tired” and “wide” come after “it”, and the causal mask hides "
                    f"them. {BERT}'s rows change by up to **{bert_change:.2f}**. (Lesson 7 finds "
                    "the head in gpt-tiny that decides later, at the end of the sentence.)")
    show_code(coref.prefers_right, coref.preference_share, coref.chosen_head, coref.row_change)

# --- 4 · fine-tuning counted ------------------------------------------------------------------
with step("4 · Pretrain, then fine-tune: what is trained"):
    st.markdown(
        "Fine-tuning everything updates every weight, and keeps a full copy of the model per task. "
        "Lighter ways freeze the pretrained weights and train a few new numbers:\n"
        "- **Low-rank update (LoRA).** Beside a frozen matrix W (d_in × d_out), train two thin ones, "
        "A (d_in × r) and B (r × d_out). The layer computes x(W + AB); AB has rank at most r.\n"
        "- **Prefix tuning.** In every attention layer, train p extra key and value vectors that "
        "every token may attend to, as if p invisible tokens stood before the text.\n"
        "- **Prompt tuning.** Train only p input vectors placed before the text's embeddings."
    )
    st.latex(r"\begin{gathered}W' = W + AB,\quad A\in\mathbb{R}^{d_{in}\times r},\ B\in\mathbb{R}^{r\times d_{out}}"
             r"\\ \text{trained: } r\,(d_{in}+d_{out}) \text{ per matrix}\ \ (2dr \text{ when } d_{in}=d_{out}=d)"
             r"\end{gathered}")
    st.caption("Here x is a row vector, multiplied from the left: x·A·B. The LoRA paper writes the "
               "same update for a column vector, h = W₀x + BAx, with A of shape r × d_in and B of "
               "shape d_out × r. The roles match: in both, A meets the input first and B starts at "
               "zero, so training starts from the pretrained model. Only the convention differs, "
               "which transposes both matrices.")

    @safe_fragment
    def finetuning() -> None:
        c1, c2, c3 = st.columns(3)
        rank = c1.slider("Rank r", 1, 64, 8, key="bert_rank")
        chosen = c2.multiselect("Matrices with a low-rank update", list(ft.MATRICES), ["W_Q", "W_V"],
                                key="bert_matrices") or ["W_Q"]
        p = c3.slider("Prefix / prompt length p", 1, 100, 20, key="bert_prefix")
        counts = ftc.trainable_rows(rank, chosen, p)
        table(counts, hide_index=True)
        base = next(r for r in counts if r["model"] == "BERT-base")
        vega(ptv.trainable_figure, ["full fine-tuning", f"LoRA, r = {rank}", f"prefix, p = {p}",
                                    f"prompt, p = {p}"],
             [base["full fine-tuning"], base[f"LoRA r={rank}"], base[f"prefix p={p}"], base[f"prompt p={p}"]],
             title="BERT-base: numbers trained")
        d_in, d_out = ft.matrix_shapes(BERT_BASE)["W_Q"]
        st.caption(
            f"By hand for BERT-base: a {d_in}×{d_out} W_Q gets A ({d_in}×{rank}) and B ({rank}×{d_out}), "
            f"{rank}·({d_in}+{d_out}) = {rank * (d_in + d_out):,} numbers, instead of the {d_in * d_out:,} "
            f"of W itself. A low-rank update saves only while r < d_in·d_out/(d_in+d_out) = "
            f"{d_in * d_out // (d_in + d_out)}; past that (and for {BERT} past r = "
            f"{cfg.d_model // 2}) it trains more numbers than the matrix it adjusts.")
        st.caption(f"Prefix tuning adds p = {p} keys and values to every attention layer, so every "
                   f"query scores n + {p} keys; prompt tuning makes the input {p} tokens longer, and "
                   "the pretrained layers do the rest. The prefix counted is the one used at run time; "
                   "its authors train it through a small network that is dropped afterwards.")
        show_code(ft.lora_params, ft.prefix_params, ft.prompt_params)

    finetuning()

# --- 5 · fine-tuning measured ---------------------------------------------------------------------
with step("5 · Fine-tune bert-tiny, measured: up to six ways"):
    tiny = get_bundle(TINY).config
    sizes = fm.Sizes.of(tiny, ftt.FinetuneSettings().p)
    st.markdown(
        (f"This section always uses {TINY}: fine-tuning {BERT} here would take far longer than "
         "a lesson. " if BERT != TINY else "") +
        f"Counting is one thing; here {TINY} is fine-tuned for real, on a two-way question about "
        "sentences our own generator writes, in the ways you tick: **head only** (the pretrained "
        f"model frozen, a new classifier of {tiny.d_model} × 2 weights and 2 biases trained), "
        f"**prompt tuning** ({sizes.p} trained vectors before the text's token embeddings), "
        f"**prefix tuning** ({sizes.p} trained keys and values before the text's in each of the "
        f"{tiny.n_layers} attention layers), **LoRA** (A and B beside W_Q and W_V of every layer, B "
        "starting at zero), **full** (every weight) and **from scratch**: full fine-tuning of a "
        f"new model of {TINY}'s shape, with random weights"
        + (f" (its config's seed: the very weights {TINY}'s pretraining started from)"
           if ftt.starts_like_pretraining(tiny) else "")
        + ", so what pretraining bought is the difference. The classifier reads the mean of the "
        f"last layer's vectors over the text: {TINY} was pretrained without [CLS], so it never "
        "learned to gather a summary there. Held-out sentences use word combinations that no "
        "training sentence uses.")
    c1, c2 = st.columns(2)
    task = c1.selectbox("Task", list(TASKS), format_func=lambda k: TASKS[k].title, key="bert_ft_task")
    ft_rank = c2.select_slider("LoRA rank r", [1, 2, 4, 8, 16], value=4, key="bert_ft_rank")
    boxes = st.columns(3)
    ways = tuple(m for i, m in enumerate(ftt.MODES)
                 if boxes[i % 3].checkbox(m, value=m in ftt.DEFAULT_MODES, key=f"bert_ft_way_{i}"))
    st.caption(f"Ticked by default: {', '.join(ftt.DEFAULT_MODES)}, together about 10 to 30 seconds "
               "on one core, depending on how busy the server is. Each other way adds about 5 to "
               "15 seconds more; untick the others to compare just full and from scratch.")
    chosen = fc.settings(task, ft_rank, ways) if ways else None
    st.markdown(f"**{TASKS[task].question}** {TASKS[task].note}")
    table([{"sentence": text_, "answer": TASKS[task].labels[label]}
           for text_, label in make_examples(task, 4, seed=0)], hide_index=True)
    if st.button("Fine-tune", key="bert_ft_run", type="primary", disabled=chosen is None,
                 help=None if chosen else "Tick one or more ways first."):
        fc.ask(chosen)
    asked = fc.asked()
    first = None if asked is None else fc.status(TINY, asked)
    busy = first is not None and not first.finished

    @safe_fragment(run_every=1.0 if busy else None)
    def finetune_measured() -> None:
        asked = fc.asked()
        if asked is None:
            st.info(f"Press **Fine-tune**: {ftt.FinetuneSettings().steps} steps of "
                    f"{ftt.FinetuneSettings().batch} sentences for each way ticked. A result is kept "
                    "for the whole server, so a class trains it once.")
            return
        now = fc.status(TINY, asked)
        if asked != chosen:
            st.caption(f"Shown: the run of {', '.join(asked.modes)} for rank {asked.rank} on "
                       f"“{TASKS[asked.task].title}”; press the button to run the settings above.")
        if now.state in ("failed", "stopped"):
            fc.forget(TINY, asked)
            st.warning("This fine-tune failed (the server's log has the details); press the button "
                       "to try again." if now.state == "failed" else
                       "This fine-tune was stopped; press the button to start it again.")
            return
        if not now.finished:
            which = fm.waiting(now.position) if now.state == "queued" else \
                f"{now.mode}, step {now.step} of {now.steps}"
            st.progress(now.progress, text=f"Fine-tuning: {which}")
            return
        result = now.result
        modes = result.modes
        table(fm.rows(modes, ftt.expected_trained(tiny, "full", asked.rank)), hide_index=True)
        vega(ftv.params_accuracy_chart, [m.mode for m in modes], [m.trained for m in modes],
             [m.accuracy for m in modes], result.chance)
        vega(ftv.accuracy_curves_chart, [m.mode for m in modes], [m.curve for m in modes], result.chance)
        for paragraph in fm.paragraphs(modes, result.chance, fm.Sizes.of(tiny, asked.p), asked.every):
            st.markdown(paragraph)
        st.caption(
            f"Measured on this server: {result.seconds:.1f} s for all {len(modes)}, one after the "
            f"other, on {result.threads} thread{'s' if result.threads != 1 else ''}; "
            f"{asked.train_size:,} training and {asked.heldout_size} held-out sentences, "
            f"{asked.steps} steps of {asked.batch} for each way, each with its own learning rate "
            f"({', '.join(f'{m.mode} {ftt.LEARNING_RATES[m.mode]:g}' for m in modes)}); held-out "
            f"accuracy checked every {asked.every} steps. Prompt and prefix start from the "
            f"first {asked.p} tokens of the training sentences. The counts are the numbers in the "
            "tensors handed to the optimizer, and equal the formulas of step 4 plus the head's.")
        if busy:  # it finished since the page was drawn: redraw it all, and stop polling
            st.rerun()

    finetune_measured()
    show_code(ftt.LoRALinear, ptt.PrefixAttention, ftt.Classifier.pool, ftt.classifier, ftt.train_mode,
              fm.summary, fm.pretraining)

# --- 6 · span corruption ------------------------------------------------------------------------
with step("6 · Span corruption (T5)"):
    st.markdown(
        "T5, an encoder-decoder, hides **runs** of tokens instead of single ones. Each hidden run "
        "becomes one sentinel token in what the encoder reads; the decoder writes every sentinel "
        "followed by the tokens it stood for. Here 15% of your tokens are hidden, in runs of about "
        "3 (T5's settings)."
    )

    @safe_fragment
    def span_corruption() -> None:
        if ordinary < 2:
            st.info("Type at least two tokens of text to hide a span.")
            return
        seed = st.number_input("Seed of the spans", 0, 1_000_000, 0, key="bert_span_seed")
        specials = special_ids(tok)
        view = sv.text_corruption(trace.tokens, [i in specials for i in ids], int(seed),
                                  wordpiece=pt.reads_wordpiece(tok))
        st.markdown("**The encoder reads:**")
        st.code(view.encoder, language=None, wrap_lines=True)
        st.markdown("**The decoder writes:**")
        st.code(view.decoder, language=None, wrap_lines=True)
        hidden, spans = view.hidden, view.spans
        st.caption(f"{hidden} of {view.among} tokens hidden, in {spans} span{'s' if spans != 1 else ''}. "
                   "T5's code starts with a run of kept tokens and ends with a hidden run, so the "
                   "last of them is always hidden."
                   + (f" {' and '.join(dict.fromkeys(view.ends))}, which {BERT}'s tokenizer puts "
                      "around every text, are not words of it: they stay in their places, and only "
                      "the tokens between them are hidden." if view.ends else ""))
        show_code(pt.noise_mask, pt.corrupt)

    span_corruption()
