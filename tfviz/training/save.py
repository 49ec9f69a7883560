"""Write a trained model as a bundle folder that ``tfviz.load`` reads back.

    assets/<name>/config.json        the ModelConfig, keys sorted
    assets/<name>/model.safetensors  the weights (tied: only embed.weight, no unembed copy)
    assets/<name>/tokenizer.json     ServedTokenizer JSON, or {"kind": "task", ...} for letters
                                     (none for vit-tiny, which reads images)
    assets/<name>/manifest.json      how it was trained and what it measured on held-out data

Every file is written with sorted keys and rounded floats, so running the same command twice
gives the same bytes, except ``train.wall_seconds`` in the manifest (a stopwatch reading).
The manifest also holds the SHA-256 of the weights and tokenizer, so a test can tell whether
the files in a folder belong together.
"""
from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import torch
from safetensors.torch import save_file

from tfviz.training.loop import TrainResult
from tfviz.training.recipes import Recipe


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def dump_json(data: dict) -> str:
    """JSON with sorted keys, one space indent and a final newline (stable bytes)."""
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


# Metrics stored at the manifest's top level, where the lessons look for them
# (tfviz.analysis.moe.table_from_manifest reads manifest["moe"]); the rest go under "eval".
TOP_LEVEL = ("moe", "vocabulary")


def recorded_metrics(manifest: dict) -> dict:
    """Everything the evaluation measured, gathered back from "eval" and the top level."""
    return manifest["eval"] | {k: manifest[k] for k in TOP_LEVEL if k in manifest}


def manifest_for(recipe: Recipe, result: TrainResult, metrics: dict, files: dict) -> dict:
    cmd = f"python -m tfviz.train --preset {recipe.preset}"
    if result.steps != recipe.steps:
        cmd += f" --steps {result.steps}"
    top = {k: metrics[k] for k in TOP_LEVEL if k in metrics}
    return top | {
        "name": recipe.preset,
        "command": cmd,
        "train": {
            "steps": result.steps,
            "batch_size": recipe.batch_size,
            "lr": recipe.lr,
            "warmup": recipe.warmup,
            "seed": recipe.seed,
            "threads": result.threads,
            "torch_version": torch.__version__.split("+")[0],
            "python_version": platform.python_version(),
            "final_train_loss": round(result.final_train_loss, 4),
            "wall_seconds": round(result.wall_seconds, 1),
            "weight_decay": recipe.weight_decay,
            "optimizer": "AdamW(betas=(0.9, 0.98)), gradient clipping at 1.0, warm-up then cosine to 10%",
        },
        "data": recipe.data,
        "eval": {k: v for k, v in metrics.items() if k not in TOP_LEVEL},
        "files": files,
    }


def write_bundle(recipe: Recipe, result: TrainResult, out: str | Path) -> dict:
    """Save everything into ``out`` and return the manifest (metrics measured here)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model = result.model.eval()
    (out / "config.json").write_text(dump_json(model.cfg.to_dict()), encoding="utf-8")
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    names = ["config.json", "model.safetensors"]
    if result.tokenizer is not None:  # vit-tiny reads pixels: no tokenizer
        result.tokenizer.save(out / "tokenizer.json")
        names.append("tokenizer.json")
    metrics = recipe.evaluate(model, result.tokenizer)
    files = {name: sha256(out / name) for name in names}
    manifest = manifest_for(recipe, result, metrics, files)
    (out / "manifest.json").write_text(dump_json(manifest), encoding="utf-8")
    return manifest
