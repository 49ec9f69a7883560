"""Lessons 9, 10 and 12 on the modern block, as a learner opens them: llama-tiny (bundled) and a
random Llama folder (tests/support/llama_folders.py: 2 layers, d = 32, 4 query heads over 2
K/V heads, untied). Each page runs without an exception, says the model's own norm and
activation, and the numbers it sends to the browser are torch's own functions (F.rms_norm,
F.layer_norm, F.silu) on the trace's hooks, to the 4 decimals a chart carries.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tests.app.specs import instant_charts, param_values, unpacked
from tests.app.test_bert_checkpoint_pages import listing
from tests.support.claims import page_words

TEXT = "The animal didn't cross the street because it was too tired."
SHOWN = 6e-5  # a chart's 4 decimals (instant.DIGITS), plus float32 against float64


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.llama_folders import make_checkpoint

    folder = tmp_path_factory.mktemp("modern") / "llama"
    make_checkpoint(folder)
    return str(folder)


@pytest.fixture(params=["llama-tiny", "folder"])
def opened(request, app_page, monkeypatch):
    """(run(lesson, **view) -> AppTest, the sidebar's name, bundle, trace) on llama-tiny or the
    random folder (named by its path, as the sidebar names it)."""
    model = request.getfixturevalue("llama_folder") if request.param == "folder" else request.param
    if request.param == "folder":  # named as the sidebar names a found folder
        listing(monkeypatch, model)
    bundle = tfviz.load(model)

    def run(lesson: str, **view):
        at = app_page("01_tour.py", model=model, text=TEXT)
        at.switch_page(f"lessons/{lesson}")
        for key, value in view.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, at.exception
        assert at.session_state["model"] == model
        return at

    return run, model, bundle, bundle.trace(TEXT)


def _data(at, name: str):
    return next(c for c in instant_charts(at) if name in c[1])


def _t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


def test_rmsnorm_next_to_layernorm(opened):
    """Lesson 9 names RMSNorm as the model's norm, shows γ and no β, and its three charts hold
    the model's rms (hook_scale), torch's rms_norm with the model's γ, and the same token's
    LayerNorm and RMSNorm side by side."""
    run, name, bundle, trace = opened
    at = run("09_layernorm.py", layer="1", norm="2", pos="3")
    words = page_words(at)
    assert f"**{name}** normalises each token with **RMSNorm**" in words
    assert "An RMSNorm has no β." in words and "The learned γ and β" not in words
    assert "3 · RMSNorm next to LayerNorm, on the same token" in words
    cfg, eps = bundle.config, bundle.config.ln_eps
    d, layers = cfg.d_model, cfg.n_layers
    gammas = {k: v.detach().double() for k, v in bundle.model.state_dict().items()
              if k.endswith(("ln1.weight", "ln2.weight"))}
    stats = _data(at, "stats")[1]["stats"]
    worked_spec, worked = _data(at, "steps")
    pair_spec, pair = _data(at, "pair")
    assert {k: param_values(pair_spec)[k] for k in ("layer", "norm", "pos")} == {"layer": 1, "norm": 2, "pos": 3}
    assert param_values(worked_spec)["columns"] == ["x", "x²", "x / rms", "γ", "by hand", "model"]
    assert set(stats["stat"]) == {"μ before", "rms before", "μ after", "rms after"}
    for layer in range(layers):
        for code, norm, hook in ((0, "ln1", "hook_resid_pre"), (2, "ln2", "hook_resid_mid")):
            x = _t(trace[f"blocks.{layer}.{hook}"])  # pre-norm: the stream itself goes in
            mine = stats[(stats["layer"] == layer) & (stats["norm"] == code)]
            got = mine[mine["stat"] == "rms before"].sort_values("q")["v"].to_numpy()
            np.testing.assert_allclose(got, trace[f"blocks.{layer}.{norm}.hook_scale"], atol=SHOWN)
            got = mine[mine["stat"] == "μ before"].sort_values("q")["v"].to_numpy()
            np.testing.assert_allclose(got, x.mean(-1).numpy(), atol=SHOWN)
            out = F.rms_norm(x, (d,), gammas[f"blocks.{layer}.{norm}.weight"], eps).numpy()
            rows = worked["vectors"]
            for r in rows[(rows["layer"] == layer) & (rows["norm"] == code)].itertuples():
                x_row, normed, output = unpacked(r.v).reshape(3, d)
                np.testing.assert_allclose(normed, F.rms_norm(x[r.pos], (d,), eps=eps).numpy(), atol=SHOWN)
                np.testing.assert_allclose(output, out[r.pos], atol=SHOWN)
            numbers = pair["pair"]
            mine = numbers[(numbers["layer"] == layer) & (numbers["norm"] == code)].sort_values("pos")
            sigma = torch.sqrt(x.var(-1, unbiased=False) + eps)
            np.testing.assert_allclose(mine["sigma"], sigma.numpy(), atol=SHOWN)
            np.testing.assert_allclose(mine["rms"], trace[f"blocks.{layer}.{norm}.hook_scale"], atol=SHOWN)
            np.testing.assert_allclose(mine["scale"], trace[f"blocks.{layer}.{norm}.hook_scale"], atol=SHOWN)
            vectors = pair["pair_vectors"]
            for r in vectors[(vectors["layer"] == layer) & (vectors["norm"] == code)].itertuples():
                _, ln, rn = unpacked(r.v).reshape(3, 16)
                np.testing.assert_allclose(ln, F.layer_norm(x[r.pos], (d,), eps=eps).numpy()[:16], atol=SHOWN)
                np.testing.assert_allclose(rn, F.rms_norm(x[r.pos], (d,), eps=eps).numpy()[:16], atol=SHOWN)
    assert any("rms² = σ² + μ² for every layer" in s.value for s in at.success)


def test_swiglu_gate_up_and_product(opened):
    """Lesson 10 writes the model's gated formula and names SiLU; its step-by-step chart holds,
    for every layer and token, the strongest neurons' gate (mlp.hook_pre), torch's SiLU of it,
    the up value (mlp.hook_pre_linear) and the product (mlp.hook_post), and the way down next
    to the model's hook_mlp_out."""
    run, name, bundle, trace = opened
    at = run("10_ffn.py", layer="1", pos="2")
    words = page_words(at)
    assert r"\mathrm{SiLU}(xW_{\text{gate}})" in words and "The nonlinearity is **SiLU**" in words
    assert "none of the three matrices has a bias" in words
    spec, data = _data(at, "nsteps")
    assert {k: param_values(spec)[k] for k in ("layer", "pos")} == {"layer": 1, "pos": 2}
    assert param_values(spec)["columns"] == ["gate = x·W_gate", "SiLU(gate)", "up = x·W_in", "SiLU(gate) × up"]
    d_ff = bundle.config.d_ff
    for r in data["nsteps"].itertuples():
        ids = [int(i) for i in r.ids.split(",")]
        gate = _t(trace[f"blocks.{r.layer}.mlp.hook_pre"][r.pos, ids])
        up = trace[f"blocks.{r.layer}.mlp.hook_pre_linear"][r.pos, ids]
        post = trace[f"blocks.{r.layer}.mlp.hook_post"][r.pos]
        assert ids == np.argsort(-np.abs(post), kind="stable")[:len(ids)].tolist() and max(ids) < d_ff
        g, act, u, h = unpacked(r.v).reshape(len(ids), 4).T
        np.testing.assert_allclose(g, gate.numpy(), atol=SHOWN)
        np.testing.assert_allclose(act, F.silu(gate).numpy(), atol=SHOWN)
        np.testing.assert_allclose(u, up, atol=SHOWN)
        np.testing.assert_allclose(h, post[ids], atol=SHOWN)
    for r in data["nout"].itertuples():
        hand, model = unpacked(r.v).reshape(2, -1)
        np.testing.assert_allclose(model, trace[f"blocks.{r.layer}.hook_mlp_out"][r.pos, :len(model)], atol=SHOWN)
        np.testing.assert_allclose(hand, model, atol=2 * SHOWN)
    curves = next(spec for spec, d in instant_charts(at) if "rows" in d and "function" in d["rows"])
    assert "thick: SiLU" in curves["title"]


def test_the_modern_forward_walk(opened):
    """Lesson 12 walks the modern block: RMSNorm, RoPE, attention over shared K/V heads, add,
    RMSNorm, SwiGLU, add, then the final RMSNorm; the numbers table under the chart holds each
    chosen step's numbers, the trace's hooks."""
    run, name, bundle, trace = opened
    at = run("12_forward.py")
    words = page_words(at)
    assert f"**{name}** is built like Llama, Mistral and Qwen: RMSNorm before each sublayer" in words
    assert "Final RMSNorm" in words and "Final LayerNorm" not in words
    box = at.selectbox(key="fw_numbers")
    want = {"Block 1 · RMSNorm (ln1)": trace["blocks.1.ln1.hook_normalized"],
            "Block 1 · q and k turned by RoPE (head 3)": trace["blocks.1.attn.hook_rot_q"][:, 3],
            "Block 1 · self-attention (head 3, K/V head 1)": trace["pattern", 1][3],
            "Block 1 · add (attention)": trace["blocks.1.hook_resid_mid"],
            "Block 1 · SwiGLU feed-forward": trace["blocks.1.mlp.hook_post"],
            "Block 1 · add (FFN)": trace["blocks.1.hook_resid_post"],
            "Final RMSNorm": trace["ln_final.hook_normalized"]}
    for title, values in want.items():
        # an option reads "12 · Block 1 · RMSNorm (ln1) (T=13, d=64)": number, title, shape
        option = next(i for i, o in enumerate(box.options) if f" · {title} (" in o)
        at = box.set_value(option).run()
        assert not at.exception, at.exception
        box = at.selectbox(key="fw_numbers")
        exp = next(e for e in at.expander if e.label == "The numbers as a table"
                   and any(s.key == "fw_numbers" for s in e.selectbox))
        np.testing.assert_allclose(exp.dataframe[0].value.to_numpy(dtype=float), values, atol=1e-5, err_msg=title)
