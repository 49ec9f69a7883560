"""Lessons 1-4 in the real app frame: every widget changed once, every kind of model."""
from pathlib import Path

import pytest

import tfviz
from tfviz.analysis.pipeline import top_predictions

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = ["01_tour.py", "02_tokenizer.py", "03_embeddings.py", "04_lookup.py"]


@pytest.fixture
def app_page():
    """The shared fixture's steps with app.py found from this file: AppTest resolves a relative
    path against the calling file, which for the shared fixture is tests/app/ (no app.py there)."""
    from streamlit.testing.v1 import AppTest

    def run(lesson_file: str, **query):
        at = AppTest.from_file(APP, default_timeout=90)
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, at.exception
        at.switch_page(f"lessons/{lesson_file}").run()
        assert not at.exception, at.exception
        return at

    return run


def _text(at) -> str:
    return "\n".join(str(e.value) for e in [*at.markdown, *at.caption, *at.success, *at.info])


def _ok(at):
    assert not at.exception, at.exception
    return at


def test_tour_widgets_and_live_numbers(app_page):
    at = app_page("01_tour.py")
    text = at.session_state["text"]
    trace = tfviz.load("gpt-tiny").trace(text)
    shown = _text(at)
    assert f"{len(trace.tokens)} token ids" in shown
    assert f"{len(trace.tokens)} tokens" in shown
    assert any("shape (" in str(c.value) for c in at.code)
    _ok(at.slider(key="tour_max_len").set_value(40).run())
    top = top_predictions(trace.logits[-1], 1)[0]
    assert top[2] > 0  # the chart is built from these numbers (checked in the viz tests)


def test_tour_masked_prediction_for_bert(app_page):
    at = app_page("01_tour.py", model="bert-tiny")
    box = at.selectbox(key="tour_mask_pos")
    _ok(box.set_value(2).run())
    assert "hidden" in _text(at)


def test_tokenizer_widgets(app_page):
    at = app_page("02_tokenizer.py")
    _ok(at.slider(key="tok_merges").set_value(5).run())
    _ok(at.slider(key="tok_step").set_value(3).run())
    assert "Step 3: pair counts" in _text(at)
    _ok(at.slider(key="tok_step").set_value(0).run())
    assert "Step 0, before any merge" in _text(at)
    _ok(at.text_input(key="tok_word").input("transformerify").run())
    _ok(at.text_area(key="tok_corpus").input("aa aa ab <script>").run())
    bodies = "".join(h.value for h in at.get("html"))
    assert "&lt;script&gt;" in bodies and "<script>" not in bodies
    _ok(at.text_area(key="tok_corpus").input("a b c").run())
    assert any("Only 3 merges were possible" in str(i.value) for i in at.info)
    _ok(at.text_area(key="tok_corpus").input("   ").run())
    assert any("empty" in str(w.value) for w in at.warning)


def test_embeddings_widgets(app_page):
    at = app_page("03_embeddings.py")
    assert any("rounding noise" in str(s.value) for s in at.success)
    _ok(at.select_slider(key="emb_base").set_value(100).run())
    _ok(at.slider(key="emb_d").set_value(16).run())
    _ok(at.slider(key="emb_positions").set_value(32).run())
    _ok(at.slider(key="emb_rope_dist").set_value(5).run())
    _ok(at.selectbox(key="emb_perm").set_value("shuffle").run())
    _ok(at.button(key="emb_reshuffle").click().run())
    assert at.session_state["emb_seed"] == 1
    assert any("rounding noise" in str(s.value) for s in at.success)
    rows = [r for r in at.dataframe if "Robot" in str(r.value)]
    assert rows and "sin(1/1) = 0.84" in rows[0].value.to_string()


def test_lookup_widgets(app_page):
    at = app_page("04_lookup.py")
    _ok(at.slider(key="lk_qx").set_value(-1.0).run())
    _ok(at.slider(key="lk_qy").set_value(0.0).run())
    _ok(at.select_slider(key="lk_tau").set_value(0.02).run())
    metrics = {m.label: m.value for m in at.metric}
    hard = metrics["Hard lookup answer (best key only)"]
    assert hard == "0.00 legs, 4.00 wheels"  # the car
    assert metrics["Attention answer (blend of all values)"] == hard  # τ tiny: soft = hard
    _ok(at.slider(key="layer").set_value(1).run())
    _ok(at.slider(key="head").set_value(2).run())
    _ok(at.selectbox(key="lk_query_tok").set_value(0).run())
    assert "The largest weight is 1.000" in _text(at)  # token 0 of a decoder sees only itself


@pytest.mark.parametrize("model", ["bert-tiny", "moe-tiny", "reverse-encdec"])
def test_every_page_with_other_models(app_page, model):
    at = app_page(PAGES[0], model=model)
    assert at.session_state["model"] == model
    for page in PAGES[1:]:
        _ok(at.switch_page(f"lessons/{page}").run())
