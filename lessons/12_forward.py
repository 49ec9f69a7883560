"""Lesson 12: the learner's text through every stage of the model, one step at a time."""
import streamlit as st

from tfviz.analysis import forward as fw
from tfviz.ui.cache import get_trace
from tfviz.ui.context import lesson_context
from tfviz.ui.errors import safe_fragment
from tfviz.ui.notes import in_the_notes
from tfviz.ui.state import persist
from tfviz.ui.widgets import chart, show_code, stable_select, step_of, vega
from tfviz.viz import forward as fwv


def _move(delta: int, n: int) -> None:
    st.session_state["fw_step"] = min(max(st.session_state.get("fw_step", 0) + delta, 0), n - 1)


name, text, bundle, cfg = lesson_context()
trace = get_trace(name, text)

st.title("The full forward walk")
st.markdown(
    "Everything from the earlier lessons, in the order the model does it, on your own text. "
    "Step through with the slider or the buttons: each step says what happens, gives the "
    "formula and the shape of the tensor, and shows the model's actual numbers (hover a "
    "cell for its exact value)."
)
if cfg.arch == "encoder-decoder":
    st.info(f"**{name}** is an encoder-decoder. The encoder reads your text; the decoder "
            "writes the answer one token at a time and reads the encoder's output through "
            "cross-attention. Here the decoder is fed `<bos>` followed by the model's own "
            "greedy answer (the most likely token at every step), so every stage, cross-attention "
            "included, has real numbers to show.")
    st.dataframe([{"side": "encoder reads (your text)", "tokens": " ".join(trace.enc_tokens)},
                  {"side": "decoder reads (<bos> + the model's answer)",
                   "tokens": " ".join(trace.tokens)}], hide_index=True)
    in_the_notes("forward-walk")

persist("head")
st.session_state["head"] = min(st.session_state.get("head", 0), cfg.n_heads - 1)
head = st.slider("Head shown in the attention steps", 0, cfg.n_heads - 1, key="head")
steps = fw.forward_steps(trace, head=head, token_strings=bundle.token_strings)
n = len(steps)


@safe_fragment
def stepper() -> None:
    stable_select("Step", range(n), "fw_step", slider=True, recover=lambda v: step_of(v, n),
                  format_func=lambda i: f"{i + 1}. {steps[i].title}")
    back, forward, _ = st.columns([1, 1, 4])
    back.button("◀ Back", key="fw_back", on_click=_move, args=(-1, n), width="stretch")
    forward.button("Next ▶", key="fw_next", on_click=_move, args=(1, n), width="stretch")
    i = st.session_state["fw_step"]
    step = steps[i]
    st.subheader(f"Step {i + 1} of {n}: {step.title}")
    st.markdown(step.explanation)
    st.latex(step.formula)
    st.caption(f"Shape of the tensor: {step.shape}")
    chart(fwv.step_figure, step)


stepper()

with st.expander("All steps at a glance"):
    st.dataframe([{"step": i + 1, "what": s.title, "shape": s.shape} for i, s in enumerate(steps)],
                 hide_index=True)

st.header("Where the parameters are")
counted = fw.grouped_params(cfg)
total = fw.param_total(cfg)
st.markdown(
    "Counting the learned numbers part by part, with the parameter counter from the worked "
    "exercises. Sinusoidal positions are a fixed formula, so they cost nothing; the output "
    "layer costs nothing when it reuses the embedding matrix (tied weights)."
    + (" In a MoE model the feed-forward part holds every expert plus the router, although "
       "each token only uses k of the experts." if cfg.is_moe else "")
)
vega(fwv.params_chart, counted, title=f"Parameters of {name} by part (total {total:,})")
st.dataframe([{"part": part, "parameters": count} for part, count in fw.param_parts(cfg).items()],
             hide_index=True)
actual = fw.model_param_count(bundle.weights())
if actual == total:
    st.success(f"Check: the model itself holds {actual:,} numbers, exactly the counted {total:,}.")
else:
    st.warning(f"The counter says {total:,} but the model holds {actual:,}.")

show_code(fw.forward_steps, fw.grouped_params, fw.model_param_count)
