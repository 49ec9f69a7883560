"""Lesson 14: the LM head and decoding. The last hidden state times Eᵀ gives the logits; a
decoder continues the learner's prompt greedily, by sampling (temperature, top-k, top-p) or by
beam search; training asks it to predict every next token of a sentence."""
import streamlit as st

from tfviz.analysis import decoding as dec
from tfviz.decoding import (beam_search_tree, filter_distribution, generate,
                            is_tied, lm_loss_per_token, prompt_with_room)
from tfviz.decoding.prompt import starting_prompt
from tfviz.tokenizer.base import end_ids
from tfviz.decoding.generate import continuation_text, step_contexts
from tfviz.ui import decoding_cache as dc
from tfviz.ui.cache import coref_gap_notice, get_bundle, get_trace, read_text
from tfviz.lab.opened import is_run_name, prompt_part, room_after
from tfviz.ui.context import lesson_context
from tfviz.ui.model_offer import offer
from tfviz.ui.notes import in_the_notes
from tfviz.ui.present import step
from tfviz.ui.views import fit_marker, instant, length_marker, linked_value
from tfviz.ui.code import show_code
from tfviz.ui.pickers import prompt_box, prompt_ids
from tfviz.ui.tables import table
from tfviz.viz import decoding as ib

FALLBACK = "gpt-tiny"  # the page needs a decoder; encoders and the encoder-decoder use this one
STRATEGIES = {"greedy": "Greedy", "sample": "Sampling", "top-k": "Top-k", "top-p": "Top-p (nucleus)"}
DISAGREE = ("once upon a time", "it refers to", "the dog jumped")  # greedy and beam part here

sidebar_model, text, _, sidebar_cfg = lesson_context()
# A decoder generates: gpt-tiny, moe-tiny, or a training-lab run's decoder (tfviz.ui.own_model).
name = sidebar_model if sidebar_cfg.arch == "decoder" else FALLBACK
bundle = get_bundle(name)
cfg, V = bundle.config, bundle.config.vocab_size
facts = bundle.facts
EOS = facts.specials.eos or "<eos>"  # the model's own end token: GPT-2's is <|endoftext|>
# Every token that ends its text: one for ours and GPT-2, several for a Llama 3 Instruct


def either(words: list[str]) -> str:
    """["a", "b", "c"] -> "a, b or c" """
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


ENDS = facts.specials.ends or (EOS,)
ENDS_SAID = either([f"`{t}`" for t in ENDS])  # "`<|end_of_text|>` or `<|eot_id|>`"
ENDS_WITH_IDS = either([f"`{t}` (id {i})" for t, i in zip(ENDS, end_ids(bundle.tokenizer))])
BOS = facts.specials.bos  # its beginning-of-text token; a Llama's tokenizer puts it first (facts.adds_bos)

st.title("The LM head and decoding")
st.markdown(
    "After the last block, every position holds one vector of d numbers. The **LM head** turns "
    "it into one score (a *logit*) for every token of the vocabulary, and softmax turns the "
    "scores into probabilities for the next token. **Decoding** is how a token is then chosen, "
    "again and again, to write text. **Training** is what taught the model those probabilities."
)
if sidebar_model != name:
    st.info(f"**{sidebar_model}** is not a decoder: it does not predict the next token, so this "
            f"page uses **{name}**, our small decoder ({cfg.n_layers} layers, d = {cfg.d_model}, "
            f"{V} tokens). The other pages keep using {sidebar_model}.")
    offer(name, key="decoding_switch")
in_the_notes("decoding")

# --- 1 · the LM head ----------------------------------------------------------------------------
SCALED = facts.logits_scaling  # a Granite divides its logits by this; 1 for every other model
# what the head computes, as the title and the check say it: "h Eᵀ", "h W_U", "h Eᵀ / 6"
HEAD_SAID = f"h {'Eᵀ' if facts.tied else 'W_U'}" + (f" / {SCALED:g}" if SCALED != 1.0 else "")
with step(f"1 · The LM head: logits = {HEAD_SAID}"):
    reading, tied = dc.head_reading(name, text)
    tokens = get_trace(name, text).tokens
    n, d = reading.hidden.shape  # n positions (T is the temperature in step 2)
    last = f"Take the last hidden state h of each position (the last block's output, `{reading.hidden_name}`) "
    divided = (f" Then {name} divides every logit by its logits_scaling s = {SCALED:g} (a Granite's): "
               "the same order of tokens, with its probabilities "
               + ("spread more evenly." if SCALED > 1 else "made sharper.") if SCALED != 1.0 else "")
    if facts.tied:
        st.markdown(
            last + "and multiply it by the transpose of the token embedding matrix E, the very matrix "
            "that turned tokens into vectors at the start. Row v of E is token v's embedding, so logit "
            "v is the dot product of h with it: the more h points like a token's embedding, the higher "
            "that token scores. This output layer is also called the *unembedding*." + divided)
    else:
        st.markdown(
            last + f"and multiply it by the model's own output matrix W_U ({d} × {V}), the "
            "*unembedding*. Column v of W_U is token v's output vector, so logit v is the dot "
            "product of h with it: the more h points like that vector, the higher token v scores. "
            f"{name} keeps W_U apart from its embedding matrix E (an untied head)." + divided)
    scaled_by = rf"\,/\,{SCALED:g}" if SCALED != 1.0 else ""
    st.latex(r"\underbrace{\text{logits}}_{n \times V} = \underbrace{h}_{n \times d}\;"
             + (r"\underbrace{E^\top}_{d \times V}" if facts.tied else r"\underbrace{W_U}_{d \times V}")
             + scaled_by + r"\qquad P(w) = \mathrm{softmax}(\text{logits})_w"
             rf"\qquad n = {n}\ \text{{positions}},\ d = {d},\ V = {V}")
    if tied and reading.tied:
        st.success(
            f"**Tied, checked on {name} itself.** The model has no output matrix of its own: its LM "
            f"head multiplies by `embed.weight`, the same tensor (one storage) that embeds the input "
            f"(`is_tied(model)` is True, and its weights hold E and no W_U). Recomputing {HEAD_SAID} from "
            f"your text's hidden states gives the model's logits to within {reading.gap:.1e} "
            f"(float32 rounding). Tying saves V × d = {V:,} × {d} = {V * d:,} parameters.",
            icon=":material/link:")
    else:
        st.warning(f"{name}'s head has its own matrix W_U ({reading.head_shape[0]} × "
                   f"{reading.head_shape[1]}); {HEAD_SAID} gives its logits to within {reading.gap:.1e}.")
    instant(ib.head_chart, reading.top_probs, reading.top_logits, reading.top_tokens, tokens,
            pos=linked_value("pos"))
    length_marker(n, pos=n - 1)  # fits the position slider to this text (the chart is length-free)
    st.caption("Move **Position** under the chart (or use the arrow keys on it): each position "
               "predicts the token after it. The bars are the 10 most probable of all "
               f"{V} tokens; hover a bar for its logit and probability.")
    show_code(dec.lm_head, is_tied)

# --- 2 · continue a prompt ------------------------------------------------------------------------
with step("2 · The model continues your prompt"):
    st.markdown(
        f"{name} writes one token at a time: it reads the prompt, picks a next token from the "
        "probabilities, appends it, and reads again (with the KV cache it only reads the new token: "
        "the earlier ones' keys and values are kept). How the token is picked is the *decoding "
        "strategy*:\n"
        "- **Greedy**: always the most probable token. Deterministic, and often repetitive.\n"
        "- **Sampling**: draw at random from the probabilities. The **temperature** T divides the "
        "logits first: T < 1 sharpens the distribution, T > 1 flattens it.\n"
        "- **Top-k**: keep only the k most probable tokens, renormalise, then draw.\n"
        "- **Top-p** (nucleus): keep the smallest set of most probable tokens whose probabilities "
        "add up to at least p, renormalise, then draw.\n\n"
        "Temperature comes first, then the filters. Ties are broken by the lower token id. "
        f"Generation stops when the model writes `{EOS}`"
        + (f", which for {name} marks {facts.eos_meaning}" if facts.eos_meaning else "")
        + (f", or another of its end tokens, {either([f'`{t}`' for t in ENDS[1:]])}." if len(ENDS) > 1 else ".")
    )
    whole = read_text(name, text).notice is None  # the trace's last logits follow the text's end
    start, cut = ((prompt_part(text), None) if is_run_name(name) else starting_prompt(
        text, get_trace(name, text)["logits"][-1] if whole else None, end_ids(bundle.tokenizer)))
    prompt, prompt_note = prompt_box("dec", start)
    # The notes below come and go with the text; in one container that is always there, so the
    # charts after them keep their place and only swap their data (length-free views)
    notes = st.container()
    if cut and prompt == start:  # say why the box does not hold the sidebar's whole text
        notes.caption(f"The prompt starts from your text without “{cut.strip()}”: after it, "
                   f"{name}'s likeliest next token is "
                   + (f"`{EOS}`" if len(ENDS) == 1 else f"one of its end tokens ({ENDS_SAID})")
                   + (f", which for it marks {facts.eos_meaning}" if facts.eos_meaning else "")
                   + ", so greedy decoding and beam search would end at once, with nothing to "
                   "show. From here the model writes the end of the sentence itself. "
                   "Type any prompt to change it.")
    if gap_note := coref_gap_notice(name, prompt):  # why "the teacher ..." may get a wrong noun
        notes.info(gap_note)
    left, mid, right = st.columns(3)
    strategy = left.radio("Strategy", list(STRATEGIES), format_func=STRATEGIES.get, key="dec_strategy")
    sampling = strategy != "greedy"
    if is_run_name(name):  # a lab run reads few tokens: room for the answer, the prompt kept whole
        room = room_after(bundle, prompt)
        new_tokens = left.slider("New tokens at most", 1, max(room, 2), room, key=f"dec_new_run{room}")
    else:
        new_tokens = left.slider("New tokens at most", 1, 40, 20, key="dec_new")
    temperature = mid.slider("Temperature T", 0.1, 3.0, 1.0, 0.1, key="dec_temp", disabled=not sampling,
                             help="Greedy ignores it: dividing the logits never changes which is largest.")
    top_k = mid.slider("k (top-k)", 1, 50, 5, key="dec_k", disabled=strategy != "top-k")
    top_p = mid.slider("p (top-p)", 0.05, 1.0, 0.9, 0.05, key="dec_p", disabled=strategy != "top-p")
    seed = right.number_input("Seed", 0, 9999, 0, key="dec_seed", disabled=not sampling,
                              help="The random draws come from this seed: the same seed gives the "
                                   "same text, every time and for everybody.")
    settings = dict(temperature=float(temperature) if sampling else 1.0,
                    top_k=int(top_k) if strategy == "top-k" else None,
                    top_p=float(top_p) if strategy == "top-p" else None)

    ids = prompt_ids(bundle, prompt, prompt_note, new_tokens,
                     "Sections 2 and 3 wait for it; the LM head and the training loss below "
                     "use the sidebar's text.")
    if ids is not None and facts.adds_bos:  # a Llama's tokenizer: say so, and show it
        first = bundle.token_strings(ids[:8])
        st.markdown(
            f"**{name} reads `{BOS}` first.** Its tokenizer puts its beginning-of-text token `{BOS}` "
            f"(id {bundle.tokenizer.bos_id}) in front of every text it reads: what it continues is "
            f"`{BOS}` followed by your prompt, "
            + " ".join(f"`{t}`" for t in first) + (" …" if len(ids) > len(first) else "")
            + f" ({len(ids)} tokens). It ends a text with its own end token"
            + (f", {ENDS_WITH_IDS}." if len(ENDS) == 1 else
               f"s, {'either' if len(ENDS) == 2 else 'any'} of {len(ENDS)}: {ENDS_WITH_IDS}."))
    elif ids is not None:
        st.caption(f"{name}'s tokenizer puts no beginning-of-text token in front of your prompt: the "
                   f"model reads it as it is, {len(ids)} tokens, and ends a text with {ENDS_WITH_IDS}.")

    if ids is not None:
        g = dc.generation(name, ids, "sample" if sampling else "greedy", new_tokens, seed=int(seed),
                          **settings)
        st.markdown(f"**{name} writes** ({len(g.new_ids)} new token{'s' if len(g.new_ids) != 1 else ''}, "
                    f"{STRATEGIES[strategy].lower()}{'' if not sampling else f', seed {int(seed)}'}):")
        st.code(bundle.tokenizer.decode(g.prompt_ids) + g.text, language=None, wrap_lines=True)
        st.caption(g.stop_message + (" The prompt is everything before the continuation"
                                     + ("." if facts.cased else f"; {name} reads text lower-cased.")
                                     if g.steps else ""))
        if g.steps:
            notes = dec.step_notes(g.steps, step_contexts(bundle, g), vocab=V,
                                   strategy="sample" if sampling else "greedy", **settings)
            instant(ib.steps_chart, g.steps, notes, step=linked_value("step") or 1,
                    nucleus=settings["top_p"] is not None, warm=sampling and settings["temperature"] != 1)
            fit_marker({"step": {"n": len(g.steps), "default": 1, "from": 1}})  # the steps taken
            st.caption(
                "Move **Step** under the chart to see every step: coloured bars are still in the "
                "running (their length: the probability after the filters, renormalised; the black "
                "tick: before renormalising), grey bars were cut by a filter, vermillion is the token "
                "taken."
                + (" The yellow band marks the nucleus, the set top-p keeps." if settings["top_p"] else "")
                + (" Green diamonds: the model's own probability at temperature 1."
                   if sampling and settings["temperature"] != 1 else ""))
        if sampling:
            others = [dc.generation(name, ids, "sample", new_tokens, seed=s, **settings).text
                      for s in range(int(seed), int(seed) + 4)]
            st.markdown("**Same settings, four seeds.** Run the page again with any of these seeds "
                        "and you get the same text back; another seed draws other tokens.")
            table([{"seed": int(seed) + i, "continuation": t} for i, t in enumerate(others)],
                  hide_index=True, static=True)
        show_code(generate, filter_distribution)

# --- 3 · beam search -----------------------------------------------------------------------------
with step("3 · Beam search: keep several continuations alive"):
    st.markdown(
        "Greedy commits to one token at a time, and a likely first token can lead to unlikely "
        "continuations. **Beam search** keeps the *beam width* best partial continuations instead. "
        "At each step every kept beam is extended by every token of the vocabulary, each candidate "
        "is scored by the **sum of the log-probabilities** of its tokens (the log of the product "
        "of its probabilities), and the best few survive. A beam that wrote " + ENDS_SAID + " is finished: "
        "it is carried along with its score and still competes. Nothing is compared with a right "
        "answer: the model's own probabilities are all there is."
    )
    bl, br = st.columns(2)
    width = bl.slider("Beam width", 1, 5, 3, key="dec_width")
    depth = br.slider("Steps at most", 1, 10, 6, key="dec_depth")
    st.caption("Prompts where greedy and beam search part: " + ", ".join(f"“{p}”" for p in DISAGREE)
               + ". Type one into the prompt box above.")
    if ids is not None:
        ids_b, _ = prompt_with_room(bundle, prompt, depth)
        search = dc.beam(name, ids_b, width, depth)
        greedy = dc.generation(name, ids_b, "greedy", depth)
        tail = step_contexts(bundle, greedy, chars=18)[0] if greedy.steps else prompt[-18:]
        tree = dec.beam_tree(search, bundle.token_strings, greedy.new_ids, prompt_label=tail)
        instant(ib.beam_tree_chart, tree, scored_note=(
            f"{tree.total_scored:,} candidates scored in {len(tree.scored)} steps ({V} per "
            f"unfinished beam); {tree.drawn} drawn: every kept beam and each beam's 3 best extensions.",
            "Each node: its token and the sum of log p so far. Green ring and dashed line: the "
            "path greedy decoding takes."))
        table(dec.beam_rows(search, [continuation_text(bundle, ids_b, h.new_ids)
                                     for h in search.hypotheses],
                            f"finished ({EOS if len(ENDS) == 1 else 'an end token'})"),
              hide_index=True, static=True)
        cmp = dec.greedy_vs_beam(search, greedy.new_ids, dc.greedy_logprobs(greedy))
        st.markdown(dec.greedy_vs_beam_verdict(cmp, continuation_text(bundle, ids_b, cmp.greedy_ids),
                                               continuation_text(bundle, ids_b, cmp.beam_ids), width))
        show_code(beam_search_tree)
    if st.button("Beam search by hand: the exercise with two beams", key="dec_exercise",
                 icon=":material/edit_note:"):
        st.session_state["ex_pick"] = "beam-search"
        st.switch_page("lessons/20_exercises.py")

# --- 4 · training --------------------------------------------------------------------------------
with step("4 · Training: cross-entropy on shifted targets"):
    st.markdown(
        "A decoder is trained on plain text, with no labels added: at every position the target is "
        "simply the next token. The targets are the inputs shifted one place left, and the causal "
        "mask keeps each position from seeing its own target. The loss at a position is the "
        "cross-entropy −log p(target), the surprise of the right next token; training minimises "
        "the mean over all positions. Here it is for the sidebar's sentence, "
        + (f"with `{EOS}` appended, as {name} was trained (each training row ended with it)."
           if facts.eos_ends != "document" else
           f"scored as it stands: {name} saw `{EOS}` only between whole documents, so the end of "
           "one sentence is no reason for it to predict one, and none is added.")
    )
    st.latex(r"\text{inputs } x_1 \dots x_{n-1},\quad \text{targets } x_2 \dots x_n,\qquad "
             r"\mathcal{L} = -\frac{1}{n-1}\sum_{t=1}^{n-1} \log P(x_{t+1} \mid x_1 \dots x_t)")
    try:
        loss = dc.token_loss(name, text)
    except ValueError as err:
        st.info(f"Nothing to train on here: {err}.")
    else:
        if loss.notice:
            st.caption(loss.notice)
        if facts.adds_bos and loss.input_tokens and loss.input_tokens[0] == BOS:
            st.caption(f"The first input is `{BOS}`, which {name}'s tokenizer put there: from it alone "
                       "the model predicts your first token, so every token you typed is scored, the "
                       "first one included.")
        instant(ib.loss_chart, loss.input_tokens, loss.target_tokens, loss.losses, loss.probs)
        table(loss.rows(), hide_index=True, static=None)  # a long text's rows keep a scrolling box
        worst = loss.hardest
        st.markdown(
            f"The mean is **{loss.mean:.3f}** nats (perplexity e^{loss.mean:.2f} = "
            f"{loss.perplexity:,.1f}: on average as unsure as a fair choice among that many tokens). The hardest prediction was **{loss.target_tokens[worst]}** after "
            f"{loss.input_tokens[worst]}, p = {loss.probs[worst]:.4g}. A prediction the model is "
            "sure of costs almost nothing; one it thinks impossible costs a lot.")
        show_code(lm_loss_per_token)
