"""A GPT-2 folder opened by ``tfviz.load`` computes what transformers computes from it.

Each checkpoint is random, made here by transformers (a test-only dependency) and saved with
``save_pretrained(..., safe_serialization=True)``, with a byte-level BPE tokenizer trained here
with ``tokenizers`` on our own story sentences: nothing is downloaded. transformers' own forward
pass (eager attention, ``output_attentions`` and ``output_hidden_states``) is the reference for
the ids, every layer's attention pattern, the residual stream and the logits.

Why a tolerance at all: both sides compute in float32, but not in the same order (GPT-2's
Conv1D is one addmm over the fused q|k|v matrix, ours three Linear layers and an einsum; its
softmax reads a large negative number where ours reads -inf), so each operation may differ in
its last bits (~1e-7 relative) and the differences add up over the layers. 1e-5 of a tensor's
own scale is far below any difference a bug makes (a transposed matrix, the exact GELU instead
of the tanh form, a missing bias or LayerNorm all give 1e-4 or more).
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
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

import tfviz  # noqa: E402
from tests.support.hf_folders import edit_config, problem, save_spread  # noqa: E402
from tfviz.data.stories import story_corpus  # noqa: E402
from tfviz.hf import CheckpointError  # noqa: E402

TEXT = "The animal didn't cross the street because it was too tired!"
TOLERANCE = 1e-5  # relative to the reference tensor's largest entry; see the module docstring


def relative_error(ours, theirs) -> float:
    """max |ours - theirs| / max |theirs|: relative to the tensor's scale, so entries near zero
    (most of an attention pattern's causal zeros, small logits) do not divide by ~0."""
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / np.abs(theirs).max())


def train_tokenizer(vocab_size: int = 400) -> Tokenizer:
    """GPT-2's kind of tokenizer (byte-level BPE, no prefix space, <|endoftext|>) on our stories."""
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    hf.train_from_iterator(story_corpus(300, seed=5), trainer)
    return hf


def make_checkpoint(folder, *, n_layer=2, n_head=2, n_embd=32, vocab_size=None, n_positions=64,
                    spread=True, seed=0):
    """A random GPT2LMHeadModel saved as safetensors, its tokenizer beside it; returns the model.
    ``spread`` widens its weights, so that a wrong transpose cannot hide (``save_spread``)."""
    tok = train_tokenizer()
    eos = tok.token_to_id("<|endoftext|>")
    config = transformers.GPT2Config(n_layer=n_layer, n_head=n_head, n_embd=n_embd,
                                     vocab_size=vocab_size or tok.get_vocab_size(),
                                     n_positions=n_positions, bos_token_id=eos, eos_token_id=eos)
    torch.manual_seed(seed)
    return save_spread(transformers.GPT2LMHeadModel(config), tok, folder, spread=spread,
                       is_gain=lambda name: ".ln_" in name and name.endswith("weight"))


def reference(folder, ids):
    """transformers' forward pass on ``ids``, from the saved folder (not the model in memory):
    logits, patterns (layer -> (H, T, T)) and residual stream (resid_pre of every block, then
    the last block's output before ln_f, caught by a hook because hidden_states' last entry
    has ln_f applied)."""
    model = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager",
                                                         dtype=torch.float32).eval()
    last = {}

    def keep(module, args, output):
        last["x"] = output[0] if isinstance(output, tuple) else output

    handle = model.transformer.h[-1].register_forward_hook(keep)
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    finally:
        handle.remove()
    resid = [h[0].numpy() for h in out.hidden_states[:-1]] + [last["x"][0].numpy()]
    return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions], resid


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt2-random-tiny")
    make_checkpoint(path)
    return path


@pytest.fixture(scope="module")
def bundle(folder):
    return tfviz.load(folder)


def test_ids_are_transformers_tokenizer_ids(folder, bundle):
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    ids = bundle.encode(TEXT)
    assert ids == theirs(TEXT)["input_ids"]
    assert len(ids) > 10  # real merges, not one token per byte
    assert bundle.tokenizer.decode(ids) == TEXT  # cased and without a prefix space, as GPT-2 reads
    assert bundle.token_strings(ids)[:2] == ["The", "␣animal"]


def test_logits_patterns_and_residual_stream_match_transformers(folder, bundle):
    ids = bundle.encode(TEXT)
    logits, patterns, _ = reference(folder, ids)
    tr = bundle.trace(TEXT)
    errors = parity_errors(folder, bundle)
    assert max(errors.values()) < TOLERANCE, errors
    # The comparison is not between two near-uniform tensors: maps are peaked, logits spread.
    assert min(p.max() for p in patterns) > 0.5
    assert logits.std() > 1.0
    # Hook names and shapes are the bundled models': (heads, query, key), one token each.
    assert tr["pattern", 0].shape == (2, len(ids), len(ids))
    assert tr["blocks.1.ln1.hook_scale"].shape == (len(ids),)


def test_head_ablation_matches_zeroing_that_head_in_transformers(folder, bundle):
    """RunOptions work on a converted model: ablating layer 1's head 0 equals transformers'
    forward with that head's slice of the input to c_proj (its z) set to zero."""
    ids = bundle.encode(TEXT)
    model = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager",
                                                         dtype=torch.float32).eval()
    dh = bundle.config.d_head

    def zero_head(module, args):
        z = args[0].clone()
        z[..., 0:dh] = 0.0  # (B, T, H * dh): head 0's columns
        return (z,)

    handle = model.transformer.h[1].attn.c_proj.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            theirs = model(torch.tensor([ids])).logits[0].numpy()
    finally:
        handle.remove()
    ablated = bundle.trace(TEXT, options=tfviz.RunOptions(ablate_heads=frozenset({(1, 0)})))
    assert relative_error(ablated["logits"], theirs) < TOLERANCE
    assert relative_error(bundle.trace(TEXT)["logits"], theirs) > 1e-3  # the ablation mattered


def test_converted_config_is_gpt2s(bundle):
    cfg = bundle.config
    assert (cfg.positional, cfg.norm, cfg.activation, cfg.final_norm, cfg.tie_embeddings,
            cfg.bias, cfg.ln_eps, cfg.max_seq_len) == ("learned", "pre", "gelu_tanh", True, True,
                                                        True, 1e-5, 64)
    assert bundle.manifest["family"] == "GPT-2"
    assert bundle.manifest["parameters"] == sum(p.numel() for p in bundle.model.parameters())


def parity_errors(folder, bundle, text=TEXT) -> dict[str, float]:
    """Relative error of the logits, of every layer's pattern and of the residual stream."""
    ids = bundle.encode(text)
    logits, patterns, resid = reference(folder, ids)
    tr = bundle.trace(text)
    L = bundle.config.n_layers
    errors = {"logits": relative_error(tr["logits"], logits)}
    for i in range(L):
        errors[f"pattern {i}"] = relative_error(tr["pattern", i], patterns[i])
        errors[f"resid_pre {i}"] = relative_error(tr[f"blocks.{i}.hook_resid_pre"], resid[i])
    errors["resid_post last"] = relative_error(tr[f"blocks.{L - 1}.hook_resid_post"], resid[L])
    return errors


def test_untied_unembedding_is_read_from_lm_head(tmp_path):
    """tie_word_embeddings = false: logits come from lm_head.weight, not from wte."""
    tok = train_tokenizer()
    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, n_positions=64,
                                     vocab_size=tok.get_vocab_size(), tie_word_embeddings=False)
    torch.manual_seed(1)
    model = transformers.GPT2LMHeadModel(config)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.3 * torch.randn_like(p))
    model.save_pretrained(tmp_path, safe_serialization=True)
    tok.save(str(tmp_path / "tokenizer.json"))
    bundle = tfviz.load(tmp_path)
    assert not bundle.config.tie_embeddings
    assert torch.equal(bundle.model.unembed.weight, model.lm_head.weight)
    errors = parity_errors(tmp_path, bundle)
    assert max(errors.values()) < TOLERANCE, errors


def test_half_precision_checkpoint_runs_in_float32(tmp_path):
    """A float16 file is widened to float32, as transformers widens it with dtype=float32 (its
    default, "auto", would compute in float16)."""
    model = make_checkpoint(tmp_path)
    model.half().save_pretrained(tmp_path, safe_serialization=True)
    bundle = tfviz.load(tmp_path)
    assert bundle.model.embed.weight.dtype == torch.float32
    assert torch.equal(bundle.model.embed.weight, model.transformer.wte.weight.float())
    errors = parity_errors(tmp_path, bundle)
    assert max(errors.values()) < TOLERANCE, errors


def test_hub_layout_without_prefix_and_with_mask_buffers(copy, bundle):
    """The gpt2 repository's own model.safetensors names its tensors without "transformer."
    and still stores each layer's causal mask as ``h.{i}.attn.bias``: both are read."""
    from safetensors.torch import load_file, save_file

    tensors = {k.removeprefix("transformer."): v for k, v in load_file(copy / "model.safetensors").items()}
    for i in range(2):
        tensors[f"h.{i}.attn.bias"] = torch.tril(torch.ones(64, 64, dtype=torch.bool))[None, None]
    save_file(tensors, copy / "model.safetensors")
    hub = tfviz.load(copy)
    assert np.array_equal(hub.trace(TEXT)["logits"], bundle.trace(TEXT)["logits"])


def test_describe_reads_the_header_and_config_without_the_weights(copy, bundle):
    """describe gives the family, the sizes, the parameter count the loaded model has and the
    file's size; it reads no tensor, so a file whose tensor bytes are all zero (the header
    intact) is described the same."""
    from tfviz.hf import describe

    info = describe(copy)
    cfg = bundle.config
    assert (info.family, info.model_type, info.architecture) == ("GPT-2", "gpt2", "GPT2LMHeadModel")
    assert (info.n_layers, info.n_heads, info.d_model, info.vocab) == (cfg.n_layers, cfg.n_heads,
                                                                      cfg.d_model, cfg.vocab_size)
    assert info.n_params == bundle.manifest["parameters"]
    assert info.memory_bytes == sum(p.numel() * p.element_size() for p in bundle.model.parameters())
    path = copy / "model.safetensors"
    assert info.bytes_on_disk == path.stat().st_size
    assert info.size == bundle.manifest["size"]
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    path.write_bytes(data[:8 + n] + bytes(len(data) - 8 - n))
    assert describe(copy) == info
    assert not np.array_equal(tfviz.load(copy).trace(TEXT)["logits"], bundle.trace(TEXT)["logits"])


@pytest.mark.parametrize("spoil", ["model_type", "shape", "tokenizer", "truncated"])
def test_describe_names_a_bad_folder_as_load_does(copy, spoil):
    from tfviz.hf import describe

    if spoil == "model_type":
        edit_config(copy, model_type="qwen3_moe")  # a model_type tfviz does not build
    elif spoil == "shape":
        edit_config(copy, n_positions=32)
    elif spoil == "tokenizer":
        (copy / "tokenizer.json").unlink()
    else:
        path = copy / "model.safetensors"
        path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CheckpointError) as info:
        describe(copy)
    assert str(info.value) == problem(copy)


def test_transformers_is_not_imported_to_load_a_folder(folder):
    """transformers is a test-only dependency: opening and tracing a folder never imports it."""
    code = ("import sys, tfviz; b = tfviz.load(sys.argv[1]); b.trace('The cat sat.'); "
            "print('transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_gpt2_small_shape_matches_transformers(tmp_path):
    """A random checkpoint of GPT-2 small's full shape: 12 layers x 12 heads x 768, 50,257
    tokens, 1,024 positions (transformers' own init; 124M parameters, 0.5 GB on disk)."""
    model = make_checkpoint(tmp_path, n_layer=12, n_head=12, n_embd=768, vocab_size=50257,
                            n_positions=1024, spread=False)
    del model
    bundle = tfviz.load(tmp_path)  # how long it takes: bench/bench_trace.py --model, not a test
    assert bundle.config.n_layers == 12 and bundle.config.n_heads == 12
    assert bundle.manifest["parameters"] == 124_439_808  # GPT-2 small's count, tied unembedding
    from tfviz.hf import describe

    info = describe(tmp_path)
    assert (info.n_params, info.memory_bytes) == (124_439_808, 4 * 124_439_808)
    errors = parity_errors(tmp_path, bundle)
    assert len(errors) == 1 + 2 * 12 + 1
    assert max(errors.values()) < TOLERANCE, errors


# ----- bad folders -------------------------------------------------------------------------

@pytest.fixture
def copy(folder, tmp_path):
    target = tmp_path / "my-gpt2"
    shutil.copytree(folder, target)
    return target


def test_unknown_model_type_is_named(copy):
    edit_config(copy, model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"])
    message = problem(copy)
    assert "model_type 'qwen3_moe'" in message and "Qwen3MoeForCausalLM" in message
    assert "GPT-2" in message


def test_missing_tokenizer_says_how_to_save_one(copy):
    (copy / "tokenizer.json").unlink()
    message = problem(copy)
    assert "no tokenizer.json" in message and "AutoTokenizer.from_pretrained" in message


def test_shape_that_does_not_match_the_config_names_the_tensor(copy):
    edit_config(copy, n_positions=32)  # the file's position table has 64 rows
    message = problem(copy)
    assert "wpe.weight has shape (64, 32)" in message and "needs (32, 32)" in message


def test_tokenizer_larger_than_the_embedding_is_refused(copy):
    edit_config(copy, vocab_size=300)  # the tokenizer has 400 tokens
    assert "tokenizer.json has 400 tokens but the model only 300" in problem(copy)


def test_config_without_a_size_is_named(copy):
    data = json.loads((copy / "config.json").read_text())
    del data["n_embd"]
    (copy / "config.json").write_text(json.dumps(data))
    assert "config.json is not one tfviz can build: it lacks 'n_embd'" in problem(copy)


def test_config_that_is_not_json_is_named(copy):
    (copy / "config.json").write_text("{model_type: gpt2")
    assert "config.json is not valid JSON" in problem(copy)


def test_truncated_safetensors_is_named(copy):
    path = copy / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    message = problem(copy)
    assert "model.safetensors is truncated" in message
    assert f"the file has {len(data) // 2:,} bytes" in message and "download it again" in message


def test_truncated_inside_the_header_is_named(copy):
    (copy / "model.safetensors").write_bytes((copy / "model.safetensors").read_bytes()[:100])
    assert "model.safetensors is truncated: its header should be" in problem(copy)


def test_pickle_weights_are_refused_with_the_reason_and_the_conversion(copy):
    (copy / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(1)}, copy / "pytorch_model.bin")
    message = problem(copy)
    assert "pickle" in message and "run any code" in message
    assert "GPT2LMHeadModel" in message and "safe_serialization=True" in message


def test_our_own_bundles_still_load_from_a_folder(tmp_path):
    """A folder of ours (config.json with an ``arch``) is not taken for a checkpoint."""
    from tfviz.bundle import ASSETS, load_dir

    shutil.copytree(ASSETS / "gpt-tiny", tmp_path / "gpt-tiny")
    bundle = tfviz.load(tmp_path / "gpt-tiny")
    assert bundle.config == load_dir(ASSETS / "gpt-tiny").config


def test_a_folder_that_does_not_exist_is_named(tmp_path):
    message = problem(tmp_path / "gtp2")
    assert message.endswith("there is no such folder.")


def test_home_folder_is_expanded(folder, monkeypatch):
    monkeypatch.setenv("HOME", str(folder.parent))
    assert tfviz.load(f"~/{folder.name}").config.name == folder.name
