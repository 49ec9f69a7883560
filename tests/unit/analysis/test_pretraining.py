"""Lesson 15's numbers: BERT's masking draw and its shares, bert-tiny's guesses against its own
forward, the sentence-pair input, span corruption, and fine-tuning counted by hand."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.analysis import finetune as ft
from tfviz.analysis import pretraining as pt
from tfviz.config import preset
from tfviz.data.lexicon import PLACES
from tfviz.params import BERT_BASE, BERT_CONVENTIONS, ParamSpec, count_parameters
from tfviz.experiments import mlm
from tfviz.training.batches import KEPT, MASKED, RANDOM, mlm_batch, mlm_draw


@pytest.fixture(scope="module")
def bert():
    return tfviz.load("bert-tiny")


# --- the masking draw -------------------------------------------------------------------------


def test_the_draw_is_exactly_what_training_batches_use():
    """mlm_draw's decisions, applied, are mlm_batch's inputs and targets, bit for bit, from the
    same generator state (so bert-tiny's training data did not change)."""
    rows = [list(range(10, 10 + n)) for n in (3, 7, 12, 20, 33)]
    x, y, m = mlm_batch(rows, torch.Generator().manual_seed(5), mask_id=4, vocab_size=600)
    d = mlm_draw(rows, torch.Generator().manual_seed(5), vocab_size=600)
    assert torch.equal(m.bool(), d.real) and torch.equal(y != -100, d.chosen)
    assert torch.equal(x[d.kind == MASKED], torch.full_like(x[d.kind == MASKED], 4))
    assert torch.equal(x[d.kind == RANDOM], d.random_ids[d.kind == RANDOM])
    assert torch.equal(x[d.kind == KEPT], d.x[d.kind == KEPT])
    assert torch.equal(x[~d.chosen], d.x[~d.chosen])
    assert ((d.kind >= 0) == d.chosen).all()


@pytest.mark.parametrize("n", [1, 2, 7, 12, 20, 40])
def test_draw_masks_on_one_sentence(n):
    ids = list(range(50, 50 + n))
    d = mlm.draw_masks(ids, seed=3, mask_id=4, vocab_size=600)
    assert len(d.chosen) == pt.chosen_per_sentence(n) == max(1, round(0.15 * n))
    assert d == mlm.draw_masks(ids, seed=3, mask_id=4, vocab_size=600)  # same seed, same draw
    for i, (orig, read, kind) in enumerate(zip(d.ids, d.inputs, d.kinds)):
        if kind == MASKED:
            assert read == 4
        elif kind == RANDOM:
            assert 7 <= read < 600  # never a special token
        else:  # kept, or not chosen at all
            assert read == orig


def test_draw_again_draws_something_else():
    ids = list(range(50, 70))
    draws = {mlm.draw_masks(ids, seed=s, mask_id=4, vocab_size=600) for s in range(20)}
    assert len({d.chosen[0] for d in draws}) > 3 and len(draws) == 20


def test_many_draws_settle_on_15_80_10_10():
    """20,000 draws of a 20-token sentence: exactly 3 chosen in every draw (15%), and 60,000
    chosen tokens split by one coin each. The standard error of a share p over 60,000 coins is
    sqrt(p(1-p)/60000): 0.0016 for 0.8, 0.0012 for 0.1; a tolerance of 0.01 is 6-8 of them, so
    a correct draw fails with a chance far below one in a million, while a rule off by one
    point (0.79 or 0.11) fails."""
    tally = mlm.masking_tally(20, 20_000, seed=0, vocab_size=600)
    assert (tally[:, 0] == 3).all()
    assert (tally[:, 1:].sum(1) == tally[:, 0]).all()
    shares = pt.running_shares(tally, 20)[-1]
    assert shares[0] == pytest.approx(0.15, abs=1e-12)  # 3 of 20, in float64
    np.testing.assert_allclose(shares[1:], [0.8, 0.1, 0.1], atol=0.01)


def test_every_position_is_chosen_equally_often():
    """The chosen positions are uniform: over 10,000 draws of 12 tokens (2 chosen each) every
    position is chosen about 2/12 of the time. 10,000 Bernoulli(1/6) trials have a standard
    error of 0.0037; the tolerance 0.02 is over 5 of them."""
    gen = torch.Generator().manual_seed(1)
    d = mlm_draw([[9] * 12] * 10_000, gen, vocab_size=600)
    np.testing.assert_allclose(d.chosen.double().mean(0).numpy(), 2 / 12, atol=0.02)


def test_running_shares_by_hand():
    tally = np.array([[3, 3, 0, 0], [3, 2, 1, 0], [3, 2, 0, 1]])
    got = pt.running_shares(tally, 20)
    np.testing.assert_allclose(got[:, 0], [0.15, 0.15, 0.15])
    np.testing.assert_allclose(got[-1, 1:], [7 / 9, 1 / 9, 1 / 9])


# --- the model's guesses ------------------------------------------------------------------------


def test_guesses_match_the_models_own_forward(bert):
    tok = bert.tokenizer
    ids = tok.encode("the animal didn't cross the street because it was too tired.")
    drawn = mlm.draw_masks(ids, seed=2, mask_id=tok.mask_id, vocab_size=tok.vocab_size)
    g = mlm.guesses(bert.model, drawn.inputs, drawn.ids, k=5)
    with torch.no_grad():
        logits = bert.model(torch.tensor([drawn.inputs]))[0]  # (n, vocab)
    probs = torch.softmax(logits, dim=-1).numpy()
    # float32 softmax over 600 tokens in the reference against float64 in guesses: ~1e-7 apart
    # here, a float32 tolerance for another CPU's rounding
    np.testing.assert_allclose(g.probs, np.sort(probs, axis=-1)[:, ::-1][:, :5], atol=1e-5)
    assert (g.ids[:, 0] == probs.argmax(-1)).all()
    np.testing.assert_allclose(g.target_probs, probs[np.arange(len(ids)), ids], atol=1e-5)
    chosen = torch.tensor(drawn.chosen)
    reference = F.cross_entropy(logits[chosen], torch.tensor(ids)[chosen]).item()
    assert mlm.chosen_loss(g, drawn) == pytest.approx(reference, abs=1e-5)


def test_bert_tiny_fills_a_mask_in_the_notes_sentence(bert):
    tok = bert.tokenizer
    ids = tok.encode("the animal didn't cross the street because it was too tired.")
    at = ids.index(tok.encode("street")[0])  # the tokenizer adds the leading space itself
    ids[at] = tok.mask_id
    g = mlm.guesses(bert.model, ids, ids, k=len(PLACES))
    # nothing in the sentence says which place it was: the best guesses are the pattern's places
    # (street among them), not any one of them in particular
    assert sorted(bert.token_strings(g.ids[at])) == sorted("␣" + p for p in PLACES)


# --- [CLS] / [SEP] and the pretraining parts ----------------------------------------------------


def test_sentence_pair_and_two_sentences():
    pair = pt.sentence_pair(["a", "b"], ["c"])
    assert pair.tokens == ("[CLS]", "a", "b", "[SEP]", "c", "[SEP]")
    assert pair.segments == (0, 0, 0, 0, 1, 1)
    assert pt.two_sentences("  One.  Two? Three!") == ("One.", "Two?")
    assert pt.two_sentences("") == ("", None)


def test_bert_tiny_has_no_segment_table_pooler_or_next_sentence_head(bert):
    parts = pt.pretraining_parts(bert.model.state_dict().keys(), bert.config.tie_embeddings)
    assert [p.present for p in parts] == [False, False, False, True]
    assert "tied" in parts[3].detail
    # nothing hides elsewhere: the weights are exactly what the counter counts with no segment
    # table, no pooler and no output matrix of their own
    n_weights = sum(p.numel() for p in bert.model.parameters())
    assert n_weights == count_parameters(bert.config).total
    assert bert.tokenizer.encode("[CLS] a [SEP]", allow_special=True)[0] == bert.tokenizer.cls_id == 5


def test_pretraining_parts_recognise_hugging_face_bert_names():
    names = ["bert.embeddings.token_type_embeddings.weight", "bert.pooler.dense.weight",
             "cls.seq_relationship.weight", "cls.predictions.bias"]
    assert [p.present for p in pt.pretraining_parts(names, tied=False)] == [True, True, True, True]


# --- span corruption -------------------------------------------------------------------------------


def test_corrupt_by_hand():
    c = pt.corrupt("the cat sat on the mat".split(), [0, 1, 0, 0, 1, 1])
    assert c.inputs == ("the", "<X>", "sat", "on", "<Y>")
    assert c.targets == ("<X>", "cat", "<Y>", "the", "mat", "<Z>")
    with pytest.raises(ValueError):
        pt.corrupt(["a"], [0, 1])


@pytest.mark.parametrize("n", [2, 3, 10, 20, 47, 128])
def test_noise_mask_follows_t5s_counts(n):
    for seed in range(5):
        m = pt.noise_mask(n, seed)
        hidden = min(max(round(0.15 * n), 1), n - 1)
        spans = sum(1 for i, x in enumerate(m) if x and (i == 0 or not m[i - 1]))
        assert len(m) == n and sum(m) == hidden
        assert spans == min(max(round(hidden / 3), 1), n - hidden)
        assert not m[0] and m[-1]  # a kept run first, a hidden run last, as T5 interleaves
        c = pt.corrupt(list(range(n)), m)
        kept = [t for t in c.inputs if isinstance(t, int)]
        assert len(kept) + sum(m) == n and len(c.targets) == sum(m) + spans + 1
    assert pt.noise_mask(20, 4) == pt.noise_mask(20, 4)
    with pytest.raises(ValueError):
        pt.noise_mask(1, 0)


# --- fine-tuning counted -------------------------------------------------------------------------


def test_lora_by_hand_for_bert_base():
    # rank 8 on W_Q and W_V: 8 · (768 + 768) per matrix, 2 matrices, 12 layers
    assert ft.lora_params(BERT_BASE, 8).total == 8 * 1536 * 2 * 12 == 294_912
    every = ft.lora_params(BERT_BASE, 8, ft.MATRICES)
    # per layer: W_Q, W_K, W_V, W_O 8·1536 each; W_in and W_out 8·(768 + 3072) each
    assert every.total == 12 * (4 * 8 * 1536 + 2 * 8 * 3840) == 1_327_104
    full = count_parameters(BERT_BASE, **BERT_CONVENTIONS).total
    assert full == 109_482_240
    assert ft.share(294_912, full) == pytest.approx(0.0026937, abs=1e-7)
    assert ft.prefix_params(BERT_BASE, 20) == 12 * 2 * 20 * 768 == 368_640
    assert ft.prompt_params(BERT_BASE, 20) == 20 * 768 == 15_360


def test_lora_for_our_models_by_hand():
    assert ft.lora_params(preset("bert-tiny"), 4).total == 4 * 128 * 2 * 2 == 2048
    # moe-tiny: every expert's W_in gets its own pair: 2 layers x 4 experts, 2·(64 + 128) each
    assert ft.lora_params(preset("moe-tiny"), 2, ["W_in"]).total == 8 * 2 * 192 == 3072
    # reverse-encdec: W_Q in 2 encoder, 2 decoder self- and 2 cross-attention layers
    assert ft.lora_params(preset("reverse-encdec"), 4, ["W_Q"]).total == 6 * 4 * 128 == 3072
    assert ft.prefix_params(preset("bert-tiny"), 5) == 2 * 2 * 5 * 64
    with pytest.raises(ValueError):
        ft.lora_params(BERT_BASE, 0)
    with pytest.raises(ValueError):
        ft.lora_params(BERT_BASE, 4, ["W_X"])


@pytest.mark.parametrize("name", ["gpt-tiny", "bert-tiny"])
def test_lora_count_equals_real_adapter_tensors(name):
    """A second count: build the A and B tensors for every W_Q and W_V the model really has
    (shapes from its exported weights) and count their elements."""
    w = tfviz.load(name).weights()
    rank, total = 3, 0
    for key in ("W_Q", "W_V"):
        layers, heads, d_in, d_head = w[key].shape  # (L, H, d, d_head)
        for _ in range(layers):
            total += torch.zeros(d_in, rank).numel() + torch.zeros(rank, heads * d_head).numel()
    assert ft.lora_params(preset(name), rank).total == total


def test_lora_breaks_even_at_half_the_width():
    spec = ParamSpec(64, 4, 256, 1, 100, arch="encoder")
    assert ft.lora_params(spec, 32, ["W_Q"]).total == 64 * 64  # k = d/2: as many as W itself


def test_lora_row_and_column_conventions_give_a_and_b_the_same_roles():
    """The lesson writes x·(W + AB) for a row vector x, A (d_in × r), B (r × d_out); the LoRA
    paper writes h = W0·x + B·A·x for a column vector, its A (r × d_in), its B (d_out × r).
    The paper's matrices are ours transposed: the same update, A meeting the input first, and
    with B at zero (both start there) the layer is the pretrained one."""
    g = torch.Generator().manual_seed(0)
    d_in, d_out, r = 6, 5, 2
    w, x = torch.randn(d_in, d_out, generator=g), torch.randn(d_in, generator=g)
    a, b = torch.randn(d_in, r, generator=g), torch.randn(r, d_out, generator=g)
    ours = x @ (w + a @ b)
    paper_a, paper_b, w0 = a.T, b.T, w.T  # (r, d_in), (d_out, r), (d_out, d_in)
    assert paper_a.shape == (r, d_in) and paper_b.shape == (d_out, r)
    torch.testing.assert_close(ours, w0 @ x + paper_b @ (paper_a @ x))
    assert (x @ a).shape == (paper_a @ x).shape == (r,)  # A reads x, in both
    zero_b = torch.zeros(r, d_out)
    torch.testing.assert_close(x @ (w + a @ zero_b), x @ w)


def test_reads_wordpiece_knows_a_bert_folders_tokenizer(tmp_path):
    """Only a BERT checkpoint's WordPiece shows its tokens as stored ("##imal"): ours and
    GPT-2's mark a word's space ("␣the"). (The flag it read was renamed once and every BERT's
    spans were then joined without spaces; lesson 15's page test caught it.)"""
    pytest.importorskip("transformers")
    import tfviz
    from tests.support.bert_folders import make_checkpoint as make_bert
    from tests.unit.hf.test_gpt2 import make_checkpoint as make_gpt2

    make_bert(tmp_path / "bert")
    make_gpt2(tmp_path / "gpt2")
    assert pt.reads_wordpiece(tfviz.load(tmp_path / "bert").tokenizer)
    assert not pt.reads_wordpiece(tfviz.load(tmp_path / "gpt2").tokenizer)
    assert not pt.reads_wordpiece(tfviz.load("gpt-tiny").tokenizer)
