"""Decode time per new token with the KV cache: MHA (gpt-tiny), GQA (gqa-tiny), MQA (mqa-tiny).

    python -m bench.bench_gqa_decode              # prints a markdown table
    python -m bench.bench_gqa_decode --repeats 50 --new-tokens 32

The same measurement lesson 18 shows (``tfviz.experiments.gqa_decode.decode_times``), with more
rounds: each model reads a prompt of the same text (8 or 96 tokens), then NEW tokens one at a
time with the cache; their time divided by NEW, the median round. The three models run
round-robin so machine load falls on all alike; 1 torch thread, as the server runs every page.
Beside each time: the cache bytes per token, counted from the cache's tensors.
"""
from __future__ import annotations

import argparse
import os

import torch

import tfviz
from tfviz.analysis.gqa import VARIANTS, decode_reading
from tfviz.experiments.gqa_decode import CONTEXTS, NEW_TOKENS, decode_times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--new-tokens", type=int, default=NEW_TOKENS)
    args = ap.parse_args()
    bundles = {variant: tfviz.load(model) for variant, model in VARIANTS}
    load = os.getloadavg()[0]
    t = decode_times(bundles, CONTEXTS, args.new_tokens, args.repeats)
    print(f"torch {torch.__version__}, {t.cpu}, {t.threads} thread, median of {t.repeats} rounds "
          f"of {t.new_tokens} new tokens, {t.measured_at}, load average {load:.2f} at the start\n")
    short, long = t.contexts[0], t.contexts[-1]
    print(f"| variant | model | K/V heads | KV cache per token | ms per new token after {short} "
          f"tokens | after {long} tokens | {long} vs {short} |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in t.rows:
        print(f"| {r.variant} | {r.model} | {r.kv_heads} | {r.cache_bytes_per_token} bytes | "
              f"{r.ms_per_token[0]:.3f} | {r.ms_per_token[-1]:.3f} | {t.growth(r):.2f}× |")
    print(f"\nslowest / fastest: {t.spread(short):.2f}× after {short} tokens, "
          f"{t.spread(long):.2f}× after {long}")
    print(" ".join(decode_reading(t)))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
