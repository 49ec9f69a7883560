"""AppTest for lessons 9-12: every widget changed once, and every model in the sidebar."""
import numpy as np
import pytest

from tests.app.specs import instant_charts, param_values, unpacked

MODELS = ("bert-tiny", "moe-tiny", "reverse-encdec")


def _ok(at):
    assert not at.exception, at.exception


@pytest.fixture
def run(app_page):
    def go(page, **query):
        at = app_page(page, **query)
        _ok(at)
        return at
    return go


# ----- lesson 9 -------------------------------------------------------------------------------
def test_layernorm_page(run):
    at = run("09_layernorm.py")
    assert at.title[0].value == "Residual connections and LayerNorm"
    assert at.latex and at.dataframe
    at.slider(key="layer").set_value(2).run()
    _ok(at)
    at.radio(key="ln_norm").set_value("ln2").run()
    _ok(at)
    at.selectbox(key="ln_token").set_value(3).run()
    _ok(at)
    assert any("Largest difference" in s.value for s in at.success)


@pytest.mark.parametrize("model", MODELS)
def test_layernorm_page_other_models(run, model):
    at = run("09_layernorm.py", model=model)
    if model == "reverse-encdec":
        assert at.radio(key="ln_norm").options == ["after self-attention (ln1)",
                                                   "after cross-attention (ln_cross)",
                                                   "after the feed-forward (ln2)"]
        at.radio(key="ln_norm").set_value("ln_cross").run()
        _ok(at)


# ----- lesson 10 ------------------------------------------------------------------------------
def test_ffn_page(run):
    """Both instant charts carry every layer, head and token of the trace and open on the
    link's view; the checks under them cover every layer at once."""
    import numpy as np
    import tfviz
    from tfviz.analysis import ffn as fa
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    at = run("10_ffn.py", layer="1", head="2", query="3", neurons="20")
    assert at.title[0].value == "The feed-forward network"
    trace = tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT)
    n = len(trace.tokens)
    (neurons, neuron_data), (mixing, mixing_data) = instant_charts(at)
    assert param_values(neurons)["layer"] == 1 and param_values(neurons)["neurons"] == 20
    assert {k: param_values(mixing)[k] for k in ("layer", "head", "query")} == {
        "layer": 1, "head": 2, "query": 3}
    for row in neuron_data["neurons"].itertuples():  # each layer's 32 strongest neurons
        acts = fa.neuron_acts(trace, row.layer)
        ids = param_values(neurons)["ids"][row.layer]
        assert ids == fa.top_neurons(acts, 32).tolist()
        np.testing.assert_allclose(unpacked(row.v).reshape(n, 32), acts[:, ids], atol=6e-5)
    for row in mixing_data["mix"].itertuples():
        np.testing.assert_allclose(unpacked(row.w).reshape(n, n),
                                   trace["pattern", row.layer][row.head], atol=6e-5)
    checks = mixing_data["checks"]
    first = checks[checks["q"] == 0]  # a query at position 0 puts all weight on itself
    assert len(first) == 3 * 4 and np.allclose(first["sum"], 1.0) and first["inside"].all()
    chosen = checks[(checks["layer"] == 1) & (checks["head"] == 2) & (checks["q"] == 3)].iloc[0]
    assert chosen["min"] == trace["pattern", 1][2, 3].min()
    table = at.dataframe[0].value  # every layer's strongest neurons, no layer chosen on the server
    assert list(table["layer"]) == [layer for layer in range(3) for _ in range(n)]
    assert any("(layer, head, token) triples" in s.value and f"{3 * 4 * n} outputs" in s.value
               for s in at.success)


@pytest.mark.parametrize("model", MODELS)
def test_ffn_page_other_models(run, model):
    at = run("10_ffn.py", model=model)
    if model == "bert-tiny":
        assert any("GELU" in m.value for m in at.markdown)
    if model == "moe-tiny":
        assert any("expert networks" in i.value for i in at.info)
        at.button(key="ffn_switch").click().run()
        _ok(at)
        assert at.session_state["model"] == "gpt-tiny"
        assert [param_values(spec)["layer"] for spec, _ in instant_charts(at)] == [0, 0]


# ----- lesson 11 ------------------------------------------------------------------------------
def test_moe_page_on_a_dense_model_offers_the_switch(run):
    at = run("11_moe.py")
    assert at.info and "dense model" in at.info[0].value
    at.button(key="moe_switch").click().run()
    _ok(at)
    assert at.session_state["model"] == "moe-tiny"
    assert at.slider(key="moe_topk").value == 1


def test_moe_page(run):
    """Layer and followed token are instant views opened from the link; top-k is a what-if
    that reruns the model, and every chart then holds the top-3 routing of every layer."""
    import tfviz
    from tfviz.analysis import moe as ma
    from tfviz.config import RunOptions
    from tfviz.ui.state import DEFAULT_TEXT

    at = run("11_moe.py", model="moe-tiny", layer="1", pos="2")
    assert at.title[0].value == "Mixture of experts"
    charts = instant_charts(at)
    assert len(charts) == 4  # routing, load, classes, and the recorded classes in an expander
    assert all(param_values(spec)["layer"] == 1 for spec, _ in charts)
    assert param_values(charts[0][0])["pos"] == 2
    at.slider(key="moe_topk").set_value(3).run()
    _ok(at)
    (routing, data), (load, load_data), *_ = instant_charts(at)
    trace = tfviz.load("moe-tiny").trace(DEFAULT_TEXT, options=RunOptions(moe_top_k=3))
    gates = data["gates"]
    for layer in range(2):
        shown = gates[gates["layer"] == layer].sort_values(["t", "e"])
        np.testing.assert_allclose(shown["p"].to_numpy().reshape(len(trace.tokens), 4),
                                   trace[f"blocks.{layer}.mlp.hook_gate_probs"], atol=6e-5)
        chosen = (shown["status"] != "not chosen").to_numpy().reshape(len(trace.tokens), 4)
        assert (chosen.sum(axis=1) == 3).all()  # k = 3 experts per token
    follow = data["follow"]
    line = follow[(follow["layer"] == 1) & (follow["t"] == 2) & (follow["line"] == 1)]["text"].iloc[0]
    r = ma.routing(trace, 1)
    assert line.startswith("𝒯 = {" + ", ".join(str(int(e)) for e in r.indices[2]) + "}")
    assert line.count("E") == 3
    served = load_data["load"]
    served = served[(served["kind"] == "served") & (served["layer"] == 1)]["tokens"].tolist()
    assert served == r.counts.tolist()
    assert any("capacity" in x.value and r"\cdot 3" in x.value for x in at.latex)


@pytest.mark.parametrize("model", ["bert-tiny", "reverse-encdec"])
def test_moe_page_other_dense_models(run, model):
    at = run("11_moe.py", model=model)
    assert at.button(key="moe_switch")


# ----- lesson 12 ------------------------------------------------------------------------------
def test_forward_page(run):
    at = run("12_forward.py")
    assert at.title[0].value == "The full forward walk"
    assert at.subheader[0].value.startswith("Step 1 of 18")
    at.button(key="fw_next").click().run()
    _ok(at)
    assert at.subheader[0].value.startswith("Step 2 of 18: Token embeddings")
    at.button(key="fw_back").click().run()
    _ok(at)
    assert at.subheader[0].value.startswith("Step 1 of 18")
    at.select_slider(key="fw_step").set_value(3).run()
    _ok(at)
    assert "self-attention (head 0)" in at.subheader[0].value
    at.slider(key="head").set_value(2).run()
    _ok(at)
    assert "self-attention (head 2)" in at.subheader[0].value
    at.select_slider(key="fw_step").set_value(17).run()
    _ok(at)
    assert "Top-5" in at.subheader[0].value
    assert any("exactly the counted" in s.value for s in at.success)


@pytest.mark.parametrize("model", MODELS)
def test_forward_page_other_models(run, model):
    at = run("12_forward.py", model=model)
    at.select_slider(key="fw_step").set_value(len(at.select_slider(key="fw_step").options) - 1).run()
    _ok(at)
    assert any("exactly the counted" in s.value for s in at.success)
