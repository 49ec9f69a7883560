"""Lesson 18 (/gqa) step 5: the KV cache of the sidebar's own grouped model (llama-tiny, a random
Llama folder with 6 query heads over 2 K/V heads), its bytes per token and at its full context
against full multi-head attention's, counted again here from the cache's own tensors; decode
times beside its multi-head twin where that is cheap, and said not to be measured where not."""
from __future__ import annotations

import pytest

import tfviz
from tests.support.modern_sidebar import offer_llama_folders, offer_llama_tiny
from tfviz.decoding.memory import human_bytes
from tfviz.experiments.gqa_decode import cache_of_text

PAGE = "18_gqa.py"
TEXT = "the animal didn't cross the street because it was too tired"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _words(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "header")
                     for e in at.get(kind))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.llama_folders import make_checkpoint

    root = tmp_path_factory.mktemp("gqa-cache-models")
    make_checkpoint(root / "llama62", "llama", tokenizer="llama2", heads=6, kv_heads=2, d=48, positions=128)
    return root


def _check_cache(at, name: str, bundle):
    """Every number of step 5's sentence and table, from the config by hand, and the measured
    bytes from a fresh run of the model's own cache."""
    cfg = bundle.config
    L, H, kv, dh, ctx = cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.max_seq_len
    per_token = 2 * L * kv * dh * 4  # float32
    words = _words(at)
    assert f"5 · The cache of {name}, the sidebar's model" in words
    assert (f"2 × {L} × {kv} × {dh} = **{2 * L * kv * dh:,} numbers**, {per_token:,} bytes in float32 "
            f"as tfviz runs it, {per_token // 2:,} in 16-bit floats") in words
    assert f"it would keep {H // kv}× as much" in words
    rows = next(t.value for t in at.table if "values stored as" in t.value.columns).to_dict("records")
    for row, b in zip(rows, (4, 2)):
        per, mha = 2 * L * kv * dh * b, 2 * L * H * dh * b
        assert row["per token"] == human_bytes(per).replace(".", "\\.")
        assert row[f"per token with {H} K/V heads (MHA)"] == human_bytes(mha).replace(".", "\\.")
        assert row[f"full context, {ctx:,} tokens"] == human_bytes(per * ctx).replace(".", "\\.")
        assert row[f"full context with {H} K/V heads"] == human_bytes(mha * ctx).replace(".", "\\.")
    held, tokens = cache_of_text(bundle.model, bundle.read(at.session_state["text"]).ids)
    assert held == per_token * tokens
    assert (f"Counted from the cache's own tensors after {name} read your text: {held:,} bytes for "
            f"{tokens} tokens, {per_token:,} per token, as the sum says.") in words


def test_llama_tiny_cache_and_decode_time_beside_its_twin(app_page, monkeypatch):
    offer_llama_tiny(monkeypatch)
    at = _ok(app_page(PAGE, model="llama-tiny", text=TEXT))
    b = tfviz.load("llama-tiny")
    assert b.facts.grouped and b.facts.n_params < 10_000_000
    assert "The sidebar's model, llama-tiny, shares K/V heads too (4 query heads over 2)" in _words(at)
    _check_cache(at, "llama-tiny", b)
    timing = next(d.value for d in at.dataframe if "ms per new token after 8 tokens" in d.value.columns
                  and "llama-tiny" in list(d.value["model"]))
    assert list(timing["variant"]) == ["GQA", "MHA"]
    assert list(timing["K/V heads"]) == [2, 4]
    assert list(timing["KV cache per token (bytes)"]) == [768, 1536]  # from each cache's tensors
    # the reading under the table is written from these very numbers
    from types import SimpleNamespace as R

    from tfviz.analysis.gqa import decode_reading

    rows = [R(variant=r["variant"], kv_heads=r["K/V heads"], cache_bytes_per_token=r["KV cache per token (bytes)"],
              ms_per_token=(r["ms per new token after 8 tokens"], r["ms per new token after 96 tokens"]))
            for r in timing.to_dict("records")]
    assert " ".join(decode_reading(R(rows=rows, contexts=(8, 96)))) in _words(at)


def test_a_llama_folder(app_page, monkeypatch, folder):
    offer_llama_folders(monkeypatch, folder)
    at = _ok(app_page(PAGE, model="llama62", text=TEXT))
    b = tfviz.load(folder / "llama62")
    assert (b.facts.n_heads, b.facts.kv_heads) == (6, 2)
    _check_cache(at, "llama62", b)
    assert "heads 0–2 read K/V head 0, heads 3–5 read K/V head 1" in _words(at)


def test_a_large_model_is_not_timed(app_page, monkeypatch, folder):
    """Past BIG_MODEL parameters (SmolLM2-135M's 135M), the page says it does not time the model
    and why, instead of holding the server."""
    import tfviz.facts

    monkeypatch.setattr(tfviz.facts, "BIG_MODEL", 1000)  # the folder's 40k parameters count as large
    offer_llama_folders(monkeypatch, folder)
    at = _ok(app_page(PAGE, model="llama62", text=TEXT))
    n = tfviz.load(folder / "llama62").facts.n_params
    assert f"Decode time is not measured here for llama62: with {n:,} parameters" in _words(at)
    assert not any("llama62 as MHA" in list(d.value.get("model", [])) for d in at.dataframe)


def test_a_model_without_shared_heads_has_no_step_5(app_page):
    at = _ok(app_page(PAGE, model="gpt-tiny", text=TEXT))
    assert "5 · The cache of" not in _words(at)
