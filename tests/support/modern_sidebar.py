"""Put the modern decoders in the sidebar for a test: llama-tiny (kept out of PRESET_NAMES until
every lesson teaches the modern block) and Llama-family folders (which the app does not offer
yet: ``tfviz.hf.discover.APP_FAMILIES``). The lessons that already teach them (3, 7, 14, 18)
are tested under them this way; once the app offers them itself, these patches change nothing.

Both act through ``monkeypatch``, so they end with the test. AppTest runs the page in the test's
own process, where the patched names are the ones the app reads.
"""
from __future__ import annotations

from pathlib import Path

LLAMA_FAMILIES = ("Llama", "Mistral", "Qwen2", "Qwen3")


def offer_llama_tiny(monkeypatch) -> None:
    """llama-tiny joins the sidebar's bundled models (so ``?model=llama-tiny`` opens it)."""
    from tfviz.ui import cache

    shipped = cache.shipped_model_names
    monkeypatch.setattr(cache, "shipped_model_names",
                        lambda: [*shipped(), *(["llama-tiny"] if "llama-tiny" not in shipped() else [])])


def offer_llama_folders(monkeypatch, root: Path | str) -> None:
    """The Llama-family folders under ``root`` (a folder of model folders, or one folder) join
    the sidebar, named by their folder's name."""
    from tfviz.hf import discover
    from tfviz.ui import checkpoints

    monkeypatch.setenv("TFVIZ_MODELS", str(root))
    monkeypatch.setattr(discover, "APP_FAMILIES", (*discover.APP_FAMILIES, *LLAMA_FAMILIES))
    checkpoints._discovered.clear()
