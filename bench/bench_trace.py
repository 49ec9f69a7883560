"""How much does seeing everything cost? Plain forward vs full trace vs filtered trace,
and TransformerLens's run_with_cache on the same shape.

    python -m bench.bench_trace                 # prints a markdown table (gpt-tiny's shape)
    python -m bench.bench_trace --model FOLDER  # a Hugging Face GPT-2 folder, 64 tokens

With ``--model`` it opens the folder as the app does (``tfviz.load``) and measures what a real
model costs a server: a 64-token trace against a plain forward pass, the memory the model
takes (the process's resident set before and after loading) and what one learner's trace
weighs (the bytes of its arrays). ``python -m bench.make_gpt2_folder DIR`` writes a random
folder of GPT-2 small's shape to try it on.

Medians of many runs in one process; ratios are against the plain forward at the same length.
TransformerLens is optional (pip install -r requirements-bench.txt); without it its rows say so.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

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


def rss_bytes() -> int:
    """This process's resident set size, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def trace_bytes(trace) -> int:
    """What one learner's trace holds: the bytes of its arrays (every activation, ids)."""
    arrays = [*trace.activations.values(), trace.ids, trace.enc_ids]
    return int(sum(a.nbytes for a in arrays if a is not None))


def main_folder(folder: str, tokens: int = 64, repeats: int = 20) -> None:
    """The table for a Hugging Face folder: 64-token trace vs plain forward, memory."""
    import gc

    import tfviz

    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    bundle = tfviz.load(folder)
    load_s = time.perf_counter() - start
    gc.collect()
    model_rss = rss_bytes() - before
    cfg = bundle.config
    weights = sum(p.numel() * p.element_size() for p in bundle.model.parameters())
    ids = [int(i) % cfg.vocab_size for i in range(1000, 1000 + 997 * tokens, 997)][:tokens]
    batch = torch.tensor([ids])
    model = bundle.model

    def plain():
        with torch.no_grad():
            model(batch)

    variants = {
        "plain forward": plain,
        "full trace (every activation)": lambda: run_with_trace(model, ids),
        "trace, attention patterns only": lambda: run_with_trace(
            model, ids, names=lambda n: n.endswith("hook_pattern")),
    }
    medians = median_ms(variants, repeats)
    base = medians["plain forward"]
    full = run_with_trace(model, ids)
    patterns = run_with_trace(model, ids, names=lambda n: n.endswith("hook_pattern"))
    print(f"{folder}: {cfg.n_layers} layers x {cfg.n_heads} heads, d={cfg.d_model}, "
          f"{cfg.vocab_size:,} tokens; {tokens} tokens; torch {torch.__version__}, 1 thread, "
          f"median of {repeats} runs\n")
    print("| what | median ms | × plain forward |")
    print("|---|---:|---:|")
    for name, ms in medians.items():
        print(f"| {name} | {ms:.1f} | {ms / base:.2f} |")
    mb = 1024 * 1024
    print("\n| memory | MB |")
    print("|---|---:|")
    print(f"| the model's weights (float32) | {weights / mb:.0f} |")
    print(f"| the server's resident set grows by, loading it ({load_s:.1f} s) | {model_rss / mb:.0f} |")
    print(f"| one learner's trace, every activation ({len(full.activations)} arrays) | "
          f"{trace_bytes(full) / mb:.1f} |")
    print(f"| of which the logits ({tokens} x {cfg.vocab_size:,}) | "
          f"{full.logits.nbytes / mb:.1f} |")
    print(f"| a trace of the attention patterns only (and the logits) | "
          f"{trace_bytes(patterns) / mb:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The cost of a trace against a plain forward.")
    parser.add_argument("--model", help="a Hugging Face model folder (GPT-2), instead of gpt-tiny")
    parser.add_argument("--repeats", type=int, default=20, help="runs per variant with --model")
    args = parser.parse_args()
    if args.model:
        main_folder(args.model, repeats=args.repeats)
    else:
        main()
