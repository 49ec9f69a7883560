"""Lessons 24-27 ("Looking inside") as a learner opens them, on llama-tiny (pre-LN, RMSNorm),
gpt-tiny (post-LN: attribution refused in words), a random Llama folder and a random GPT-2
folder. What each page sends
is checked against the model run independently: the lens's last row against softmax of the
model's own logits, the attribution bars' sum against the logit, the removal check against a
run with the head's slice of W_O's input zeroed by a torch hook (not RunOptions), the patching
map's ends against plain forward passes, the induction scores against the trace's maps by hand.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tests.app.specs import instant_charts
from tests.app.test_bert_checkpoint_pages import listing
from tests.support.claims import page_words
from tfviz.experiments.inside import coref_pair
from tfviz.trace import run_with_trace

TEXT = "The animal didn't cross the street because it was too tired."
SHOWN = 6e-5  # a chart's 4 decimals, plus float32 against float64


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.llama_folders import make_checkpoint

    folder = tmp_path_factory.mktemp("inside") / "llama"
    make_checkpoint(folder)
    return str(folder)


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.unit.hf.test_gpt2 import make_checkpoint

    folder = tmp_path_factory.mktemp("inside") / "gpt2"
    make_checkpoint(folder)
    return str(folder)


@pytest.fixture(params=["llama-tiny", "gpt-tiny", "folder", "gpt2 folder"])
def opened(request, app_page, monkeypatch):
    folders = {"folder": "llama_folder", "gpt2 folder": "gpt2_folder"}
    model = request.getfixturevalue(folders[request.param]) if request.param in folders else request.param
    if request.param in folders:
        listing(monkeypatch, model)
    bundle = tfviz.load(model)

    def run(lesson: str, **query):
        at = app_page("01_tour.py", model=model, text=TEXT)
        at.switch_page(f"lessons/{lesson}")
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, at.exception
        assert at.session_state["model"] == model
        return at

    return run, model, bundle


def _chart(at, key: str):
    return next((spec, data) for spec, data in instant_charts(at) if key in str(spec.get("description", "")))


def _logits(bundle, text: str) -> np.ndarray:
    ids = torch.tensor([bundle.read(text).ids])
    with torch.no_grad():
        return bundle.model(ids)[0].double().numpy()  # (T, vocab)


def test_logit_lens_page(opened):
    run, name, bundle = opened
    at = run("24_logit_lens.py")
    _, data = _chart(at, "logit lens")
    rows = data["rows"]
    logits = _logits(bundle, TEXT)
    probs = torch.softmax(torch.from_numpy(logits), -1).numpy()
    last = rows[rows["layer"] == rows["layer"].iloc[-1]]  # the last stage: after the last block
    shown = last["pos"].str.split(" ", n=1).str[0].astype(int).to_numpy()
    top = probs.argmax(-1)[shown]
    assert list(last["top"]) == bundle.token_strings(top)
    np.testing.assert_allclose(last["p_top"], probs[shown, top], atol=SHOWN)
    np.testing.assert_allclose(last["p_final"], last["p_top"])  # the final prediction is the top
    words = page_words(at)
    assert f"{name} predicts “{bundle.token_strings([top[-1]])[0]}”" in words
    facts = bundle.facts
    assert (f"its final {facts.norm_name}" in words) == facts.final_norm


def test_who_wrote_the_answer_page(opened):
    run, name, bundle = opened
    at = run("25_direct_attribution.py")
    words = page_words(at)
    if bundle.config.norm != "pre":  # gpt-tiny: refused in words, no chart
        assert "post-LN" in words and "Choose a pre-LN model" in words
        assert not [s for s, _ in instant_charts(at) if "Direct logit" in s.get("description", "")]
        return
    spec, data = _chart(at, "Direct logit attribution")
    rows = data["rows"]
    logits = _logits(bundle, TEXT)
    n_shown = len(next(p for p in spec["params"] if p["name"] == "toks")["value"])
    last = rows[rows["position"] == n_shown - 1]
    top = int(logits[-1].argmax())
    # the parts' shares (4 decimals each) add up to the model's own logit
    assert abs(last["share"].sum() - logits[-1, top]) < 5e-5 * len(last) + 1e-4
    # the check: remove the top head with a hook on W_O's input (independent of RunOptions)
    layer, head = (int(x) for x in last.loc[last[last["kind"] == "head"]["share"].idxmax(), "part"][1:].split("H"))
    dh = bundle.config.d_head
    hook = bundle.model.blocks[layer].attn.W_o.register_forward_pre_hook(
        lambda m, a: (a[0].index_fill(-1, torch.arange(head * dh, (head + 1) * dh), 0.0),))
    try:
        after = _logits(bundle, TEXT)[-1, top]
    finally:
        hook.remove()
    fall = at.metric[2].value
    assert abs(float(fall) - (logits[-1, top] - after)) < 1.5e-3  # shown to 3 decimals
    assert f"L{layer}H{head}'s direct share" == at.metric[0].label


def test_causes_not_correlations_page(opened):
    run, name, bundle = opened
    at = run("26_activation_patching.py")
    clean, corrupt = coref_pair()
    a, b = _logits(bundle, clean), _logits(bundle, corrupt)
    answer, distractor = int(a[-1].argmax()), int(b[-1].argmax())
    if answer == distractor:  # a model that answers both alike: said in words
        assert "same next token" in page_words(at)
        return
    rows = _chart(at, "Activation patching over")[1]["rows"]
    m_clean, m_corrupt = a[-1, answer] - a[-1, distractor], b[-1, answer] - b[-1, distractor]
    # block 0's input at the changed word is the clean run's whole difference: all restored
    ia, ib = bundle.read(clean).ids, bundle.read(corrupt).ids
    changed = [p for p, (x, y) in enumerate(zip(ia, ib)) if x != y]
    at_changed = rows["pos"].str.split(" ", n=1).str[0].astype(int).isin(changed)
    if len(changed) == 1:  # a one-token word (our tokenizers): that cell is the whole clean run
        cell = rows[(rows["layer"] == "block 0") & at_changed]
        assert float(cell["restored"].iloc[0]) == pytest.approx(1.0, abs=1e-3)
        assert float(cell["diff"].iloc[0]) == pytest.approx(m_clean, abs=1e-3)
    other = rows[(rows["layer"] == "block 0") & ~at_changed]
    np.testing.assert_allclose(other["diff"], m_corrupt, atol=1e-3)  # same token: nothing moves
    words = page_words(at)
    assert f"{m_clean:.3f} on the clean run" in words and f"{m_corrupt:.3f} on the corrupt run" in words
    assert _chart(at, "patching by head")


def test_induction_heads_page(opened):
    run, name, bundle = opened
    at = run("27_induction_heads.py")
    from tfviz.interpret import repeated_ids

    ids, offset, _ = repeated_ids(bundle, length=10, seed=0)  # the page's default
    tr = run_with_trace(bundle.model, ids)
    pattern = np.stack([tr[f"blocks.{i}.attn.hook_pattern"] for i in range(bundle.config.n_layers)])
    n = 10
    q = offset + n + np.arange(n)
    by_hand = pattern[:, :, q, q - n + 1].mean(-1)  # (layers, heads)
    rows = _chart(at, "induction score (left)")[1]["rows"]
    ind = rows[rows["which"] == "induction"].sort_values(["layer", "head"])
    np.testing.assert_allclose(ind["score"].to_numpy().reshape(by_hand.shape), by_hand, atol=SHOWN)
    losses = _chart(at, "repeats the first")[1]["losses"]
    logp = torch.log_softmax(torch.from_numpy(tr["logits"]).double(), -1).numpy()
    np.testing.assert_allclose(losses["loss"], -logp[np.arange(len(ids) - 1), ids[1:]], atol=SHOWN)
    il, ih = divmod(int(by_hand.argmax()), bundle.config.n_heads)
    assert f"The strongest induction head is L{il}H{ih}" in page_words(at)


@pytest.mark.parametrize("lesson", ["24_logit_lens.py", "25_direct_attribution.py",
                                    "26_activation_patching.py", "27_induction_heads.py"])
@pytest.mark.parametrize("text", ["", "x" * 100_000, "🙂🙂 ☕", "مرحبا بالعالم", "<b>hi</b><script>alert(1)</script>"])
def test_hostile_text_gets_words_not_a_traceback(app_page, lesson, text):
    at = app_page(lesson, model="llama-tiny", text=text)
    assert not at.exception, at.exception
    if lesson == "26_activation_patching.py":  # its own two boxes take the text as well
        at.text_input(key="ap_clean").set_value(text).run()
        assert not at.exception, at.exception
        assert at.info or at.markdown


@pytest.mark.parametrize("lesson", ["24_logit_lens.py", "25_direct_attribution.py",
                                    "26_activation_patching.py", "27_induction_heads.py"])
def test_presenter_view_draws_the_declared_steps_in_large_type(app_page, lesson):
    from tests.app.test_presenter import chart_specs, declared_steps, drawn_steps
    from tfviz.ui.lessons import ROOT

    at = app_page(lesson, model="llama-tiny")
    normal = drawn_steps(at)
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception, at.exception
    declared = declared_steps(ROOT / "lessons" / lesson)
    assert drawn_steps(at) == normal and len(normal) == len(declared)
    assert all(p.fullmatch(title) for (_, title), p in zip(normal, declared))
    assert all(s["config"]["axis"]["labelFontSize"] >= 24 for s in chart_specs(at))


def test_the_claims_rows_catch_these_lessons_sentences_under_another_model():
    """Each fact-dependent sentence of lessons 24 and 25, written for one model, is caught by
    the claims table under a model it is false of (and passes under its own)."""
    from tests.support.claims import broken

    llama = {"logit-lens": "through its final RMSNorm, then the unembedding",
             "direct-attribution": r"\frac{c}{s}\,\gamma and each MLP's output"}
    gpt = {"logit-lens": "directly: it has no final norm, since each of its blocks already ends in one (post-LN)",
           "direct-attribution": "each MLP's output"}
    assert broken(llama, "llama-tiny") == [] and broken(gpt, "gpt-tiny") == []
    assert len(broken(llama, "gpt-tiny")) == 2  # gpt-tiny has no final norm: neither holds
    assert len(broken(gpt, "llama-tiny")) == 2  # llama-tiny has a final norm and is pre-LN
    assert len(broken({"direct-attribution": "each MLP's output"}, "moe-tiny")) == 1
    assert len(broken({"logit-lens": "the embedding matrix itself, transposed"}, "llama-tiny")) == 1
    assert len(broken({"direct-attribution": r"\frac{c - \bar c}{s}"}, "llama-tiny")) == 1
