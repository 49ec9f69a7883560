"""Where moe-tiny's router sends tokens, measured on held-out sentences for the manifest.

For each MoE layer:

- load: share of tokens whose first choice is each expert (1/E each would be perfectly even);
- counts: a token-class x expert table; a token's class is ``word_class`` of the word it
  belongs to ("␣cat" + "s" are both "noun");
- concentration: per class, the share of its tokens that went to its favourite expert
  (1.0 = always the same expert, 1/E = spread evenly);
- dropped: share of token slots that did not fit an expert's capacity.

Each sentence is run on its own, as the app does, so capacity is counted per sentence.
The layout matches what ``tfviz.analysis.moe.table_from_manifest`` reads back:

    {"layers": [{"layer": 0, "classes": [...], "experts": [0, 1, 2, 3], "counts": [[...]], ...}]}
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.analysis.moe import class_expert_table, concentration
from tfviz.data.lexicon import CLASSES, word_class
from tfviz.model import Transformer
from tfviz.trace import run_with_trace
from tfviz.training.evaluate import rounded as _r


def routing_metrics(model: Transformer, tok, texts: Sequence[str]) -> dict:
    """The manifest's "moe" entry for ``texts`` (one forward pass per sentence)."""
    traces = []
    for text in texts:
        ids = tok.encode(text)
        traces.append(run_with_trace(model, ids, tokens=[tok.id_to_token(i) for i in ids],
                                     names=lambda n: ".mlp.hook_" in n))
    n_tokens = sum(len(tr.tokens) for tr in traces)
    layers = []
    for layer in range(model.cfg.n_layers):
        classes, experts, counts = class_expert_table(traces, word_class, layer=layer, order=CLASSES)
        load = counts.sum(0) / counts.sum()  # (E,)
        dropped = sum(int(tr[f"blocks.{layer}.mlp.hook_dropped"].sum()) for tr in traces)
        conc = concentration(counts)  # (classes,)
        layers.append({
            "layer": layer,
            "classes": classes,
            "experts": experts,
            "counts": counts.tolist(),
            "load": [_r(x) for x in load],
            "concentration": {c: _r(v) for c, v in zip(classes, conc)},
            "mean_concentration": _r(np.average(conc, weights=counts.sum(1))),
            "dropped_share": _r(dropped / (n_tokens * model.cfg.moe_top_k)),
        })
    return {"layers": layers, "sentences": len(texts), "tokens": n_tokens}
