"""A sparse mixture-of-experts feed-forward layer.

    router logits  h(x) = W_r x                  (hook_router_logits)
    gates          p = softmax(h(x))             (hook_gate_probs)
    chosen set     T = top-k of p                (hook_expert_indices)
    output         y = sum over i in T of p_i E_i(x)   (weights in hook_expert_weights)
    expert         E_i(x) = act(x W_1^i + b_1^i) W_2^i + b_2^i   (an ``Expert``: one FFN each)

k = 1 is a Switch layer. Each expert takes at most ``capacity`` tokens per call; the slots
that do not fit are dropped (hook_dropped) and those tokens pass on through the residual
connection only. First choices are served before second choices, earlier tokens first.

Batch-invariant by construction. Production MoE layers gather the tokens routed to each
expert and run the expert on just those rows. We do not: a matmul's kernel (and so its
rounding) can depend on how many rows it is given, so a token's output would change in the
last bits when a *later* token joined or left its expert, and a causal model would seem to
see the future. Instead every expert runs on all N rows of the call, whose shape depends
only on N, never on the routing; unchosen and dropped slots get weight exactly 0, and the
weighted outputs are added in a fixed expert order. A token's row is then the same to the
bit whichever other tokens share its experts (tests/test_model_moe.py). It costs E times
the FFN arithmetic, which is nothing at our sizes.

One real leak remains possible, and it is information, not rounding: with k ≥ 2 and a
tight capacity, a later token's *first* choice is queued before an earlier token's
*second* choice and can push it out of the expert.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tfviz.config import ModelConfig
from tfviz.model.ffn import activation
from tfviz.model.hooks import HookPoint


class Expert(nn.Module):
    """One expert: E(x) = act(x W_1 + b_1) W_2 + b_2, a feed-forward network like ``MLP``.

    It has no hooks: the layer records which experts each token went to and with what weight,
    not each expert's hidden units.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.act = activation(cfg.activation)
        self.W_in = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)  # W_1, b_1
        self.W_out = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)  # W_2, b_2

    def forward(self, x: Tensor) -> Tensor:
        return self.W_out(self.act(self.W_in(x)))  # (N, d_ff) inside, (N, d) out


class MoE(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg) for _ in range(cfg.n_experts))
        self.hook_router_logits = HookPoint()  # (B, T, E)
        self.hook_gate_probs = HookPoint()  # (B, T, E)
        self.hook_expert_indices = HookPoint()  # (B, T, k) chosen experts, best first
        self.hook_expert_weights = HookPoint()  # (B, T, k) weight of each chosen expert (0 if dropped)
        self.hook_dropped = HookPoint()  # (B, T, k) True where the slot did not fit
        self.hook_expert_counts = HookPoint()  # (B, E) tokens each expert processed

    def capacity(self, n_tokens: int, k: int) -> int | None:
        f = self.cfg.moe_capacity_factor
        return None if f is None else max(1, math.ceil(f * n_tokens * k / self.cfg.n_experts))

    def forward(self, x: Tensor, top_k: int | None = None) -> tuple[Tensor, Tensor]:
        """Returns the output (B, T, d) and the load-balancing auxiliary loss (a scalar)."""
        B, T, d = x.shape
        E, k = self.cfg.n_experts, top_k or self.cfg.moe_top_k
        flat = x.reshape(B * T, d)  # (N, d)
        logits = self.hook_router_logits(self.router(x))  # (B, T, E)
        probs = self.hook_gate_probs(torch.softmax(logits, dim=-1))  # (B, T, E)
        top_p, top_i = probs.topk(k, dim=-1)  # (B, T, k)
        if self.cfg.moe_renormalize:
            top_p = top_p / top_p.sum(-1, keepdim=True)

        # Capacity: fill each expert slot-major (all first choices, then second choices).
        slot_major = top_i.reshape(B * T, k).T.reshape(-1)  # (k*N,)
        one_hot = F.one_hot(slot_major, E)  # (k*N, E)
        cap = self.capacity(B * T, k)
        if cap is None:
            keep = torch.ones(B * T, k, dtype=torch.bool)
        else:
            rank = (one_hot.cumsum(0) * one_hot).sum(-1) - 1  # (k*N,) place in its expert's queue
            keep = (rank < cap).reshape(k, B * T).T  # (N, k)
        keep = keep.reshape(B, T, k)
        weights = top_p * keep
        self.hook_expert_indices(top_i)
        self.hook_expert_weights(weights)
        self.hook_dropped(~keep)
        counts = F.one_hot(top_i, E).mul(keep[..., None]).sum((1, 2))  # (B, E)
        self.hook_expert_counts(counts)

        # Each token's weight for every expert: 0 unless chosen and kept.
        gate = torch.zeros(B * T, E, dtype=flat.dtype).scatter_add(
            1, top_i.reshape(-1, k), weights.reshape(-1, k))  # (N, E)
        out = torch.zeros_like(flat)  # (N, d)
        for e, expert in enumerate(self.experts):  # fixed order; all N rows, whatever the routing
            out = out + gate[:, e:e + 1] * expert(flat)  # (N, d)

        # Switch-style balance loss: E * sum_e (share of tokens whose first choice is e) * (mean gate of e).
        share = F.one_hot(top_i[..., 0], E).float().mean((0, 1))  # (E,)
        aux = E * (share * probs.mean((0, 1))).sum()
        return out.reshape(B, T, d), aux
