"""tfviz: a small transformer whose every intermediate can be seen.

    import tfviz
    bundle = tfviz.load("gpt-tiny")
    trace = bundle.trace("the animal didn't cross the street because it was too tired")
    trace["pattern", 0]          # (heads, query, key) attention of layer 0
"""
from tfviz.bundle import Bundle, load
from tfviz.config import ModelConfig, RunOptions, preset

__all__ = ["Bundle", "ModelConfig", "RunOptions", "load", "preset"]
