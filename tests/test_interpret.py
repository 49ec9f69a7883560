"""tfviz.interpret against independent recomputations, on bundles and random checkpoint folders.

Models: llama-tiny (RMSNorm, pre-LN, untied, no biases), mixtral-tiny (its MoE), a random GPT-2
folder (LayerNorm with its bias, learned positions, every bias, tied), a random GraniteMoe
folder (all four multipliers), and the post-LN bundles gpt-tiny and moe-tiny, where the logit
lens and patching apply and direct logit attribution is refused in words. So no code path can
assume one model.

The references here are computed another way: the model's own torch modules (its final norm,
W_o and unembedding, with torch's forward pre-hooks for patching, removed in ``finally``), or
the trace's float32 activations summed in float64 by hand. Tolerances: a float64 numpy sum of
float32 parts against torch's float32 forward differs by float32 rounding of numbers of the
logits' size (|logit| ≲ 20): atol 1e-4 on logits (the issue's bound) and rtol 1e-5 on vectors.
Patched runs go through the model as a batch, whose matmuls may round differently from a
single sequence's in the last bits, so they get the same float32 tolerance, never equality.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tfviz
from tfviz.config import RunOptions
from tfviz.decoding.head import unembedding
from tfviz.interpret import (ablate_head, direct_logit_attribution, induction_report,
                             induction_score, induction_scores, lens_top, logit_lens, patch,
                             previous_token_score, residual_stack)
from tfviz.interpret.common import special_ids
from tfviz.trace import run_with_trace

CLEAN = "the animal didn't cross the street because it was too tired. it refers to the"
CORRUPT = "the animal didn't cross the street because it was too wide. it refers to the"
FOLDER_TEXT = "The animal didn't cross the street because it was too tired"
PRE_LN = ["llama-tiny", "mixtral-tiny", "gpt2-folder", "granite-folder"]
POST_LN = ["gpt-tiny", "moe-tiny"]
LOGIT_ATOL = 1e-4  # float64 sum of float32 parts vs torch's float32 logits (see the docstring)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.moe_folders import make_moe_checkpoint
    from tests.unit.hf.test_gpt2 import make_checkpoint

    gpt2 = tmp_path_factory.mktemp("interpret-gpt2")
    make_checkpoint(gpt2, n_layer=2, n_head=2)
    granite = tmp_path_factory.mktemp("interpret-granite")
    make_moe_checkpoint(granite, "granitemoe", experts=5, top_k=2, heads=4, kv_heads=1,
                        tie_word_embeddings=True, embedding_multiplier=12.0,
                        attention_multiplier=0.125, residual_multiplier=0.22, logits_scaling=6.0)
    return {"gpt2-folder": gpt2, "granite-folder": granite}


@pytest.fixture(scope="module")
def models(folders):
    return {}


def load(name, folders, models):
    if name not in models:
        models[name] = tfviz.load(folders[name]) if name in folders else tfviz.load(name)
    return models[name]


def text_for(name: str) -> str:
    return FOLDER_TEXT if name.endswith("folder") else CLEAN


def final_norm_torch(bundle, x: np.ndarray) -> torch.Tensor:
    """The model's own final-norm module on (…, d) float32 vectors (identity without one)."""
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    return bundle.model.ln_final(t) if bundle.config.final_norm else t


def logits_torch(bundle, normed: torch.Tensor) -> np.ndarray:
    """The model's own unembedding, b_U and logits_scaling on normed vectors."""
    logits = torch.nn.functional.linear(normed, unembedding(bundle.model))
    if bundle.config.unembed_bias:
        logits = logits + bundle.model.unembed_bias
    return (logits / bundle.config.logits_scaling).detach().numpy()


# --- the logit lens ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", PRE_LN + POST_LN)
def test_the_lens_last_row_is_the_logits_and_each_row_is_the_models_own_head(name, folders, models):
    b = load(name, folders, models)
    with torch.no_grad():
        tr = b.trace(text_for(name))
        lens = logit_lens(tr, b)
        assert lens.shape == (b.config.n_layers + 1, *tr.logits.shape)
        np.testing.assert_allclose(lens[-1], tr.logits, rtol=1e-5, atol=LOGIT_ATOL)
        # every row through the model's own torch norm and head (float32: a second code path)
        theirs = logits_torch(b, final_norm_torch(b, residual_stack(tr)))
    np.testing.assert_allclose(lens, theirs, rtol=1e-5, atol=LOGIT_ATOL)
    top = lens_top(tr, b)
    assert (top.ids[-1] == tr.logits.argmax(-1)).all()
    probs = torch.softmax(torch.from_numpy(lens), -1).max(-1).values.numpy()
    # Both softmaxes read the same float64 lens (numpy's and torch's code paths, float64
    # rounding only): 1e-9 holds on any CPU and thread count.
    np.testing.assert_allclose(top.probs, probs, rtol=1e-9)
    settles = top.settles()
    for p, r in enumerate(settles):  # from row r on the last row's token leads, not before
        assert (top.ids[r:, p] == top.ids[-1, p]).all()
        assert r == 0 or top.ids[r - 1, p] != top.ids[-1, p]


# --- direct logit attribution -----------------------------------------------------------------

@pytest.mark.parametrize("name", PRE_LN)
def test_attribution_sums_to_the_logit_and_to_the_logit_difference(name, folders, models):
    b = load(name, folders, models)
    tr = b.trace(text_for(name))
    for position in (-1, 2):
        order = np.argsort(tr.logits[position])[::-1]
        token, second = int(order[0]), int(order[1])
        dla = direct_logit_attribution(tr, position, token, weights=b)
        assert abs(dla.total - float(tr.logits[position, token])) < LOGIT_ATOL
        assert abs(dla.logit - float(tr.logits[position, token])) < 1e-6
        diff = direct_logit_attribution(tr, position, token, second, weights=b)
        assert abs(diff.total - float(tr.logits[position, token] - tr.logits[position, second])) < LOGIT_ATOL
        same = direct_logit_attribution(tr, position, token, token, weights=b)
        assert all(v == 0 for v in same.values())
    names = list(dla)
    cfg = b.config
    assert names.count("embed") == 1 and dla.heads().shape == (cfg.n_layers, cfg.n_heads)
    assert ("pos_embed" in names) == (cfg.positional in ("learned", "sinusoidal"))
    assert ("ln_final.b" in names) == (cfg.norm_type == "layernorm" and cfg.final_norm)
    assert sum(k == "mlp" for k in dla.kinds.values()) == cfg.n_layers
    assert ("L0 b_O" in names) == cfg.bias


@pytest.mark.parametrize("name", PRE_LN)
def test_each_part_recomputed_with_the_models_own_modules(name, folders, models):
    """The parts add up to the stream the final norm reads; a head's part is its z through the
    model's own W_o slice (times the residual multiplier), and its share that vector through
    the final norm's own gamma with the trace's scale, and the model's own unembedding."""
    from tfviz.interpret import residual_parts

    b = load(name, folders, models)
    cfg = b.config
    tr = b.trace(text_for(name))
    parts, _ = residual_parts(tr, b, 1)
    last = tr[f"blocks.{cfg.n_layers - 1}.hook_resid_post"][1]
    np.testing.assert_allclose(sum(parts.values()), last, rtol=1e-5, atol=1e-5 * np.abs(last).max())
    token = int(tr.logits[1].argmax())
    dla = direct_logit_attribution(tr, 1, token, weights=b)
    layer, head, dh = cfg.n_layers - 1, cfg.n_heads - 1, cfg.d_head
    with torch.no_grad():
        W_o = b.model.blocks[layer].attn.W_o.weight[:, head * dh:(head + 1) * dh]  # (d, dh)
        z = torch.from_numpy(tr["z", layer][1, head])
        v = (W_o @ z) * cfg.residual_multiplier  # (d,)
        np.testing.assert_allclose(parts[f"L{layer}H{head}"], v.numpy(), rtol=1e-5, atol=1e-6)
        if cfg.final_norm:
            ln = b.model.ln_final
            centred = v - v.mean() if cfg.norm_type == "layernorm" else v
            v = centred / float(tr["ln_final.hook_scale"][1]) * ln.weight
        share = logits_torch(b, v[None])[0, token]
    assert abs(dla[f"L{layer}H{head}"] - float(share)) < 1e-5


@pytest.mark.parametrize("name", POST_LN)
def test_attribution_refuses_a_post_ln_model_in_words(name, folders, models):
    b = load(name, folders, models)
    tr = b.trace(CLEAN)
    with pytest.raises(ValueError, match="post-LN") as info:
        direct_logit_attribution(tr, -1, 5, weights=b)
    assert b.config.name in str(info.value) and "pre-LN" in str(info.value)
    assert b.facts.norm == "post"


def test_the_lens_and_attribution_refuse_a_batch_and_a_position_outside_in_words(folders, models):
    b = load("llama-tiny", folders, models)
    tr = b.trace(CLEAN)
    with pytest.raises(ValueError, match="outside this text"):
        direct_logit_attribution(tr, 400, 5, weights=b)
    batch = run_with_trace(b.model, [[5, 6, 7], [7, 6, 5]])
    with pytest.raises(ValueError, match="batch"):
        logit_lens(batch, b)


# --- head ablation beside attribution ---------------------------------------------------------

@pytest.mark.parametrize("name", ["llama-tiny", "mixtral-tiny", "gpt2-folder"])
def test_ablation_removes_the_heads_part_and_its_falls_are_recomputed(name, folders, models):
    """Removing a head (RunOptions) zeroes its z, so its part of the ablated run's attribution
    is 0; the fall without only its vector is recomputed with the model's own norm and head.

    Why no 'fall ≈ share' assertion: on these models it does not hold, and is not meant to.
    The share is the head's direct path with the norm's scale frozen; removing the head also
    removes what later heads and MLPs made of its output (llama-tiny's L0H2: share 0.65 of an
    11.5 logit, fall 8.6), and changes the final norm's scale, which rescales the whole logit.
    What does hold exactly is the identity below: without the head's vector the logit is the
    rest of the stream through the norm at its new scale (test: against torch's own norm)."""
    b = load(name, folders, models)
    cfg = b.config
    text = text_for(name)
    tr = b.trace(text)
    token = int(tr.logits[-1].argmax())
    dla = direct_logit_attribution(tr, -1, token, weights=b)
    head = dla.top("head")
    layer, h = map(int, head[1:].split("H"))
    a = ablate_head(b, text, layer, h)
    assert a.token == token and abs(a.share - dla[head]) < 1e-12
    gone = b.trace(text, options=RunOptions(ablate_heads=frozenset({(layer, h)})))
    assert (gone["z", layer][:, h] == 0).all()
    assert direct_logit_attribution(gone, -1, token, weights=b)[head] == 0
    assert abs(a.fall - float(tr.logits[-1, token] - gone.logits[-1, token])) < 1e-6
    from tfviz.interpret import residual_parts

    parts, _ = residual_parts(tr, b, len(tr.logits) - 1)
    final = tr[f"blocks.{cfg.n_layers - 1}.hook_resid_post"][-1]
    with torch.no_grad():
        rows = final_norm_torch(b, np.stack([final, final - parts[head]]))
        logits = logits_torch(b, rows)
    assert abs(a.direct_fall - float(logits[0, token] - logits[1, token])) < LOGIT_ATOL


# --- activation patching ----------------------------------------------------------------------

def pair(name: str, b):
    """The two texts; for a random folder, id lists: its text, and the same with one token
    changed (tried in id order, so deterministic) so that the model's top answer moves."""
    if not name.endswith("folder"):
        return CLEAN, CORRUPT
    clean = list(b.read(FOLDER_TEXT).ids)
    answer = run_with_trace(b.model, clean).logits[-1].argmax()
    specials = special_ids(b.tokenizer)
    for token in range(b.config.vocab_size):
        corrupt = clean[:-1] + [token]
        if token not in specials and run_with_trace(b.model, corrupt).logits[-1].argmax() != answer:
            return clean, corrupt
    pytest.fail("no one-token change moved the random model's answer")


@pytest.mark.parametrize("name", PRE_LN + POST_LN)
def test_patching_every_position_of_the_first_input_restores_the_clean_run(name, folders, models):
    b = load(name, folders, models)
    clean, corrupt = pair(name, b)
    p = patch(b, clean, corrupt, "hook_resid_pre", by="layer")
    c_tr, k_tr = (run_with_trace(b.model, b.read(t).ids if isinstance(t, str) else t)
                  for t in (clean, corrupt))
    answer, distractor = int(c_tr.logits[-1].argmax()), int(k_tr.logits[-1].argmax())
    assert (p.answer, p.distractor) == (answer, distractor)
    expect_clean = float(c_tr.logits[-1, answer]) - float(c_tr.logits[-1, distractor])
    assert abs(p.clean - expect_clean) < 1e-5
    assert p.values.shape == (b.config.n_layers,)
    assert abs(p.values[0] - p.clean) < LOGIT_ATOL
    by_pos = patch(b, clean, corrupt, "hook_resid_pre")
    assert by_pos.values.shape == (b.config.n_layers, len(c_tr.ids))
    changed = int(np.flatnonzero(np.asarray(c_tr.ids) != np.asarray(k_tr.ids))[0])
    # before the changed token the two runs' first inputs are the same: nothing moves
    np.testing.assert_allclose(by_pos.values[0, :changed], by_pos.corrupt, atol=LOGIT_ATOL)
    np.testing.assert_allclose(np.asarray(by_pos), by_pos.values)


@pytest.mark.parametrize("name", ["llama-tiny", "mixtral-tiny", "gpt-tiny", "granite-folder"])
def test_patched_runs_match_torch_forward_pre_hooks(name, folders, models):
    """Two pieces of each map recomputed by patching another way: torch's own pre-hook on the
    block (its input at one position) and on W_o (one head's slice of z at every position)."""
    b = load(name, folders, models)
    clean, corrupt = pair(name, b)
    k_ids = list(b.read(corrupt).ids) if isinstance(corrupt, str) else corrupt
    c_tr = run_with_trace(b.model, b.read(clean).ids if isinstance(clean, str) else clean)
    by_pos = patch(b, clean, corrupt, "hook_resid_pre")
    by_head = patch(b, clean, corrupt, "hook_z", by="head")
    metric = lambda logits: float(logits[-1, by_pos.answer] - logits[-1, by_pos.distractor])  # noqa: E731
    dh = b.config.d_head
    layer, pos, head = b.config.n_layers - 1, len(k_ids) - 1, 1

    def set_input(module, args):
        x = args[0].clone()
        x[0, pos] = torch.from_numpy(c_tr["resid_pre", layer][pos])
        return (x, *args[1:])

    def set_z(module, args):
        z = args[0].clone()  # (1, T, H·dh)
        z[0, :, head * dh:(head + 1) * dh] = torch.from_numpy(c_tr["z", layer][:, head].reshape(len(k_ids), dh))
        return (z,)

    for module, hook, got in ((b.model.blocks[layer], set_input, by_pos.values[layer, pos]),
                              (b.model.blocks[layer].attn.W_o, set_z, by_head.values[layer, head])):
        handle = module.register_forward_pre_hook(hook)
        try:
            with torch.no_grad():
                logits = b.model(torch.tensor([k_ids]))[0].numpy()
        finally:
            handle.remove()
        assert abs(got - metric(logits)) < LOGIT_ATOL
    assert by_head.values.shape == (b.config.n_layers, b.config.n_heads)
    both = patch(b, clean, corrupt, "hook_z", by="head_position")
    assert both.values.shape == (b.config.n_layers, b.config.n_heads, len(k_ids))
    k = patch(b, clean, corrupt, "hook_k", by="head")
    assert k.values.shape == (b.config.n_layers, b.config.kv_heads)


def test_patching_takes_a_metric_and_refuses_bad_pairs_in_words(folders, models):
    b = load("gpt-tiny", folders, models)
    with pytest.raises(ValueError, match="same number of tokens"):
        patch(b, CLEAN, CLEAN + " street", "hook_resid_pre")
    with pytest.raises(ValueError, match="same next token"):
        patch(b, CLEAN, CLEAN, "hook_resid_pre")
    with pytest.raises(ValueError, match="cannot be patched"):
        patch(b, CLEAN, CORRUPT, "ln1.hook_scale")
    with pytest.raises(ValueError, match="per head"):
        patch(b, CLEAN, CORRUPT, "hook_resid_pre", by="head")
    street = b.encode(" street")[-1]
    own = patch(b, CLEAN, CLEAN, "hook_attn_out", metric=lambda logits: float(logits[-1, street]))
    c_tr = b.trace(CLEAN)
    np.testing.assert_allclose(own.values, float(c_tr.logits[-1, street]), atol=LOGIT_ATOL)
    assert own.answer is None and own.distractor is None


# --- induction heads --------------------------------------------------------------------------

def test_a_hand_built_attention_map_gives_its_known_scores():
    n = 4  # t0 t1 t2 t3 t0 t1 t2 t3: second-half query 4 + i looks at key i + 1
    pattern = np.zeros((2, 8, 8))
    for i in range(n):
        pattern[0, n + i, i + 1] = 0.75  # head 0: an induction head at 3/4 strength
        pattern[0, n + i, 0] = 0.25
    for q in range(8):
        pattern[1, q, max(q - 1, 0)] = 1.0  # head 1: previous token (query 0 on itself)
    assert induction_score(pattern, n).tolist() == [0.75, 0.0]
    # head 1's key q − 1 is never query 4 + i's target i + 1 (that would need i + 1 = 3 + i);
    # head 0's weights sit on keys i + 1 = q − 3 and 0, never on q − 1
    assert previous_token_score(pattern).tolist() == [0.0, 1.0]
    with_bos = np.zeros((1, 9, 9))  # the same with a beginning-of-text token in front
    with_bos[0, 1 + n + np.arange(n), 1 + np.arange(n) + 1] = 1.0
    assert induction_score(with_bos, n, offset=1).tolist() == [1.0]


@pytest.mark.parametrize("name", ["llama-tiny", "mixtral-tiny", "gpt-tiny", "gpt2-folder"])
def test_induction_report_recomputed_from_the_trace(name, folders, models):
    b = load(name, folders, models)
    rep = induction_report(b, length=12, seed=3)
    offset, n = rep.offset, rep.n
    assert offset == (1 if b.facts.adds_bos else 0) and n == 12
    first = rep.ids[offset:offset + n]
    assert rep.ids[offset + n:] == first and not set(first) & special_ids(b.tokenizer)
    tr = run_with_trace(b.model, list(rep.ids))
    for layer in range(b.config.n_layers):
        pat = tr["pattern", layer]
        for h in range(b.config.n_heads):
            want = np.mean([pat[h, offset + n + i, offset + i + 1] for i in range(n)])
            assert abs(rep.scores[layer, h] - want) < 1e-6
            prev = np.mean([pat[h, q, q - 1] for q in range(offset + 1, len(rep.ids))])
            assert abs(rep.previous[layer, h] - prev) < 1e-6
    ce = torch.nn.functional.cross_entropy(torch.from_numpy(tr.logits[:-1]).double(),
                                           torch.tensor(rep.ids[1:]), reduction="none").numpy()
    # The same model on the same ids in this one process gives the same float32 logits (same
    # kernels, same thread count on both sides); both losses are float64 from them, so only
    # float64 rounding separates them.
    np.testing.assert_allclose(rep.losses, ce, rtol=1e-9, atol=1e-9)
    assert abs(rep.loss_second - ce[offset + n:offset + 2 * n - 1].mean()) < 1e-9
    assert abs(rep.loss_first - ce[offset:offset + n - 1].mean()) < 1e-9
    np.testing.assert_array_equal(induction_scores(b, first), rep.scores)


def test_induction_request_is_cut_to_the_context_and_bad_requests_are_refused(folders, models):
    b = load("gpt-tiny", folders, models)
    rep = induction_report(b, length=100)
    assert rep.n == b.config.max_seq_len // 2 and str(b.config.max_seq_len) in rep.notice
    assert rep.notice and induction_report(b, length=20).notice is None
    with pytest.raises(ValueError, match="not a decoder"):
        induction_report(load("bert-tiny", folders, models))
    with pytest.raises(ValueError, match="at least 2"):
        induction_scores(b, [7])
    assert induction_report(b, seed=1).ids != induction_report(b, seed=2).ids


def test_a_run_outside_a_patching_context_is_untouched_to_the_bit(folders, models):
    """A HookPoint hands on the very tensor it got unless a patching() is active, so every run
    of the app is what it was; inside one, an edit that returns its input changes nothing
    either, and what is recorded is what the forward pass went on with."""
    from tfviz.model.hooks import HookPoint, patching, recording

    hp = HookPoint("demo.hook_x")
    x = torch.randn(3)
    assert hp(x) is x
    with patching(lambda name, t: t * 2 if name == "demo.hook_x" else t), recording(lambda n: True) as store:
        y = hp(x)
    assert torch.equal(y, 2 * x) and torch.equal(store["demo.hook_x"], y) and hp(x) is x
    for name in ("llama-tiny", "gpt-tiny"):
        b = load(name, folders, models)
        ids = torch.tensor([b.encode(CLEAN)])
        with torch.no_grad():
            plain = b.model(ids)
            with patching(lambda name, t: t):
                same = b.model(ids)
        assert torch.equal(plain, same)


def test_an_attention_only_model_splits_into_embeddings_and_heads():
    """The lab's attention-only models (ffn=False): no MLP parts, the weights export without
    LN2 or feed-forward matrices (and still count every parameter), and the parts add up."""
    from tfviz.config import ModelConfig
    from tfviz.model import Transformer
    from tfviz.weights import export_weights

    model = Transformer(ModelConfig(n_layers=2, ffn=False, norm="pre", final_norm=True,
                                    positional="rope", vocab_size=50, init_seed=3))
    W = export_weights(model)
    assert sum(v.size for v in W.values()) == sum(p.numel() for p in model.parameters())
    assert "ln2.w" not in W and "W_in" not in W
    tr = run_with_trace(model, [3, 4, 5, 6, 3, 4, 5, 6])
    np.testing.assert_allclose(logit_lens(tr, W)[-1], tr.logits, rtol=1e-5, atol=LOGIT_ATOL)
    token = int(tr.logits[-1].argmax())
    dla = direct_logit_attribution(tr, -1, token, weights=W)
    assert abs(dla.total - float(tr.logits[-1, token])) < LOGIT_ATOL
    assert set(dla.kinds.values()) == {"embed", "head", "bias", "norm_bias"}
