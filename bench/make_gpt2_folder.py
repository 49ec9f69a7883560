"""Write a random checkpoint of GPT-2 small's shape into a folder, as Hugging Face saves one.

    python -m bench.make_gpt2_folder DIR        # 12 layers x 12 heads x 768, 50,257 tokens

What a lecturer's downloaded ``gpt2`` folder holds, with random weights and nothing
downloaded: ``config.json`` and ``model.safetensors`` from transformers' own
``GPT2LMHeadModel.save_pretrained(..., safe_serialization=True)`` (transformers is a dev-only
dependency), and a ``tokenizer.json`` that reads text as GPT-2's does: byte-level BPE without
a prefix space, trained here with ``tokenizers`` on our story sentences.

Two things make it look like GPT-2's from the outside, where the lessons could trip:

- the vocabulary has 50,257 ids and ``<|endoftext|>`` is the last one (50256), not the first:
  the trained tokens are spread over ids 0..50255 (the 256 bytes first, as in GPT-2), and the
  ids no merge reaches are filled with tokens that never occur (``<unused…>``);
- the query and key weights are wider than transformers' init (std 0.08 instead of 0.02), so
  each head's map is peaked and differs from the next head's, as a trained model's do; with
  the init's std at d = 768 every map is nearly the causal uniform 1/(i+1), the same in every
  head, and a lesson that showed the wrong head would show the right numbers.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

GPT2_SMALL = dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024)
EOS = "<|endoftext|>"
# 64 tokens of this tokenizer: what bench_trace and the lessons' tests read.
TEXT_64 = ("The animal didn't cross the street because it was too tired. The dog saw the cat "
           "near the old bridge, and it ran home quickly! Then the bird sang while the fox "
           "slept under the big tree now.")


def train_tokenizer(vocab_size: int = GPT2_SMALL["vocab_size"], trained: int = 2000):
    """A byte-level BPE of GPT-2's kind whose ``trained`` tokens (bytes and merges learnt from
    our stories) sit at ids spread over 0..vocab_size-2, with ``<|endoftext|>`` at the last id."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from tfviz.data.stories import story_corpus

    small = Tokenizer(models.BPE())
    small.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=trained, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    small.train_from_iterator(story_corpus(2000, seed=5), trainer)
    learnt = json.loads(small.to_str())["model"]
    order = sorted(learnt["vocab"], key=learnt["vocab"].get)  # bytes first, then merges in order
    n_bytes = 256
    slots = vocab_size - 1  # the last id is <|endoftext|>
    stride = max(1, (slots - n_bytes) // max(1, len(order) - n_bytes))
    vocab: dict[str, int] = {}
    for rank, token in enumerate(order):
        vocab[token] = rank if rank < n_bytes else n_bytes + (rank - n_bytes) * stride
    used = set(vocab.values())
    for i in range(slots):
        if i not in used:
            vocab[f"<unused{i}>"] = i
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in learnt["merges"]]
    hf = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([EOS])
    assert hf.token_to_id(EOS) == vocab_size - 1 and hf.get_vocab_size() == vocab_size
    return hf


def make_gpt2_folder(folder: str | Path, *, seed: int = 0, qk_std: float = 0.08, **shape) -> Path:
    """Write the random checkpoint (GPT-2 small's shape unless ``shape`` says otherwise)."""
    import torch
    import transformers

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dims = {**GPT2_SMALL, **shape}
    tok = train_tokenizer(dims["vocab_size"])
    eos = tok.token_to_id(EOS)
    config = transformers.GPT2Config(**dims, bos_token_id=eos, eos_token_id=eos)
    torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(config)
    d = dims["n_embd"]
    with torch.no_grad():
        for block in model.transformer.h:
            block.attn.c_attn.weight[:, : 2 * d].normal_(0.0, qk_std)  # Conv1D: (in, q|k|v out)
            for ln in (block.ln_1, block.ln_2):
                ln.weight.copy_(1 + 0.2 * torch.randn_like(ln.weight))
    model.save_pretrained(folder, safe_serialization=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    folder = make_gpt2_folder(parser.parse_args().folder)
    size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"wrote {folder} ({size / 1e6:.0f} MB): GPT-2 small's shape, random weights")


if __name__ == "__main__":
    main()
