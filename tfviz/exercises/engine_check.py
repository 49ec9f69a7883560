"""Run a hand-calculation exercise through the real model, to show both agree.

The exercise's weight matrices are copied into a one-layer tfviz Transformer without
positions or biases, the vectors are fed in place of token embeddings, and the attention
pattern and per-head outputs are read back from the trace. Imports torch and the engine
only when called.

>>> import numpy as np
>>> from tfviz.exercises.attention import select
>>> X = np.array([[0, 1, 1, 1, 1, 0], [1, 1, 0, -1, -1, 1]], dtype=float)
>>> w, z = engine_attention(X, [(select(6, [0, 1]), select(6, [2, 3]), select(6, [4, 5]))])
>>> w[0][0].round(4).tolist(), z[0][0].round(4).tolist()
([0.8044, 0.1956], [0.6089, 0.1956])

The engine works in float32 (error ~1e-7); the closest of these to a rounding boundary,
0.608859, is 9e-6 away, so every CPU prints the same 4 decimals.
"""
from __future__ import annotations

import numpy as np


def engine_config(d_model: int, n_heads: int, d_head: int, scale: bool = True):
    """A one-layer config whose attention is exactly the hand calculation's."""
    from tfviz.config import ModelConfig

    return ModelConfig(name="exercise", arch="encoder", vocab_size=1, d_model=d_model,
                       n_heads=n_heads, head_dim=d_head, n_layers=1, d_ff=1, max_seq_len=64,
                       positional="none", bias=False, scale_attn=scale, norm="post",
                       final_norm=False, tie_embeddings=True)


def engine_attention(X, heads, causal: bool = False, scale: bool = True
                     ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(weights of each head (n × n), output z of each head (n × d_head)) from the engine.

    ``heads`` is a list of (W_q, W_k, W_v), each d_model × d_head (the engine needs the
    value size equal to the key size).
    """
    import torch

    from tfviz.config import RunOptions
    from tfviz.model import Transformer
    from tfviz.trace import run_with_trace

    X = np.asarray(X, dtype=np.float32)  # (n, d)
    d, dh = X.shape[1], np.asarray(heads[0][0]).shape[1]
    model = Transformer(engine_config(d, len(heads), dh, scale))
    attn = model.blocks[0].attn

    def stacked(i: int) -> torch.Tensor:  # (H·dh, d): nn.Linear keeps out × in
        cols = np.concatenate([np.asarray(h[i], dtype=np.float32) for h in heads], axis=1)
        return torch.from_numpy(cols.T.copy())

    with torch.no_grad():
        attn.W_q.weight.copy_(stacked(0))
        attn.W_k.weight.copy_(stacked(1))
        attn.W_v.weight.copy_(stacked(2))
    trace = run_with_trace(model, inputs_embeds=X, options=RunOptions(causal=causal, scale=scale),
                           names=["blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z"])
    pattern = np.asarray(trace["blocks.0.attn.hook_pattern"], dtype=float)  # (H, n, n)
    z = np.asarray(trace["blocks.0.attn.hook_z"], dtype=float)  # (n, H, dh)
    if pattern.ndim == 4:  # a batch axis was kept
        pattern, z = pattern[0], z[0]
    return [pattern[h] for h in range(len(heads))], [z[:, h, :] for h in range(len(heads))]
