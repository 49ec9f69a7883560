"""Decoding: from the LM head's logits to text, and the memory a KV cache needs (the library the
decoding and KV-cache lessons will draw from).

No streamlit: pages call these and draw what they return. One idea per file:

    distribution.py  next_token_distribution: temperature, top-k, top-p (and every stage)
    generate.py      generate: greedy or seeded sampling, with or without the KV cache
    beam.py          beam_search, and beam_search_tree with every expansion for a page
    objective.py     lm_loss_per_token: cross-entropy on shifted targets, per token
    head.py          unembedding, is_tied: the matrix the LM head multiplies by
    prompt.py        reading a prompt; prompt_with_room keeps its end when it is too long
    memory.py        kv_cache_bytes, and published models' sizes for a calculator

>>> import tfviz
>>> gpt = tfviz.load("gpt-tiny")
>>> generate(gpt, "the dog", strategy="sample", top_p=0.9, seed=3, max_new_tokens=5).text
' did not reach the bridge'
>>> [gpt.tokenizer.decode(ids) for ids, logprob in beam_search(gpt, "the dog", 2, 5)]
["didn't leave the bridge", "didn't reach the bridge"]
"""
from tfviz.decoding.beam import BeamSearch, BeamStep, Hypothesis, beam_search, beam_search_tree
from tfviz.decoding.distribution import Filtered, filter_distribution, next_token_distribution
from tfviz.decoding.generate import Generation, Step, generate
from tfviz.decoding.head import is_tied, unembedding
from tfviz.decoding.memory import (PUBLISHED_MODELS, PublishedModel, config_kv_cache_bytes,
                                   kv_cache_bytes)
from tfviz.decoding.objective import TokenLoss, lm_loss_per_token
from tfviz.decoding.prompt import generating_models, prompt_with_room

__all__ = ["BeamSearch", "BeamStep", "Filtered", "Generation", "Hypothesis", "PUBLISHED_MODELS",
           "PublishedModel", "Step", "TokenLoss", "beam_search", "beam_search_tree",
           "config_kv_cache_bytes", "filter_distribution", "generate", "generating_models",
           "is_tied", "kv_cache_bytes", "lm_loss_per_token", "next_token_distribution",
           "prompt_with_room", "unembedding"]
