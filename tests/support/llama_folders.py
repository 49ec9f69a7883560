"""Small random Llama, Mistral, Qwen2 and Qwen3 checkpoints for the tests (tests/test_hf_llama*.py),
and transformers' own forward pass on one as the reference.

Each checkpoint is made by transformers (a test-only dependency, imported only when one is made
or read), its weights widened (``save_spread``), and saved with ``save_pretrained`` beside a
tokenizer trained here with ``tokenizers`` on our own story sentences: nothing is downloaded.
The tokenizers are the two kinds these families ship, byte-level and SentencePiece-style, in
four variants, each with the files that go with it:

- ``"llama3"``: byte-level BPE with Llama 3's split pattern, <|begin_of_text|> added by the
  tokenizer.json's own post-processor, tokenizer_config.json naming PreTrainedTokenizerFast;
- ``"qwen"``: byte-level BPE with Qwen's pattern and NFC, nothing added (Qwen2Tokenizer);
- ``"llama2"``: SentencePiece-style BPE with byte fallback as the hub's Llama 2 and TinyLlama
  files hold it (a normaliser that writes "▁" for a space), and ``add_bos_token`` in
  tokenizer_config.json (LlamaTokenizer);
- ``"metaspace"``: the same vocabulary as transformers 5 saves a LlamaTokenizer (a Metaspace
  pre-tokeniser instead of the normaliser), as Mistral's newer files hold it.

The tolerance: both sides compute in float32, mostly with the same operations (RMSNorm as
x * rsqrt(mean(x²) + ε), RoPE as rotate_half, the softmax in float32), but not all in the same
order (our einsum against their matmul, our division by √d_head against their multiplication
by d_head^-½, our -inf mask against their dtype minimum), so values differ in their last bits
(~1e-7 relative) and the differences add up over layers. Each entry must be within
rtol = 1e-5 of transformers' value plus an atol of 5e-6 of the tensor's largest entry: the
error of a float32 sum is set by the size of what was summed, not by the result, so an entry
near zero (a small logit, a masked-out pattern entry) may be off by a small share of the
tensor's scale. Measured (1 or 2 threads), the largest difference was 1.1e-6 of its tensor's
scale, a logit of the llama3 case; with a head size of 16, whose √ is exact, the head_dim and
qwen3 cases are transformers' numbers to the bit. 5e-6 leaves over four times the measured for
another CPU.
A bug moves numbers far more: the two RoPE pairings differ by ~1, a missing QK-norm or bias
by ~0.1, SiLU for GELU by ~1e-2, an unscaled llama3 frequency by ~1e-3 at these lengths.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers import processors, trainers

from tests.support.hf_folders import save_spread
from tfviz.data.stories import story_corpus

# Llama 3's and Qwen2's pre-tokenizer patterns, as their tokenizer.json files hold them
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = {"llama3": ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"],
            "qwen": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            "llama2": ["<unk>", "<s>", "</s>"], "metaspace": ["<unk>", "<s>", "</s>"]}
TEXT = "The animal didn't cross the street because it was too tired!\nCafé ☕ at 3pm."
RTOL, ATOL = 1e-5, 5e-6  # ATOL is relative to the tensor's largest entry; see the docstring
#: model_type -> (transformers' config class, its causal LM class)
CLASSES = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "mistral": ("MistralConfig", "MistralForCausalLM"),
           "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"), "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
           # the mixtures of experts (tests/support/moe_folders.py)
           "mixtral": ("MixtralConfig", "MixtralForCausalLM"),
           "granitemoe": ("GraniteMoeConfig", "GraniteMoeForCausalLM")}


def train_tokenizer(kind: str) -> Tokenizer:
    """One of the four kinds above, trained once on our stories; a fresh copy each call."""
    return Tokenizer.from_str(_trained(kind))


@functools.cache
def _trained(kind: str, vocab_size: int = 500) -> str:
    specials = SPECIALS[kind]
    if kind in ("llama3", "qwen"):
        hf = Tokenizer(models.BPE())
        if kind == "qwen":
            hf.normalizer = normalizers.NFC()
        hf.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT if kind == "llama3" else QWEN_SPLIT), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        hf.decoder = decoders.ByteLevel()
        hf.train_from_iterator(story_corpus(300, seed=5), trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=specials, show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        if kind == "llama3":
            bos = hf.token_to_id(specials[0])
            hf.post_processor = processors.Sequence([
                processors.ByteLevel(trim_offsets=False),
                processors.TemplateProcessing(single=f"{specials[0]}:0 $A:0",
                                              pair=f"{specials[0]}:0 $A:0 {specials[0]}:1 $B:1",
                                              special_tokens=[(specials[0], bos)])])
        else:
            hf.post_processor = processors.ByteLevel(trim_offsets=False)
        return hf.to_str()
    # SentencePiece-style: learn merges over "▁"-marked words, then lay the vocabulary out as
    # Llama 2's is: <unk> <s> </s>, the 256 byte-fallback tokens <0x00>..<0xFF>, then the rest.
    learner = Tokenizer(models.BPE(unk_token="<unk>"))
    learner.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    learner.train_from_iterator(story_corpus(300, seed=5), trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False))
    learned = json.loads(learner.to_str())["model"]
    vocab = {t: i for i, t in enumerate(specials + [f"<0x{b:02X}>" for b in range(256)])}
    for token, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(token, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in learned["merges"]]
    hf = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    if kind == "llama2":
        hf.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    else:
        hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    hf.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                    decoders.Strip(" ", 1, 0)])
    hf.post_processor = processors.TemplateProcessing(single="<s>:0 $A:0", pair="<s>:0 $A:0 <s>:1 $B:1",
                                                      special_tokens=[("<s>", 1)])
    return hf.to_str()


def tokenizer_config(kind: str) -> dict:
    """tokenizer_config.json as each kind's checkpoints ship it (the keys transformers reads)."""
    s = SPECIALS[kind]
    if kind == "llama3":
        return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": s[0], "eos_token": s[1],
                "clean_up_tokenization_spaces": True}
    if kind == "qwen":
        return {"tokenizer_class": "Qwen2Tokenizer", "bos_token": None, "eos_token": s[2],
                "pad_token": s[0], "add_prefix_space": False, "errors": "replace"}
    return {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": False,
            "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": False, "normalized": False,
                          "rstrip": False, "single_word": False, "special": True},
            "eos_token": "</s>", "unk_token": "<unk>", "pad_token": None, "legacy": False}


def make_checkpoint(folder: Path, model_type: str = "llama", *, tokenizer: str = "llama3",
                    layers: int = 2, heads: int = 4, kv_heads: int = 2, d: int = 32, d_ff: int = 48,
                    positions: int = 64, spread: bool = True, seed: int = 0, **config):
    """A random ``model_type`` checkpoint saved as safetensors with its tokenizer files beside
    it (tokenizer.json, tokenizer_config.json, generation_config.json); returns the model.
    ``config``: more of transformers' config fields (head_dim, tie_word_embeddings,
    rope_parameters, ...)."""
    import torch
    import transformers

    tok = train_tokenizer(tokenizer)
    s = SPECIALS[tokenizer]
    ids = {"llama3": (s[0], [s[1], s[2]]), "qwen": (None, [s[2], s[0]])}.get(tokenizer, (s[1], s[2]))
    bos = tok.token_to_id(ids[0]) if ids[0] else None
    eos = [tok.token_to_id(t) for t in ids[1]] if isinstance(ids[1], list) else tok.token_to_id(ids[1])
    config_class, model_class = CLASSES[model_type]
    cfg = getattr(transformers, config_class)(
        vocab_size=config.pop("vocab_size", tok.get_vocab_size()), hidden_size=d, intermediate_size=d_ff,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=positions, bos_token_id=bos,
        eos_token_id=eos[0] if isinstance(eos, list) else eos, **config)
    torch.manual_seed(seed)
    model = save_spread(getattr(transformers, model_class)(cfg), tok, folder, spread=spread,
                        is_gain=lambda name: "norm" in name)
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(tokenizer)))
    (folder / "generation_config.json").write_text(json.dumps({"bos_token_id": bos, "eos_token_id": eos}))
    return model


def reference(folder: Path, ids: list[int]):
    """transformers' forward pass on ``ids``, from the saved folder (not the model in memory),
    in float32 with eager attention: logits, patterns (layer -> (H, T, T)) and the residual
    stream (resid_pre of every block, then the last block's output before the final norm,
    caught by a hook: hidden_states' last entry has the norm applied)."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    last = {}
    handle = model.model.layers[-1].register_forward_hook(
        lambda module, args, output: last.update(x=output[0] if isinstance(output, tuple) else output))
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    finally:
        handle.remove()
    resid = [h[0].numpy() for h in out.hidden_states[:-1]] + [last["x"][0].numpy()]
    return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions], resid


def assert_matches(ours, theirs, what: str) -> float:
    """Every entry within RTOL of transformers' plus ATOL of the tensor's scale; returns the
    largest difference relative to that scale (for the report)."""
    theirs = np.asarray(theirs, dtype=np.float64)
    scale = np.abs(theirs).max()
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), theirs, rtol=RTOL, atol=ATOL * scale,
                               err_msg=what)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / scale)


def parity(folder, bundle, text=TEXT, *, spread: bool = True) -> dict[str, float]:
    """Compare logits, every layer's pattern and the residual stream with transformers'; return
    each one's largest difference relative to its scale. ``spread``: the checkpoint's weights
    were widened, so its maps must be peaked and its logits spread (transformers' own init
    leaves both nearly flat). bench/bench_llama_shape.py uses this at SmolLM2-135M's size."""
    ids = bundle.encode(text)
    logits, patterns, resid = reference(folder, ids)
    tr = bundle.trace(text)
    L = bundle.config.n_layers
    errors = {"logits": assert_matches(tr["logits"], logits, "logits")}
    for i in range(L):
        errors[f"pattern {i}"] = assert_matches(tr["pattern", i], patterns[i], f"layer {i}'s pattern")
        errors[f"resid_pre {i}"] = assert_matches(tr[f"blocks.{i}.hook_resid_pre"], resid[i],
                                                  f"resid_pre {i}")
    errors["resid_post last"] = assert_matches(tr[f"blocks.{L - 1}.hook_resid_post"], resid[L], "last block")
    if spread:  # the comparison is not between near-uniform tensors: maps are peaked, logits spread
        assert min(p.max() for p in patterns) > 0.5
        assert logits.std() > 0.5
    return errors
