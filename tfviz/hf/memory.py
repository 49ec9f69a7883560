"""What opening a model folder costs in memory, and whether this machine has that much free.

Said before anything is read: the cost comes from the safetensors header
(:class:`tfviz.hf.FolderInfo`: parameters × 4 bytes, since every model runs in float32), the
free memory from the kernel (``MemAvailable`` in /proc/meminfo, which counts the page cache
that can be given back; else ``os.sysconf``'s free pages).

The parameters are counted from the shapes config.json asks for, as the loader builds them:
grouped-query attention's narrower K and V, a gated feed-forward's three matrices, an untied
unembedding (a tied one once). They cost 4 bytes each whatever the file holds: a bfloat16
checkpoint (as the hub's Llamas are) is half the size on disk of what it takes in memory.

A served model holds more than its weights. Opening reads the file's tensors (a bfloat16
file's, then their float32 copies) and copies GPT-2's transposed and split matrices into our
layout; the first lesson page then exports every parameter as numpy (``Bundle.weights()``,
which most lessons read) and traces the text. Two benchmarks measure it on GPT-2-small- and
SmolLM2-135M-shaped folders: ``bench/bench_checkpoint_memory.py`` (how much a server grows once
its first learner has the self-attention lesson on the folder) and
``bench/bench_folder_memory.py`` (a fresh process's peak as it loads, exports and traces 64
tokens). Both come out between two and three times the float32 weights (BENCHMARKS.md has the
figures); part of a GPT-2 file's share is the file's own pages, which safetensors maps and the
kernel can drop and read again, while a bfloat16 file is copied into float32 in full.

So :data:`OPEN_FACTOR` asks for 3 times the float32 weights: what a first lesson holds, not a
bound on what more lessons' caches add.

>>> opening_cost(500_000_000)
1500000000
>>> refusal("gpt2", 800_000_000, 500_000_000)
'gpt2 is not opened: it needs about 763 MiB of memory and this server has 477 MiB free. The lessons go on with a bundled model.'
>>> refusal("gpt2", 800_000_000, 4_000_000_000) is None
True
"""
from __future__ import annotations

import os
from pathlib import Path


OPEN_FACTOR = 3.0  # measured 2.93-3.06 x for GPT-2 small's shape, 2.30-2.43 x for SmolLM2-135M's


def opening_cost(weight_bytes: int) -> int:
    """Bytes a server should expect to hold once a model of ``weight_bytes`` float32 weights
    is open and a first lesson has shown it (module docstring)."""
    return int(weight_bytes * OPEN_FACTOR)


def available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Memory the kernel can give a process now without swapping, or None if it cannot say.

    ``MemAvailable`` counts the page cache it can reclaim; without /proc (not Linux), the
    free physical pages are the closest figure (smaller: page cache counts as used)."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # the file gives kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def refusal(name: str, cost: int, available: int | None) -> str | None:
    """Why ``name`` is not opened (it needs more than is free), or None when it fits or the
    free memory is unknown (then it is tried)."""
    if available is None or cost <= available:
        return None
    from tfviz.decoding.memory import human_bytes  # the decoding package imports torch

    return (f"{name} is not opened: it needs about {human_bytes(cost)} of memory and this server "
            f"has {human_bytes(available)} free. The lessons go on with a bundled model.")
