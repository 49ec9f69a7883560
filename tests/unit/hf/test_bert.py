"""A BERT folder opened by ``tfviz.load`` computes what transformers computes from it.

Each checkpoint is random, made by transformers (a test-only dependency) and saved with
``save_pretrained(..., safe_serialization=True)``, with a WordPiece tokenizer trained with
``tokenizers`` on our own story sentences (tests/support/bert_folders.py): nothing is
downloaded. What a broken folder earns is tests/unit/hf/test_bert_refusals.py. transformers' own forward
pass (eager attention, ``output_attentions`` and ``output_hidden_states``) is the reference for
the ids, every layer's attention pattern, the residual stream and the logits; its tokenizer
(``AutoTokenizer``) is the reference for the ids.

Why a tolerance at all: both sides compute in float32, but not always in the same order (its
attention multiplies q·k by 1/sqrt(d_head) where ours divides by sqrt(d_head), its LayerNorm is
one fused kernel where ours is written out to record its statistics), so each operation may
differ in its last bits (~1e-7 relative) and the differences add up over the layers. 1e-5 of a
tensor's own scale is far below what a bug does: measured on the tiny checkpoint below, whose
errors are at most 1.5e-6, the tanh GELU instead of the exact one gives 2.9e-4, LayerNorm's
eps 1e-5 instead of BERT's 1e-12 gives 4e-5, causal attention 1.3 (a missing token-type row,
MLM transform or decoder bias is a tensor left unread, which the shape check refuses).
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file, save_file  # noqa: E402

import tfviz  # noqa: E402
from tests.support.bert_folders import copy, folder, make_checkpoint, reference  # noqa: E402,F401
from tfviz.hf import describe  # noqa: E402

TEXT = "The Animal didn't cross the street because it was too tired!"
TOLERANCE = 1e-5  # relative to the reference tensor's largest entry; see the module docstring


def relative_error(ours, theirs) -> float:
    """max |ours - theirs| / max |theirs|: relative to the tensor's scale, so entries near zero
    (small attention weights, small logits) do not divide by ~0."""
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / np.abs(theirs).max())


def parity_errors(folder, bundle, model_class="BertForMaskedLM", text=TEXT) -> dict[str, float]:
    """Relative error of the logits, every layer's pattern and the residual stream (every
    block's input, and the last block's output)."""
    ids = bundle.encode(text)
    ref = reference(folder, ids, model_class)
    tr = bundle.trace(text)
    L = bundle.config.n_layers
    errors = {}
    if ref["logits"] is not None:
        errors["logits"] = relative_error(tr["logits"], ref["logits"])
        errors["mlm dense"] = relative_error(tr["mlm_head.hook_pre"], ref["dense"])
    for i in range(L):
        errors[f"pattern {i}"] = relative_error(tr["pattern", i], ref["patterns"][i])
        errors[f"resid_pre {i}"] = relative_error(tr[f"blocks.{i}.hook_resid_pre"], ref["hidden"][i])
    errors["resid_post last"] = relative_error(tr[f"blocks.{L - 1}.hook_resid_post"], ref["hidden"][L])
    return errors


@pytest.fixture(scope="module")
def bundle(folder):
    return tfviz.load(folder)


def test_ids_are_transformers_tokenizer_ids(folder, bundle):
    """One sentence reads as transformers' tokenizer reads it: [CLS] ... [SEP], lower-cased
    (uncased WordPiece), every token of segment A."""
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    encoded = theirs(TEXT)
    ids = bundle.encode(TEXT)
    assert ids == encoded["input_ids"]
    assert set(encoded["token_type_ids"]) == {0}
    tokens = bundle.token_strings(ids)
    assert tokens[:3] == ["[CLS]", "the", "animal"] and tokens[-1] == "[SEP]"
    assert bundle.encode("the animal") == bundle.encode("The ANIMAL")
    assert bundle.tokenizer.normalize("The Café") == "the cafe"
    tok = bundle.tokenizer
    assert [tok.id_to_token(i) for i in (tok.bos_id, tok.eos_id, tok.pad_id, tok.mask_id)] == [
        "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    # Text beyond the corpus: accents, capitals, unknown words, a typed [MASK], Chinese, emoji.
    for text in ("Café résumé naïve", "zzqx unknownword!!", "the [MASK] sat", "中文 and 😀", ""):
        assert bundle.encode(text) == theirs(text)["input_ids"], text


def test_a_cased_bert_keeps_its_capitals_as_transformers_does(folder, tmp_path):
    """tokenizer_config.json's do_lower_case = false (a cased BERT) keeps capitals, and so does
    transformers; without it, transformers lower-cases, as BERT's tokenizer did by default."""
    shutil.copytree(folder, tmp_path / "cased")
    (tmp_path / "cased" / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    cased = tfviz.load(tmp_path / "cased")
    theirs = transformers.AutoTokenizer.from_pretrained(tmp_path / "cased")
    assert cased.encode(TEXT) == theirs(TEXT)["input_ids"]
    assert cased.encode("The Animal") != cased.encode("the animal")
    assert cased.tokenizer.normalize("The Café") == "The Café"


def test_logits_patterns_and_residual_stream_match_transformers(folder, bundle):
    ids = bundle.encode(TEXT)
    ref = reference(folder, ids)
    errors = parity_errors(folder, bundle)
    assert max(errors.values()) < TOLERANCE, errors
    # The comparison is not between near-uniform tensors: maps are peaked, logits spread.
    assert min(p.max() for p in ref["patterns"]) > 0.5
    assert ref["logits"].std() > 1.0
    # Bidirectional: a query attends to keys after it (the upper triangle holds weight).
    tr = bundle.trace(TEXT)
    assert np.triu(tr["pattern", 0], k=1).sum() > 1.0
    # Hook names and shapes are the bundled models': (heads, query, key), one token each.
    assert tr["pattern", 0].shape == (2, len(ids), len(ids))
    assert tr["blocks.1.ln1.hook_scale"].shape == (len(ids),)


def test_embeddings_add_token_type_then_layernorm_as_bert_does(folder, bundle):
    """The new hooks hold what BERT computes: word + token type (row 0, segment A) + position,
    then the embedding LayerNorm, whose output is transformers' hidden_states[0]."""
    model = transformers.BertForMaskedLM.from_pretrained(folder, dtype=torch.float32).eval()
    emb = model.bert.embeddings
    ids = bundle.encode(TEXT)
    tr = bundle.trace(TEXT)
    T = len(ids)
    with torch.no_grad():
        assert np.array_equal(tr["hook_token_type_embed"], emb.token_type_embeddings.weight[[0] * T].numpy())
        assert np.array_equal(tr["hook_pos_embed"], emb.position_embeddings.weight[:T].numpy())
        raw = (emb.word_embeddings.weight[ids] + emb.token_type_embeddings.weight[0]
               + emb.position_embeddings.weight[:T])  # (T, d), before the LayerNorm
        mean, var = raw.mean(-1), raw.var(-1, unbiased=False)
    assert relative_error(tr["ln_embed.hook_mean"], mean.numpy()) < TOLERANCE
    assert relative_error(tr["ln_embed.hook_scale"], (var + 1e-12).sqrt().numpy()) < TOLERANCE
    assert {"mlm_head.hook_post", "mlm_head.ln.hook_scale", "mlm_head.ln.hook_normalized"} <= set(tr.names())


def test_head_ablation_matches_zeroing_that_head_in_transformers(folder, bundle):
    """RunOptions work on a converted BERT: ablating layer 1's head 0 equals transformers'
    forward with that head's slice of the attention output's input (its z) set to zero."""
    ids = bundle.encode(TEXT)
    model = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager",
                                                         dtype=torch.float32).eval()
    dh = bundle.config.d_head

    def zero_head(module, args):
        z = args[0].clone()
        z[..., 0:dh] = 0.0  # (B, T, H * dh): head 0's columns
        return (z,)

    handle = model.bert.encoder.layer[1].attention.output.dense.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            theirs = model(torch.tensor([ids])).logits[0].numpy()
    finally:
        handle.remove()
    ablated = bundle.trace(TEXT, options=tfviz.RunOptions(ablate_heads=frozenset({(1, 0)})))
    assert relative_error(ablated["logits"], theirs) < TOLERANCE
    assert relative_error(bundle.trace(TEXT)["logits"], theirs) > 1e-3  # the ablation mattered


def test_converted_config_is_berts(bundle):
    cfg = bundle.config
    assert (cfg.arch, cfg.causal, cfg.positional, cfg.norm, cfg.activation, cfg.final_norm,
            cfg.tie_embeddings, cfg.ln_eps, cfg.max_seq_len) == ("encoder", False, "learned", "post",
                                                                 "gelu", False, True, 1e-12, 64)
    assert (cfg.n_token_types, cfg.embed_norm, cfg.mlm_transform, cfg.unembed_bias,
            cfg.lm_head) == (2, True, True, True, True)
    assert bundle.manifest["family"] == "BERT"
    assert bundle.manifest["parameters"] == sum(p.numel() for p in bundle.model.parameters())


def test_weights_export_every_parameter_once(folder, bundle):
    """Bundle.weights() carries BERT's extras under their names, and its sizes add up to the
    model's parameter count, which is transformers' own count without the pooler (BertForMaskedLM
    has none) and with the tied decoder counted once."""
    W = bundle.weights()
    model = transformers.BertForMaskedLM.from_pretrained(folder, dtype=torch.float32)
    assert sum(a.size for a in W.values()) == sum(p.numel() for p in model.parameters())
    emb = model.bert.embeddings
    assert np.array_equal(W["W_token_type"], emb.token_type_embeddings.weight.detach().numpy())
    assert np.array_equal(W["mlm_head.W"], model.cls.predictions.transform.dense.weight.detach().numpy().T)
    assert np.array_equal(W["b_U"], model.cls.predictions.bias.detach().numpy())
    assert np.array_equal(W["ln_embed.w"], emb.LayerNorm.weight.detach().numpy())


def test_untied_decoder_is_read_from_its_own_weight(tmp_path):
    """tie_word_embeddings = false: logits come from cls.predictions.decoder.weight and, as in
    transformers, the decoder's own bias (cls.predictions.bias, which then differs, is unused)."""
    model = make_checkpoint(tmp_path, n_layer=1, tie_word_embeddings=False, seed=1)
    bundle = tfviz.load(tmp_path)
    assert not bundle.config.tie_embeddings
    assert torch.equal(bundle.model.unembed.weight, model.cls.predictions.decoder.weight)
    assert torch.equal(bundle.model.unembed_bias, model.cls.predictions.decoder.bias)
    assert not torch.equal(bundle.model.unembed_bias, model.cls.predictions.bias)
    assert not torch.equal(bundle.model.unembed.weight, bundle.model.embed.weight)
    errors = parity_errors(tmp_path, bundle)
    assert max(errors.values()) < TOLERANCE, errors


def test_bert_model_without_a_head_traces_everything_but_logits(tmp_path):
    """A BertModel folder (no masked-LM head, a pooler) opens as the encoder alone: every
    attention map and the residual stream match transformers', the pooler is not read, and
    asking for logits says why there are none."""
    make_checkpoint(tmp_path, "BertModel", seed=2)
    bundle = tfviz.load(tmp_path)
    assert not bundle.config.lm_head and bundle.manifest["architectures"] == ["BertModel"]
    errors = parity_errors(tmp_path, bundle, "BertModel")
    assert len(errors) == 2 * 2 + 1
    assert max(errors.values()) < TOLERANCE, errors
    tr = bundle.trace(TEXT)
    assert "logits" not in tr.names() and not any(n.startswith("mlm_head.") for n in tr.names())
    with pytest.raises(KeyError, match="no language-model head .* blocks.1.hook_resid_post"):
        tr.logits
    pooler = 32 * 32 + 32
    model = transformers.BertModel.from_pretrained(tmp_path)
    assert bundle.manifest["parameters"] == sum(p.numel() for p in model.parameters()) - pooler
    assert describe(tmp_path).n_params == bundle.manifest["parameters"]
    assert sum(a.size for a in bundle.weights().values()) == bundle.manifest["parameters"]


def test_pretraining_checkpoint_opens_with_its_masked_lm_head(tmp_path):
    """BertForPreTraining (the original BERT's layout: the MLM head, the pooler and the
    next-sentence head) gives transformers' prediction_logits; the NSP head is not read."""
    make_checkpoint(tmp_path, "BertForPreTraining", seed=3)
    bundle = tfviz.load(tmp_path)
    errors = parity_errors(tmp_path, bundle, "BertForPreTraining")
    assert max(errors.values()) < TOLERANCE, errors


def test_legacy_names_and_buffers_give_the_same_model(copy, bundle):
    """Old BERT files (bert-base-uncased's own) name LayerNorm's weight and bias gamma and beta,
    keep a position-id buffer and the decoder's tied copies: all are read, to the same logits."""
    tensors = load_file(copy / "model.safetensors")
    legacy = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
              for k, v in tensors.items()}
    assert sum(k.endswith("gamma") for k in legacy) == 2 * 2 + 2
    legacy["bert.embeddings.position_ids"] = torch.arange(64)[None]
    legacy["cls.predictions.decoder.weight"] = tensors["bert.embeddings.word_embeddings.weight"].clone()
    legacy["cls.predictions.decoder.bias"] = tensors["cls.predictions.bias"].clone()
    save_file(legacy, copy / "model.safetensors")
    old = tfviz.load(copy)
    assert np.array_equal(old.trace(TEXT)["logits"], bundle.trace(TEXT)["logits"])
    assert describe(copy).n_params == bundle.manifest["parameters"]


def test_describe_reads_the_header_and_config_without_the_weights(copy, bundle):
    info = describe(copy)
    cfg = bundle.config
    assert (info.family, info.model_type, info.architecture) == ("BERT", "bert", "BertForMaskedLM")
    assert (info.n_layers, info.n_heads, info.d_model, info.vocab) == (cfg.n_layers, cfg.n_heads,
                                                                      cfg.d_model, cfg.vocab_size)
    assert info.n_params == bundle.manifest["parameters"]
    assert info.bytes_on_disk == (copy / "model.safetensors").stat().st_size


def test_transformers_is_not_imported_to_load_a_folder(folder):
    """transformers is a test-only dependency: opening and tracing a BERT never imports it."""
    code = ("import sys, tfviz; b = tfviz.load(sys.argv[1]); b.trace('The cat sat.'); "
            "print('transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == "False"


# ----- BERT-base's full shape ----------------------------------------------------------------

@pytest.fixture(scope="module")
def base_folder(tmp_path_factory):
    """A random checkpoint of BERT-base's full shape: 12 layers x 12 heads x 768, d_ff 3,072,
    30,522 tokens, 512 positions (transformers' own init; built once for the tests below)."""
    path = tmp_path_factory.mktemp("bert-base-shape")
    model = make_checkpoint(path, n_layer=12, n_head=12, d=768, d_ff=3072, vocab_size=30522,
                            n_positions=512, spread=False)
    count = sum(p.numel() for p in model.parameters())
    del model
    return path, count


@pytest.mark.slow
def test_bert_base_shape_matches_transformers(base_folder):
    path, count = base_folder
    info = describe(path)
    bundle = tfviz.load(path)
    cfg = bundle.config
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.vocab_size) == (12, 12, 768, 30522)
    # transformers' own count (the tied decoder once): BERT-base with its MLM head, 109,514,298.
    assert bundle.manifest["parameters"] == info.n_params == count
    assert info.memory_bytes == 4 * count
    errors = parity_errors(path, bundle)
    assert len(errors) == 2 + 2 * 12 + 1
    assert max(errors.values()) < TOLERANCE, errors


def test_header_shapes_are_read_from_the_header_alone(copy, bundle):
    """describe reads no tensor: a file whose tensor bytes are all zero (header intact) is
    described the same, while loading it gives another model."""
    info = describe(copy)
    path = copy / "model.safetensors"
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    path.write_bytes(data[:8 + n] + bytes(len(data) - 8 - n))
    assert describe(copy) == info
    assert not np.array_equal(tfviz.load(copy).trace(TEXT)["logits"], bundle.trace(TEXT)["logits"])


# ----- the forward walk (lesson 12) reads BERT's own steps ---------------------------------

def test_forward_walk_shows_berts_embedding_norm_and_mlm_transform(folder, bundle):
    """The walk's embedding step is what enters block 0 (transformers' hidden_states[0]: word +
    segment + position, then LayerNorm), an MLM-transform step comes before the logits, and
    the logits' formula has the decoder bias."""
    from tfviz.analysis.forward import forward_steps

    tr = bundle.trace(TEXT)
    steps = {s.title: s for s in forward_steps(tr, token_strings=bundle.token_strings)}
    ref = reference(folder, bundle.encode(TEXT))
    embed = steps["+ positions, segment and LayerNorm"]
    assert embed.formula == r"x_t = \mathrm{LN}\big(E[\text{id}_t] + S[0] + P[t]\big)"
    assert relative_error(embed.values, ref["hidden"][0]) < TOLERANCE
    titles = list(steps)
    assert titles.index("Masked-LM transform") == titles.index("Logits") - 1
    assert steps["Logits"].formula == r"\text{logits} = h\,E^\top + b_U"
    assert np.array_equal(steps["Masked-LM transform"].values, tr["mlm_head.ln.hook_normalized"])


def test_forward_walk_of_a_headless_bert_ends_at_its_last_block(tmp_path):
    from tfviz.analysis.forward import forward_steps

    make_checkpoint(tmp_path, "BertModel", n_layer=1, seed=4)
    bundle = tfviz.load(tmp_path)
    tr = bundle.trace(TEXT)
    steps = forward_steps(tr, token_strings=bundle.token_strings)
    assert steps[-1].title == "Output: no LM head"
    assert np.array_equal(steps[-1].values, tr["blocks.0.hook_resid_post"])
    assert not any(s.title in ("Logits", "Softmax") for s in steps)


def test_tour_stages_of_a_headless_bert_end_at_its_last_block(tmp_path):
    from tfviz.analysis.pipeline import pipeline_stages

    make_checkpoint(tmp_path, "BertModel", n_layer=1, seed=4)
    bundle = tfviz.load(tmp_path)
    tr = bundle.trace(TEXT)
    stages = pipeline_stages(tr)
    assert stages[-1].title == "No LM head" and stages[-1].shape == tr["blocks.0.hook_resid_post"].shape
    assert stages[0].shape == (len(bundle.encode(TEXT)),)
    pos = next(s for s in stages if s.key == "pos")
    assert pos.note == "one vector per position (learned table), added, with the segment row, then a LayerNorm"


def test_embedding_rows_past_the_tokenizer_are_named_by_id(base_folder):
    """BERT-base's shape with our 400-token tokenizer: the model scores 30,522 ids, and the
    ones no token uses are named "#id" (as a vocabulary padded to a round size needs), so the
    forward walk's top columns can be labelled; ids past the embedding are still an error."""
    from tfviz.analysis.forward import forward_steps

    path, _ = base_folder
    bundle = tfviz.load(path)
    tok = bundle.tokenizer
    assert tok.vocab_size == 400 and bundle.config.vocab_size == 30522
    assert tok.id_to_token(25267) == "#25267" and tok.id_to_token(3) == "[SEP]"
    with pytest.raises(IndexError):
        tok.id_to_token(30522)
    steps = forward_steps(bundle.trace(TEXT), token_strings=bundle.token_strings)
    assert steps[-1].title.startswith("Top-5 prediction")


@pytest.mark.parametrize("model_class,config", [("BertForMaskedLM", {}),
                                                ("BertForMaskedLM", {"tie_word_embeddings": False}),
                                                ("BertModel", {})])
def test_parameter_counter_counts_berts_parts(tmp_path, model_class, config):
    """The exercises' counter (lesson 12's bar chart) counts what a BERT checkpoint adds: the
    segment table, the embedding LayerNorm, the MLM transform and the decoder bias; its total
    is the converted model's own count."""
    from tfviz.analysis.forward import grouped_params, param_parts, param_total

    make_checkpoint(tmp_path, model_class, n_layer=1, **config)
    bundle = tfviz.load(tmp_path)
    total = sum(p.numel() for p in bundle.model.parameters())
    assert param_total(bundle.config) == total == sum(grouped_params(bundle.config).values())
    parts, d, V = param_parts(bundle.config), 32, bundle.config.vocab_size
    assert parts["segment embedding"] == 2 * d and parts["embedding norm"] == 2 * d
    if model_class == "BertModel":
        assert "MLM transform" not in parts and "output layer" not in parts
    else:
        assert parts["MLM transform"] == d * d + d + 2 * d
        assert parts["output layer"] == V + (0 if bundle.config.tie_embeddings else V * d)
