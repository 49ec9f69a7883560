"""Lesson 3 (/embeddings), steps 5 and 6: Shaw et al.'s distance vectors on gpt-tiny-relative and
T5's bucket biases on gpt-tiny-t5. Every number the page shows is recomputed here without the
lesson's code: the tables from the models' own nn.Embedding weights, the heads' mean position
terms from each held-out sentence's own trace (q·a^K by numpy, pair by pair), T5's buckets from
transformers' T5Attention._relative_position_bucket."""
import math

import numpy as np
import pytest
import torch

import tfviz
from tests.app.specs import instant_charts, static_rows, unpacked
from tfviz.data import story_corpus

PAGE = "03_embeddings.py"
SENTENCES = 200  # what the page averages over: the first 200 held-out sentences


def _ok(at):
    assert not at.exception, at.exception
    return at


def _text(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "success")
                     for e in at.get(kind))


def _chart(at, words: str):
    """(spec, datasets) of the one chart whose description holds ``words``."""
    (found,) = [(s, d) for s, d in instant_charts(at) if words in s.get("description", "")]
    return found


@pytest.fixture(scope="module")
def shaw():
    return tfviz.load("gpt-tiny-relative")


@pytest.fixture(scope="module")
def t5():
    return tfviz.load("gpt-tiny-t5")


@pytest.fixture(scope="module")
def by_hand(shaw):
    """Mean q_i·a^K_{clip(j−i)}/√d by (layer, head, distance back 0 … k), and the pair counts,
    over the held-out sentences, one sentence's own trace at a time."""
    cfg, k = shaw.config, shaw.config.rel_clip
    sums, counts = np.zeros((cfg.n_layers, cfg.n_heads, k + 1)), np.zeros(k + 1)
    tables = [b.attn.rel_k.weight.detach().double().numpy() for b in shaw.model.blocks]
    for text in story_corpus(512, seed=1001)[:SENTENCES]:
        tr = shaw.trace(text)
        n = len(tr.tokens)
        back = np.minimum(np.arange(n)[:, None] - np.arange(n)[None, :], k)  # (n, n)
        pairs = np.tril(np.ones((n, n), dtype=bool))  # j ≤ i
        counts += np.bincount(back[pairs], minlength=k + 1)
        for layer, a_k in enumerate(tables):
            q = tr["q", layer].astype(np.float64)  # (n, H, dh)
            terms = np.einsum("ihd,ijd->hij", q, a_k[k - np.maximum(back, 0)]) / math.sqrt(cfg.d_head)
            for h in range(cfg.n_heads):
                sums[layer, h] += np.bincount(back[pairs], weights=terms[h][pairs], minlength=k + 1)
    return sums / counts, counts


def test_shaw_vectors_are_the_models_tables_layer_by_layer(app_page, shaw):
    at = _ok(app_page(PAGE))
    for layer in (0, 2):
        if layer:
            at.radio(key="emb_shaw_layer").set_value(layer)
            _ok(at.run())
        spec, data = _chart(at, "Shaw et al.'s learned vectors of one layer")
        attn = shaw.model.blocks[layer].attn
        want = torch.cat([attn.rel_k.weight, attn.rel_v.weight], 1).detach().double().numpy()  # (33, 32)
        got = unpacked(data["matrix"]["v"].iloc[0]).reshape(want.shape)
        np.testing.assert_allclose(got, want, atol=5e-5 + 1e-7)  # sent to 4 decimals
        assert f"layer {layer}" in str(spec["title"])
    both = torch.cat([torch.stack([b.attn.rel_k.weight for b in shaw.model.blocks]),
                      torch.stack([b.attn.rel_v.weight for b in shaw.model.blocks])], -1).detach().double()
    shown = _text(at)
    assert "the rows for distances −16 to 0, the only ones training could read" in shown
    assert f"|a| = {both[:, :17].abs().mean().item():.3f}" in shown
    assert f"average {both[:, 17:].abs().mean().item():.3f}: still their random start" in shown
    assert ("It clips at k = 16 with heads of d = 16, so each of its 3 layers learns 2 × 33 × 16 = "
            "1,056 numbers for positions (3,168 in all)") in shown
    assert sum(b.attn.rel_k.weight.numel() + b.attn.rel_v.weight.numel() for b in shaw.model.blocks) == 3168


def test_shaw_head_preferences_are_the_pairs_averaged_by_hand(app_page, by_hand):
    at = _ok(app_page(PAGE))
    means, counts = by_hand
    _, data = _chart(at, "position term q·aᴷ/√d averaged")
    rows = data["rows"]
    for (layer, head), group in rows.groupby(["layer", "head"]):
        h = int(head.split()[-1])
        want = means[layer, h][-group["distance"].to_numpy()]
        # the page's batched float32 run against per-sentence float64 sums: 1e-5 of the scale
        np.testing.assert_allclose(group["mean term"], want, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(group["pairs"], counts[-group["distance"].to_numpy()])
        (fav,) = group[group["favourite"]]["distance"]
        assert -fav == int(np.argmax(means[layer, h]))
    shown = _text(at)
    assert f"{int(counts[0]):,} pairs at distance 0, {int(counts[16]):,} at 16 or more back" in shown
    table = static_rows(at, "mean term")
    assert len(table) == 12
    favourites = {}
    for row in table:
        layer, h = int(row["layer"]), int(row["head"])
        best, worst = int(np.argmax(means[layer, h])), int(np.argmin(means[layer, h]))
        label = lambda b: "the token itself" if b == 0 else f"{b}{' or more' if b == 16 else ''} back"
        assert row["favourite"] == label(best) and row["least favourite"] == label(worst)
        assert float(row["mean term"]) == pytest.approx(means[layer, h, best], abs=6e-4)  # shown to 3 decimals
        assert float(row["its mean term"]) == pytest.approx(means[layer, h, worst], abs=6e-4)
        favourites[label(best)] = favourites.get(label(best), 0) + 1
    # the most common favourite (a tie goes to the nearer distance)
    first, top = sorted(favourites.items(), key=lambda kv: (-kv[1], int(kv[0].split()[0])
                                                            if kv[0][0].isdigit() else 0))[0]
    assert f"{top} of the 12 heads favour **{first}**" in shown


def _hf_buckets(rel, bidirectional, n=32, m=128):
    t5_module = pytest.importorskip("transformers.models.t5.modeling_t5",
                                    reason="transformers (a dev dependency) is not installed")
    return t5_module.T5Attention._relative_position_bucket(
        torch.as_tensor(np.array(rel)), bidirectional=bidirectional, num_buckets=n, max_distance=m).numpy()


def test_t5_buckets_biases_and_favourites(app_page, t5):
    at = _ok(app_page(PAGE))
    # the bucket chart: transformers' own buckets, both ways of bucketing
    _, data = _chart(at, "T5's bucket of every distance")
    rows = data["rows"]
    for kind, group in rows.groupby("bucketing"):
        both = kind.startswith("encoder")
        d = group["distance"].to_numpy()
        assert d.min() == -136 and d.max() == (136 if both else 0)
        np.testing.assert_array_equal(group["bucket"], _hf_buckets(d, both))
    # the bias chart: the model's table at each distance's bucket, 0 … 40 back
    table = t5.model.blocks[0].attn.rel_pos_bias.weight.detach().double().numpy()  # (32, 4)
    _, data = _chart(at, "The bias each of 4 heads adds")
    bias = data["rows"]
    assert sorted(set(bias["back"])) == list(range(41))
    for head, group in bias.groupby("head"):
        h = int(head.split()[-1])
        want = table[_hf_buckets(-group["back"].to_numpy(), False), h]
        np.testing.assert_allclose(group["bias"], want, atol=1e-7)  # float32 copies
    edge = data["edge"]
    assert edge["back"].tolist() == [19] and t5.manifest["eval"]["positions_trained"] == 20
    # the favourites: the largest and smallest bias among the 18 buckets up to 19 back
    assert _hf_buckets(np.array([-19]), False)[0] == 17
    shown = _text(at)
    assert "only the buckets up to 19–20 back were ever trained (18 of 32)" in shown
    assert "(16–18 back, 19–20 back, … 99–112 back), and the last, ≥ 113 back" in shown
    assert "half for keys behind (1 back … ≥ 91 back)" in shown
    names = ["0"] + [f"{i} back" for i in range(1, 16)] + ["16–18 back", "19–20 back"]
    rows = static_rows(at, "bias")
    assert [int(r["head"]) for r in rows] == [0, 1, 2, 3]
    for r in rows:
        col = table[:18, int(r["head"])]
        assert r["favourite"] == names[int(np.argmax(col))] and r["least favourite"] == names[int(np.argmin(col))]
        assert float(r["bias"]) == pytest.approx(col.max(), abs=6e-4)
        assert float(r["its bias"]) == pytest.approx(col.min(), abs=6e-4)
        assert f"head {r['head']} favours **{r['favourite']}** ({col.max():+.3f})" in shown
    assert "Its table holds 32 buckets × 4 heads = 128 numbers" in shown


def test_the_steps_say_which_model_they_teach_on(app_page):
    at = _ok(app_page(PAGE))
    shown = _text(at)
    assert "gpt-tiny uses sinusoidal position vectors added to the embeddings, so everything below " \
           "comes from **gpt-tiny-relative**" in shown
    assert "so everything below comes from **gpt-tiny-t5**" in shown
    for name in ("gpt-tiny-relative", "gpt-tiny-t5"):
        ev = tfviz.load(name).manifest["eval"]
        assert f"{name}: gpt-tiny's size" in shown and f"Held-out loss {ev['val_loss']:.3f} per token" in shown
    assert "The notes list six ways of giving a transformer positions" in shown
