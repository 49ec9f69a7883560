"""Write a random checkpoint of SmolLM2-135M's shape into a folder, as Hugging Face saves one.

    python -m bench.make_llama_folder DIR                    # bfloat16 on disk, as the hub's
    python -m bench.make_llama_folder DIR --dtype float32

SmolLM2-135M is a Llama (:data:`bench.bench_llama_shape.SMOLLM2_135M`): 30 layers, 9 query
heads over 3 key/value heads, d = 576, a SwiGLU feed-forward of 1,536, 49,152 ids, the
unembedding tied to the embedding; 134,515,008 parameters. The hub's file holds them in
bfloat16 (269 MB), and tfviz widens them to float32 when it opens the folder, so the memory
benchmarks (``bench.bench_folder_memory``, ``bench.bench_checkpoint_memory --folder``) read a
bfloat16 file by default.

The folder is transformers' own ``LlamaForCausalLM.save_pretrained`` (transformers is a
dev-only dependency) with its own init, beside a small byte-level tokenizer trained on our
stories with Llama 3's special tokens (:func:`tests.support.llama_folders.make_checkpoint`);
its 49,152 embedding rows are more than the tokenizer's tokens, as a padded vocabulary is.
generation_config.json names two end tokens, as Llama 3 Instruct's names several.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def make_llama_folder(folder: Path, dtype: str = "bfloat16") -> Path:
    """A SmolLM2-135M-shaped Llama folder in ``folder``, its weights saved as ``dtype``."""
    import torch

    from bench.bench_llama_shape import SMOLLM2_135M
    from tests.support.llama_folders import make_checkpoint

    folder.mkdir(parents=True, exist_ok=True)
    model = make_checkpoint(folder, "llama", tokenizer="llama3", spread=False, **SMOLLM2_135M)
    if dtype != "float32":
        generation = (folder / "generation_config.json").read_text()  # save_pretrained rewrites it
        (folder / "model.safetensors").unlink()
        model.to(getattr(torch, dtype)).save_pretrained(folder, safe_serialization=True)
        (folder / "generation_config.json").write_text(generation)
    return folder


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    args = parser.parse_args()
    print(make_llama_folder(args.folder, args.dtype))
