"""Lesson 13's numbers (tfviz.analysis.encdec) against the model and against the training
code's own evaluation (tfviz.training.evaluate.reverse_metrics: a batched, padded,
teacher-forced pass written separately)."""
import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import encdec as ed
from tfviz.config import preset
from tfviz.data.tasks import make_reverse
from tfviz.decoding.seq2seq import translate
from tfviz.model.hooks import recording
from tfviz.training.evaluate import reverse_metrics

# reverse_metrics rounds to 4 decimals; a padded batch and a single sequence differ by float32
# rounding (~1e-6): half a unit of the 4th decimal plus that.
ROUNDED = 0.5e-4 + 1e-5


@pytest.fixture(scope="module")
def bundle():
    return tfviz.load("reverse-encdec")


@pytest.mark.parametrize("source", ["hello", "ab", "abcdefghijkl", "ponm"])
def test_anti_diagonal_scores_match_the_training_evaluation(bundle, source):
    t = translate(bundle, source)
    ids = bundle.encode(source)
    ref = reverse_metrics(bundle.model, bundle.tokenizer, [(ids, ids[::-1])])
    np.testing.assert_allclose(ed.anti_diagonal_scores(t.cross_attention()),
                               ref["anti_diagonal_weights"], atol=ROUNDED)


def test_the_head_found_from_the_numbers_is_the_manifests(bundle):
    """On a sample of the manifest's held-out sources, the scores weighted by source length (as
    the training evaluation averages over steps) equal that evaluation's on the same sample, and
    the best head is the manifest's (found there on 500 sources)."""
    pairs = make_reverse(40, seed=1, lengths=(2, 12), split="heldout")
    total, steps = 0.0, 0
    for src, _ in pairs:
        cross = translate(bundle, "".join(src)).cross_attention()
        total = total + ed.anti_diagonal_scores(cross) * len(src)
        steps += len(src)
    mean = total / steps
    ids = [(bundle.tokenizer.vocab.encode(s), bundle.tokenizer.vocab.encode(t)) for s, t in pairs]
    ref = reverse_metrics(bundle.model, bundle.tokenizer, ids)
    np.testing.assert_allclose(mean, ref["anti_diagonal_weights"], atol=ROUNDED)
    head = bundle.manifest["eval"]["anti_diagonal_head"]
    L, H = np.unravel_index(int(mean.argmax()), mean.shape)
    assert (L, H) == (head["layer"], head["head"]) == (1, 2)
    assert mean[L, H] == pytest.approx(head["weight"], abs=0.02)  # a sample of the 500


def test_anti_diagonal_head_on_a_hand_made_map():
    cross = np.full((2, 3, 4, 3), 1 / 3)  # 4 steps (the last writes <eos>) over 3 letters
    cross[1, 2, :3] = np.eye(3)[::-1]  # layer 1, head 2 reads backwards
    cross[0, 0, :3] = 0.5 * np.eye(3)[::-1] + 0.5 / 3
    best = ed.anti_diagonal_head(cross)
    assert (best.layer, best.head) == (1, 2) and best.score == pytest.approx(1.0)
    assert ed.anti_diagonal_scores(cross)[0, 0] == pytest.approx(0.5 + 0.5 / 3)
    assert ed.anti_diagonal_scores(cross)[0, 1] == pytest.approx(1 / 3)


@pytest.mark.parametrize("step", [1, 3, 6])
def test_step_shapes_are_the_shapes_the_model_computes(bundle, step):
    """The decoder of "hello" at step t, run as translate runs it: the first t − 1 tokens go into
    the KV cache, then step t feeds the newest token alone. Every number the page prints is a
    dimension of a tensor recorded in that step: one query row, one new row of each map."""
    cfg = bundle.config
    t = translate(bundle, "hello")
    src = torch.tensor([t.source_ids])
    with torch.no_grad():
        cache = bundle.model.step(torch.tensor([t.decoder_ids[:step - 1]]), enc_ids=src)[1] \
            if step > 1 else None
        with recording(lambda name: True) as store:
            new = torch.tensor([t.decoder_ids[step - 1:step]])
            logits, grown = (bundle.model.step(new, cache) if cache is not None
                             else bundle.model.step(new, enc_ids=src))
    q = store["blocks.0.cross_attn.hook_q"][0]  # (1, H, dh): the new token's query only
    k_cross = grown.cross[0][0][0]  # (n, H, dh): the memory's keys, kept in the cache
    k_self = grown.layers[0][0][0]  # (t, H, dh): the decoder's keys so far
    z = store["blocks.0.hook_resid_mid"][0]  # (1, d): what cross-attention's query comes from
    memory = grown.memory[0]  # (n, d)
    assert q.shape == (1, cfg.n_heads, cfg.d_head) and k_cross.shape == (5, cfg.n_heads, cfg.d_head)
    assert k_self.shape == (step, cfg.n_heads, cfg.d_head)
    own, cross = store["blocks.0.attn.hook_pattern"][0], store["blocks.0.cross_attn.hook_pattern"][0]
    lines = ed.step_shapes(cfg, step, 5)
    assert f"query {z.shape[0]} × d = {z.shape[0]} × {z.shape[1]}" in lines[0]
    assert f"keys and values t × d = {k_self.shape[0]} × {cfg.d_model}" in lines[0]
    assert f"weights {own.shape[1]} × {own.shape[2]}:" in lines[0] and own.shape[1] == 1
    assert ("kept from the earlier steps" in lines[0]) == (step > 1)
    assert f"query {z.shape[0]} × d = {z.shape[0]} × {z.shape[1]}" in lines[1]
    assert f"n × d = {memory.shape[0]} × {memory.shape[1]}" in lines[1]
    assert f"per head {q.shape[0]} × {q.shape[2]} against {k_cross.shape[0]} × {k_cross.shape[2]}" in lines[1]
    assert f"weights {cross.shape[1]} × {cross.shape[2]}:" in lines[1]
    assert f"gives 1 × {logits.shape[-1]} logits" in lines[2]
    assert f"({cfg.d_model} × {bundle.model.embed.weight.shape[0]})" in lines[2]  # Eᵀ
    assert "KV cache" not in " ".join(lines)  # lesson 13 comes before lesson 16 teaches it


@pytest.mark.parametrize("source", ["hello", "abcdefghijkl", "po"])
def test_row_peaks_against_every_row_by_hand(bundle, source):
    """The sharpest and the most even encoder row, found by looping over the trace's own maps."""
    tr = bundle.trace(source)
    maps = [tr["pattern", layer, "enc"] for layer in range(bundle.config.enc_layers)]
    rows = [(float(maps[l][h, q].max()), l, h, q, int(maps[l][h, q].argmax()))
            for l in range(len(maps)) for h in range(maps[l].shape[0]) for q in range(maps[l].shape[1])]
    sharp, even = ed.row_peaks(translate(bundle, source).enc_patterns)
    top, low = max(rows), min(rows)
    assert sharp.weight == pytest.approx(top[0], abs=1e-5) and even.weight == pytest.approx(low[0], abs=1e-5)
    assert (sharp.layer, sharp.head, sharp.query, sharp.key) == top[1:]
    assert (even.layer, even.head, even.query) == low[1:4]
    if source == "hello":  # the example: one encoder row puts 0.70 on one key
        assert (sharp.layer, sharp.head, round(sharp.weight, 2)) == (1, 3, 0.70)
        assert even.weight < 0.25 < sharp.weight


def test_step_notes_say_what_was_read_and_written(bundle):
    t = translate(bundle, "pop")
    read, written = bundle.token_strings(t.decoder_ids), bundle.token_strings(t.new_ids)
    notes = ed.step_notes(bundle.config, read, written, [s.probs[0] for s in t.steps], 3)
    assert [n[0].split(":")[0] for n in notes] == ["Step 1", "Step 2", "Step 3", "Step 4"]
    assert notes[0][0].startswith("Step 1: the decoder has read <bos> and writes p (probability 0.")
    assert "has read <bos> p o p and writes <eos>" in notes[3][0]


@pytest.mark.parametrize("name", ["bert-tiny", "gpt-tiny", "reverse-encdec"])
def test_the_masks_drawn_are_the_masks_each_model_applies(name):
    """Where a model writes −∞ into its scores is exactly where the drawn mask says no."""
    b = tfviz.load(name)
    if b.config.arch == "encoder-decoder":
        tr = b.trace("abcd")  # source of 4, decoder reads <bos> d c b a: t = 5
        n, t = 4, 5
        drawn = dict(ed.attention_masks(b.config, n, t))
        scores = {"encoder self-attention (bidirectional)": tr["attn_scores", 0, "enc"],
                  "decoder self-attention (causal)": tr["attn_scores", 0],
                  "cross-attention (decoder reads encoder)": tr["cross_attn.attn_scores", 0]}
    else:
        tr = b.trace("the cat sat near the lake")
        n = len(tr.tokens)
        drawn = dict(ed.attention_masks(b.config, n, n))
        scores = {next(iter(drawn)): tr["attn_scores", 0]}
    assert drawn.keys() == scores.keys()
    for what, allowed in drawn.items():
        for head in scores[what]:  # (H, queries, keys): every head, the same mask
            np.testing.assert_array_equal(np.isfinite(head), allowed, err_msg=what)


def test_three_architectures_name_our_models():
    kinds = ed.architectures({n: preset(n) for n in ("bert-tiny", "gpt-tiny", "reverse-encdec")})
    assert [(k.name, k.ours, len(k.masks)) for k in kinds] == [
        ("Encoder-only", "bert-tiny", 1), ("Decoder-only", "gpt-tiny", 1),
        ("Encoder-decoder", "reverse-encdec", 3)]
    assert "cross-attention" in kinds[2].blocks and "cross" not in kinds[1].blocks
