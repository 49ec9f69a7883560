"""AppTest for lessons 9-12: every widget changed once, and every model in the sidebar."""
import numpy as np
import pytest

from tests.app.specs import instant_charts, param_values, unpacked

MODELS = ("bert-tiny", "moe-tiny", "reverse-encdec")


def _ok(at):
    assert not at.exception, at.exception


def _by_data(at, *names):
    """The page's instant charts that carry each dataset of ``names``, in that order."""
    charts = instant_charts(at)
    return [next(c for c in charts if name in c[1]) for name in names]


@pytest.fixture
def run(app_page):
    def go(page, **query):
        at = app_page(page, **query)
        _ok(at)
        return at
    return go


# ----- lesson 9 -------------------------------------------------------------------------------
def test_layernorm_page(run):
    """Both instant charts open on the link's layer, norm and token and carry every layer's
    and norm's numbers for every token: the model's own hooks, and a hand calculation done
    here with torch's layer_norm."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import tfviz
    from tfviz.analysis import layernorm as lna
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    at = run("09_layernorm.py", layer="2", norm="2", pos="3")
    assert at.title[0].value == "Residual connections and LayerNorm"
    assert at.latex and at.dataframe
    # layer, norm and token are chosen in the browser, not by server-side widgets
    assert not {"layer", "ln_norm", "ln_token"} & {w.key for w in [*at.slider, *at.radio, *at.selectbox]}
    bundle = tfviz.load(DEFAULT_MODEL)
    trace = bundle.trace(DEFAULT_TEXT)
    params = lna.gamma_beta(bundle.weights())
    n, d, eps = len(trace.tokens), trace.config.d_model, trace.config.ln_eps
    (stats, stats_data), (worked, worked_data), (pair, _) = _by_data(at, "stats", "steps", "pair")
    assert {k: param_values(stats)[k] for k in ("layer", "norm")} == {"layer": 2, "norm": 2}
    assert {k: param_values(pair)[k] for k in ("layer", "norm", "pos")} == {"layer": 2, "norm": 2, "pos": 3}
    assert {k: param_values(worked)[k] for k in ("layer", "norm", "pos")} == {
        "layer": 2, "norm": 2, "pos": 3}
    table = stats_data["stats"]
    assert len(table) == 3 * 2 * 4 * n
    for norm_index, norm in ((0, "ln1"), (2, "ln2")):
        for layer in range(3):
            p = f"blocks.{layer}.{norm}."
            mine = table[(table["layer"] == layer) & (table["norm"] == norm_index)]
            for stat, want in (("μ before", trace[p + "hook_mean"]), ("σ before", trace[p + "hook_scale"])):
                got = mine[mine["stat"] == stat].sort_values("q")["v"]
                np.testing.assert_allclose(got, want, atol=6e-5)
            x = torch.tensor(lna.ln_input(trace, layer, norm), dtype=torch.float64)
            gamma, beta = (torch.tensor(a, dtype=torch.float64) for a in params[f"L{layer} {norm}"])
            out = F.layer_norm(x, (d,), gamma, beta, eps).numpy()  # by hand, here with torch
            rows = worked_data["vectors"]
            for r in rows[(rows["layer"] == layer) & (rows["norm"] == norm_index)].itertuples():
                x_row, normed, output = unpacked(r.v).reshape(3, d)
                np.testing.assert_allclose(x_row, x[r.pos].numpy(), atol=6e-5)
                np.testing.assert_allclose(output, out[r.pos], atol=6e-5)
            nums = worked_data["numbers"]
            mine = nums[(nums["layer"] == layer) & (nums["norm"] == norm_index)].sort_values("pos")
            np.testing.assert_allclose(mine["mean"], x.mean(-1).numpy(), atol=6e-5)
            np.testing.assert_allclose(mine["tsigma"], trace[p + "hook_scale"], atol=6e-5)
    assert any("Largest difference" in s.value and "every layer" in s.value for s in at.success)


@pytest.mark.parametrize("model", MODELS)
def test_layernorm_page_other_models(run, model):
    at = run("09_layernorm.py", model=model, norm="1")
    ((stats, _),) = _by_data(at, "stats")
    bind = next(p for p in stats["params"] if p["name"] == "norm")["bind"]
    if model == "reverse-encdec":  # norm=1 is the cross-attention norm, which it has
        assert bind["labels"] == ["self-attention's (ln1)", "cross-attention's (ln_cross)",
                                  "the feed-forward's (ln2)"]
        assert bind["options"] == [0, 1, 2] and param_values(stats)["norm"] == 1
    else:  # a block without cross-attention opens on its first norm instead
        assert bind["options"] == [0, 2] and param_values(stats)["norm"] == 0


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
    (neurons, neuron_data), (mixing, mixing_data) = _by_data(at, "neurons", "mix")
    assert param_values(neurons)["layer"] == 1 and param_values(neurons)["neurons"] == 20
    assert {k: param_values(mixing)[k] for k in ("layer", "head", "query")} == {
        "layer": 1, "head": 2, "query": 3}
    for row in neuron_data["neurons"].itertuples():  # each layer's 32 strongest neurons
        acts = fa.neuron_acts(trace, row.layer)
        every = [int(x) for x in neuron_data["neurons"]["s_ids"][0].split(",")]  # in the data
        ids = every[32 * row.layer:32 * (row.layer + 1)]
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
        assert [param_values(spec)["layer"] for spec, _ in _by_data(at, "neurons", "nsteps", "mix")] == [0, 0, 0]


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
    # routing, load, every layer's load, the rules side by side, classes, and the recorded
    # classes in an expander; the load of every layer is an overview with no view of its own
    assert len(charts) == 6
    assert [param_values(spec).get("layer") for spec, _ in charts] == [1, 1, None, 1, 1, 1]
    assert param_values(charts[0][0])["pos"] == 2 and param_values(charts[3][0])["pos"] == 2
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
    lines = follow[(follow["layer"] == 1) & (follow["t"] == 2)].sort_values("line")["text"].tolist()
    r = ma.routing(trace, 1)
    assert lines[2] == ("𝒯 = the 3 largest p = {" + ", ".join(str(int(e)) for e in r.indices[2])
                        + "}   ⇒   w = p, adding up to " + f"{r.probs[2, r.indices[2]].sum():.3f}")
    assert lines[3].startswith("y = ") and lines[3].count("E") == 3
    served = load_data["load"]
    served = served[(served["kind"] == "served") & (served["layer"] == 1)]["tokens"].tolist()
    assert served == r.counts.tolist()
    assert any("capacity" in x.value and r"\cdot 3" in x.value for x in at.latex)


@pytest.mark.parametrize("model", ["bert-tiny", "reverse-encdec"])
def test_moe_page_other_dense_models(run, model):
    at = run("11_moe.py", model=model)
    assert at.button(key="moe_switch")


# ----- lesson 12 ------------------------------------------------------------------------------
def _walk(at):
    """The forward walk's instant chart and its data (the parameter chart has no step)."""
    (found,) = [c for c in instant_charts(at) if "step" in param_values(c[0])]
    return found


def _walk_titles(walk, data) -> list[list[str]]:
    """Every head's step titles, which ride in the walk's first data row
    (``forward.walk_sentence``): one list, head after head."""
    flat = data["numbers"].iloc[0]["s_titles"].split("\x1f")
    steps = next(p for p in walk["params"] if p["name"] == "step")["bind"]["max"]
    return [flat[h * steps:(h + 1) * steps] for h in range(len(flat) // steps)]


def test_forward_page(run):
    """Step and head are instant views opened from the link; every step's numbers, for every
    head where they differ, are the model's own."""
    import tfviz
    from tfviz.reference import softmax
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    at = run("12_forward.py", step="4", head="2")
    assert at.title[0].value == "The full forward walk"
    assert not at.button and not at.select_slider  # no server-side stepper any more
    walk, data = _walk(at)
    assert param_values(walk)["step"] == 4 and param_values(walk)["head"] == 2
    titles = _walk_titles(walk, data)
    assert len(titles) == 4 and len(titles[0]) == 18
    assert titles[2][3] == "Block 0 · self-attention (head 2)" and titles[0][1] == "Token embeddings"
    assert titles[2][-1].startswith("Top-5")
    trace = tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT)
    n = len(trace.tokens)
    numbers = data["numbers"]
    for h in range(4):  # step 4 is block 0's attention: one map per head
        row = numbers[(numbers["step"] == 3) & (numbers["head"] == h)].iloc[0]
        np.testing.assert_allclose(unpacked(row["v"]).reshape(n, n), trace["pattern", 0][h], atol=6e-5)
    embed = numbers[(numbers["step"] == 1) & (numbers["head"] == -1)].iloc[0]  # shared by every head
    assert embed["pic"]  # 13 x 64 cells travel as a picture: one pixel per cell, red-blue about 0
    import base64
    import io

    from PIL import Image
    rgb = np.asarray(Image.open(io.BytesIO(base64.b64decode(embed["img"].split(",", 1)[1]))).convert("RGB"))
    assert rgb.shape == (n, 64, 3)
    redness = rgb[..., 0].astype(int) - rgb[..., 2].astype(int)
    assert np.corrcoef(redness.ravel(), trace["hook_embed"].ravel())[0, 1] > 0.9
    top = numbers[numbers["step"] == 17].iloc[0]
    probs = softmax(trace["logits"].astype(np.float64))[-1]
    np.testing.assert_allclose(unpacked(top["v"]), np.sort(probs)[::-1][:5], atol=6e-5)
    assert any("exactly the counted" in s.value for s in at.success)


@pytest.mark.parametrize("model", MODELS)
def test_forward_page_other_models(run, model):
    at = run("12_forward.py", model=model)
    walk, data = _walk(at)
    kinds = param_values(walk)["kinds"]
    assert kinds[0] == "ids" and kinds[-1] == "bars"
    assert len(kinds) == next(p for p in walk["params"] if p["name"] == "step")["bind"]["max"]
    assert sorted(data["numbers"]["step"].unique()) == list(range(len(kinds)))
    if model == "reverse-encdec":
        assert any("cross-attention (head 0)" in t for t in _walk_titles(walk, data)[0])
    assert any("exactly the counted" in s.value for s in at.success)
