"""Lesson 25: who wrote the answer. Direct logit attribution per head and MLP, checked by
removing the top head."""
import streamlit as st

from tfviz.experiments.inside import attribution_view, why_no_attribution
from tfviz.interpret import ablate_head, direct_logit_attribution
from tfviz.labels import safe_label
from tfviz.ui.code import show_code
from tfviz.ui.context import lesson_context
from tfviz.ui.drawing import vega
from tfviz.ui.inside_cache import attribution, removed
from tfviz.ui.lessons import by_url
from tfviz.ui.present import step
from tfviz.ui.views import view_value
from tfviz.viz import interpret as iv

SHOWN = 24  # positions the bars can switch between: the last ones of a longer text

name, text, bundle, cfg = lesson_context()
facts = bundle.facts
sublayer = "MoE layer" if facts.is_moe else "MLP"

st.title("Who wrote the answer")
st.markdown(
    f"In a pre-LN model every sublayer *adds* its output to the residual stream, so the stream "
    f"that reaches the logits is a sum: the embeddings, plus each head's z_h W_O, each "
    f"{sublayer}'s output and the biases. The logit of a token is that sum, through the final norm, "
    "dotted with the token's column of W_U. Freeze the norm's scale at its value for this position "
    "and every step is linear, so the logit splits exactly into one share per part: **direct "
    "logit attribution**.")
st.latex(r"\text{logit}_t = \sum_{\text{parts } c} \frac{c - \bar c}{s}\,\gamma \cdot W_U[:, t]"
         if facts.final_norm and facts.norm_kind == "layernorm" else
         r"\text{logit}_t = \sum_{\text{parts } c} \frac{c}{s}\,\gamma \cdot W_U[:, t]"
         if facts.final_norm else r"\text{logit}_t = \sum_{\text{parts } c} c \cdot W_U[:, t]")

why = why_no_attribution(cfg)
view = None if why else attribution(name, text)
if why or isinstance(view, str):
    st.info((why or view) + " Choose a pre-LN model in the sidebar (llama-tiny, or a GPT-2 or "
            "Llama folder) to split its logits; the logit lens (lesson 24) works on every model.")
else:
    T = len(view.tokens)
    first = max(0, T - SHOWN)
    last = T - 1
    with step("1 · A share for every part"):
        if first:
            st.caption(f"Your text has {T} tokens; the slider reaches the last {SHOWN}.")
        cut = slice(first, T)
        pos = view_value("pos", T - 1 - first, T - 1 - first)  # at most T - 1 - first
        vega(iv.attribution_bars, view.tokens[cut], view.answers[cut], view.parts[cut], view.kinds,
             view.logits[cut], position=pos)
        total = view.total(last)
        st.markdown(
            f"Move the slider to choose a position (the buttons beside it keep the heads only): the "
            f"bars are the parts' direct shares of the "
            f"logit of the model's top next token there. At the last position the top token is "
            f"“{safe_label(view.answers[last])}”: its logit is {view.logits[last]:.3f}, and the "
            f"{len(view.parts[last])} shares add up to {total:.3f} (they differ by "
            f"{view.rounding_gap(last):.1e}, float32's rounding).")

    with step("2 · Check it: remove the top head"):
        check_at = st.select_slider("Position to check", list(range(first, T)), value=last,
                                    format_func=lambda p: f"{p} {view.tokens[p]}", key="dla_check")
        layer, head, share = view.top_head(check_at)
        cut_run = removed(name, text, layer, head, check_at)
        if isinstance(cut_run, str):
            st.info(cut_run)
        else:
            c1, c2, c3 = st.columns(3)
            c1.metric(f"L{layer}H{head}'s direct share", f"{share:.3f}")
            c2.metric("fall without its vector alone", f"{cut_run.direct_fall:.3f}")
            c3.metric("fall when the head is removed", f"{cut_run.fall:.3f}")
            after = (f"its own layer's {sublayer}, the last sublayer" if layer == cfg.n_layers - 1
                     else f"the later heads and {sublayer}s")
            st.markdown(
                f"The head with the largest share at this position is layer {layer}, head {head}. "
                f"Running {name} again with that head's output set to zero (RunOptions' "
                f"ablate_heads) moves the logit of “{safe_label(view.answers[check_at])}” from "
                f"{cut_run.before:.3f} to {cut_run.after:.3f}: a fall of {cut_run.fall:.3f} against "
                f"a share of {share:.3f}. The middle number removes only the head's own vector from "
                "the final stream and lets the norm rescale: it differs from the share only by that "
                f"rescaling. The real fall also loses whatever {after} built on the head's output, "
                "so a share is the head's direct effect, not all of it.")
        show_code(direct_logit_attribution, ablate_head, attribution_view)

    nxt = by_url("activation-patching")
    if nxt is not None:
        st.page_link(f"lessons/{nxt.file}", label=f"Next: {nxt.title}")
