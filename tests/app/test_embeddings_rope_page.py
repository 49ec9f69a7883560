"""Lesson 3's RoPE step on the sidebar's model when it turns its q and k: llama-tiny (Llama's
halves layout, base 10,000), a random Llama folder with Llama 3.1's llama3 scaling and base
500,000; and on gpt-tiny-rope when the sidebar's model has no RoPE.

Each number is recomputed independently: the turn and the moved scores with the float64
formula (``tfviz.reference.rope``) on q and k read from a fresh trace, the stretched frequencies
with transformers' own ``ROPE_INIT_FUNCTIONS`` (for the folder: from its own config.json, read
by transformers' AutoConfig). Every sentence about the model is checked against its facts.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tfviz
from tests.app.specs import instant_charts, static_rows
from tests.support.modern_sidebar import offer_llama_folders, offer_llama_tiny
from tfviz.experiments.rope import rope_layout
from tfviz.reference import rope as reference_rope
from tfviz.reference import rope_inv_freq as reference_inv_freq

pytest.importorskip("transformers")

PAGE = "03_embeddings.py"
TEXT = "the dog didn't reach the bridge because it was too steep"
LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "rope_theta": 500000.0, "low_freq_factor": 1.0,
           "high_freq_factor": 4.0, "original_max_position_embeddings": 64}


def _ok(at):
    assert not at.exception, at.exception
    return at


def _words(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "latex")
                     for e in at.get(kind))


def _chart(at, column: str):
    """The rows of the page's chart whose rows have ``column``."""
    (rows,) = [data["rows"] for _, data in instant_charts(at) if "rows" in data and column in data["rows"]]
    return rows


def _schemes(rows, column: str) -> dict[str, np.ndarray]:
    return {s: g.sort_values("pair i")[column].to_numpy() for s, g in rows.groupby("scheme")}


def _transformers_inv_freq(kind: str, **config) -> np.ndarray:
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    theirs, _ = ROPE_INIT_FUNCTIONS[kind](LlamaConfig(**config))
    return theirs.numpy().astype(np.float64)


@pytest.fixture(scope="module")
def llama31(tmp_path_factory):
    """A random Llama folder with Llama 3.1's rope scaling (factor 8 over an original 64
    positions, stretched to 256) and base 500,000; 4 query heads over 2 K/V heads."""
    from tests.support.llama_folders import make_checkpoint

    root = tmp_path_factory.mktemp("rope-models")
    make_checkpoint(root / "llama31", "llama", tokenizer="llama3", positions=256, rope_parameters=LLAMA31)
    return root


def _check_turn_and_moves(at, bundle, head: int = 0):
    """The turn table and the moved scores against the float64 formula on a fresh trace's q, k."""
    tr = bundle.trace(TEXT)
    layout = rope_layout(bundle.config)
    i, j = len(tr.tokens) - 1, 0  # the page's default query and key
    kv = head // (bundle.config.n_heads // bundle.config.kv_heads)
    q, k = tr["q", 0][i, head].astype(np.float64), tr["k", 0][j, kv].astype(np.float64)
    inv_freq = reference_inv_freq(layout.dim, layout.base, layout.scaling)
    turns = static_rows(at, "turned by")
    assert [r["dimensions"] for r in turns] == [f"{a}, {b}" for a, b in map(layout.dims, range(layout.n_pairs))]
    for r in turns:
        assert float(r[f"{i}·θ_i (wrapped)"]) == pytest.approx(
            math.remainder(i * inv_freq[int(r["pair i"])], 2 * math.pi), abs=1e-3)
    moved = static_rows(at, "q·k after rotation")
    exact = reference_rope(q[None], [i], inv_freq, layout.pairs)[0] @ reference_rope(k[None], [j], inv_freq,
                                                                                     layout.pairs)[0]
    assert [int(r["shift s"]) for r in moved] == [0, 1, 10, 100, 1000]
    for r in moved:  # six decimals shown; float32 turns of up to ~1000 radians, each angle off by
        # up to ~1e-7 of itself, so the score by that much of Σ|q_i||k_i| per radian
        assert (int(r["query at"]), int(r["key at"])) == (i + int(r["shift s"]), j + int(r["shift s"]))
        tol = 1e-6 + 1e-7 * (int(r["query at"]) + 1) * np.abs(q).sum() * np.abs(k).max()
        assert float(r["q·k after rotation"]) == pytest.approx(exact, abs=tol)
    return layout


def test_llama_tiny_turns_its_own_halves_at_its_own_base(app_page, monkeypatch):
    offer_llama_tiny(monkeypatch)
    at = _ok(app_page(PAGE, model="llama-tiny", text=TEXT))
    b = tfviz.load("llama-tiny")
    f = b.facts
    words = _words(at)
    assert "Everything below comes from **llama-tiny**, the sidebar's model" in words
    assert (f"**How llama-tiny turns.** Base {f.rope_base:,g} (rope_theta), head size d = "
            f"{b.config.d_head}, so {b.config.d_head // 2} pairs; pair i is dimension i with i + d/2") in words
    assert f.rope_pairs == "halves" and f.rope_scaling is None
    assert "No scaling stretches its frequencies." in words
    assert r"\theta_i = 10{,}000^{-2i/16}" in words
    _check_turn_and_moves(at, b)
    # the planes drawn are the model's own pairs: (0, 8), (1, 9), ...
    (turn_spec, _), = [(s, d) for s, d in instant_charts(at) if "hconcat" in s and "pair 0" in str(s)]
    assert [p["title"]["subtitle"] for p in turn_spec["hconcat"]] == [
        f"dimensions {i} and {i + 8}" for i in range(4)]
    # no scaling of its own: both kinds, stretched from its 128 positions by the slider's factor
    for factor in (4, 8):
        at.select_slider(key="emb_rope_factor").set_value(factor)
        _ok(at.run())
        freqs = _schemes(_chart(at, "θ_i (radians per position)"), "θ_i (radians per position)")
        # float32 of one power and one division per entry against float64: a few ulps on any CPU
        # and thread count (no sum whose order could change), so 1e-6 holds
        np.testing.assert_allclose(freqs["plain"], reference_inv_freq(16, 10000.0), rtol=1e-6)
        common = dict(hidden_size=64, num_attention_heads=4, max_position_embeddings=128 * factor)
        assert np.array_equal(freqs[f"linear ×{factor}"], _transformers_inv_freq(
            "linear", rope_parameters={"rope_type": "linear", "factor": float(factor), "rope_theta": 10000.0},
            **common))
        assert np.array_equal(freqs[f"llama3 ×{factor}"], _transformers_inv_freq(
            "llama3", rope_parameters={"rope_type": "llama3", "factor": float(factor), "rope_theta": 10000.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 128}, **common))
        far = 128 * factor - 1
        reads = _schemes(_chart(at, "reads as"), "reads as")
        np.testing.assert_allclose(reads[f"linear ×{factor}"], far / factor, rtol=1e-6)  # one float32 division
        np.testing.assert_allclose(reads[f"llama3 ×{factor}"], far * freqs[f"llama3 ×{factor}"] / freqs["plain"],
                                   rtol=1e-9)
        assert f"position {far:,} turns every pair as position {far / factor:,.1f} did" in _words(at)


def test_a_llama_folder_with_llama3_scaling(app_page, monkeypatch, llama31):
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    offer_llama_folders(monkeypatch, llama31)
    at = _ok(app_page(PAGE, model="llama31", text=TEXT))
    b = tfviz.load(llama31 / "llama31")
    f = b.facts
    assert (f.rope_base, f.rope_scaling, f.rope_pairs) == (500000.0, "llama3", "halves")
    words = _words(at)
    assert f"Base {f.rope_base:,g} (rope_theta), head size d = 8, so 4 pairs" in words
    assert "Its frequencies are stretched (llama3, see below)." in words
    assert ("**llama31** stretches its own frequencies: llama3 ×8 (rope_scaling in its config), from an "
            "original context of 64 positions to the 256 it reads.") in words
    assert "was trained by others" in words
    # the whole text moved along by 8 copies of "the" itself, not of the BOS the tokenizer adds
    assert "We put 8 extra tokens (“the”) in front of your text" in words and "(with “" not in words
    _check_turn_and_moves(at, b, head=0)
    # the frequencies: transformers' own, from the folder's own config.json
    theirs, _ = ROPE_INIT_FUNCTIONS["llama3"](transformers.AutoConfig.from_pretrained(llama31 / "llama31"))
    freqs = _schemes(_chart(at, "θ_i (radians per position)"), "θ_i (radians per position)")
    assert set(freqs) == {"plain", "llama3 ×8"}  # its own scaling only: no slider
    assert np.array_equal(freqs["llama3 ×8"], theirs.numpy().astype(np.float64))
    reads = _chart(at, "reads as")
    assert set(reads["reads as"][reads["scheme"] == "plain"]) == {255.0}
    # by hand: λ_i = 2π · 500000^(i/4) = 6.3, 167, 4443, 118000; kept below 64/4 = 16, divided above 64
    llama = _schemes(reads, "reads as")["llama3 ×8"]
    assert llama == pytest.approx([255.0, 255 / 8, 255 / 8, 255 / 8], rel=1e-6)
    assert "**Kept**: pair 0, with λ under 16 positions." in _words(at)
    assert "**Divided** by 8: pairs 1–3, with λ over 64 positions, where it reads as 31.9." in _words(at)
    assert not at.get("select_slider") or "emb_rope_factor" not in [s.key for s in at.get("select_slider")]


def test_a_model_without_rope_shows_gpt_tiny_rope(app_page):
    at = _ok(app_page(PAGE, model="gpt-tiny", text=TEXT))
    words = _words(at)
    f = tfviz.load("gpt-tiny").facts
    assert f.positions != "rope"
    assert (f"gpt-tiny uses {f.positions_name}, not RoPE, so everything below comes from "
            "**gpt-tiny-rope**") in words
    assert "pair i is dimension 2i with 2i + 1, as in the RoFormer paper" in words
    _check_turn_and_moves(at, tfviz.load("gpt-tiny-rope"))
