"""Lesson 7 (/multi-head) under grouped-query attention: llama-tiny (4 query heads over 2 K/V
heads) and a random Llama folder (6 over 2). The page says who shares what from the model's
facts, the K/V shapes come from its trace, and its maps come in one box per K/V head, each map
the model's own pattern. The grouping is checked against transformers' repeat_kv; under gpt-tiny
(plain multi-head) none of it is shown."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tests.app.specs import instant_charts, unpacked
from tests.support.modern_sidebar import offer_llama_folders, offer_llama_tiny

pytest.importorskip("transformers")

PAGE = "07_multihead.py"
TEXT = "the animal didn't cross the street because it was too tired"
TOL = 6e-5  # four decimals sent (tfviz.viz.kit.instant.DIGITS) plus float printing


def _ok(at):
    assert not at.exception, at.exception
    return at


def _words(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption") for e in at.get(kind))


def _repeat_kv_groups(n_heads: int, kv_heads: int) -> list[int]:
    from transformers.models.llama.modeling_llama import repeat_kv

    index = torch.arange(kv_heads, dtype=torch.float32)[None, :, None, None]
    return repeat_kv(index, n_heads // kv_heads)[0, :, 0, 0].long().tolist()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.support.llama_folders import make_checkpoint

    root = tmp_path_factory.mktemp("gqa-models")
    make_checkpoint(root / "llama62", "llama", tokenizer="llama2", heads=6, kv_heads=2, d=48)
    return root


def _check_grouped(at, bundle):
    f = bundle.facts
    n_heads, kv_heads = f.n_heads, f.kv_heads
    groups = _repeat_kv_groups(n_heads, kv_heads)  # transformers' own sharing
    members = [[h for h in range(n_heads) if groups[h] == g] for g in range(kv_heads)]
    words = _words(at)
    reads = ", ".join(f"heads {m[0]}–{m[-1]} read K/V head {g}" for g, m in enumerate(members))
    assert (f"**{at.session_state['model']} shares keys and "
            f"values between query heads** (grouped-query attention). {n_heads} query heads share "
            f"{kv_heads} key/value heads: {reads}.") in words
    assert f"The maps come in {kv_heads} boxes, one per key/value head" in words
    # the shapes: K is cut into K/V heads, from the trace's own keys
    tr = bundle.trace(at.session_state["text"])
    n, dh = len(tr.tokens), bundle.config.d_head
    shapes = dict(zip(at.table[0].value["view"], at.table[0].value["shape"]))
    assert shapes["K = X W^K (V the same)"] == f"{n} × {kv_heads * dh}"
    assert shapes["make K/V heads the first axis"] == " × ".join(map(str, tr["k", 0].transpose(1, 0, 2).shape))
    assert shapes["make heads the first axis"] == f"{n_heads} × {n} × {dh}"
    # the maps: one box per K/V head, holding its query heads, each map the model's pattern
    spec, data = next((s, d) for s, d in instant_charts(at) if "maps" in d)
    grid = spec["vconcat"][0]
    boxes = grid.get("hconcat") or grid["vconcat"]
    assert [b["title"]["text"] for b in boxes] == [
        f"K/V head {g}: query heads {m[0]}–{m[-1]}" for g, m in enumerate(members)]
    assert [[int(x["title"]["text"]["expr"].split("'head ")[1].split(" ")[0]) for x in b["concat"]]
            for b in boxes] == members
    for row in data["maps"].itertuples():
        np.testing.assert_allclose(unpacked(row.v), tr["pattern", row.layer][row.head].reshape(-1), atol=TOL)
    # the roles table names each head's K/V head
    roles = at.dataframe[0].value
    assert list(roles["K/V head"]) == [groups[h] for h in roles["head"]]


def test_llama_tiny_draws_its_heads_in_two_groups(app_page, monkeypatch):
    offer_llama_tiny(monkeypatch)
    at = _ok(app_page(PAGE, model="llama-tiny", text=TEXT))
    b = tfviz.load("llama-tiny")
    assert (b.facts.n_heads, b.facts.kv_heads) == (4, 2)
    _check_grouped(at, b)
    assert "heads 0–1 read K/V head 0, heads 2–3 read K/V head 1" in _words(at)


def test_a_llama_folder_with_three_query_heads_a_group(app_page, monkeypatch, folder):
    offer_llama_folders(monkeypatch, folder)
    at = _ok(app_page(PAGE, model="llama62", text=TEXT))
    b = tfviz.load(folder / "llama62")
    assert (b.facts.n_heads, b.facts.kv_heads) == (6, 2)
    _check_grouped(at, b)


def test_plain_multi_head_shows_no_groups(app_page):
    at = _ok(app_page(PAGE, model="gpt-tiny", text=TEXT))
    assert not tfviz.load("gpt-tiny").facts.grouped
    assert "key/value heads" not in _words(at) and "boxes" not in _words(at)
    spec, _ = next((s, d) for s, d in instant_charts(at) if "maps" in d)
    assert len(spec["vconcat"][0]["hconcat"]) == 4  # one map per head, in one row
    assert "K/V head" not in at.dataframe[0].value.columns
    assert "K = X W^K (V the same)" not in list(at.table[0].value["view"])


def test_a_head_size_of_its_own_is_said_as_it_is(app_page, monkeypatch, tmp_path):
    """Qwen3-style: 4 heads of 16 on d = 32, so Q has 64 columns, not d; the page says so and
    does not write d/h = 16."""
    from tests.support.llama_folders import make_checkpoint

    make_checkpoint(tmp_path / "wide-heads", "qwen3", tokenizer="qwen", heads=4, kv_heads=2, d=32, head_dim=16)
    offer_llama_folders(monkeypatch, tmp_path)
    at = _ok(app_page(PAGE, model="wide-heads", text=TEXT))
    cfg = tfviz.load(tmp_path / "wide-heads").config
    assert (cfg.n_heads, cfg.d_head, cfg.d_model) == (4, 16, 32)
    words = _words(at)
    assert ("In wide-heads the 4 heads of 16 dimensions make 64 columns, not d = 32: its W^Q maps "
            "each token's d numbers to h · d_head of them, and W^O maps them back.") in words
    assert "share out the d dimensions" not in words
    (latex,) = [e.value for e in at.get("latex") if "to" in e.value and "n\\times h" in e.value]
    assert "d_{head}=16" in latex and "d/h" not in latex
    shapes = dict(zip(at.table[0].value["view"], at.table[0].value["shape"]))
    assert shapes["Q = X W^Q"].endswith("× 64")
