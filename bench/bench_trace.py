"""How much does seeing everything cost? Plain forward vs full trace vs filtered trace,
and TransformerLens's run_with_cache on the same shape.

    python -m bench.bench_trace            # prints a markdown table

Medians of many runs in one process; ratios are against the plain forward at the same length.
TransformerLens is optional (pip install -r requirements-bench.txt); without it its rows say so.
"""
from __future__ import annotations

import statistics
import time

import torch

from tfviz.config import preset
from tfviz.model import Transformer
from tfviz.trace import run_with_trace

torch.set_num_threads(1)  # shared 2-core machine: one thread keeps timings comparable
REPEATS = 200


def median_ms(variants: dict, repeats: int = REPEATS) -> dict[str, float]:
    """Median milliseconds of each variant, run round-robin so load on a shared machine
    falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(repeats + 10):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            if i >= 10:  # the first rounds warm up
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def transformer_lens_model(cfg):
    try:
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError:
        return None
    tl_cfg = HookedTransformerConfig(
        n_layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads, d_head=cfg.d_head,
        d_mlp=cfg.d_ff, d_vocab=cfg.vocab_size, n_ctx=cfg.max_seq_len, act_fn=cfg.activation,
        normalization_type="LN", positional_embedding_type="standard", device="cpu", seed=0,
    )
    return HookedTransformer(tl_cfg).eval()


def main() -> None:
    cfg = preset("gpt-tiny")
    model = Transformer(cfg).eval()
    tl = transformer_lens_model(cfg)
    rows = []
    for T in (32, 128):
        ids = torch.randint(0, cfg.vocab_size, (1, T))
        ids_list = ids[0].tolist()

        def plain():
            with torch.no_grad():
                model(ids)

        def tl_plain():
            with torch.no_grad():
                tl(ids)

        def tl_cache():
            with torch.no_grad():
                tl.run_with_cache(ids)

        variants = {
            "tfviz plain forward": plain,
            "tfviz full trace": lambda: run_with_trace(model, ids_list),
            "tfviz trace, patterns only": lambda: run_with_trace(
                model, ids_list, names=lambda n: n.endswith("hook_pattern")),
        }
        if tl is not None:
            variants |= {"TransformerLens forward": tl_plain,
                         "TransformerLens run_with_cache": tl_cache}
        medians = median_ms(variants)
        base = medians["tfviz plain forward"]
        rows += [(T, name, ms, ms / base) for name, ms in medians.items()]
        if tl is None:
            rows.append((T, "TransformerLens (not installed)", float("nan"), float("nan")))
    print(f"preset gpt-tiny: {cfg.n_layers} layers, d={cfg.d_model}, {cfg.n_heads} heads; "
          f"torch {torch.__version__}, 1 thread, median of {REPEATS} runs\n")
    print("| tokens | what | median ms | × plain forward |")
    print("|---:|---|---:|---:|")
    for T, what, ms, ratio in rows:
        print(f"| {T} | {what} | {ms:.3f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
