"""The whole forward pass as a list of steps, each with its numbers (pure numpy).

``forward_steps(trace)`` walks a trace the way the model computed it:

    tokens -> embeddings -> + positions -> per block: attention -> add & norm -> FFN -> add & norm
    -> (final norm) -> logits -> softmax -> top-5 next tokens

The modern block (Llama, Mistral, Qwen, llama-tiny: RMSNorm before each sublayer) is walked
as it computes, every norm a step of its own:

    per block: RMSNorm -> q and k turned by RoPE -> attention (query heads sharing K/V heads)
    -> add -> RMSNorm -> SwiGLU -> add;   after the last block: the final RMSNorm

Every step carries a title, a LaTeX formula, the tensor's shape, a small 2-D array of the
actual numbers (with row and column labels) and a sentence of explanation. Pages only draw
them. The parameter count comes from the exercises' counter, grouped for a bar chart:

>>> from tfviz.config import preset
>>> groups = grouped_params(preset("gpt-tiny"))
>>> groups["LayerNorm"], groups["positions"], groups["head"]
(768, 0, 0)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TYPE_CHECKING

import numpy as np

from tfviz.facts import POSITION_SHORT, scaled_tex
from tfviz.params import count_parameters
from tfviz.labels import token_labels  # plain text: data, escaped by a figure that shows it
from tfviz.reference import softmax

if TYPE_CHECKING:  # type hints only: tfviz.trace imports torch
    from tfviz.trace import Trace

TokenStrings = Callable[[Sequence[int]], Sequence[str]]


@dataclass(frozen=True)
class Step:
    title: str
    formula: str  # LaTeX
    shape: str  # e.g. "(T=12, d=64)"
    values: np.ndarray  # 2-D: what to draw
    explanation: str
    rows: tuple[str, ...] = ()
    cols: tuple[str, ...] = ()
    # "bars": one row of probabilities; "table": token ids
    kind: Literal["heatmap", "bars", "table"] = "heatmap"
    diverging: bool = True
    x_title: str = "dimension"
    y_title: str = "token"


def _dims(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(n))


def _input_steps(trace: Trace, enc: bool) -> list[Step]:
    a, cfg = trace.activations, trace.config
    tokens = trace.enc_tokens if enc else trace.tokens
    ids = trace.enc_ids if enc else trace.ids
    rows = tuple(token_labels(tokens))
    T, d = len(tokens), cfg.d_model
    side = "source " if enc else ("target " if cfg.arch == "encoder-decoder" else "")
    emb = a["hook_enc_embed" if enc else "hook_embed"]
    start = a[("enc_blocks" if enc else "blocks") + ".0.hook_resid_pre"]
    steps = [
        Step(f"{side}tokens".capitalize(), r"\text{text} \to (t_1, \dots, t_T) \to \text{ids}",
             f"(T={T},)", np.asarray(ids)[None, :], "The tokenizer cuts the text into tokens "
             "and each token becomes a whole number, its id in the vocabulary.",
             rows=("id",), cols=rows, kind="table", diverging=False, x_title="token",
             y_title=""),
        Step(f"{side}token embeddings".capitalize(), r"x_t = E[\text{id}_t]", f"(T={T}, d={d})",
             emb, f"Each id picks one row of the embedding matrix E ({cfg.vocab_size}×{d}): a "
             "learned vector per token.", rows=rows, cols=_dims(d)),
    ]
    if cfg.n_token_types or cfg.embed_norm:  # a BERT checkpoint (tfviz.hf.bert)
        summed = r"E[\text{id}_t] + " + (r"S[0] + " if cfg.n_token_types else "") + "P[t]"
        formula = rf"x_t = \mathrm{{LN}}\big({summed}\big)" if cfg.embed_norm else rf"x_t = {summed}"
        steps.append(Step("+ positions" + (", segment" if cfg.n_token_types else "")
                          + (" and LayerNorm" if cfg.embed_norm else ""), formula, f"(T={T}, d={d})",
                          start, f"A {cfg.positional} position vector is added to every token, so "
                          "the model can tell word order apart"
                          + (", and so is row 0 of the segment table S: every token of one "
                             "sentence is in segment A" if cfg.n_token_types else "")
                          + (". A LayerNorm then normalises each token's sum" if cfg.embed_norm else "")
                          + ". This enters block 0.", rows=rows, cols=_dims(d)))
    elif cfg.positional in ("sinusoidal", "learned"):
        formula = (r"x_t = E[\text{id}_t] + PE(t),\quad PE(t,2i) = \sin\!\big(t / 10000^{2i/d}\big)"
                   if cfg.positional == "sinusoidal" else r"x_t = E[\text{id}_t] + P[t]")
        steps.append(Step(f"+ positions{' (' + side.strip() + ')' if side else ''}", formula, f"(T={T}, d={d})", start,
                          f"A {cfg.positional} position vector is added to every token, so "
                          "the model can tell word order apart. This sum enters block 0.",
                          rows=rows, cols=_dims(d)))
    else:
        steps[-1] = dataclasses.replace(
            steps[-1], explanation=steps[-1].explanation + (
                " This model gets no position information at all." if cfg.positional == "none" else
                f" Positions ({POSITION_SHORT.get(cfg.positional, cfg.positional)}) enter inside "
                "attention instead of being added here."))
    if cfg.embedding_multiplier != 1.0 and not enc:  # Granite scales what enters block 0
        m = cfg.embedding_multiplier
        steps.append(Step("× embedding multiplier", rf"x_t \leftarrow {m:g}\,x_t", f"(T={T}, d={d})", start,
                          f"Every vector is multiplied by the model's embedding_multiplier, {m:g} (a "
                          "Granite's), before block 0. This enters block 0.", rows=rows, cols=_dims(d)))
    return steps


def _add_norm(title: str, sub: str, pre: bool) -> tuple[str, str]:
    if pre:
        return (rf"x \leftarrow x + \mathrm{{{sub}}}\big(\mathrm{{LN}}(x)\big)",
                f"{title}: the sublayer's output is added to the stream (pre-LN normalises the "
                "sublayer's input instead, so the stream itself is not rescaled).")
    return (rf"x \leftarrow \mathrm{{LN}}\big(x + \mathrm{{{sub}}}(x)\big)",
            f"{title}: the sublayer's output is added to its input (the residual connection) "
            "and each token's vector is normalised to mean 0, spread 1, then scaled by γ, β.")


def modern(cfg) -> bool:
    """Whether blocks of ``cfg`` are walked as the modern block: RMSNorm before each sublayer."""
    return cfg.norm_type == "rmsnorm" and cfg.norm == "pre"


def _rms_step(title: str, where: str, hook: np.ndarray, rows, d: int, before: str) -> Step:
    return Step(f"{where} · {title}",
                r"\hat{x} = \frac{x}{\mathrm{rms}(x)} \odot \gamma,\quad "
                r"\mathrm{rms}(x) = \sqrt{\mathrm{mean}(x^2) + \varepsilon}",
                f"(T={len(rows)}, d={d})", hook,
                f"RMSNorm before {before}: each token's stream vector is divided by its root mean "
                "square (no mean is taken away, and there is no β), then scaled by γ; shown before γ. "
                "This copy goes into the sublayer; the stream itself is not rescaled.",
                rows=rows, cols=_dims(d))


def _modern_block_steps(trace: Trace, i: int, head: int) -> list[Step]:
    """One modern block (``modern``): RMSNorm, RoPE, attention with shared K/V heads, add,
    RMSNorm, the (gated) feed-forward, add; every step's numbers from the trace's hooks."""
    a, cfg = trace.activations, trace.config
    p = f"blocks.{i}."
    rows = tuple(token_labels(trace.tokens))
    T, d, H, Hkv, dh = len(rows), cfg.d_model, cfg.n_heads, cfg.kv_heads, cfg.d_head
    where = f"Block {i}"
    group = H // Hkv
    kv = head // group
    causal = trace.options.resolved(cfg).causal
    steps = [_rms_step("RMSNorm (ln1)", where, a[p + "ln1.hook_normalized"], rows, d, "attention")]
    rope = p + "attn.hook_rot_q" in a
    if rope:
        scaled = f", frequencies stretched ({cfg.rope_scaling.kind} scaling)" if cfg.rope_scaling else ""
        steps.append(Step(
            f"{where} · q and k turned by RoPE (head {head})",
            r"q_i = R_i\,(\hat{x}_i W^Q),\quad k_j = R_j\,(\hat{x}_j W^K)",
            f"({H} heads, T={T}, d_head={dh})", a[p + "attn.hook_rot_q"][:, head],
            ("Each head's query and key are first put through an RMSNorm of their own (QK-norm). "
             if cfg.qk_norm else "")
            + f"Every query and key is turned, pair of dimensions by pair, by an angle that grows "
            f"with its position (RoPE, base {cfg.pos_base:g}{scaled}), so that q · k depends on "
            f"how far apart the two tokens are. Shown: head {head}'s turned queries.",
            rows=rows, cols=_dims(dh), x_title="dimension of the head"))
    qk = r"R(q)\,R(k)^\top" if rope else r"QK^\top"
    shared = (f"GQA: the {H} query heads share {Hkv} key/value head{'s' if Hkv > 1 else ''}, "
              f"{group} query heads each; head {head} reads K/V head {kv}. " if group > 1 else "")
    steps.append(Step(
        f"{where} · self-attention (head {head}" + (f", K/V head {kv})" if group > 1 else ")"),
        r"\alpha = \mathrm{softmax}\!\Big(" + scaled_tex(qk, cfg.attention_multiplier)
        + (r" + M" if causal else "") + r"\Big),\quad z = \alpha V",
        f"({H} heads, T={T}, T={T})", a[p + "attn.hook_pattern"][head],
        shared + f"Every token compares its query with every {'earlier ' if causal else ''}token's "
        f"key" + (f" (the scores multiplied by the model's attention_multiplier, {cfg.attention_multiplier:g}, "
                  "in place of ÷√d_k)" if cfg.attention_multiplier is not None else "")
        + f"; the weights (rows sum to 1) mix the values. Shown: head {head} of {H}.",
        rows=rows, cols=rows, diverging=False, x_title="key (attended to)", y_title="query (attending)"))
    m_res = cfg.residual_multiplier  # Granite's; 1 for every other model
    times = rf"{m_res:g}\," if m_res != 1.0 else ""
    scaled = f", multiplied by the model's residual_multiplier {m_res:g}," if m_res != 1.0 else ""
    steps.append(Step(f"{where} · add (attention)",
                      rf"x \leftarrow x + {times}\mathrm{{Attn}}\big(\mathrm{{RMS}}(x)\big)",
                      f"(T={T}, d={d})", a[p + "hook_resid_mid"],
                      f"The heads' outputs, joined and projected by W^O{scaled or ','} are added to the stream "
                      "(the residual connection); nothing normalises the sum.",
                      rows=rows, cols=_dims(d)))
    moe = p + "mlp.hook_router_logits" in a
    steps.append(_rms_step("RMSNorm (ln2)", where, a[p + "ln2.hook_normalized"], rows, d,
                           "the experts" if moe else "the feed-forward"))
    if p + "mlp.hook_pre_linear" in a:  # gated: SwiGLU (or GeGLU)
        fn = "SiLU" if cfg.activation == "swiglu" else "GELU"
        steps.append(Step(
            f"{where} · {'SwiGLU' if fn == 'SiLU' else 'GeGLU'} feed-forward",
            rf"h = \mathrm{{{fn}}}(\hat{{x}}\,W_{{\text{{gate}}}}) \odot \hat{{x}}\,W_{{\text{{in}}}},"
            r"\quad \mathrm{FFN}(\hat{x}) = h\,W_{\text{out}}",
            f"(T={T}, d_ff={cfg.d_ff})", a[p + "mlp.hook_post"],
            f"Each token alone: {cfg.d_ff} gates go through {fn} and multiply {cfg.d_ff} up values; "
            f"W_out takes the products back to {d}. Shown: the products h.",
            rows=rows, cols=_dims(cfg.d_ff), x_title="hidden unit"))
    else:
        steps.append(_ffn_step(trace, p, where, rows, x=r"\hat{x}"))
    sub = "MoE" if moe else "FFN"
    steps.append(Step(f"{where} · add ({sub})",
                      rf"x \leftarrow x + {times}\mathrm{{{sub}}}\big(\mathrm{{RMS}}(x)\big)",
                      f"(T={T}, d={d})", a[p + "hook_resid_post"],
                      f"The {'experts' if moe else 'feed-forward'}'{'' if moe else 's'} output{scaled} is "
                      f"added to the stream. This is the output of {where.lower()}.", rows=rows, cols=_dims(d)))
    return steps


def routing_tex(cfg, x: str = "x") -> str:
    r"""The router's rule and the mixture, in LaTeX, as the model computes them
    (``tfviz.model.moe``): Switch's softmax then top-k, Mixtral's renormalised top-k, or
    Granite's top-k of the logits then a softmax over those k.

    >>> from tfviz.config import ModelConfig
    >>> print(routing_tex(ModelConfig(n_experts=4, moe_top_k=1, moe_renormalize=False)))
    p = \mathrm{softmax}(W_r x),\quad y = \sum_{i \in \mathcal{T}} p_i\,E_i(x)
    """
    logits = rf"W_r {x}"
    if cfg.moe_router == "topk_softmax":  # Granite
        return (rf"\mathcal{{T}} = \mathrm{{top}}_{{{cfg.moe_top_k}}}({logits}),\quad "
                rf"w = \mathrm{{softmax}}_{{\mathcal{{T}}}}({logits}),\quad "
                rf"y = \sum_{{i \in \mathcal{{T}}}} w_i\,E_i({x})")
    if cfg.moe_renormalize:  # Mixtral
        return (rf"p = \mathrm{{softmax}}({logits}),\quad \mathcal{{T}} = \mathrm{{top}}_{{{cfg.moe_top_k}}}(p),"
                rf"\quad y = \sum_{{i \in \mathcal{{T}}}} \frac{{p_i}}{{\sum_{{j \in \mathcal{{T}}}} p_j}}\,E_i({x})")
    return rf"p = \mathrm{{softmax}}({logits}),\quad y = \sum_{{i \in \mathcal{{T}}}} p_i\,E_i({x})"


def _ffn_step(trace: Trace, p: str, where: str, rows, x: str = "x") -> Step:
    """A plain feed-forward (ReLU, GELU) or a mixture of experts, as one step. ``x``: the
    block's input as the formula names it (x̂ after a pre-norm)."""
    a, cfg = trace.activations, trace.config
    T, d = len(rows), cfg.d_model
    if p + "mlp.hook_post" in a:
        act = "max(0, xW_1 + b_1)" if cfg.activation == "relu" else r"\mathrm{GELU}(xW_1 + b_1)"
        return Step(f"{where} · feed-forward", rf"h = {act},\quad \mathrm{{FFN}}(x) = hW_2 + b_2",
                    f"(T={T}, d_ff={cfg.d_ff})", a[p + "mlp.hook_post"],
                    f"Each token alone is widened to {cfg.d_ff} hidden units, passed through "
                    f"{cfg.activation.upper()} and projected back to {d}. Shown: the hidden units h.",
                    rows=rows, cols=_dims(cfg.d_ff), x_title="hidden unit")
    k, E = cfg.moe_top_k, cfg.n_experts
    rule = ("keeps the k largest of its logits and takes a softmax over those alone"
            if cfg.moe_router == "topk_softmax" else
            "keeps the k most probable and divides their probabilities by their sum"
            if cfg.moe_renormalize else "keeps the k most probable, each weighted by its probability")
    kind = {"swiglu": "a SwiGLU network", "geglu": "a GeGLU network"}.get(
        cfg.activation, f"a {cfg.activation.upper()} feed-forward network")
    return Step(f"{where} · experts (MoE)", routing_tex(cfg, x),
                f"(T={T}, experts={E})", a[p + "mlp.hook_gate_probs"],
                f"A router scores each token against the {E} experts, each {kind} of its own, "
                f"and {rule} (k = {k}): only those {k} run for that token. "
                "Shown: the softmax p over every expert.", rows=rows,
                cols=tuple(f"expert {e}" for e in range(E)), diverging=False,
                x_title="expert")


def _block_steps(trace: Trace, i: int, head: int, enc: bool) -> list[Step]:
    a, cfg = trace.activations, trace.config
    if modern(cfg) and not enc and cfg.arch != "encoder-decoder":
        return _modern_block_steps(trace, i, head)
    stack = "enc_blocks" if enc else "blocks"
    p = f"{stack}.{i}."
    q_tokens = trace.enc_tokens if enc else trace.tokens
    rows = tuple(token_labels(q_tokens))
    T, d, H = len(q_tokens), cfg.d_model, cfg.n_heads
    where = f"{'Encoder' if enc else 'Decoder'} {i}" if cfg.arch == "encoder-decoder" else f"Block {i}"
    pre = cfg.norm == "pre"
    causal = trace.options.resolved(cfg).causal and not enc
    pattern = a[p + "attn.hook_pattern"]
    steps = [Step(f"{where} · self-attention (head {head})",
                  r"\alpha = \mathrm{softmax}\!\Big(" + scaled_tex(r"QK^\top", cfg.attention_multiplier)
                  + (r" + M" if causal else "") + r"\Big),\quad z = \alpha V",
                  f"({H} heads, T={T}, T={T})", pattern[head],
                  f"Every token builds a query and compares it with every {'earlier ' if causal else ''}"
                  f"token's key; the weights (rows sum to 1) mix the values. Shown: head {head} of {H}.",
                  rows=rows, cols=rows, diverging=False, x_title="key (attended to)",
                  y_title="query (attending)")]
    formula, text = _add_norm("Add & norm", "SelfAttn", pre)
    steps.append(Step(f"{where} · add & norm", formula, f"(T={T}, d={d})", a[p + "hook_resid_mid"],
                      text, rows=rows, cols=_dims(d)))
    if p + "cross_attn.hook_pattern" in a:
        src = tuple(token_labels(trace.enc_tokens))
        steps.append(Step(f"{where} · cross-attention (head {head})",
                          r"\alpha = \mathrm{softmax}\!\Big(\frac{Q_{\text{dec}}K_{\text{enc}}^\top}{\sqrt{d_k}}\Big),"
                          r"\quad z = \alpha V_{\text{enc}}",
                          f"({H} heads, T={T}, S={len(src)})", a[p + "cross_attn.hook_pattern"][head],
                          "Queries come from the decoder, keys and values from the encoder's "
                          "output: this is how the decoder reads the source.",
                          rows=rows, cols=src, diverging=False, x_title="source token (key)",
                          y_title="target token (query)"))
        formula, text = _add_norm("Add & norm", "CrossAttn", pre)
        steps.append(Step(f"{where} · add & norm (cross)", formula, f"(T={T}, d={d})",
                          a[p + "hook_resid_mid_cross"], text, rows=rows, cols=_dims(d)))
    steps.append(_ffn_step(trace, p, where, rows))
    formula, text = _add_norm("Add & norm", "FFN", pre)
    steps.append(Step(f"{where} · add & norm (FFN)", formula, f"(T={T}, d={d})",
                      a[p + "hook_resid_post"], text + f" This is the output of {where.lower()}.",
                      rows=rows, cols=_dims(d)))
    return steps


def _output_steps(trace: Trace, token_strings: TokenStrings, top: int, position: int) -> list[Step]:
    a, cfg = trace.activations, trace.config
    rows = tuple(token_labels(trace.tokens))
    if not cfg.lm_head:  # an encoder saved without a head (BertModel): it ends at its last block
        last = a[f"blocks.{cfg.n_layers - 1}.hook_resid_post"]  # (T, d)
        return [Step("Output: no LM head", r"\text{output}_t = x_t", f"(T={last.shape[0]}, d={cfg.d_model})",
                     last, f"{cfg.name} was saved without a language-model head, so it ends here: one "
                     "vector per token, and no token is predicted.", rows=rows, cols=_dims(cfg.d_model))]
    logits = a["logits"].astype(np.float64)  # (T, V)
    T, V = logits.shape
    pos = position % T
    best = np.argsort(-logits[pos], kind="stable")[:8]  # (8,) the columns worth showing
    names = tuple(f"{s} ({i})" for s, i in zip(token_strings(best.tolist()), best.tolist()))
    probs = softmax(logits)  # (T, V)
    steps = []
    if "ln_final.hook_normalized" in a:
        rms = cfg.norm_type == "rmsnorm"
        steps.append(Step(f"Final {'RMSNorm' if rms else 'LayerNorm'}",
                          rf"x \leftarrow \mathrm{{{'RMS' if rms else 'LN'}}}_{{\text{{final}}}}(x)",
                          f"(T={T}, d={cfg.d_model})", a["ln_final.hook_normalized"],
                          "A last RMSNorm tidies the stream (shown before γ)." if rms else
                          "A last LayerNorm tidies the stream (shown before γ and β).",
                          rows=rows, cols=_dims(cfg.d_model)))
    x = "x"
    if cfg.mlm_transform and "mlm_head.ln.hook_normalized" in a:
        x = "h"
        steps.append(Step("Masked-LM transform", r"h = \mathrm{LN}\big(\mathrm{GELU}(x\,W + b)\big)",
                          f"(T={T}, d={cfg.d_model})", a["mlm_head.ln.hook_normalized"],
                          "BERT's masked-LM head passes each final vector through one more dense "
                          "layer, GELU and a LayerNorm (shown before γ and β) before scoring it.",
                          rows=rows, cols=_dims(cfg.d_model)))
    head = (r"E^\top" if cfg.tie_embeddings else "W_U") + (" + b_U" if cfg.unembed_bias else "")
    s = cfg.logits_scaling  # Granite divides its logits by this; 1 for every other model
    product = rf"{x}\,{head}" if s == 1.0 else rf"\big({x}\,{head}\big)\,/\,{s:g}"
    steps.append(Step("Logits", rf"\text{{logits}} = {product}", f"(T={T}, V={V})", logits[:, best],
                      f"Each token's final vector is scored against every one of the {V} vocabulary "
                      + ("rows of E (the same matrix that embedded the input)" if cfg.tie_embeddings else "rows")
                      + (", and each vocabulary entry adds its own bias" if cfg.unembed_bias else "")
                      + (f", and every score is divided by the model's logits_scaling, {s:g}" if s != 1.0 else "")
                      + f". Shown: the 8 columns that score highest at {rows[pos]}.",
                      rows=rows, cols=names, x_title="vocabulary token (id)"))
    steps.append(Step("Softmax", r"P(w) = \frac{e^{\text{logit}_w}}{\sum_{v} e^{\text{logit}_v}}",
                      f"(T={T}, V={V})", probs[:, best], "Softmax turns each row of logits into "
                      "probabilities that are positive and sum to 1 over the whole vocabulary.",
                      rows=rows, cols=names, diverging=False, x_title="vocabulary token (id)"))
    order = np.argsort(-probs[pos], kind="stable")[:top]
    what = ("the next token" if cfg.arch != "encoder" else
            "the token that belongs at this position (BERT-style: used for [MASK])")
    steps.append(Step(f"Top-{top} prediction at {rows[pos]}", r"\hat{w} = \arg\max_w P(w)",
                      f"({top},)", probs[pos, order][None, :],
                      f"The {top} most likely candidates for {what}, read off the last row.",
                      rows=("P",), cols=tuple(token_strings(order.tolist())), kind="bars",
                      diverging=False, x_title="candidate token", y_title="probability"))
    return steps


# A model with more blocks than this is walked one chosen block at a time (lesson 12): every
# block adds a few (tokens x d) maps, and GPT-2 small's twelve made a 12 MB chart.
WALK_ALL_BLOCKS = 4


def forward_steps(trace: Trace, *, head: int = 0, token_strings: TokenStrings | None = None,
                  top: int = 5, position: int = -1,
                  blocks: Sequence[int] | None = None) -> list[Step]:
    """Every stage of one forward pass, in order. ``position`` picks the row to predict from.
    ``blocks`` names the decoder blocks walked through (all of them unless given): a
    12-block model's walk goes through one block at a time, each block's steps reading the
    stream as the blocks before it left it."""
    token_strings = token_strings or (lambda ids: [str(i) for i in ids])
    cfg = trace.config
    steps: list[Step] = []
    if cfg.arch == "encoder-decoder":
        steps += _input_steps(trace, enc=True)
        for i in range(cfg.enc_layers):
            steps += _block_steps(trace, i, head, enc=True)
    steps += _input_steps(trace, enc=False)
    for i in range(cfg.n_layers) if blocks is None else blocks:
        steps += _block_steps(trace, i, head, enc=False)
    return steps + _output_steps(trace, token_strings, top, position)


# ----- parameter count ----------------------------------------------------------------------
_GROUPS = (("embeddings", ("token embedding", "segment embedding", "embedding norm")),
           ("positions", ("position embedding", "relative positions")),
           ("attention", ("self-attention", "cross-attention")),
           ("FFN / experts", ("feed-forward",)),
           ("LayerNorm", ("norms",)),
           ("head", ("output layer", "pooler", "MLM transform")))


def param_parts(config) -> dict[str, int]:
    """The exercises' counter, part by part (its total equals the model's own count)."""
    return dict(count_parameters(config).parts)


def grouped_params(config) -> dict[str, int]:
    """Parts folded into embeddings / positions / attention / FFN / LayerNorm / head; the norms'
    group is called "RMSNorm" for a model whose norms are RMSNorms."""
    out = {g: 0 for g, _ in _GROUPS}
    for part, n in param_parts(config).items():
        group = next(g for g, keys in _GROUPS if any(part.endswith(k) for k in keys))
        out[group] += n
    if config.norm_type == "rmsnorm":
        out = {("RMSNorm" if g == "LayerNorm" else g): n for g, n in out.items()}
    return out


def param_total(config) -> int:
    return count_parameters(config).total


def model_param_count(weights: Mapping[str, np.ndarray]) -> int:
    """What the model really holds: the sizes of its exported weights (``Bundle.weights()``,
    where every parameter appears exactly once) added up."""
    return int(sum(w.size for w in weights.values()))
