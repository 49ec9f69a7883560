"""Models downloaded from Hugging Face, opened from a local folder and run as our own.

``tfviz.load("path/to/gpt2")`` comes here for a folder whose config.json names a
``model_type``: :func:`load_checkpoint` checks the folder (:class:`CheckpointError` says what is
wrong), converts the weights (``gpt2``) and returns a Bundle whose trace, hook names and
RunOptions are those of the bundled models.
"""
from tfviz.hf.folder import CheckpointError, is_checkpoint_folder, load_checkpoint

__all__ = ["CheckpointError", "is_checkpoint_folder", "load_checkpoint"]
