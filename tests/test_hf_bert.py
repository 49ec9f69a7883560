"""A BERT folder opened by ``tfviz.load`` computes what transformers computes from it.

Each checkpoint is random, made here by transformers (a test-only dependency) and saved with
``save_pretrained(..., safe_serialization=True)``, with a WordPiece tokenizer trained here with
``tokenizers`` on our own story sentences: nothing is downloaded. transformers' own forward
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

import functools
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
from tokenizers import (Tokenizer, decoders, models, normalizers, pre_tokenizers,  # noqa: E402
                        processors, trainers)

import tfviz  # noqa: E402
from tests.support import hf_folders  # noqa: E402
from tests.support.hf_folders import edit_config  # noqa: E402
from tfviz.data.stories import story_corpus  # noqa: E402
from tfviz.hf import describe  # noqa: E402

TEXT = "The Animal didn't cross the street because it was too tired!"
TOLERANCE = 1e-5  # relative to the reference tensor's largest entry; see the module docstring
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def relative_error(ours, theirs) -> float:
    """max |ours - theirs| / max |theirs|: relative to the tensor's scale, so entries near zero
    (small attention weights, small logits) do not divide by ~0."""
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / np.abs(theirs).max())


def train_tokenizer() -> Tokenizer:
    """BERT's kind of tokenizer (uncased WordPiece, [CLS] ... [SEP]) trained on our stories;
    trained once, a fresh copy each call."""
    return Tokenizer.from_str(_trained_tokenizer())


@functools.cache
def _trained_tokenizer(vocab_size: int = 400) -> str:
    hf = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece()
    hf.train_from_iterator(story_corpus(300, seed=5), trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False))
    cls, sep = hf.token_to_id("[CLS]"), hf.token_to_id("[SEP]")
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return hf.to_str()


def make_checkpoint(folder, model_class="BertForMaskedLM", *, n_layer=2, n_head=2, d=32, d_ff=64,
                    vocab_size=None, n_positions=64, spread=True, seed=0, **config):
    """A random BERT of ``model_class`` saved as safetensors, its tokenizer beside it; returns it.

    ``spread``: transformers initialises with std 0.02, which at d = 32 leaves every attention
    map nearly uniform and every logit nearly equal, where a wrong name could hide. Wider
    weights (std 0.3, LayerNorm gains around 1) give peaked maps and logits that differ."""
    tok = train_tokenizer()
    cfg = transformers.BertConfig(vocab_size=vocab_size or tok.get_vocab_size(), hidden_size=d,
                                  num_hidden_layers=n_layer, num_attention_heads=n_head,
                                  intermediate_size=d_ff, max_position_embeddings=n_positions, **config)
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(cfg)
    if spread:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "LayerNorm" in name and name.endswith("weight"):
                    p.copy_(1 + 0.2 * torch.randn_like(p))
                else:
                    p.copy_(0.3 * torch.randn_like(p))
    model.save_pretrained(folder, safe_serialization=True)
    tok.save(str(folder / "tokenizer.json"))
    return model.eval()


def reference(folder, ids, model_class="BertForMaskedLM"):
    """transformers' forward pass on ``ids``, from the saved folder (not the model in memory):
    logits (None without a head), patterns (layer -> (H, T, T)), hidden states (the embedding
    LayerNorm's output, then every layer's) and the MLM transform's dense output."""
    model = getattr(transformers, model_class).from_pretrained(folder, attn_implementation="eager",
                                                               dtype=torch.float32).eval()
    caught = {}
    handle = None
    if model_class != "BertModel":
        dense = model.cls.predictions.transform.dense
        handle = dense.register_forward_hook(lambda m, a, out: caught.update(dense=out))
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    finally:
        if handle is not None:
            handle.remove()
    logits = out.prediction_logits if model_class == "BertForPreTraining" else getattr(out, "logits", None)
    return {"logits": None if logits is None else logits[0].numpy(),
            "patterns": [a[0].numpy() for a in out.attentions],
            "hidden": [h[0].numpy() for h in out.hidden_states],
            "dense": caught["dense"][0].numpy() if "dense" in caught else None}


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
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("bert-random-tiny")
    make_checkpoint(path)
    return path


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
                         check=True, cwd=Path(__file__).resolve().parents[1])
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


# ----- bad folders -------------------------------------------------------------------------

def problem(path) -> str:
    """load's CheckpointError message, which names the folder; describe says the same."""
    return hf_folders.problem(path, described=True)


@pytest.fixture
def copy(folder, tmp_path):
    target = tmp_path / "my-bert"
    shutil.copytree(folder, target)
    return target


def test_unknown_model_type_names_both_families(copy):
    edit_config(copy, model_type="roberta", architectures=["RobertaForMaskedLM"])
    message = problem(copy)
    assert "model_type 'roberta'" in message and "RobertaForMaskedLM" in message
    assert "GPT-2 (model_type 'gpt2', GPT2LMHeadModel)" in message
    assert "BERT (model_type 'bert', BertForMaskedLM or BertModel)" in message


def test_shape_that_does_not_match_the_config_names_the_tensor(copy):
    edit_config(copy, max_position_embeddings=32)  # the file's position table has 64 rows
    message = problem(copy)
    assert "bert.embeddings.position_embeddings.weight has shape (64, 32)" in message
    assert "needs (32, 32)" in message and "max_position_embeddings=32" in message


def test_wider_config_names_a_tensor_that_disagrees(copy):
    edit_config(copy, intermediate_size=128)  # the file's feed-forward layers are 64 wide
    message = problem(copy)
    assert "bert.encoder.layer.0.intermediate.dense.bias has shape (64,)" in message
    assert "needs (128,)" in message and "intermediate_size=128" in message


def test_missing_tokenizer_says_how_to_save_one(copy):
    (copy / "tokenizer.json").unlink()
    message = problem(copy)
    assert "no tokenizer.json" in message and "AutoTokenizer.from_pretrained" in message


def test_truncated_safetensors_is_named(copy):
    path = copy / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1000])
    message = problem(copy)
    assert "model.safetensors is truncated" in message
    assert f"the file has {len(data) - 1000:,} bytes" in message and "download it again" in message


def test_another_activation_is_refused_by_name(copy):
    edit_config(copy, hidden_act="gelu_new")
    message = problem(copy)
    assert "hidden_act is 'gelu_new'" in message and "'gelu' (the exact erf form" in message


def test_a_task_head_is_refused_by_name(copy):
    edit_config(copy, architectures=["BertForSequenceClassification"])
    message = problem(copy)
    assert "BertForSequenceClassification" in message and "BertForMaskedLM or BertModel" in message


def test_a_missing_layer_is_named(copy):
    edit_config(copy, num_hidden_layers=3)
    message = problem(copy)
    assert "lacks encoder.layer.2." in message and "config.json's 3 layers need" in message


def test_a_tokenizer_that_is_not_wordpiece_is_named(copy, tmp_path):
    hf = Tokenizer(models.BPE())
    hf.train_from_iterator(["the cat sat"] * 5, trainers.BpeTrainer(vocab_size=50, show_progress=False))
    hf.save(str(copy / "tokenizer.json"))
    assert "holds a BPE model; a BERT reads text with WordPiece" in problem(copy)


def test_pickle_weights_are_refused_with_the_conversion(copy):
    (copy / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(1)}, copy / "pytorch_model.bin")
    message = problem(copy)
    assert "pickle" in message and "BertForMaskedLM" in message and "safe_serialization=True" in message


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
