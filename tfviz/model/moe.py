"""A sparse mixture-of-experts feed-forward layer.

    router logits  h(x) = W_r x                  (hook_router_logits)
    gates          p = softmax(h(x))             (hook_gate_probs)
    chosen set     T = top-k of p                (hook_expert_indices)
    output         y = sum over i in T of w_i E_i(x)   (w in hook_expert_weights)
    expert         E_i(x) = act(x W_1^i + b_1^i) W_2^i + b_2^i   (an ``Expert``: one FFN each)
    gated expert   E_i(x) = (act(x W_gate^i) * (x W_in^i)) W_out^i   (SwiGLU: Mixtral, Granite)

k = 1 is a Switch layer. The weights w follow the config's router rule (``moe_router``):

    softmax_topk   w_i = p_i, or p_i / sum over j in T of p_j with ``moe_renormalize`` (Mixtral)
    topk_softmax   T = top-k of h itself, w = softmax over T of h_i (Granite)

The two rules choose the same experts and, in exact arithmetic, give the same renormalised
weights (e^h_i / sum over T of e^h_j); each is computed in its own model's order, so a
checkpoint's ties and last bits are its own. ``hook_gate_probs`` is softmax(h) over every
expert under both rules, the probabilities a lesson compares.

Capacity, counted as the sentence goes. With a capacity factor f, by the time an expert has
seen the first t tokens of a sentence it may have served at most ceil(f · t · k / E) of
them; a chosen expert that is already that full drops the token's slot (hook_dropped), and
the token passes on through the residual connection only. Over a whole sentence of n tokens
this is the usual ceil(f · n · k / E) slots per expert. Switch Transformer counts the
capacity over a whole batch instead, and in a decoder that is a real leak: how many tokens
come *after* a token would decide whether it is served (a 6-token prefix dropped three
tokens that the 17-token sentence kept), and a KV-cached step, which reads one token, would
disagree with a re-read of the whole text. Counted per sentence and per prefix, a token's
fate depends only on itself and the tokens before it, and ``served`` (tokens each expert has
served so far, carried in the KV cache) lets :meth:`MoE.forward` continue exactly where the
earlier tokens left off.

Batch-invariant by construction. Production MoE layers gather the tokens routed to each
expert and run the expert on just those rows. We do not: a matmul's kernel (and so its
rounding) can depend on how many rows it is given, so a token's output would change in the
last bits when a *later* token joined or left its expert, and a causal model would seem to
see the future. Instead every expert runs on all N rows of the call, whose shape depends
only on N, never on the routing; unchosen and dropped slots get weight exactly 0, and the
weighted outputs are added in a fixed expert order. A token's row is then the same to the
bit whichever other tokens share its experts (tests/unit/model/test_moe.py). It costs E times
the FFN arithmetic, which is nothing at our sizes.
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
    """One expert: E(x) = act(x W_1 + b_1) W_2 + b_2, a feed-forward network like ``MLP``;
    gated (SwiGLU, GeGLU) as ``MLP`` is: (act(x W_gate) * (x W_in)) W_out.

    It has no hooks: the layer records which experts each token went to and with what weight,
    not each expert's hidden units.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.act = activation(cfg.activation)
        self.W_in = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)  # W_1, b_1 (gated: up)
        self.W_out = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)  # W_2, b_2 (gated: down)
        # Made after W_in and W_out, as in MLP, so a plain expert's seeded weights stay as they were.
        self.W_gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias) if cfg.gated else None

    def forward(self, x: Tensor) -> Tensor:
        if self.W_gate is None:
            return self.W_out(self.act(self.W_in(x)))  # (N, d_ff) inside, (N, d) out
        hidden = self.act(self.W_gate(x)) * self.W_in(x)  # (N, d_ff): act(x W_gate) * x W_in
        return self.W_out(hidden)  # (N, d)


class MoE(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg) for _ in range(cfg.n_experts))
        self.hook_router_logits = HookPoint()  # (B, T, E)
        self.hook_gate_probs = HookPoint()  # (B, T, E) softmax over every expert
        self.hook_expert_indices = HookPoint()  # (B, T, k) chosen experts, best first
        self.hook_expert_weights = HookPoint()  # (B, T, k) weight of each chosen expert (0 if dropped)
        self.hook_dropped = HookPoint()  # (B, T, k) True where the slot did not fit
        self.hook_expert_counts = HookPoint()  # (B, E) tokens each expert processed

    def capacity(self, n_tokens: int, k: int) -> int | None:
        """Slots per expert for the first ``n_tokens`` tokens of a sentence; None: no limit."""
        f = self.cfg.moe_capacity_factor
        return None if f is None else max(1, math.ceil(f * n_tokens * k / self.cfg.n_experts))

    def forward(self, x: Tensor, top_k: int | None = None, served: Tensor | None = None,
                offset: int = 0) -> tuple[Tensor, Tensor, Tensor | None]:
        """x: (B, T, d), positions offset..offset+T-1 of B sentences. ``served`` (B, E): tokens
        each expert has already served for the earlier positions (from the KV cache; None at
        the start of a sentence).

        Returns the output (B, T, d), the load-balancing auxiliary loss (a scalar) and the
        grown ``served`` (B, E), for the next call of the same sentences (None without a
        capacity: then nothing is counted).
        """
        B, T, d = x.shape
        E, k = self.cfg.n_experts, top_k or self.cfg.moe_top_k
        flat = x.reshape(B * T, d)  # (N, d)
        logits = self.hook_router_logits(self.router(x))  # (B, T, E)
        probs = self.hook_gate_probs(torch.softmax(logits, dim=-1))  # (B, T, E)
        if self.cfg.moe_router == "topk_softmax":  # Granite: the k largest logits, then their softmax
            top_h, top_i = logits.topk(k, dim=-1)  # (B, T, k)
            top_p = torch.softmax(top_h, dim=-1)  # (B, T, k): adds up to 1
        else:  # softmax over every expert, then the k largest
            top_p, top_i = probs.topk(k, dim=-1)  # (B, T, k)
            if self.cfg.moe_renormalize:
                top_p = top_p / top_p.sum(-1, keepdim=True)  # (B, T, k): adds up to 1

        # Capacity: token by token in sentence order, each against the room its prefix allows.
        if self.cfg.moe_capacity_factor is None:  # no limit: nothing to count
            keep = torch.ones(B, T, k, dtype=torch.bool)
        else:  # plain Python on small ints: a torch op per token cost 3x the layer's matmuls
            rooms = [self.capacity(offset + t + 1, k) for t in range(T)]  # ceil(f*tokens so far*k/E)
            counts = [[0] * E for _ in range(B)] if served is None else served.tolist()
            fits = []
            for row, chosen in zip(counts, top_i.tolist()):  # row: (E,), chosen: (T, k)
                for t, experts in enumerate(chosen):  # the k experts of a token are distinct
                    for e in experts:
                        fits.append(row[e] < rooms[t])
                        row[e] += fits[-1]
            keep = torch.tensor(fits, dtype=torch.bool).reshape(B, T, k)
            served = torch.tensor(counts, dtype=torch.long)
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
        return out.reshape(B, T, d), aux, served
