"""Fine-tuning counted across models (lesson 15): what each way of fine-tuning trains, for our
small models and for published ones, as rows of one table.

For every model: all its parameters (full fine-tuning, ``count_parameters``), a rank-r
low-rank update on the chosen matrices (``finetune.lora_params``) and that as a share of the
whole, and p prefix or p prompt vectors (``finetune.prefix_params``, ``prompt_params``).
Published models are counted with their own conventions (BERT's segment table and pooler,
GPT-2's learned positions): ``tfviz.params``.

>>> rows = trainable_rows(8, ["W_Q", "W_V"], 20)
>>> base = next(r for r in rows if r["model"] == "BERT-base")
>>> base["LoRA r=8"], base["prefix p=20"], base["prompt p=20"]
(294912, 368640, 15360)
"""
from __future__ import annotations

from collections.abc import Sequence

from tfviz.analysis.finetune import lora_params, prefix_params, prompt_params, share
from tfviz.config import preset
from tfviz.params import (BERT_BASE, BERT_CONVENTIONS, BERT_LARGE, GPT2_SMALL,
                                    count_parameters)

OURS = ("gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec")  # counted from their presets


def compared_models() -> list[tuple[str, object, dict]]:
    """(name, config or ParamSpec, counting conventions) of every model in the table."""
    models = [(name, preset(name), {}) for name in OURS]
    models += [("BERT-base", BERT_BASE, BERT_CONVENTIONS), ("BERT-large", BERT_LARGE, BERT_CONVENTIONS),
               ("GPT-2 small", GPT2_SMALL, {"positions": "learned", "norm_place": "pre"})]
    return models


def trainable_rows(rank: int, matrices: Sequence[str], p: int) -> list[dict]:
    """One row per model: numbers trained by full fine-tuning, by a rank-``rank`` update of
    ``matrices`` (and its share of the whole), by a prefix and by a prompt of ``p`` vectors.
    The column names carry r and p, as the lesson's table shows them."""
    counts = []
    for name, config, conventions in compared_models():
        full = count_parameters(config, **conventions).total
        lora = lora_params(config, rank, matrices).total
        counts.append({"model": name, "full fine-tuning": full, f"LoRA r={rank}": lora,
                       "LoRA share": f"{share(lora, full):.3%}",
                       f"prefix p={p}": prefix_params(config, p), f"prompt p={p}": prompt_params(config, p)})
    return counts
