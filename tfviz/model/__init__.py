"""The instrumented transformer: small files, one idea each (see each module's docstring)."""
from tfviz.model.transformer import KVCache, Transformer

__all__ = ["KVCache", "Transformer"]
