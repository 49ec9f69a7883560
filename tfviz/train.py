"""Rebuild the bundled models: ``python -m tfviz.train --preset NAME`` (or ``--all``).

    python -m tfviz.train --all                          # every model into assets/, one at a time
    python -m tfviz.train --preset gpt-tiny              # one model into assets/gpt-tiny/
    python -m tfviz.train --preset gpt-tiny --steps 20 --out /tmp/gpt   # a quick smoke run

Each run trains from scratch with fixed seeds and writes config.json, model.safetensors,
tokenizer.json and manifest.json (training settings + metrics measured on held-out data);
gpt-tiny's folder also gets tour_numbers.json, what the tour shows of the default sentence,
so that a fresh server draws its first page without torch (``tfviz.training.tour``).
The files in assets/ are exactly what these commands write; only ``train.wall_seconds``
in the manifest differs between runs.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tfviz.analysis import tour_numbers
from tfviz.bundle import ASSETS
from tfviz.training.loop import DEFAULT_THREADS, fit
from tfviz.training.recipes import RECIPES
from tfviz.training import tour
from tfviz.training.save import write_bundle


def train_one(name: str, out: Path, steps: int | None = None, threads: int = DEFAULT_THREADS,
              quiet: bool = False) -> dict:
    """Train preset ``name`` and write its bundle into ``out``; returns the manifest."""
    recipe = RECIPES[name]
    result = fit(recipe, steps=steps, threads=threads, log_every=0 if quiet else 100)
    manifest = write_bundle(recipe, result, out)
    if name == tour_numbers.MODEL:
        tour.write_for(out)
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tfviz.train", description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--preset", choices=sorted(RECIPES), help="the model to train")
    which.add_argument("--all", action="store_true", help="train every bundled model in turn")
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's step count")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default assets/NAME; with --all, OUT/NAME)")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help=f"torch threads (default {DEFAULT_THREADS}; changes the exact weights)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    names = sorted(RECIPES) if args.all else [args.preset]
    for name in names:
        if args.all or args.out is None:
            out = (args.out or ASSETS) / name
        else:
            out = args.out
        manifest = train_one(name, out, args.steps, args.threads, args.quiet)
        summary = {k: v for k, v in manifest["eval"].items() if not isinstance(v, (list, dict))}
        print(f"{name}: {manifest['train']['wall_seconds']}s -> {out}\n  {json.dumps(summary)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
