"""Lesson 2 · Tokenizer: byte pair encoding, one merge at a time, then the model's own tokens."""
import streamlit as st

from tfviz.lab.opened import LabTokenizer
from tfviz.tokenizer.naive_bpe import train_bpe_naive
from tfviz.tokenizer.task import TaskTokenizer
from tfviz.tokenizer.teaching_bpe import count_pairs
from tfviz.ui.context import lesson_context
from tfviz.ui.demo_cache import bpe_encoding, bpe_training
from tfviz.ui.present import step
from tfviz.ui.code import show_code
from tfviz.ui.pickers import keep_within
from tfviz.ui.tables import table
from tfviz.viz.tokens import merge_table, pair_table, segmentation_html, token_chips_html

DEFAULT_CORPUS = ("low low low low low lower lower newest newest newest newest newest newest "
                  "widest widest widest lowest newer wider new news")
MAX_WORDS_SHOWN = 30
MAX_CHIPS = 300
MAX_SHOWN_CHARS = 600
ODD_TEXT = "naïve café 😀"


st.title("Tokenizer: byte pair encoding")
st.markdown(
    "A model cannot read letters; it reads whole numbers called **token ids**. A tokenizer cuts "
    "text into pieces from a fixed vocabulary. Whole words would leave every new word unknown, "
    "single letters would make sentences very long, so **byte pair encoding (BPE)** learns "
    "pieces in between: it starts from characters and keeps gluing together the pair of "
    "neighbours it sees most often."
)

with step("1 · Train BPE on your own corpus"):
    st.markdown("Every word starts as its characters plus an end-of-word mark `</w>`, so the "
                "tokenizer can tell *est* at the end of a word from *est* inside one. Then, "
                "each step:")
    st.latex(r"\text{count}(a,b) = \sum_{\text{words } w} \text{freq}(w)\cdot"
             r"\#\{\,a\text{ directly followed by }b \text{ in } w\,\}")
    st.markdown("…and the pair with the highest count becomes one new symbol, everywhere.")

    corpus_text = st.text_area("Corpus (words separated by spaces)", DEFAULT_CORPUS,
                               key="tok_corpus", max_chars=20000, height=100)
    n_merges = st.slider("Number of merges to learn", 1, 40, 10, key="tok_merges")
    corpus, history = bpe_training(corpus_text, n_merges)
    step_no = None  # the merge step chosen below, when there is one

    if history is None:
        st.warning(corpus)
    else:
        for note in corpus.notes:
            st.caption(note)
        made = len(history.merges)
        if made < n_merges:
            st.info(f"Only {made} merges were possible: after that every word is a single symbol.")
        if made == 0:
            st.info("Nothing to merge yet: every word is a single character. Add longer words.")
        else:
            keep_within("tok_step", made, default=1)
            step_no = st.slider("Step through the merges", 0, made, key="tok_step")
            merge = history.steps[step_no]
            before = history.steps[max(step_no - 1, 0)]
            if step_no == 0:
                st.markdown(f"**Step 0, before any merge.** The starting vocabulary has "
                            f"{len(history.initial_vocab)} symbols:")
                st.html(token_chips_html(list(history.initial_vocab)))
            else:
                left, right = st.columns([3, 2])
                with left:
                    st.markdown(f"**Step {step_no}: pair counts before this merge** (top pairs)")
                    table(pair_table(merge.pair, merge.count, merge.runners_up), width="stretch")
                    st.markdown(f"Merge **{merge.pair[0]} + {merge.pair[1]} → "
                                f"{merge.new_symbol}** (seen {merge.count} times); vocabulary "
                                f"now {merge.vocab_size} symbols. On a tie, the pair that sorts "
                                "first wins.")
                with right:
                    st.markdown("**Merge table so far**")
                    table(merge_table(history.merges, step_no), width="stretch",
                          height=min(400, 40 + 35 * step_no))
            st.markdown(f"**The corpus after step {step_no}** (✱ = changed by this merge)")
            words = dict(list(merge.segmentation.items())[:MAX_WORDS_SHOWN])
            st.html(segmentation_html(words, merge.word_freqs, merge.changed if step_no else ()))
            if len(merge.words) > MAX_WORDS_SHOWN:
                st.caption(f"Showing {MAX_WORDS_SHOWN} of {len(merge.words)} different words.")
            st.caption(f"{merge.symbol_count} symbols across the distinct words; "
                       f"{before.pair_count} neighbouring pairs were counted before this step.")
            show_code(train_bpe_naive, count_pairs)  # the textbook loop; train_bpe is its fast twin

with step("2 · Encode a new word"):
    st.markdown("A new word is split into characters, and the learned merges are applied in "
                "the order they were learned. Try *lowest*, *tasty* or *transformerify*.")
    if step_no is None:
        st.info("There are no merges to apply yet: give step 1 a corpus with longer words.")
    else:
        word = st.text_input("A word", "lowest", key="tok_word", max_chars=40)
        encoding = bpe_encoding(corpus_text, step_no, word)
        if not encoding.words:
            st.info("Type a word to see how it is split.")
        for work in encoding.words[:5]:
            st.markdown(f"**{work.word}** starts as characters:")
            st.html(token_chips_html(list(work.start), unknown=work.unknown_in(work.start)))
            for applied in work.merges:
                st.markdown(f"merge from step {applied.step}: "
                            f"{applied.pair[0]} + {applied.pair[1]} → {applied.new_symbol}")
                st.html(token_chips_html(list(applied.symbols_after),
                                         unknown=work.unknown_in(applied.symbols_after),
                                         highlight=[s == applied.new_symbol
                                                    for s in applied.symbols_after]))
            if not work.merges:
                st.caption("No learned merge applies, so it stays as characters.")
            if any(work.unknown):
                st.caption("Dashed pieces are characters the corpus never contained: the "
                           "only things this small tokenizer cannot represent (they become "
                           "<unk>).")
        st.markdown(
            "A tokenizer of whole words would turn an unseen word such as *tasty* into one "
            "useless `<unk>`. BPE instead falls back to smaller pieces it knows, down to single "
            "characters, so a new word still arrives with meaningful parts like *low* + *est*."
        )

with step("3 · The tokenizer of this model"):
    name, typed, bundle, _ = lesson_context()
    read = bundle.tokenizer.normalize(typed)
    facts = bundle.facts
    if facts.cased:
        st.markdown(
            f"**First, normalising.** {name}'s tokenizer is **cased**: it reads the text as typed, "
            "so *The* and *the* are different tokens and *Apple* is not *apple*. The price is a "
            "larger vocabulary, and a capital letter can cut a familiar word into unfamiliar pieces."
        )
    elif facts.ours and facts.tokenizer == "byte-level BPE":
        st.markdown(
            "**First, normalising.** Before cutting anything, our story models' tokenizer rewrites "
            "the text in one standard form: Unicode NFKC (a ligature *ﬁ* becomes *fi*, a superscript "
            "*²* a plain *2*), then lower case. It is **uncased**, like BERT-uncased: *The* and *the* "
            "are the same token, so a capital letter never breaks a word into unfamiliar pieces. The "
            "price is that the model cannot tell *Apple* from *apple*."
        )
    else:
        st.markdown(
            f"**First, normalising.** {name}'s tokenizer is **uncased**: it rewrites the text in "
            "lower case before cutting it, so *The* and *the* are the same token. The price is that "
            "the model cannot tell *Apple* from *apple*."
        )
    c_typed, c_read = st.columns(2)
    c_typed.markdown("You typed")
    c_typed.code(typed[:MAX_SHOWN_CHARS], language=None, wrap_lines=True)
    c_read.markdown(f"{name} reads")
    c_read.code(read[:MAX_SHOWN_CHARS], language=None, wrap_lines=True)
    if read == typed:
        st.caption("Here nothing changed: your text is already in the form the model reads.")
    ids = bundle.encode(typed)
    tokens = bundle.token_strings(ids[:MAX_CHIPS])
    st.markdown(f"Then cut into pieces: {len(typed)} characters → **{len(ids)} tokens**. "
                "The small number under each piece is its id; `␣` marks a space.")
    st.html(token_chips_html(tokens, ids[:MAX_CHIPS]))
    if len(ids) > MAX_CHIPS:
        st.caption(f"Showing the first {MAX_CHIPS} tokens.")
    if isinstance(bundle.tokenizer, LabTokenizer):  # a training-lab run's model
        st.markdown(
            f"This is your training-lab run's model. It reads {bundle.tokenizer.known()}: one "
            "token per symbol of its task, with no merges at all, and every row starts with "
            "<bos>, as its training rows did. Anything else is skipped."
        )
        unknown = bundle.tokenizer.unknown(typed)
        if unknown:
            st.caption(f"Skipped in your text: {' '.join(unknown[:20])}")
    elif isinstance(bundle.tokenizer, TaskTokenizer):
        st.markdown(
            "This model does a small task (reversing letter sequences), so its vocabulary is just "
            "a few special tokens and single letters, with no merges at all. Characters outside "
            "that alphabet are simply skipped."
        )
        unknown = bundle.tokenizer.skipped(typed)
        if unknown:
            st.caption(f"Skipped in your text: {' '.join(unknown)}")
    else:
        odd_ids = bundle.encode(ODD_TEXT)
        st.markdown(f"What about characters the merges never saw? Here is *{ODD_TEXT}*:")
        st.html(token_chips_html(bundle.token_strings(odd_ids), odd_ids))
        facts = bundle.facts
        if facts.tokenizer in ("byte-level BPE", "bytes"):
            st.markdown(
                f"{name}'s tokenizer works on **bytes**, not letters: every character is first "
                "written as its UTF-8 bytes (1 to 4 of them), and all 256 possible bytes are in "
                "the vocabulary. So nothing is ever unknown — a rare accent or an emoji just costs "
                "several byte tokens (shown as a hex byte code such as `<0xF0>` when a piece is "
                "not a whole character)."
            )
        elif facts.unknown == "never":  # SentencePiece BPE with byte fallback (Llama 2, Mistral)
            st.markdown(
                f"{name}'s tokenizer ({facts.tokenizer}) works on characters, and **falls back to "
                "bytes** for a character it has no piece for: it is written as its UTF-8 bytes, "
                "each a token of its own such as `<0xF0>`. So nothing is ever unknown, but a rare "
                "character costs several tokens."
            )
        else:
            unk = facts.specials.unk or "its unknown token"
            st.markdown(
                f"{name}'s tokenizer is **{facts.tokenizer}**: its vocabulary holds whole pieces, "
                f"not bytes, so a character it has no piece for becomes **{unk}**, one token that "
                "says only \"something I do not know\". Look for it above: the model cannot tell "
                "which character it was, and two different emoji read the same."
            )
        if not bundle.trained:
            st.caption("This model is not trained yet, so it has no merges: every byte is its own "
                       "token. Once trained, common words become single tokens.")
