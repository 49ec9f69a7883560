"""The instrumented transformer: small files, one idea each (see each module's docstring)."""
from tfviz.model.transformer import KVCache, ModelOutput, Transformer

__all__ = ["KVCache", "ModelOutput", "Transformer"]
