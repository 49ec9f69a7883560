"""Small random Mixtral and GraniteMoe checkpoints for the tests (tests/unit/hf/test_moe.py), and
transformers' own forward pass on one as the reference, down to the experts its routers chose.

A checkpoint is made as tests/support/llama_folders.py makes a Llama's (transformers builds it,
its weights are widened, ``save_pretrained`` writes it beside a tokenizer trained here), with
``num_local_experts`` experts of which each token takes ``num_experts_per_tok``. transformers 5
computes with its experts fused (``gate_up_proj``) and saves them as the hub's files hold them:
Mixtral's ``experts.{e}.w1/w2/w3``, Granite's fused ``input_linear``/``output_linear``.

The routers' choices are read where transformers makes them: a forward hook on each layer's
router module (``MixtralTopKRouter``, ``GraniteMoeTopKRouter``) catches the (logits, weights,
indices) it returns, so the experts compared are the ones its forward pass used, not a
recomputation. Logits, patterns and the residual stream are compared with llama_folders'
``assert_matches`` and its tolerance (the reasons are in that module's docstring); the chosen
experts exactly, and their weights with the same tolerance.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.support.llama_folders import TEXT, assert_matches, make_checkpoint

#: model_type -> the tokenizer kind its checkpoints ship: Mixtral's is Mistral's SentencePiece
#: BPE with byte fallback (as transformers 5 saves it), Granite's byte-level BPE adding nothing.
TOKENIZERS = {"mixtral": "metaspace", "granitemoe": "qwen"}


def make_moe_checkpoint(folder: Path, model_type: str = "mixtral", *, experts: int = 4, top_k: int = 2,
                        d_ff: int = 24, **config):
    """A random Mixtral or GraniteMoe checkpoint in ``folder``; returns transformers' model.
    ``config``: more of its config fields (head_dim, tie_word_embeddings, the multipliers, ...)
    and make_checkpoint's sizes (heads, kv_heads, d, layers)."""
    config.setdefault("tokenizer", TOKENIZERS[model_type])
    return make_checkpoint(folder, model_type, d_ff=d_ff, num_local_experts=experts,
                           num_experts_per_tok=top_k, **config)


def moe_reference(folder: Path, ids: list[int]) -> dict:
    """transformers' forward pass on ``ids`` from the saved folder, in float32 with eager
    attention and ``output_router_logits``: logits (T, V), patterns [(H, T, T)], resid (every
    block's input, then the last block's output before the final norm), and per layer the
    router's logits (T, E), chosen experts (T, k) and their weights (T, k)."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    routers = [m for m in model.modules() if type(m).__name__.endswith("TopKRouter")]
    assert len(routers) == model.config.num_hidden_layers
    chosen, last = [None] * len(routers), {}

    def keep(i):
        return lambda module, args, output: chosen.__setitem__(i, output)

    handles = [r.register_forward_hook(keep(i)) for i, r in enumerate(routers)]
    handles.append(model.model.layers[-1].register_forward_hook(
        lambda module, args, output: last.update(x=output[0] if isinstance(output, tuple) else output)))
    try:
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True,
                        output_router_logits=True)
    finally:
        for handle in handles:
            handle.remove()
    return {"logits": out.logits[0].numpy(), "patterns": [a[0].numpy() for a in out.attentions],
            "resid": [h[0].numpy() for h in out.hidden_states[:-1]] + [last["x"][0].numpy()],
            "router_logits": [r.numpy() for r in out.router_logits],
            "indices": [c[2].numpy() for c in chosen], "weights": [c[1].numpy() for c in chosen]}


def moe_parity(folder: Path, bundle, text: str = TEXT) -> dict[str, float]:
    """Compare the ids' logits, every pattern, the residual stream and every layer's routing
    with transformers'; the chosen experts must be the same, token by token, in the same order
    (best first). Returns each comparison's largest difference relative to its scale."""
    ids = bundle.encode(text)
    ref = moe_reference(folder, ids)
    tr = bundle.trace(text)
    L = bundle.config.n_layers
    errors = {"logits": assert_matches(tr["logits"], ref["logits"], "logits")}
    for i in range(L):
        p = f"blocks.{i}."
        errors[f"pattern {i}"] = assert_matches(tr["pattern", i], ref["patterns"][i], f"layer {i}'s pattern")
        errors[f"resid_pre {i}"] = assert_matches(tr[p + "hook_resid_pre"], ref["resid"][i], f"resid_pre {i}")
        errors[f"router {i}"] = assert_matches(tr[p + "mlp.hook_router_logits"], ref["router_logits"][i],
                                               f"layer {i}'s router logits")
        np.testing.assert_array_equal(tr[p + "mlp.hook_expert_indices"], ref["indices"][i],
                                      err_msg=f"layer {i}'s chosen experts")
        errors[f"weights {i}"] = assert_matches(tr[p + "mlp.hook_expert_weights"], ref["weights"][i],
                                                f"layer {i}'s expert weights")
    errors["resid_post last"] = assert_matches(tr[f"blocks.{L - 1}.hook_resid_post"], ref["resid"][L], "last block")
    # not a comparison of near-uniform tensors: peaked maps, spread logits (before Granite's
    # division), routers that use several experts
    assert min(p.max() for p in ref["patterns"]) > 0.5
    assert ref["logits"].std() * bundle.config.logits_scaling > 0.5
    assert all(len(np.unique(r)) > 1 for r in ref["indices"])
    return errors
