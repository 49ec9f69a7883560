"""Lessons 3 and 10 on mixtral-tiny, the bundled Mixtral: lesson 10 follows each token's
first-choice expert through its gate and up (it showed no neurons at all on a mixture of
experts), and lesson 3's RoPE step stands on a bundle whose manifest records no "it"-probe
accuracy (it formatted None)."""
from __future__ import annotations

import dataclasses

import numpy as np

import tfviz
from tests.app.specs import instant_charts, unpacked
from tfviz.analysis import ffn as fa

TEXT = "the dog didn't cross the street because it was too tired."


def _ok(at):
    assert not at.exception, at.exception
    return at


def _words(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "success", "warning", "latex")
                     for e in at.get(kind))


def test_lesson_10_follows_each_tokens_first_expert(app_page):
    at = _ok(app_page("10_ffn.py", model="mixtral-tiny", text=TEXT))
    bundle = tfviz.load("mixtral-tiny")
    tr = bundle.trace(TEXT)
    ex = fa.expert_steps(tr, bundle.weights())
    words = _words(at)
    assert "**mixtral-tiny** is a mixture of experts: each block holds **4 such networks**" in words
    assert r"E_i(x) = \big(\mathrm{SiLU}(xW_{\text{gate}}^i) \odot (xW_{\text{in}}^i)\big)\,W_{\text{out}}^i" in words
    assert "each expert's W_gate and W_in are 64×88 and W_out is 88×64" in words
    assert "so d_ff is usually" not in words and "no single layer of neurons to follow" not in words
    (steps,) = [data["nsteps"] for _, data in instant_charts(at) if "nsteps" in data]
    T = len(tr.tokens)
    assert len(steps) == bundle.config.n_layers * T
    for _, row in steps.iterrows():
        i, t = int(row["layer"]), int(row["pos"])
        assert int(row["e"]) == int(tr[f"blocks.{i}.mlp.hook_expert_indices"][t, 0])  # the router's first
        assert abs(row["w"] - tr[f"blocks.{i}.mlp.hook_expert_weights"][t, 0]) < 1e-4
        assert [int(n) for n in row["ids"].split(",")] == ex.steps.ids[i, t].tolist()
        shown = unpacked(row["v"]).reshape(-1, 4)  # gate, SiLU(gate), up, product
        np.testing.assert_allclose(shown, ex.steps.values[i, t], atol=1e-4 + 1e-6 * np.abs(shown).max())
    (success,) = [e.value for e in at.success if "The way down by hand" in e.value]
    gap = float(success.split("largest difference ")[1].split(",")[0])
    assert gap == float(f"{ex.steps.output_error:.1e}") and gap < 1e-4


def test_lesson_3_without_the_probes_accuracy(app_page, monkeypatch):
    """A RoPE bundle whose manifest records no "it"-probe accuracy (a recipe without the probe):
    the page says its held-out loss alone."""
    from tfviz.manifest import Evaluation

    real = Evaluation.from_manifest
    monkeypatch.setattr(Evaluation, "from_manifest",
                        classmethod(lambda cls, m: dataclasses.replace(real(m), coref_accuracy=None)))
    at = _ok(app_page("03_embeddings.py", model="mixtral-tiny", text=TEXT))
    words = _words(at)
    loss = tfviz.load("mixtral-tiny").evaluation.val_loss
    assert f"mixtral-tiny: held-out loss {loss:.3f} per token; `python -m tfviz.train --preset mixtral-tiny`" in words
    assert "probe" not in words.split("mixtral-tiny: held-out loss")[1].split("\n")[0]
