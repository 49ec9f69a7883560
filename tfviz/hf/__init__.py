"""Models downloaded from Hugging Face, opened from a local folder and run as our own.

``tfviz.load("path/to/gpt2")`` comes here for a folder whose config.json names a
``model_type``: :func:`load_checkpoint` checks the folder (:class:`CheckpointError` says what is
wrong), converts the weights (GPT-2: ``gpt2``; BERT: ``bert``; Llama, Mistral, Qwen2 and
Qwen3: ``llama``; the mixtures of experts Mixtral and GraniteMoe: ``moe``) and returns a
Bundle whose trace, hook names and RunOptions are those of the bundled models. :func:`describe` says what a folder holds and what it will cost in memory
(:class:`FolderInfo`) from config.json and the safetensors headers alone, without reading any
weight.
"""
from tfviz.hf.folder import CheckpointError, FolderInfo, describe, is_checkpoint_folder, load_checkpoint

__all__ = ["CheckpointError", "FolderInfo", "describe", "is_checkpoint_folder", "load_checkpoint"]
