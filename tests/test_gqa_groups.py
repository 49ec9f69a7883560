"""Lesson 7 under grouped-query attention: which query heads read which K/V head, in words and
as boxes of maps. The reference for the grouping is transformers' own ``repeat_kv`` (how a
Llama hands each K/V head to its query heads); the maps' numbers are the trace's patterns."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from altair.utils.schemapi import validate_jsonschema
from altair.vegalite.v6.schema.core import load_schema

import tfviz
from tfviz.analysis import gqa
from tfviz.analysis import heads as hd
from tfviz.viz import heads as ia
from tfviz.viz.kit.style import contrast_ratio

TEXT = "the animal didn't cross the street because it was too tired"


def _transformers_groups(n_heads: int, kv_heads: int) -> list[int]:
    """The K/V head each query head reads, by transformers' repeat_kv on the K/V heads' indices."""
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    index = torch.arange(kv_heads, dtype=torch.float32)[None, :, None, None]  # (1, kv, 1, 1)
    return llama.repeat_kv(index, n_heads // kv_heads)[0, :, 0, 0].long().tolist()


@pytest.mark.parametrize("n_heads, kv_heads", [(4, 2), (9, 3), (6, 2), (4, 1), (32, 8), (4, 4)])
def test_the_groups_are_transformers_repeat_kv(n_heads, kv_heads):
    theirs = _transformers_groups(n_heads, kv_heads)
    assert [gqa.kv_head_of(h, n_heads, kv_heads) for h in range(n_heads)] == theirs
    groups = gqa.kv_groups(n_heads, kv_heads)
    assert [[h for h in range(n_heads) if theirs[h] == g] for g in range(kv_heads)] == groups
    sentence = gqa.sharing_sentence(n_heads, kv_heads)
    if kv_heads < n_heads:  # every group named with its first and last query head
        for g, members in enumerate(groups):
            assert f"heads {members[0]}–{members[-1]} read K/V head {g}" in sentence
    assert str(n_heads) in sentence


def test_smollm2s_sentence():
    assert gqa.sharing_sentence(9, 3) == ("9 query heads share 3 key/value heads: heads 0–2 read K/V "
                                          "head 0, heads 3–5 read K/V head 1, heads 6–8 read K/V head 2.")


def test_the_key_matrix_is_the_layers_keys_side_by_side():
    b = tfviz.load("llama-tiny")
    tr = b.trace(TEXT)
    K = hd.key_matrix(tr, 1)
    n = len(tr.tokens)
    assert K.shape == (n, b.config.kv_heads * b.config.d_head) == (n, 32)
    per_token, per_head = hd.split_heads(K, b.config.kv_heads)
    np.testing.assert_array_equal(per_head, tr["k", 1].transpose(1, 0, 2))


def _maps(n_heads: int, kv_heads: int):
    rng = np.random.default_rng(0)
    patterns = rng.random((2, n_heads, 5, 5))
    names = [[f"role {h}" for h in range(n_heads)] for _ in range(2)]
    groups = [gqa.kv_head_of(h, n_heads, kv_heads) for h in range(n_heads)]
    spec = ia.attention_maps(patterns, list("abcde"), names=names, groups=groups)
    validate_jsonschema(json.loads(json.dumps(spec)), load_schema())
    return spec["vconcat"][0], groups


@pytest.mark.parametrize("n_heads, kv_heads, stacked", [(4, 2, False), (9, 3, True), (6, 2, True), (4, 1, False)])
def test_grouped_maps_come_in_one_box_per_kv_head(n_heads, kv_heads, stacked):
    grid, groups = _maps(n_heads, kv_heads)
    boxes = grid["vconcat" if stacked else "hconcat"]
    assert len(boxes) == kv_heads
    for g, box in enumerate(boxes):
        members = [h for h in range(n_heads) if groups[h] == g]
        assert box["title"]["text"] == f"K/V head {g}: query heads {members[0]}–{members[-1]}"
        titles = [m["title"]["text"]["expr"] for m in box["concat"]]
        assert titles == [f"'head {h} · ' + split(names, '\\u001f')[layer * {n_heads} + {h}]" for h in members]
        assert {m["title"]["color"] for m in box["concat"]} == {box["title"]["color"]}
        assert box["columns"] == ia.ROW_OF_MAPS


def test_ungrouped_maps_stay_one_row():
    rng = np.random.default_rng(0)
    names = [["a"] * 4]
    plain = ia.attention_maps(rng.random((1, 4, 3, 3)), list("abc"), names=names)
    same = ia.attention_maps(rng.random((1, 4, 3, 3)), list("abc"), names=names, groups=[0, 1, 2, 3])
    for spec in (plain, same):
        assert [m["title"]["text"]["expr"].split(" · ")[0] for m in spec["vconcat"][0]["hconcat"]] == [
            f"'head {h}" for h in range(4)]


def test_group_colours_read_as_text():
    assert all(contrast_ratio(c, "#ffffff") >= 4.5 for c in ia.GROUP_COLOURS)
    assert len(set(ia.GROUP_COLOURS)) == len(ia.GROUP_COLOURS)
