"""A Llama, Mistral, Qwen2 or Qwen3 folder opened by ``tfviz.load`` computes what transformers
computes from it.

Each checkpoint is random, made here by transformers (a test-only dependency) with its weights
widened and saved with its tokenizer files (tests/support/llama_folders.py): nothing is
downloaded. The cases cover what these families vary: grouped-query attention (4 query heads
on 2 K/V heads, 3 on 1, 4 on 1), a head size other than d / heads, tied and untied
unembeddings, llama3 and linear RoPE scaling, Qwen2's q/k/v biases, Qwen3's QK-norm, both
tokenizer kinds, and a sharded bfloat16 save. transformers' own forward pass (eager attention,
``output_attentions``, ``output_hidden_states``) is the reference for the ids, the logits,
every layer's attention pattern and the residual stream. The same comparison at SmolLM2-135M's
full shape (30 layers, 135M parameters) takes ~25 s, too long for the suite's budget: it is
``python -m bench.bench_llama_shape``.

The tolerance, and why: tests/support/llama_folders.py (``assert_matches``).
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

import tfviz  # noqa: E402
from tests.support.hf_folders import problem  # noqa: E402
from tests.support.llama_folders import TEXT, assert_matches, make_checkpoint, parity  # noqa: E402
from tfviz.config import RopeScaling  # noqa: E402
from tfviz.hf import describe  # noqa: E402


# With head size 8 and base 10000 the pairs' wavelengths are 6.3, 63, 628 and 6283 positions;
# with an original context of 128 the first is kept (< 128/4), the second blended, the rest
# divided by 8: every branch of the llama3 rule is used.
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 128, "rope_theta": 10000.0}
#: name -> make_checkpoint's arguments
CASES = {
    # Llama 3: byte-level BPE, <|begin_of_text|> from the post-processor, llama3 scaling, untied
    "llama3": dict(model_type="llama", tokenizer="llama3", heads=4, kv_heads=2, positions=256,
                   tie_word_embeddings=False, rope_parameters=LLAMA3_ROPE),
    # Llama 2 / TinyLlama: SentencePiece-style BPE with add_bos_token, 3 query heads on 1, tied,
    # linear scaling (a "SuperHOT"-style fine-tune)
    "llama2": dict(model_type="llama", tokenizer="llama2", heads=3, kv_heads=1, d=24,
                   tie_word_embeddings=True,
                   rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}),
    # a head size of its own: 4 heads of 16 on d = 32
    "head_dim": dict(model_type="llama", tokenizer="llama3", heads=4, kv_heads=4, head_dim=16,
                     tie_word_embeddings=False),
    # Mistral (v0.2 on: no sliding window), 4 query heads on 1
    "mistral": dict(model_type="mistral", tokenizer="metaspace", heads=4, kv_heads=1, sliding_window=None,
                    rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    # Qwen2.5: biases on q, k, v only, tied
    "qwen2": dict(model_type="qwen2", tokenizer="qwen", tie_word_embeddings=True),
    # Qwen3: QK-norm, head_dim 16 on d = 32 with 4 heads, untied
    "qwen3": dict(model_type="qwen3", tokenizer="qwen", head_dim=16, tie_word_embeddings=False),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """case -> (folder, bundle), each made once for the module when a test first asks."""
    cache = {}

    def get(case):
        if case not in cache:
            path = tmp_path_factory.mktemp(f"{case}-random-tiny")
            make_checkpoint(path, **CASES[case])
            cache[case] = (path, tfviz.load(path))
        return cache[case]
    return get


@pytest.mark.parametrize("case", CASES)
def test_ids_are_transformers_tokenizer_ids(made, case):
    folder, bundle = made(case)
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    ids = bundle.encode(TEXT)
    assert ids == theirs(TEXT)["input_ids"]
    assert len(ids) > 15  # real merges, not one token per byte


@pytest.mark.parametrize("case", CASES)
def test_logits_patterns_and_residual_stream_match_transformers(made, case):
    folder, bundle = made(case)
    errors = parity(folder, bundle)
    assert len(errors) == 1 + 2 * bundle.config.n_layers + 1


def test_converted_configs_say_what_each_checkpoint_is(made):
    cfgs = {case: made(case)[1].config for case in CASES}
    for cfg in cfgs.values():
        assert (cfg.positional, cfg.rope_pairs, cfg.norm, cfg.norm_type, cfg.final_norm, cfg.activation,
                cfg.ln_eps) == ("rope", "halves", "pre", "rmsnorm", True, "swiglu", 1e-6)
    assert cfgs["llama3"].rope_scaling == RopeScaling("llama3", 8.0, 1.0, 4.0, 128)
    assert cfgs["llama2"].rope_scaling == RopeScaling("linear", 2.0)
    assert (cfgs["llama2"].n_heads, cfgs["llama2"].kv_heads, cfgs["llama2"].tie_embeddings) == (3, 1, True)
    assert (cfgs["head_dim"].d_head, cfgs["qwen3"].d_head) == (16, 16)
    assert cfgs["mistral"].pos_base == 1e6 and cfgs["mistral"].rope_scaling is None
    assert (cfgs["qwen2"].bias, cfgs["qwen2"].has_qkv_bias, cfgs["qwen2"].qk_norm) == (False, True, False)
    assert (cfgs["qwen3"].bias, cfgs["qwen3"].has_qkv_bias, cfgs["qwen3"].qk_norm) == (False, False, True)
    families = {case: made(case)[1].manifest["family"] for case in CASES}
    assert families == {"llama3": "Llama", "llama2": "Llama", "head_dim": "Llama", "mistral": "Mistral",
                        "qwen2": "Qwen2", "qwen3": "Qwen3"}
    for case in CASES:
        bundle = made(case)[1]
        assert bundle.manifest["parameters"] == sum(p.numel() for p in bundle.model.parameters())
        assert bundle.manifest["set_aside"] == []


def test_special_tokens_come_from_the_checkpoints_files(made):
    """BOS as transformers adds it (Llama 3's post-processor, Llama 2's add_bos_token, none for
    Qwen); EOS from generation_config.json: the first of a list, and every one of it ends a text
    (eos_ids, and bundle.facts.specials.ends)."""
    llama3, llama2, qwen = (made(c)[1].tokenizer for c in ("llama3", "llama2", "qwen2"))
    assert llama3.tokens("hi")[0] == "<|begin_of_text|>"
    assert llama3.id_to_token(llama3.eos_id) == "<|end_of_text|>"
    assert [llama3.id_to_token(i) for i in llama3.eos_ids] == ["<|end_of_text|>", "<|eot_id|>"]
    assert made("llama3")[1].facts.specials.ends == ("<|end_of_text|>", "<|eot_id|>")
    assert llama2.tokens("hi")[0] == "<s>" and llama2.id_to_token(llama2.eos_id) == "</s>"
    assert llama2.eos_ids == (llama2.eos_id,)  # one end token, not a list
    assert qwen.encode("hi") == qwen.hf.encode("hi", add_special_tokens=False).ids  # nothing added
    assert qwen.id_to_token(qwen.eos_id) == "<|im_end|>"  # generation_config: [<|im_end|>, <|endoftext|>]
    assert [qwen.id_to_token(i) for i in qwen.eos_ids] == ["<|im_end|>", "<|endoftext|>"]


def test_an_end_token_the_tokenizer_lacks_is_passed_over(tmp_path):
    """generation_config.json may list an id past the tokenizer's (a padded vocabulary): it is
    left out of the end tokens, and the others still end a text."""
    make_checkpoint(tmp_path, **CASES["llama3"])
    config = json.loads((tmp_path / "generation_config.json").read_text())
    ends = config["eos_token_id"]
    (tmp_path / "generation_config.json").write_text(json.dumps({**config, "eos_token_id": [*ends, 10_000]}))
    assert tfviz.load(tmp_path).tokenizer.eos_ids == tuple(ends)


def test_sentencepiece_tokens_are_shown_readable(made):
    """"▁animal" is shown as "␣animal"; byte-fallback pieces as the byte they stand for: a
    newline "<0x0A>" as "↵", the three bytes of "☕" (not in the vocabulary) in hex."""
    for case in ("llama2", "mistral"):
        tok = made(case)[1].tokenizer
        shown = tok.tokens(TEXT)
        assert shown[:3] == ["<s>", "␣The", "␣animal"]
        assert "↵" in shown
        assert ["<E2>", "<98>", "<95>"] == [t for t in shown if t in ("<E2>", "<98>", "<95>")]
        raw = [tok.hf.id_to_token(i) for i in tok.encode(TEXT)]
        assert "<0x0A>" in raw and "▁animal" in raw
    byte_level = made("llama3")[1].tokenizer.tokens(TEXT)
    assert byte_level[:3] == ["<|begin_of_text|>", "The", "␣animal"] and "↵" in byte_level


def test_sharded_bfloat16_checkpoint_runs_in_float32(tmp_path):
    """model.safetensors.index.json and its shards, in bfloat16: read as one checkpoint and
    widened to float32, as transformers widens it with dtype=float32."""
    model = make_checkpoint(tmp_path, **CASES["llama3"])
    (tmp_path / "model.safetensors").unlink()
    model.to(torch.bfloat16).save_pretrained(tmp_path, max_shard_size="40KB")
    shards = sorted(p.name for p in tmp_path.glob("model-*-of-*.safetensors"))
    assert len(shards) > 2 and (tmp_path / "model.safetensors.index.json").exists()
    bundle = tfviz.load(tmp_path)
    assert bundle.model.embed.weight.dtype == torch.float32
    assert torch.equal(bundle.model.embed.weight, model.model.embed_tokens.weight.float())
    parity(tmp_path, bundle)
    info = describe(tmp_path)
    assert info.n_params == bundle.manifest["parameters"]
    assert info.bytes_on_disk == sum((tmp_path / s).stat().st_size for s in shards)


def test_describe_reads_config_and_headers_only(made):
    folder, bundle = made("qwen3")
    info = describe(folder)
    assert (info.family, info.model_type, info.architecture) == ("Qwen3", "qwen3", "Qwen3ForCausalLM")
    assert (info.n_layers, info.n_heads, info.d_model, info.vocab) == (2, 4, 32, bundle.config.vocab_size)
    assert info.n_params == bundle.manifest["parameters"]


def test_bare_model_without_head_has_no_logits(tmp_path):
    """A LlamaModel (no lm_head): our model ends at its final norm, as BertModel's does."""
    model = make_checkpoint(tmp_path, **CASES["llama3"])
    model.model.save_pretrained(tmp_path)  # LlamaModel's own file: no "model." prefix, no lm_head
    bundle = tfviz.load(tmp_path)
    assert not bundle.config.lm_head and bundle.model.unembed is None
    tr = bundle.trace(TEXT)
    assert "logits" not in tr.activations
    theirs = transformers.AutoModel.from_pretrained(tmp_path, attn_implementation="eager",
                                                    dtype=torch.float32).eval()
    with torch.no_grad():
        out = theirs(torch.tensor([bundle.encode(TEXT)]), output_attentions=True)
    assert_matches(tr["pattern", 1], out.attentions[1][0].numpy(), "layer 1's pattern")


def test_head_ablation_matches_zeroing_that_head_in_transformers(made):
    folder, bundle = made("qwen3")
    ids = bundle.encode(TEXT)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    dh = bundle.config.d_head

    def zero_head(module, args):
        z = args[0].clone()
        z[..., dh:2 * dh] = 0.0  # (B, T, H * dh): head 1's columns
        return (z,)

    handle = model.model.layers[0].self_attn.o_proj.register_forward_pre_hook(zero_head)
    try:
        with torch.no_grad():
            theirs = model(torch.tensor([ids])).logits[0].numpy()
    finally:
        handle.remove()
    ablated = bundle.trace(TEXT, options=tfviz.RunOptions(ablate_heads=frozenset({(0, 1)})))
    assert_matches(ablated["logits"], theirs, "ablated logits")


def test_greedy_decoding_matches_transformers_generate(made):
    """Our KV-cached decoding of a converted model picks transformers' tokens."""
    from tfviz.decoding import generate

    folder, bundle = made("llama3")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    prompt = "The animal"
    ours = generate(bundle, prompt, max_new_tokens=8)
    ids = bundle.encode(prompt)
    with torch.no_grad():
        theirs = model.generate(torch.tensor([ids]), max_new_tokens=8, do_sample=False,
                                eos_token_id=None, pad_token_id=bundle.tokenizer.eos_id)
    new = theirs[0, len(ids):].tolist()
    assert list(ours.new_ids) == new[:len(ours.new_ids)] and len(ours.new_ids) >= 1


# ----- what a sharded folder can get wrong ---------------------------------------------------

@pytest.fixture
def sharded(tmp_path):
    """A Llama 3 case saved in shards (float32), in a folder of the test's own to break."""
    model = make_checkpoint(tmp_path, **CASES["llama3"])
    (tmp_path / "model.safetensors").unlink()
    model.save_pretrained(tmp_path, max_shard_size="40KB")
    return tmp_path


def test_a_missing_shard_is_named(sharded):
    missing = sorted(sharded.glob("model-*-of-*.safetensors"))[1]
    missing.unlink()
    message = problem(sharded, described=True)
    assert f"model.safetensors.index.json names {missing.name}, which the folder lacks" in message
    assert "download every shard" in message


def test_shards_without_their_index_are_named(sharded):
    (sharded / "model.safetensors.index.json").unlink()
    assert "no model.safetensors.index.json" in problem(sharded, described=True)


def test_index_without_a_weight_map_is_named(sharded):
    (sharded / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    assert "model.safetensors.index.json is not a valid safetensors index" in problem(sharded, described=True)


def test_a_truncated_shard_is_named(sharded):
    shard = sorted(sharded.glob("model-*-of-*.safetensors"))[-1]
    shard.write_bytes(shard.read_bytes()[:-10])
    assert f"{shard.name} is truncated" in problem(sharded, described=True)


def test_an_index_naming_a_tensor_its_shard_lacks_is_named(sharded):
    index = sharded / "model.safetensors.index.json"
    data = json.loads(index.read_text())
    key, shard = next(iter(data["weight_map"].items()))
    others = sorted(set(data["weight_map"].values()) - {shard})
    data["weight_map"][key] = others[0]
    index.write_text(json.dumps(data))
    message = problem(sharded, described=True)
    assert f"puts {key} in {others[0]}, which does not hold it" in message
