"""A random checkpoint of SmolLM2-135M's full shape, opened by tfviz.load, against transformers.

    python -m bench.bench_llama_shape            # prints the times and the largest differences

SmolLM2-135M is a Llama: 30 layers, 9 query heads sharing 3 key/value heads, d = 576,
intermediate 1,536, 49,152 ids, tied unembedding, RoPE base 100,000; 134,515,008 parameters.
The checkpoint has transformers' own init (not widened, so its maps are flat: what this
checks is the conversion at full size and float32's error over 30 layers' long sums; the
small widened cases in the tests check that each part is the right one) and a small
byte-level tokenizer trained on our stories, padded to 49,152 embedding rows: nothing is
downloaded. The comparison is
tests/unit/hf/test_llama.py's (``tests.support.llama_folders.parity``: the ids' logits, all 30
patterns and the residual stream, each entry within rtol 1e-5 plus 5e-6 of the tensor's
scale). It took 25 s to 1.5 min on a shared 2-core machine (most of it making and saving the
checkpoint), too long for the test suite's budget, so it runs here.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

SMOLLM2_135M = dict(layers=30, heads=9, kv_heads=3, d=576, d_ff=1536, positions=8192, vocab_size=49152,
                    tie_word_embeddings=True,
                    rope_parameters={"rope_type": "default", "rope_theta": 100000.0})
PARAMETERS = 134_515_008  # SmolLM2-135M's own count


def main() -> None:
    import tfviz
    from tests.support.llama_folders import make_checkpoint, parity
    from tfviz.hf import describe

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        make_checkpoint(folder, "llama", tokenizer="llama3", spread=False, **SMOLLM2_135M)
        t1 = time.perf_counter()
        bundle = tfviz.load(folder)
        t2 = time.perf_counter()
        assert bundle.manifest["parameters"] == describe(folder).n_params == PARAMETERS
        errors = parity(folder, bundle, spread=False)
        t3 = time.perf_counter()
        print("| step | seconds |\n|---|---|")
        print(f"| make and save the checkpoint (transformers) | {t1 - t0:.1f} |")
        print(f"| tfviz.load | {t2 - t1:.1f} |")
        print(f"| both forward passes and the comparison | {t3 - t2:.1f} |")
        worst = max(errors, key=errors.get)
        print(f"\n{len(errors)} tensors match; the largest difference is {errors[worst]:.1e} of its "
              f"tensor's scale ({worst}); logits {errors['logits']:.1e}")


if __name__ == "__main__":
    main()
