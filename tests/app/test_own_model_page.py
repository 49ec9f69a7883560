"""A training-lab run opened in the lessons (issue #18): trained on the lab page, opened with
"Open in the lessons", shown by lesson 5 with the run's own numbers, for this session only."""
from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP
from tests.app.specs import instant_charts, unpacked
from tests.support.claims import broken, page_words
from tfviz.lab.opened import example_texts, run_bundle
from tfviz.lab.tasks import TASKS
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

LAB, SELF_ATTENTION = "23_training_lab.py", "05_self_attention.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _trained(app_page):
    """The lab page after a 10-step run of the reverse task, d_model 16 with 2 heads."""
    at = _ok(app_page(LAB))
    at.select_slider(key="lab_steps").set_value(10)
    at.select_slider(key="lab_d_model").set_value(16)
    _ok(at.run())
    _ok(at.button(key="lab_train").click().run())
    end = time.monotonic() + 120
    while not (at.session_state["lab_runs"] if "lab_runs" in at.session_state else []):
        assert time.monotonic() < end, "the 10-step run did not finish in 120 s"
        time.sleep(0.2)
        _ok(at.run())
    return at


def _layer0_by_hand(W, ids: list[int], heads: int) -> np.ndarray:
    """Layer 0's attention weights (heads, T, T) from the run's raw weights with torch alone:
    token rows + sine table, LayerNorm, Q and K, scores / √d_head, causal mask, softmax."""
    t = {k: torch.from_numpy(np.array(v)) for k, v in W.items()}
    T, d = len(ids), t["embed.weight"].shape[1]
    angle = torch.arange(T, dtype=torch.float64)[:, None] / 10000.0 ** (torch.arange(0, d, 2) / d)
    pos = torch.stack([torch.sin(angle), torch.cos(angle)], -1).flatten(1).float()  # sin, cos, sin…
    h = F.layer_norm(t["embed.weight"][ids] + pos, (d,), t["blocks.0.ln1.weight"], t["blocks.0.ln1.bias"])
    q = F.linear(h, t["blocks.0.attn.W_q.weight"], t["blocks.0.attn.W_q.bias"]).view(T, heads, -1)
    k = F.linear(h, t["blocks.0.attn.W_k.weight"], t["blocks.0.attn.W_k.bias"]).view(T, heads, -1)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(d // heads)
    scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    return torch.softmax(scores, -1).numpy()


def test_a_run_opened_in_the_lessons_is_this_sessions_model_only(app_page):
    at = _trained(app_page)
    (run,) = at.session_state["lab_runs"]
    assert run.state == "done" and run.weights is not None
    _ok(at.button(key="lab_open").click().run())
    name = "my run 1: reverse, 2 layers × 2 heads"
    assert at.session_state["model"] == name
    assert name in at.selectbox(key="model").options
    text = next(iter(example_texts(TASKS["reverse"]).values()))  # a held-out row, not English
    assert at.session_state["text"] == text and text.startswith("<bos> ")
    assert any(name in s.value for s in at.success)  # the lab says so, with links to the lessons

    # Lesson 5 shows the run's own numbers: step 2's weights of every layer-0 query and head,
    # against the run's weights run by hand with torch (the chart sends 4 decimals).
    _ok(at.switch_page(f"lessons/{SELF_ATTENTION}").run())
    assert at.title[0].value == "Self-attention, step by step"
    ids = TASKS["reverse"].vocab.encode(text.split())
    want = _layer0_by_hand(run.weights, ids, heads=2)
    (_, steps), = [c for c in instant_charts(at) if "steps" in c[1]]
    rows = steps["steps"].query("layer == 0")
    assert len(rows) == 2 * len(ids)
    for row in rows.itertuples():
        np.testing.assert_allclose(np.nan_to_num(unpacked(row.w)), want[row.head, row.q], atol=6e-5)
    shared_weights = at.session_state["lab_runs"][0].weights
    assert all(np.array_equal(shared_weights[k], run.weights[k]) for k in run.weights)

    # Typed text is read with the task's symbols; an unknown one gets a sentence, no error.
    at.text_area(key="_typed").input("c a b <sep> zz 😀").run()
    _ok(at)
    assert any("Your run's model reads only the letters a b c" in c.value for c in at.sidebar.caption)
    assert at.query_params["model"] in ("my-run", ["my-run"])  # a link never names the run

    # A second learner on the same server never sees it, even with a link made on it.
    other = AppTest.from_file(APP, default_timeout=90)
    other.query_params.update(model="my-run", text="<bos> c a b <sep>")
    _ok(other.run())
    assert any("someone trained in the training lab" in t.value for t in other.toast)
    _ok(other.switch_page(f"lessons/{SELF_ATTENTION}").run())
    assert not any(o.startswith("my run") for o in other.selectbox(key="model").options)
    assert other.session_state["model"] == DEFAULT_MODEL and other.session_state["text"] == DEFAULT_TEXT

    # Choosing a shared model again brings the sentence from before back.
    at.selectbox(key="model").set_value(DEFAULT_MODEL).run()
    _ok(at)
    assert at.session_state["text"] == DEFAULT_TEXT
    at.selectbox(key="model").set_value(name).run()
    _ok(at)
    assert at.session_state["text"] == text  # and the run's example when it is chosen again

    # Opening a run again replaces the one before: one opened run per session.
    _ok(at.switch_page(f"lessons/{LAB}").run())
    _ok(at.button(key="lab_open").click().run())
    assert at.session_state["model"] == name.replace("my run 1", "my run 2")
    assert [o for o in at.selectbox(key="model").options if o.startswith("my run")] == \
        [name.replace("my run 1", "my run 2")]


def test_every_lesson_opens_on_a_mixture_of_experts_run_with_rope_and_post_ln(app_page):
    """The lessons that read the sidebar's model run it; the ones with a model of their own
    say so and keep it. A finished run is handed to the lab page as its kept run."""
    from tfviz.lab.settings import LabSettings
    from tfviz.lab.train import train
    from tfviz.ui.lessons import available

    torch.set_num_threads(1)
    run = train(LabSettings.default("sort", d_model=16, n_heads=2, n_experts=2, positional="rope",
                                    norm="post", steps=5, batch_size=16))
    at = _ok(app_page(LAB))
    at.session_state["lab_runs"] = [run]
    _ok(at.run())
    _ok(at.button(key="lab_open").click().run())
    name = at.session_state["model"]
    assert name == "my run 1: sort, 2 layers × 2 heads, MoE 2 experts"
    seen = {}
    for lesson in available():
        _ok(at.switch_page(f"lessons/{lesson.file}").run())
        assert at.session_state["model"] == name, lesson.file  # no page changes the sidebar's model
        seen[lesson.url or "home"] = page_words(at)
        shown = " ".join(e.value for e in [*at.markdown, *at.info, *at.caption, *at.header,
                                           *at.subheader] if isinstance(e.value, str))
        if lesson.url in ("encoder-decoder", "bert", "gqa"):  # their own models, said plainly
            assert f"The sidebar's model, {name}, is used again" in shown, lesson.url
    # the claims matrix's lab-run row (tests/app/test_claims.py walks the other kinds)
    assert broken(seen, name, run_bundle(run.settings, run.weights, name)) == []
