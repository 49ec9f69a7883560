"""Exercise "parameter counts": encoder, decoder-only and encoder-decoder from five sizes.

The notes ask for the three counts without numbers; our standard instance uses the sizes of
the original base model (d_model = 512, h = 8, d_ff = 2048, N = 6, |V| = 37000) with:
biases everywhere, LayerNorm γ and β, sinusoidal positions (no parameters), an output layer
that reuses the token embedding, no final LayerNorm.

    attention  4·(d² + d)                     = 1,050,624
    FFN        2·d·d_ff + d_ff + d           = 2,099,712
    encoder block  attn + FFN + 2·2d         = 3,152,384
    decoder block (enc-dec) 2 attn + FFN + 3·2d = 4,204,032
    embedding |V|·d                          = 18,944,000

>>> [f.answer_text for f in SPEC.make(None).answer_fields]
['37858304', '37858304', '63082496']
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.core import ExerciseSpec, Instance, Step, answer_field, draw_clean
from tfviz.params import ParamSpec, attention_params, count_parameters, ffn_params

ID = "parameter-count"
TITLE = "Count the parameters"
SOURCE = dict(d_model=512, n_heads=8, d_ff=2048, n_layers=6, vocab_size=37000)
RULES = dict(positions="sinusoidal", tied=True, final_norm=False)
ARCH_FIELDS = (("encoder", "encoder", "encoder only (N blocks)"),
               ("decoder", "decoder", "decoder only (N blocks)"),
               ("encdec", "encoder-decoder", "encoder-decoder (N + N blocks)"))

MESSAGES = {
    "no_bias": "The biases are missing: every linear layer also has one bias per output.",
    "no_wo": ("W^O was left out: after the heads are concatenated, each attention layer "
              "multiplies by W^O (d×d, plus d biases)."),
    "tied_twice": ("The output layer was counted as a separate |V|×d matrix. Here it reuses "
                   "the token embedding, so it adds nothing."),
    "no_ln": "The LayerNorms are missing: each has a γ and a β of d numbers.",
}
SLIP_OPTIONS = {"no_bias": {"bias": False}, "no_wo": {"attn_output": False},
                "tied_twice": {"tied": False}, "no_ln": {"norm": "none"}}


def _n(x: int) -> str:
    return f"{x:,}"


def build(sizes: dict, seed: int | None) -> Instance:
    fields, totals = [], {}
    for name, arch, label in ARCH_FIELDS:
        spec = ParamSpec(**sizes, arch=arch)
        total = count_parameters(spec, **RULES).total
        totals[name] = total
        slips = {k: (count_parameters(spec, **{**RULES, **opt}).total, MESSAGES[k])
                 for k, opt in SLIP_OPTIONS.items()}
        fields.append(answer_field(name, label, total, slips, tol=0))
    s = ParamSpec(**sizes)
    d, dff, V = s.d_model, s.d_ff, s.vocab_size
    attn, ffn, ln = attention_params(s), ffn_params(s), 2 * d
    enc_block, dec_block = attn + ffn + 2 * ln, 2 * attn + ffn + 3 * ln
    prompt = (
        f"A transformer has d_model = {d}, h = {s.n_heads} heads, d_ff = {dff}, N = {s.n_layers} "
        f"blocks per stack and a vocabulary of |V| = {_n(V)} tokens. Count its parameters as "
        "an encoder only, as a decoder only, and as an encoder-decoder.\n\n"
        "Rules: every linear layer has a bias; each LayerNorm has γ and β; positions are "
        "sinusoidal (nothing to learn); the output layer reuses the token embedding matrix; "
        "an encoder-decoder shares one embedding between both stacks; no final LayerNorm. "
        "Give exact whole numbers.")
    steps = (
        Step("Token embedding", r"|V| \cdot d",
             f"One row of {d} numbers per token: {_n(V)} · {d} = {_n(V * d)}. The output layer "
             "reuses this matrix, so it is counted once.", {"embedding": V * d}),
        Step("One attention layer", r"4\,(d^2 + d)",
             f"W^Q, W^K, W^V and W^O are each {d}×{d} (the heads split the columns, they do not "
             f"add any), each with {d} biases: 4 · ({d * d} + {d}) = {_n(attn)}.",
             {"attention": attn}),
        Step("One feed-forward layer", r"2\,d\,d_{ff} + d_{ff} + d",
             f"{d}×{dff} in and {dff}×{d} out, plus {dff} + {d} biases: {_n(ffn)}.",
             {"ffn": ffn}),
        Step("Blocks", r"\text{enc} = A + F + 2\cdot 2d,\quad \text{dec}_{x} = 2A + F + 3\cdot 2d",
             f"An encoder block, and a decoder-only block (masked self-attention + FFN), has two "
             f"LayerNorms: {_n(attn)} + {_n(ffn)} + {2 * ln} = {_n(enc_block)}. A decoder block "
             f"of an encoder-decoder adds cross-attention and a third LayerNorm: {_n(dec_block)}.",
             {"encoder_block": enc_block, "decoder_block": dec_block}),
        Step("Totals", r"|V| d + N \cdot \text{block}",
             f"Encoder: {_n(V * d)} + {s.n_layers}·{_n(enc_block)} = {_n(totals['encoder'])}. "
             f"Decoder only: {_n(totals['decoder'])}. Encoder-decoder: {_n(V * d)} + "
             f"{s.n_layers}·{_n(enc_block)} + {s.n_layers}·{_n(dec_block)} = "
             f"{_n(totals['encdec'])}. The decoder-only model has as many parameters as the "
             "encoder: its mask hides scores but adds no weights.", dict(totals)),
    )
    return Instance(ID, TITLE, prompt, dict(sizes), tuple(fields), steps, seed)


def _draw(rng: np.random.Generator, seed: int) -> Instance:
    d = int(rng.choice([4, 6]))  # small enough to count every matrix by hand
    heads = [h for h in (1, 2) if d % h == 0]
    sizes = dict(d_model=d, n_heads=int(rng.choice(heads)), d_ff=int(rng.choice([2, 4])) * d,
                 n_layers=int(rng.integers(1, 4)), vocab_size=int(rng.integers(2, 11)) * 10)
    return build(sizes, seed)


def _make(rng: np.random.Generator | None, seed: int | None) -> Instance:
    if rng is None:
        return build(SOURCE, None)
    return draw_clean(lambda g: _draw(g, seed), rng)


SPEC = ExerciseSpec(ID, TITLE, 12, "Parameters of an encoder, a decoder and an encoder-decoder.",
                    _make, has_source=False)
