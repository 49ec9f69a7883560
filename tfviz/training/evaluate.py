"""The numbers a bundle's manifest records, measured on held-out data in a few seconds.

- ``lm_val_loss``: mean next-token cross-entropy (nats per token) on held-out sentences
- ``coref_metrics``: does "... it refers to the" continue with the right noun, and which head
  looks at the right noun from there
- ``mlm_metrics``: how often bert-tiny recovers the tokens hidden by BERT-style masking
- ``encoder_coref_metrics``: which of bert-tiny's heads links "it" to the right noun in the
  notes' sentence, chosen on the training combinations and scored on the held-out ones
- ``reverse_metrics``: exact-match of greedy decoding, and the cross-attention anti-diagonal

Every function is deterministic (fixed data, fixed masking seed), so the test suite can
re-run it on the shipped weights and compare with the manifest.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from tfviz.analysis.coref import antecedent_weights, chosen_head, coref_spans, preference_share
from tfviz.data.coref import FORMS, CorefCombo, Surface, coref_split, coref_statement
from tfviz.data.lexicon import AGENT_ADJS
from tfviz.model import Transformer
from tfviz.trace import run_with_trace
from tfviz.training.batches import IGNORE, lm_batch, mlm_batch, pad, seq2seq_batch


def rounded(x: float) -> float:
    """Round for the manifest: 4 decimals is plenty and keeps reruns byte-identical."""
    return round(float(x), 4)


@torch.no_grad()
def lm_val_loss(model: Transformer, rows: Sequence[Sequence[int]], batch: int = 256) -> float:
    """Token-weighted mean cross-entropy over all rows (no MoE aux loss)."""
    total, count = 0.0, 0
    for i in range(0, len(rows), batch):
        x, y = lm_batch(rows[i : i + batch])
        logits = model(x)  # (B, T, V)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=IGNORE,
                                 reduction="sum").item()
        count += int((y != IGNORE).sum())
    return total / count


def coref_metrics(model: Transformer, tok, items: Sequence[tuple[str, str, str]]) -> dict:
    """Probe held-out "... because it was too tired. it refers to the" prompts.

    accuracy: share where the most likely next token is the answer noun (" animal").
    head share[l][h]: share of prompts where head h of layer l, looking from the last token
    (the one that predicts the noun), gives more weight to the answer noun than to the other.
    """
    rows = [tok.encode(prefix) for prefix, _, _ in items]
    trace = run_with_trace(model, pad(rows, tok.pad_id), names=lambda n: n.endswith("attn.hook_pattern"))
    patterns = trace.stack("pattern", axis=1)  # (B, L, H, T, T)
    correct = prefers = 0
    wins = np.zeros(patterns.shape[1:3])  # (L, H)
    for i, ((_, answer, distractor), row) in enumerate(zip(items, rows)):
        last = len(row) - 1
        logits = trace.logits[i, last]  # (V,)
        a, d = tok.encode(answer)[0], tok.encode(distractor)[0]
        correct += int(logits.argmax()) == a
        prefers += logits[a] > logits[d]
        spans = coref_spans([tok.id_to_token(t) for t in row], probe="last")
        if spans is None:
            raise ValueError(f"no coreference positions found in {items[i][0]!r}")
        _, agent, place = spans
        agent_is_answer = tok.decode([row[j] for j in agent]).strip() == answer
        w = antecedent_weights(patterns[i], last, [agent, place])  # (L, H, 2)
        right, wrong = (w[..., 0], w[..., 1]) if agent_is_answer else (w[..., 1], w[..., 0])
        wins += right > wrong
    share = wins / len(items)
    layer, head = np.unravel_index(int(share.argmax()), share.shape)
    return {
        "coref_accuracy": rounded(correct / len(items)),
        "coref_prefers_answer": rounded(prefers / len(items)),
        "coref_head": {"layer": int(layer), "head": int(head), "share": rounded(share[layer, head])},
        "coref_head_shares": [[rounded(s) for s in row] for row in share],
        "coref_items": len(items),
    }


@torch.no_grad()
def mlm_metrics(model: Transformer, tok, rows: Sequence[Sequence[int]], seed: int) -> dict:
    """Mask held-out rows the BERT way with a fixed seed; accuracy of recovering the originals.

    masked_accuracy: positions shown as [MASK]; selected_accuracy: all chosen 15% (incl. the
    10% random and 10% unchanged ones); loss: mean cross-entropy on the chosen positions.
    """
    gen = torch.Generator().manual_seed(seed)
    x, y, mask = mlm_batch(rows, gen, mask_id=tok.mask_id, vocab_size=tok.vocab_size, pad_id=tok.pad_id)
    logits = model(x, attention_mask=mask)  # (B, T, V)
    chosen = y != IGNORE
    hit = (logits.argmax(-1) == y) & chosen
    shown_mask = chosen & (x == tok.mask_id)
    loss = F.cross_entropy(logits[chosen], y[chosen]).item()
    return {
        "masked_accuracy": rounded(hit[shown_mask].sum() / shown_mask.sum()),
        "selected_accuracy": rounded(hit.sum() / chosen.sum()),
        "mlm_val_loss": rounded(loss),
        "masked_positions": int(shown_mask.sum()),
        "selected_positions": int(chosen.sum()),
        "selected_share": rounded(chosen.sum() / mask.sum()),
    }


def _statement_items(model: Transformer, tok, combos: Sequence[CorefCombo],
                     surface: Surface = Surface()) -> list[tuple[np.ndarray, tuple, str]]:
    """(patterns (L, H, T, T), (probe, agent, place) token spans, answer) for the notes'
    sentence of each combination, read in one padded batch (padding masked out)."""
    rows = [tok.encode(coref_statement(*c, surface)) for c in combos]
    mask = pad([[1] * len(r) for r in rows])  # (B, T): 1 = real token
    trace = run_with_trace(model, pad(rows, tok.pad_id), attention_mask=mask,
                           names=lambda n: n.endswith("attn.hook_pattern"))
    patterns = trace.stack("pattern", axis=1)  # (B, L, H, T, T)
    items = []
    for combo, row, p in zip(combos, rows, patterns):
        spans = coref_spans([tok.id_to_token(t) for t in row])
        if spans is None:
            raise ValueError(f"no coreference positions found in {coref_statement(*combo, surface)!r}")
        items.append((p, spans, "agent" if combo.adj in AGENT_ADJS else "place"))
    return items


def encoder_coref_metrics(model: Transformer, tok, seed: int = 0) -> dict:
    """Which head, looking from "it", gives the right noun more weight than the other, in
    "the animal didn't cross the street because it was too tired." (and every other
    combination of our words)?

    The head is chosen by its share on the combinations the corpus contained (coref_split's
    training part) and scored on the held-out ones, which the model never read. The share is
    also given for each kind of answer (a head that always looks at the agent scores 1 on
    one and 0 on the other) and for each way of writing the sentence (FORMS).
    """
    train, heldout = coref_split(seed)
    selection = preference_share(_statement_items(model, tok, train))
    items = _statement_items(model, tok, heldout)
    shares = preference_share(items)
    head = chosen_head(selection, shares)
    by_answer = {kind: preference_share([i for i in items if i[2] == kind])[head.layer, head.head]
                 for kind in ("agent", "place")}
    by_form = {form: preference_share(_statement_items(model, tok, heldout, surface))[head.layer, head.head]
               for form, surface in FORMS.items()}
    return {
        "coref_head": {"layer": head.layer, "head": head.head, "share": rounded(head.share)},
        "coref_head_shares": [[rounded(s) for s in row] for row in shares],
        "coref_head_selection_shares": [[rounded(s) for s in row] for row in selection],
        "coref_head_by_answer": {k: rounded(v) for k, v in by_answer.items()},
        "coref_head_by_form": {k: rounded(v) for k, v in by_form.items()},
        "coref_items": len(items),
        "coref_selection_items": len(train),
    }


@torch.no_grad()
def greedy_reverse(model: Transformer, sources: Sequence[Sequence[int]], bos_id: int, eos_id: int,
                   max_len: int) -> list[list[int]]:
    """Greedy decoding for a batch of sources (full recompute each step, padding masked).

    Each output stops before its first <eos>: [[4, 5, 6]] -> [[6, 5, 4]] for a trained model.
    """
    enc = pad(sources)  # (B, S)
    enc_mask = pad([[1] * len(s) for s in sources], 0, length=enc.shape[1])  # (B, S)
    dec = torch.full((len(sources), 1), bos_id, dtype=torch.long)  # (B, 1)
    for _ in range(max_len):
        logits = model(dec, enc_ids=enc, enc_attention_mask=enc_mask)  # (B, t, V)
        dec = torch.cat([dec, logits[:, -1].argmax(-1, keepdim=True)], dim=1)  # (B, t + 1)
        if (dec == eos_id).any(dim=1).all():
            break
    out = []
    for row in dec[:, 1:].tolist():
        out.append(row[: row.index(eos_id)] if eos_id in row else row)
    return out


def reverse_metrics(model: Transformer, tok, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> dict:
    """Exact match of greedy decoding, and how strongly each cross-attention head reads the
    mirrored source position (decoder step t predicts source[n - 1 - t]: the anti-diagonal)."""
    sources = [list(s) for s, _ in pairs]
    max_len = max(len(t) for _, t in pairs) + 1
    outputs = greedy_reverse(model, sources, tok.bos_id, tok.eos_id, max_len)
    exact = sum(out == list(t) for out, (_, t) in zip(outputs, pairs))
    enc, enc_mask, dec_in, _ = seq2seq_batch(pairs, tok.bos_id, tok.eos_id, tok.pad_id)
    trace = run_with_trace(model, dec_in, enc_ids=enc, enc_attention_mask=enc_mask,
                           names=lambda n: n.endswith("cross_attn.hook_pattern"))
    L, H = model.cfg.n_layers, model.cfg.n_heads
    on_diag = np.zeros((L, H))
    n_steps = 0
    for i, src in enumerate(sources):
        n = len(src)
        t, s = np.arange(n), n - 1 - np.arange(n)  # decoder step t reads source position n-1-t
        for layer in range(L):
            p = trace[f"blocks.{layer}.cross_attn.hook_pattern"][i]  # (H, T_dec, S)
            on_diag[layer] += p[:, t, s].sum(-1)
        n_steps += n
    on_diag /= n_steps
    layer, head = np.unravel_index(int(on_diag.argmax()), on_diag.shape)
    return {
        "exact_match": rounded(exact / len(pairs)),
        "heldout_examples": len(pairs),
        "anti_diagonal_head": {"layer": int(layer), "head": int(head), "weight": rounded(on_diag[layer, head])},
        "anti_diagonal_weights": [[rounded(w) for w in row] for row in on_diag],
    }
