"""What lesson 14 explains about the LM head and decoding, read off traces, weights and the
results of ``tfviz.decoding`` (pure numpy: the runs themselves happen there).

- :func:`lm_head`: the last hidden state times Eᵀ gives the logits, checked against the
  model's own logits, and the top candidates at every position;
- :func:`beam_tree`: a beam search's tree laid out for drawing (kept beams, the best pruned
  expansions, the winner's path and greedy's path);
- :func:`greedy_vs_beam`: where greedy decoding and beam search part.

>>> import tfviz
>>> gpt = tfviz.load("gpt-tiny")
>>> r = lm_head(gpt.trace("the dog sat"), gpt.weights(), gpt.token_strings)
>>> r.hidden_name, r.tied, r.hidden.shape, r.logits.shape, r.gap < 1e-4
('blocks.2.hook_resid_post', True, (4, 64), (4, 600), True)
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tfviz.reference import softmax

TokenStrings = Callable[[Sequence[int]], list[str]]
TOP = 10  # candidates per position: as many as the generation steps keep


@dataclass(frozen=True)
class HeadReading:
    """The LM head on one text. ``top_*`` are (T, TOP): per position, the most probable next
    tokens (ties by lower id), their probabilities and logits."""

    hidden_name: str  # where the last hidden state h comes from in the trace
    hidden: np.ndarray  # (T, d)
    logits: np.ndarray  # (T, V) the model's own logits, from the trace
    recomputed: np.ndarray  # (T, V) h @ Eᵀ (or h @ W_U), in float64
    gap: float  # max |recomputed - logits|
    tied: bool  # the model has no W_U: its head multiplies by W_E transposed
    head_shape: tuple[int, int]  # (d, V) of the matrix the head multiplies by
    top_ids: np.ndarray
    top_probs: np.ndarray
    top_logits: np.ndarray
    top_tokens: tuple[tuple[str, ...], ...]


def last_hidden(trace) -> tuple[str, np.ndarray]:
    """(name, (T, d) array) of the vector the LM head reads at each position: the last block's
    output, or the final LayerNorm's output (with γ and β) for a model that has one."""
    a, cfg = trace.activations, trace.config
    if "ln_final.hook_normalized" in a:
        raise ValueError("a final LayerNorm needs its γ and β: use lm_head(), which has the weights")
    name = f"blocks.{cfg.n_layers - 1}.hook_resid_post"
    return name, np.asarray(a[name], dtype=np.float64)


def lm_head(trace, weights: Mapping[str, np.ndarray], token_strings: TokenStrings,
            top: int = TOP) -> HeadReading:
    """Recompute the logits from the last hidden state and the weights, and compare.

        logits = h Eᵀ        h: (T, d)   Eᵀ: (d, V)   logits: (T, V)

    (divided by s for a Granite, whose ``logits_scaling`` s is not 1)
    """
    a = trace.activations
    if "ln_final.hook_normalized" in a:  # recorded before γ and β (an RMSNorm has no β)
        beta = "ln_final.b" in weights
        name = "ln_final (with γ, β)" if beta else "ln_final (with γ)"
        hidden = (np.asarray(a["ln_final.hook_normalized"], dtype=np.float64)
                  * weights["ln_final.w"])  # (T, d)
        if beta:
            hidden = hidden + weights["ln_final.b"]
    else:
        name, hidden = last_hidden(trace)
    tied = "W_U" not in weights
    head = (weights["W_E"].T if tied else weights["W_U"]).astype(np.float64)  # (d, V)
    recomputed = hidden @ head / trace.config.logits_scaling  # (T, d) @ (d, V) -> (T, V)
    logits = np.asarray(a["logits"], dtype=np.float64)  # (T, V)
    probs = softmax(logits)  # (T, V)
    order = np.argsort(-probs, axis=-1, kind="stable")[:, :top]  # (T, top) ties: lower id
    rows = np.arange(len(logits))[:, None]
    return HeadReading(name, hidden, logits, recomputed, float(np.abs(recomputed - logits).max()),
                       tied, head.shape, order, probs[rows, order], logits[rows, order],
                       tuple(tuple(token_strings(r.tolist())) for r in order))


# --- beam search as a tree ------------------------------------------------------------------


@dataclass(frozen=True)
class TreeNode:
    """One drawn node. Step 0 is the prompt; step t + 1 holds candidates of ``tree[t]``."""

    step: int
    slot: int  # its row in the step's column, from the top
    parent_slot: int  # the parent's row in the previous column (-1: the prompt)
    token: int  # -1: the prompt, or a finished beam carried over unchanged
    label: str
    logprob: float  # log p(token | parent); 0 for a carry
    total: float  # the summed log-probability: what beams are ranked by
    kept: bool  # survived the step (one of the beam_width best)
    finished: bool  # ended with <eos> (a carry is finished too)
    best: bool  # on the path of the best final hypothesis
    greedy: bool  # on the path greedy decoding takes
    rank: int  # 1 = best of all the step's candidates


@dataclass(frozen=True)
class BeamTree:
    nodes: tuple[TreeNode, ...]
    scored: tuple[int, ...]  # per step: how many candidates were scored
    rows: int  # the most nodes in one column

    @property
    def total_scored(self) -> int:
        """Candidates scored over every step."""
        return sum(self.scored)

    @property
    def drawn(self) -> int:
        """Nodes drawn, the prompt's own node not counted."""
        return len(self.nodes) - 1


def beam_rows(search, continuations: Sequence[str], finished: str) -> list[dict]:
    """The lesson's table of ``search``'s hypotheses, best first: rank, the continuation's text
    (``continuations``, one a hypothesis), its tokens, its sum of log p to 4 decimals, and
    whether it ended (column ``finished``)."""
    return [{"rank": i + 1, "continuation": text, "tokens": len(h.new_ids),
             "sum of log p": round(h.logprob, 4), finished: "yes" if search.finished(h) else "no"}
            for i, (h, text) in enumerate(zip(search.hypotheses, continuations))]


def beam_tree(search, token_strings: TokenStrings, greedy_ids: Sequence[int] = (),
              per_beam: int = 3, prompt_label: str = "prompt") -> BeamTree:
    """Lay out ``search`` (``tfviz.decoding.beam_search_tree``) for a drawing: per step, the kept
    beams and each parent's ``per_beam`` best children (the other expansions are only counted).
    A column lists its parents' children in the parents' order, best first."""
    eos, greedy = search.eos_ids, tuple(greedy_ids)
    best = search.hypotheses[0].new_ids if search.hypotheses else ()

    def prefix_of(seq: tuple, whole: tuple) -> bool:
        return len(seq) <= len(whole) and whole[:len(seq)] == seq

    nodes = [TreeNode(0, 0, -1, -1, prompt_label, 0.0, 0.0, True, False, True, True, 1)]
    slots, seqs = [0], [()]  # per current beam: its row, its ids
    for t, s in enumerate(search.tree):
        rank = np.empty(len(s.total), dtype=int)
        rank[np.argsort(-s.total, kind="stable")] = np.arange(1, len(s.total) + 1)
        shown = []
        for parent in sorted(range(len(slots)), key=slots.__getitem__):
            rows = np.flatnonzero(s.parent == parent)
            rows = rows[np.argsort(-s.total[rows], kind="stable")]
            shown += [int(r) for i, r in enumerate(rows) if i < per_beam or s.kept[r]]
        row_slot = {r: i for i, r in enumerate(shown)}
        labels = token_strings([max(int(s.token[r]), 0) for r in shown])
        for r, label in zip(shown, labels):
            p, tok = int(s.parent[r]), int(s.token[r])
            seq = seqs[p] + (() if tok < 0 else (tok,))
            nodes.append(TreeNode(
                t + 1, row_slot[r], slots[p], tok, "(finished)" if tok < 0 else label,
                float(s.logprob[r]), float(s.total[r]), bool(s.kept[r]),
                tok < 0 or tok in eos, prefix_of(seq, best) and bool(s.kept[r]),
                prefix_of(seq, greedy), int(rank[r])))
        slots = [row_slot[r] for r in s.rows]
        seqs = [seqs[int(s.parent[r])] + (() if s.token[r] < 0 else (int(s.token[r]),))
                for r in s.rows]
    per_column = np.bincount([n.step for n in nodes])
    return BeamTree(tuple(nodes), tuple(len(s.total) for s in search.tree), int(per_column.max()))


@dataclass(frozen=True)
class GreedyVsBeam:
    greedy_ids: tuple[int, ...]
    greedy_logprob: float
    beam_ids: tuple[int, ...]
    beam_logprob: float
    parted: int | None  # the first new token (0-based) where they differ; None: the same
    pruned_at: int | None  # the step (0-based) at which greedy's prefix left the beam


def greedy_vs_beam(search, greedy_ids: Sequence[int], greedy_logprobs: Sequence[float]) -> GreedyVsBeam:
    """Compare greedy's continuation (its ids and each one's log-probability) with the best
    beam. Greedy runs as many steps as the beam search could."""
    g = tuple(int(i) for i in greedy_ids)
    b, b_lp = search.hypotheses[0]
    parted = next((i for i, (x, y) in enumerate(zip(g, b)) if x != y), None)
    if parted is None and len(g) != len(b):
        parted = min(len(g), len(b))
    pruned = None
    for t, s in enumerate(search.tree):
        if t < len(g) and not any(h.new_ids[:t + 1] == g[:t + 1] for h in s.beams):
            pruned = t
            break
    return GreedyVsBeam(g, float(sum(greedy_logprobs)), tuple(b), float(b_lp), parted, pruned)


def _said(text: str, ids: Sequence[int]) -> str:
    """A continuation as the verdict quotes it: its text, or why it has none. Tokens can have no
    text of their own: a checkpoint's embedding rows past its tokenizer's tokens (a vocabulary
    padded to a round size), or spaces alone.

    >>> _said(" a b", (1, 2)), _said("", (2,)), _said(" ", (7, 8, 2))
    ('a b', '(nothing: it ends at once)', '(3 tokens with no text)')
    """
    if text.strip():
        return text.strip()
    return "(nothing: it ends at once)" if len(ids) <= 1 else f"({len(ids)} tokens with no text)"


def greedy_vs_beam_verdict(cmp: GreedyVsBeam, greedy_text: str, beam_text: str, width: int) -> str:
    """The lesson's sentence on a :class:`GreedyVsBeam`: what each wrote, with its sum of log p,
    where they part, where greedy's path left the beam, and which text is the more likely.

    >>> print(greedy_vs_beam_verdict(GreedyVsBeam((1, 2), -3.0, (1, 4), -2.5, 1, 1), " a b", " a c", 2))
    Greedy writes “a b” (sum of log p = -3.000); beam search's best is “a c” (-2.500). They part at new token 2. Greedy's path left the beam at step 2: 2 other partial continuations had higher sums there. Beam search found the more likely text, as it is meant to.
    """
    said_g = _said(greedy_text, cmp.greedy_ids)
    said_b = _said(beam_text, cmp.beam_ids)
    if cmp.parted is None:
        return (f"Here greedy and beam search agree: both write “{said_b}” "
                f"(sum of log p = {cmp.beam_logprob:.3f}). Try a wider beam or another prompt.")
    lost = (f" Greedy's path left the beam at step {cmp.pruned_at + 1}: {width} other "
            f"partial continuations had higher sums there." if cmp.pruned_at is not None else "")
    verdict = ("Beam search found the more likely text, as it is meant to."
               if cmp.beam_logprob > cmp.greedy_logprob else
               "Here greedy's text is the more likely one: beam search is a heuristic, and "
               "it pruned a prefix that would have led somewhere better.")
    short = (" Without length normalisation, a short finished beam often wins: every extra token "
             "adds a negative log-probability." if len(cmp.beam_ids) < len(cmp.greedy_ids) else "")
    return (f"Greedy writes “{said_g}” (sum of log p = {cmp.greedy_logprob:.3f}); beam "
            f"search's best is “{said_b}” ({cmp.beam_logprob:.3f}). They part at new token "
            f"{cmp.parted + 1}.{lost} {verdict}{short}")


# --- words for each generation step ----------------------------------------------------------


def step_notes(steps, contexts: Sequence[str], *, strategy: str, temperature: float = 1.0,
               top_k: int | None = None, top_p: float | None = None, vocab: int) -> list[list[str]]:
    """Per step of a ``Generation``: the text read so far with the token it chose, and one
    sentence on what the filters kept and how the token was chosen.

    ``contexts[i]`` is the text before step i (cut at its start by the caller)."""
    notes = []
    for s, before in zip(steps, contexts):
        tok = s.tokens[s.candidates.index(s.chosen)]
        p_after, p_before = s.chosen_prob, s.before[s.candidates.index(s.chosen)]
        if strategy == "greedy":
            how = f"Greedy takes the most probable token: {tok} (p = {p_before:.3f})."
        else:
            warm = "" if temperature == 1 else f" at temperature {temperature:g}"
            kept = []
            if top_k is not None:
                kept.append(f"top-k keeps the {min(top_k, vocab)} most probable")
            if top_p is not None:
                kept.append(f"top-p keeps the smallest set whose total reaches {top_p:g} "
                            f"(the nucleus, {s.n_kept} token{'s' if s.n_kept != 1 else ''})")
            if kept:
                how = (f"Of {vocab} tokens{warm}, " + " and then ".join(kept) + f": {s.n_kept} "
                       f"kept, holding {s.kept_mass:.3f} of the probability, renormalised to 1. "
                       f"Drawn: {tok}, p = {p_before:.3f} before and {p_after:.3f} after.")
            else:
                how = (f"Sampled from all {vocab} tokens{warm}. Drawn: {tok} "
                       f"(p = {p_after:.3f}).")
        notes.append([f"{before} ▸ {tok}", how])
    return notes
