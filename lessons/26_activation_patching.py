"""Lesson 26: causes, not correlations. Activation patching on the "it" pairs: where the clean
answer comes back, by layer and position, then by head."""
import streamlit as st

from tfviz.experiments.inside import coref_pair, patch_view
from tfviz.interpret import patch
from tfviz.labels import safe_label
from tfviz.textinput import clean_text
from tfviz.ui.code import show_code
from tfviz.ui.context import lesson_context
from tfviz.ui.drawing import vega
from tfviz.ui.inside_cache import patched
from tfviz.ui.lessons import by_url
from tfviz.ui.present import step
from tfviz.viz import interpret as iv

name, text, bundle, cfg = lesson_context()
CLEAN, CORRUPT = coref_pair()

st.title("Causes, not correlations")
st.markdown(
    "An attention map shows where a head *looks*; a large attribution shows what a part *wrote*. "
    "Neither proves the part was needed. Activation patching tests it: take two texts that differ "
    "in one word and lead to different answers (“…because it was too tired. it refers to the” → "
    "animal, “…too wide…” → street). Run the second, the *corrupt* one, but put back one "
    "activation from the first, *clean* run, one layer and one position at a time. Where that "
    f"single piece brings the clean answer back, the piece carries what {name} needs.")
st.latex(r"\text{restored} = \frac{m(\text{patched}) - m(\text{corrupt})}"
         r"{m(\text{clean}) - m(\text{corrupt})},\qquad m = \text{logit}_{\text{clean answer}}"
         r" - \text{logit}_{\text{corrupt answer}}")

with step("1 · Two texts, two answers"):
    c1, c2 = st.columns(2)
    clean_raw = c1.text_input("Clean text", CLEAN, key="ap_clean", max_chars=2000)
    corrupt_raw = c2.text_input("Corrupt text (change one word)", CORRUPT, key="ap_corrupt",
                                max_chars=2000)
    clean, note_a = clean_text(clean_raw)
    corrupt, note_b = clean_text(corrupt_raw)
    for note in {note_a, note_b} - {None}:
        st.caption(note)
    result = patched(name, clean, corrupt) if clean and corrupt else None
    if result is None:
        st.info("Type both texts above: patching compares two runs.")
    elif isinstance(result, str):
        st.info(result)
    else:
        pos_map = result.by_position
        st.markdown(
            f"{name} reads both as {len(pos_map.tokens)} tokens. After the clean text its top next "
            f"token is “{safe_label(result.answer)}”, after the corrupt one "
            f"“{safe_label(result.distractor)}”. The measure m is the logit difference between "
            f"the two at the last position: {pos_map.clean:.3f} on the clean run, "
            f"{pos_map.corrupt:.3f} on the corrupt run.")

if result is not None and not isinstance(result, str):
    with step("2 · By layer and position"):
        vega(iv.patch_map, pos_map.restored(), pos_map.values, pos_map.tokens)
        layer, pos, share = result.best()
        changed = [p for p, (a, b) in enumerate(zip(bundle.read(clean).ids, bundle.read(corrupt).ids)) if a != b]
        where = ", ".join(f"{p} “{safe_label(pos_map.tokens[p])}”" for p in changed) or "none"
        st.markdown(
            f"Each cell is one run of the corrupt text with one block's input at one position "
            f"taken from the clean run. The texts differ at position(s) {where}. The cell that "
            f"restores the most is block {layer}'s input at position {pos} "
            f"(“{safe_label(pos_map.tokens[pos])}”): {share:.0%} of the way back. In block 0 only "
            "the changed word can matter, since nothing has mixed the tokens yet; further up, the "
            "information moves to the positions that read it, and at the last position the whole "
            "answer is there.")

    with step("3 · By head"):
        vega(iv.head_patch_map, result.by_head.restored())
        hl, hh, hs = result.best_head()
        st.markdown(
            f"Here each cell puts back one head's output z (at every position). Head {hh} of layer "
            f"{hl} restores the most, {hs:.0%} of the clean answer on its own. A head that restores "
            "much is one the answer flows through, whatever its attention map looks like.")
        show_code(patch, patch_view)

nxt = by_url("induction-heads")
if nxt is not None:
    st.page_link(f"lessons/{nxt.file}", label=f"Next: {nxt.title}")
