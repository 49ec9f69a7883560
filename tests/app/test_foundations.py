"""Lessons 1-4 in the real app frame: every widget changed once, every kind of model."""
import json

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

import tfviz

PAGES = ["01_tour.py", "02_tokenizer.py", "03_embeddings.py", "04_lookup.py"]


def _text(at) -> str:
    return "\n".join(str(e.value) for e in [*at.markdown, *at.caption, *at.success, *at.info])


def _chart_rows(at, index=0):
    """The data behind the index-th Vega-Lite chart on the page, as a DataFrame: its Arrow
    dataset, or the rows inside its views (the tour's charts: tfviz.viz.pipeline), once each."""
    proto = at.get("vega_lite_chart")[index].proto
    if proto.datasets:
        return convert_arrow_bytes_to_pandas_df(proto.datasets[0].data.data)
    spec = json.loads(proto.spec)
    views = spec["layer"][:1] if "layer" in spec else spec["hconcat"]  # layers share their rows
    return pd.DataFrame([row for view in views for row in view["data"]["values"]])


def _ok(at):
    assert not at.exception, at.exception
    return at


def test_tour_widgets_and_live_numbers(app_page):
    at = app_page("01_tour.py")
    text = at.session_state["text"]
    trace = tfviz.load("gpt-tiny").trace(text)
    stages = [h.value for h in at.get("html") if 'class="tfviz-stage"' in h.value]
    assert f"{len(trace.tokens)} token ids" in stages[0]
    assert f"{len(trace.tokens)} tokens" in _text(at)
    assert len(stages) == 8 and f"shape ({len(trace.tokens)},)" in stages[0]
    assert f"shape ({len(trace.tokens)}, {trace.config.d_model})" in stages[1]
    links = [link.proto.page for link in at.get("page_link")]
    assert {"tokenizer", "embeddings", "attention-lookup"} <= set(links)
    probs = torch.softmax(torch.tensor(trace.logits[-1], dtype=torch.float64), -1)
    ref = torch.topk(probs, 5)
    rows = _chart_rows(at, 0)
    assert rows["id"].tolist() == ref.indices.tolist()
    # The page draws the numbers stored with the model (assets/gpt-tiny/tour_numbers.json),
    # computed on whichever CPU built it: float32 logits whose last bits another CPU or thread
    # count rounds differently (2.4e-6 relative here), so a float32 tolerance
    np.testing.assert_allclose(rows["probability"], ref.values.numpy(), rtol=1e-5)
    # RNN vs transformer: every length up to 128 is sent, and the chart's own slider (in the
    # browser, no script run) starts at the text's length, at least 16
    rnn = _chart_rows(at, 1)
    assert sorted(set(rnn["n"])) == list(range(2, 129)) and len(rnn) == 4 * 127
    for row in rnn.itertuples():  # an RNN: n steps in a row, n - 1 hops; attention: 1 and 1
        rule = {("RNN", "sequential steps"): row.n, ("RNN", "longest path between two tokens"):
                row.n - 1}.get((row.model, row.measure), 1)
        assert row.value == rule, row
    spec = json.loads(at.get("vega_lite_chart")[1].proto.spec)
    (pick,) = spec["params"]
    assert pick["value"] == max(16, len(trace.tokens)) and pick["bind"]["max"] == 128
    assert spec["hconcat"][0]["transform"] == [{"filter": f"datum.n <= {pick['name']}"}]
    assert not at.slider  # nothing on the page reruns the script to move it


def test_tour_masked_prediction_for_bert(app_page):
    at = app_page("01_tour.py", model="bert-tiny")
    box = at.selectbox(key="tour_mask_pos")
    _ok(box.set_value(2).run())
    assert "hidden" in _text(at)
    bundle = tfviz.load("bert-tiny")
    ids = bundle.encode(at.session_state["text"])
    ids[2] = 4  # [MASK]
    with torch.no_grad():
        logits = bundle.model(torch.tensor([ids]))[0, 2].double()
    ref = torch.topk(torch.softmax(logits, -1), 5)
    rows = _chart_rows(at, 0)
    assert rows["id"].tolist() == ref.indices.tolist()
    np.testing.assert_allclose(rows["probability"], ref.values.numpy(), rtol=1e-4)


def test_tokenizer_widgets(app_page):
    at = app_page("02_tokenizer.py")
    _ok(at.slider(key="tok_merges").set_value(5).run())
    _ok(at.slider(key="tok_step").set_value(3).run())
    assert "Step 3: pair counts" in _text(at)
    _ok(at.slider(key="tok_step").set_value(0).run())
    assert "Step 0, before any merge" in _text(at)
    _ok(at.text_input(key="tok_word").input("transformerify").run())
    _ok(at.text_area(key="tok_corpus").input("aa aa ab <script>").run())
    from tfviz.ui.browser_code import asset  # the frame's own script, not the learner's text

    bodies = "".join(h.value for h in at.get("html") if "__tfvizViews" not in h.value)
    assert any("__tfvizViews" in h.value for h in at.get("html"))
    assert "__tfvizViews" in asset("view_sync.js")
    assert "&lt;script&gt;" in bodies and "<script>" not in bodies
    _ok(at.text_area(key="tok_corpus").input("a b c").run())
    assert any("Only 3 merges were possible" in str(i.value) for i in at.info)
    _ok(at.text_area(key="tok_corpus").input("   ").run())
    assert any("empty" in str(w.value) for w in at.warning)


def test_tokenizer_dashes_the_characters_its_corpus_never_contained(app_page):
    import re

    at = app_page("02_tokenizer.py")
    _ok(at.slider(key="tok_step").set_value(at.slider(key="tok_step").max).run())  # every merge
    _ok(at.text_input(key="tok_word").input("transformerify").run())
    assert "Dashed pieces are characters the corpus never contained" in _text(at)
    chip = re.compile(r"<span title='[^']*' style='[^']*border:([^;]*);[^']*'>([^<]*)")
    rows = [chip.findall(h.value) for h in at.get("html")]
    rows = [r for r in rows if "".join(t for _, t in r).startswith("tr")]  # the word, step by step
    assert len(rows) >= 2  # the characters, then at least one merge
    absent = set("transformerify") - set(at.text_area(key="tok_corpus").value)
    assert absent == set("afmy")
    for row in rows:
        dashed = {t for border, t in row if "dashed" in border}
        assert dashed == {t for _, t in row if t in absent}, row
        assert dashed, "a, f, m and y stay single characters, so each row shows some"


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
    assert not {"layer", "head", "lk_query_tok"} & {w.key for w in [*at.slider, *at.selectbox]}


def test_lookup_in_the_model_sends_every_row_and_opens_on_the_link(app_page):
    """The model's section is an instant chart: every layer's, head's and query's weights, with
    the best key and 1 / Σα² of each row, opening on the link's layer, head and token."""
    import numpy as np

    import tfviz
    from tests.app.specs import instant_charts, param_values, unpacked
    from tfviz.analysis.lookup import effective_count
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    at = app_page("04_lookup.py", layer="1", head="2", query="0")
    (spec, data), = [c for c in instant_charts(at) if "layer" in param_values(c[0])]
    view = param_values(spec)
    assert (view["layer"], view["head"], view["query"]) == (1, 2, 0)
    trace = tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT)
    rows = data["rows"]
    assert len(rows) == 3 * 4 * len(trace.tokens)
    for row in rows.itertuples():
        weights = trace["pattern", row.layer][row.head, row.q]
        np.testing.assert_allclose(unpacked(row.w), weights, atol=6e-5)
        assert row.top == weights.argmax() and abs(row.mix - effective_count(weights)) < 6e-5
    first = rows.query("layer == 1 and head == 2 and q == 0").iloc[0]
    assert unpacked(first.w)[0] == 1.0 and first.mix == 1.0  # token 0 of a decoder sees only itself


def test_tokenizer_page_names_what_the_letters_model_skips(app_page):
    at = _ok(app_page("02_tokenizer.py", model="reverse-encdec"))
    text = at.session_state["text"]
    skipped = sorted({c for c in text.lower() if c not in "abcdefghijklmnop ,\t\n"})
    assert skipped  # the default sentence has letters after p, and punctuation
    assert f"Skipped in your text: {' '.join(skipped)}" in _text(at)
    assert "reversing letter sequences" in _text(at)


@pytest.mark.parametrize("model", ["bert-tiny", "moe-tiny", "reverse-encdec"])
def test_every_page_with_other_models(app_page, model):
    at = app_page(PAGES[0], model=model)
    assert at.session_state["model"] == model
    for page in PAGES[1:]:
        _ok(at.switch_page(f"lessons/{page}").run())
