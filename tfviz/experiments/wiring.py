"""Post-LN or pre-LN? Two fresh twins of a model, wired each way, to compare their streams.

post-LN (the original paper):  z = LN(x + Sublayer(x)): the stream is renormalised every time.
pre-LN (GPT-2 and later):      z = x + Sublayer(LN(x)): the stream is only ever added to, so it
                               tends to grow layer by layer (a final LayerNorm tidies it up).

The twins share the bundle's sizes and its seeded initial weights; the bundle's own model is
never touched. Lesson 9 traces both on the learner's text and draws
:func:`tfviz.analysis.layernorm.residual_norms` for each.
"""
from __future__ import annotations

from tfviz.bundle import Bundle
from tfviz.model import Transformer


def variant_configs(config) -> dict:
    """The twins' configs, by label: the model's sizes wired post-LN, and pre-LN with a final norm."""
    return {"fresh post-LN": config.replace(norm="post", final_norm=False),
            "fresh pre-LN": config.replace(norm="pre", final_norm=True)}


def fresh_twin(bundle: Bundle, label: str, config) -> Bundle:
    """One FRESH model of ``config`` (a :func:`variant_configs` entry) with the seeded initial
    weights, reading with the bundle's tokenizer."""
    model = Transformer(config).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return Bundle(f"{bundle.name} ({label})", model, bundle.tokenizer, config)


def wiring_variants(bundle: Bundle) -> dict[str, Bundle]:
    """Two FRESH models with the bundle's sizes and the same seeded weights, wired post-LN and
    pre-LN (with a final norm). The bundle's own model is never touched."""
    return {label: fresh_twin(bundle, label, cfg)
            for label, cfg in variant_configs(bundle.config).items()}
