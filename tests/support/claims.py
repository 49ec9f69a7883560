"""The claims table: sentences a lesson may say about "the model", and the facts of a model
(``bundle.facts``) that make each one false. tests/app/test_claims.py walks every lesson under
every kind of model with it; the lab-run walk of tests/app/test_own_model_page.py uses it too.

The words each page shows (Markdown, captions, call-outs, formulas, headings, table headers)
are matched against :data:`CLAIMS`. A lesson that teaches on a model of its own (BERT on
bert-tiny when the sidebar's model has no masked-LM head, decoding on gpt-tiny under an
encoder, ...) is checked against that model's facts: :func:`page_model` mirrors the pages' rule.
A new kind of sentence about the model adds one row to :data:`CLAIMS`.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tfviz.facts import ModelFacts


@dataclass(frozen=True)
class Claim:
    name: str
    pattern: str  # a regular expression over the page's words
    false_when: Callable[[ModelFacts, re.Match], bool]  # the facts that make the match untrue
    lessons: tuple[str, ...] = ()  # urls the claim is about; () for every lesson


CLAIMS: tuple[Claim, ...] = (
    Claim("lower-cased under a cased model", r"\buncased\b|lower-cased|reads text lower",
          lambda f, m: f.cased),
    Claim("cased under an uncased model", r"is \*\*cased\*\*", lambda f, m: not f.cased),
    Claim("bytes, nothing unknown, under a tokenizer that can meet an unknown character",
          r"works on \*\*bytes\*\*|nothing is ever unknown", lambda f, m: f.unknown != "never"),
    Claim("an unknown token under a tokenizer that never writes one",
          r"becomes \*\*\S+\*\*, one token that", lambda f, m: f.unknown != "unk-token"),
    Claim("post-LN said of a pre-LN model",
          r"is wired \*\*post-LN|Post-LN\*\* \([^)]*our models", lambda f, m: f.pre_ln),
    Claim("pre-LN said of a post-LN model", r"is wired \*\*pre-LN", lambda f, m: not f.pre_ln),
    Claim("a post-LN key (x_j W^K) under a pre-LN model", r"k_j = x_j", lambda f, m: f.pre_ln,
          ("self-attention",)),
    Claim("a pre-LN key (LN(x_j) W^K) under a post-LN model", r"k_j = \\mathrm\{LN\}\(x_j\)",
          lambda f, m: not f.pre_ln, ("self-attention",)),
    Claim("best of N runs, where N runs were not made", r"best of (\d+) runs",
          lambda f, m: int(m.group(1)) != f.timing_repeats, ("kv-cache",)),
    Claim("fixed overhead said of a large model's step", r"most of a step is fixed overhead|"
          r"one-token step of a model this small", lambda f, m: f.size_class == "large", ("kv-cache",)),
    Claim("<eos> named where the model's end token is another",
          r"<eos>", lambda f, m: f.specials.eos != "<eos>", ("decoding", "kv-cache")),
    Claim("no pooler or next-sentence head, where the file holds one",
          r"no segment table and no next-sentence head",
          lambda f, m: f.parts.segment_table or f.parts.next_sentence_head, ("bert",)),
    Claim("our models' heads, said of another model", r"Our models use heads",
          lambda f, m: not f.ours),
    Claim("ReLU's max(0, ·) formula under another activation", r"\\max\(0,\\; xW_1|max\(0, xW_1",
          lambda f, m: f.activation != "relu", ("feed-forward", "forward-walk")),
    # --- the modern block (RMSNorm, SwiGLU, RoPE, GQA, no biases, untied): issue #41 ---------
    Claim("the model's norm named as another", r"normalises each token with \*\*(LayerNorm|RMSNorm)\*\*|"
          r"with a final (LayerNorm|RMSNorm) after|uses \*\*(LayerNorm|RMSNorm)\*\*, so its own|"
          r"Final (LayerNorm|RMSNorm)|A last (LayerNorm|RMSNorm) tidies|(LayerNorm|RMSNorm) of the "
          r"block's input|for every (LayerNorm|RMSNorm) in the stack",
          lambda f, m: next(g for g in m.groups() if g) != f.norm_name),
    Claim("LayerNorm's mean and β said of an RMSNorm's output", r"every token has mean 0 and "
          r"standard deviation 1|normalised to mean 0, spread 1, then scaled by γ, β|"
          r"\(shown before γ and β\)|The learned γ and β",
          lambda f, m: f.norm_kind == "rmsnorm", ("layernorm", "forward-walk")),
    Claim("RMSNorm's kept mean said of a LayerNorm", r"its mean is \*\*not\*\* 0|An RMSNorm has no β",
          lambda f, m: f.norm_kind != "rmsnorm", ("layernorm",)),
    Claim("LN(x) feeding q, k, v under an RMSNorm model", r"\\mathrm\{LN\}\(x_[ij]\)|\bLN\((x|RMS)",
          lambda f, m: f.norm_kind == "rmsnorm", ("self-attention", "forward-walk")),
    Claim("RMS(x) feeding q, k, v under a LayerNorm model", r"\\mathrm\{RMS\}\(x_[ij]\)|\bRMS\(x\)\)",
          lambda f, m: f.norm_kind != "rmsnorm", ("self-attention", "forward-walk")),
    Claim("a one-matrix FFN formula act(x W_1 + b_1) under a gated block",
          r"\\mathrm\{\w+\}\(xW_1 \+ b_1\)|max\(0,\\; xW_1|Each neuron takes two steps",
          lambda f, m: f.gated, ("feed-forward", "forward-walk")),
    Claim("a gated formula under a plain feed-forward", r"W_\{\\text\{gate\}\}|W_gate|takes three steps",
          lambda f, m: not f.gated, ("feed-forward", "forward-walk")),
    Claim("the nonlinearity named as another", r"The nonlinearity is \*\*([^*]+)\*\*",
          lambda f, m: m.group(1) != _nonlinearity(f), ("feed-forward",)),
    Claim("every head's own keys and values, under grouped-query attention",
          r"(every|each) (query )?head (has|gets|computes|keeps) its own (keys|key and value)",
          lambda f, m: f.grouped),
    Claim("a count of K/V heads that is not the model's", r"(\d+) query heads over (\d+) key/value head|"
          r"for each of its (\d+) K/V heads",
          lambda f, m: (m.group(1) is not None and int(m.group(1)) != f.n_heads)
          or int(m.group(2) or m.group(3)) != f.kv_heads, ("forward-walk", "kv-cache")),
    Claim("grouped-query attention said of a model without it", r"\(grouped-query attention\)|"
          r"Grouped-query attention: several query heads share|GQA: the \d+ query heads share",
          lambda f, m: not f.grouped, ("self-attention", "forward-walk")),
    Claim("RoPE's base, where the model turns by another or not at all", r"RoPE,? \(?base ([0-9.e+]+)",
          lambda f, m: f.rope_base is None or float(m.group(1)) != f.rope_base, ("forward-walk",)),
    Claim("position vectors added to the embeddings of a model that has none",
          r"A (sinusoidal|learned|relative|t5_bias|rope|alibi|none) position vector is added",
          lambda f, m: m.group(1) != f.positions, ("forward-walk",)),
    # --- positions inside attention (Shaw et al.'s relative vectors, T5's bias): issue #41 item 5
    Claim("a score of q·k alone under Shaw's relative positions", r"s_j = q_i\\cdot k_j",
          lambda f, m: f.positions == "relative", ("self-attention",)),
    Claim("Shaw's a^K in the score of a model without it", r"k_j \+ a\^K",
          lambda f, m: f.positions != "relative", ("self-attention",)),
    Claim("the weighted values adding up to z under Shaw's relative positions",
          r"The last row is their total", lambda f, m: f.positions == "relative", ("self-attention",)),
    Claim("a T5 bias in the scores of a model without one", r"b_h\(j - i\)",
          lambda f, m: f.positions != "t5_bias", ("self-attention",)),
    Claim("the sidebar's model named as Shaw's or T5's when it is not",
          r"Everything below comes from \*\*(.+?)\*\*, the sidebar's model\. (It clips|Its table)",
          lambda f, m: f.positions != ("relative" if m.group(2) == "It clips" else "t5_bias"),
          ("embeddings",)),
    # --- Granite's multipliers and the experts' own network (mixtral-tiny, Mixtral, GraniteMoe) -
    Claim("scores divided by √d_k under a model that multiplies them by its attention_multiplier",
          r"\\t?frac\{(QK\^\\top|q_i\\cdot k_j|s_t|R\(q\)\\,R\(k\)\^\\top)\}\{\\sqrt\{d_(k|\{head\})\}\}|"
          r"q_i\\cdot k_j/\\sqrt\{d_k\}|(QKᵀ|R\(k\)ᵀ\)) / √d_k|so the scale divides every score by √",
          lambda f, m: f.attention_multiplier is not None,
          ("self-attention", "scaling", "masking", "kv-cache", "forward-walk")),
    Claim("a RoPE score 'before dividing by √d_k' under a model that multiplies it instead",
          r"before dividing by √d_k", lambda f, m: f.attention_multiplier is not None, ("embeddings",)),
    Claim("an attention_multiplier that is not the model's", r"(\d+(?:\.\d+)?)\\,(QK\^\\top|q_i\\cdot k_j|s_t|R\(q\))|"
          r"softmax\((\d+(?:\.\d+)?) (?:QKᵀ|R\(q\))|its attention_multiplier (\d+(?:\.\d+)?)",
          lambda f, m: float(next(g for g in m.groups() if g and g[0].isdigit())) != f.attention_multiplier,
          ("self-attention", "scaling", "masking", "kv-cache", "forward-walk", "embeddings")),
    Claim("a √d_k divisor that is not the model's head size", r"so the scale divides every score by √(\d+)",
          lambda f, m: int(m.group(1)) != f.d_head, ("scaling",)),
    Claim("a sublayer added as it is under a residual_multiplier", r"x_\{\\ell\} \\;=\\; x_\{\\ell-1\} \+ "
          r"\\mathrm\{Sublayer\}|x ← x \+ (?:Attn|MoE|FFN)\(RMS",
          lambda f, m: f.residual_multiplier != 1.0, ("layernorm", "forward-walk")),
    Claim("a residual_multiplier that is not the model's", r"x ← x \+ (\d+(?:\.\d+)?) (?:Attn|MoE|FFN)|"
          r"x_\{\\ell-1\} \+ (\d+(?:\.\d+)?)\\,|its residual_multiplier (\d+(?:\.\d+)?)",
          lambda f, m: float(next(g for g in m.groups() if g)) != f.residual_multiplier),
    Claim("the first block reading the bare embeddings under an embedding_multiplier",
          r"what the first block receives: the token's embedding(?: plus its position's vector)?\.|"
          r"embed = the token embeddings \(|embed = token \+ position embeddings;",
          lambda f, m: f.embedding_multiplier != 1.0, ("self-attention", "layernorm")),
    Claim("an embedding_multiplier that is not the model's", r"x_t ← (\d+(?:\.\d+)?) x_t|embedding_multiplier (\d+(?:\.\d+)?)",
          lambda f, m: float(m.group(1) or m.group(2)) != f.embedding_multiplier),
    Claim("logits without the model's logits_scaling, or with another", r"logits = x (?:Eᵀ|W_U)\b|"
          r"logits = \(x (?:Eᵀ|W_U)\) / (\d+(?:\.\d+)?)|logits_scaling s = (\d+(?:\.\d+)?)",
          lambda f, m: float(m.group(1) or m.group(2) or 1.0) != f.logits_scaling, ("forward-walk", "decoding")),
    Claim("the LM head's matrix or scaling said otherwise", r"(?:logits = |Recomputing |\); )h (Eᵀ|W_U)(?: / (\d+(?:\.\d+)?))?",
          lambda f, m: (m.group(1) == "Eᵀ") != f.tied or float(m.group(2) or 1.0) != f.logits_scaling,
          ("decoding",)),
    Claim("the embedding matrix E as the LM head of an untied model", r"\\underbrace\{E\^\\top\}|"
          r"multiply it by the transpose of the token embedding matrix E",
          lambda f, m: not f.tied, ("decoding",)),
    Claim("an expert capacity counted for experts that have none, or none for experts that do",
          r"expert capacity is counted|an expert's capacity is counted|its experts have no capacity limit",
          lambda f, m: (f.moe_capacity is None) != m.group(0).startswith("its experts have no")),
    Claim("the same small network for every token under a mixture of experts",
          r"every token goes through the same small|there is no single layer of neurons to follow here|"
          r"so d_ff is usually about 2/3",
          lambda f, m: f.is_moe, ("feed-forward",)),
    Claim("Switch's plain weights in the walk of a model that renormalises or routes by Granite's rule",
          r"p = softmax\(W_r x̂?\),\s+y = Σ|top_(\d+) ",
          lambda f, m: f.is_moe and (f.moe_top_k != int(m.group(1)) if m.group(1) else
                                     f.moe_renormalized or f.moe_router == "topk_softmax"),
          ("forward-walk",)),
    Claim("b^O in the sum of the heads' shares of a model without an output bias",
          r"shares plus b\^O|W\^O_\{h\} \+ b\^O", lambda f, m: f.biases != "all", ("multi-head",)),
    Claim("a check against the model's own numbers that did not hold",
          r"equal the model's attention output.{0,160}? to within ([0-9.]+e[+-]\d+)|matches the last row of "
          r"the full run's attention pattern to ([0-9.]+e[+-]\d+)|against the model's hook_mlp_out: "
          r"largest difference ([0-9.]+e[+-]\d+)",
          lambda f, m: float(next(g for g in m.groups() if g)) > 1e-3,
          ("multi-head", "kv-cache", "feed-forward")),
    Claim("the model's biases said otherwise", r"; (no biases|biases on q, k and v only|biases);",
          lambda f, m: {"no biases": "none", "biases on q, k and v only": "qkv only",
                        "biases": "all"}[m.group(1)] != f.biases, ("forward-walk",)),
    Claim("a feed-forward without biases, where it has them", r"none of the three matrices has a bias",
          lambda f, m: f.biases == "all", ("feed-forward",)),
    Claim("a tied unembedding said of an untied one, or the other way", r"an unembedding of its own|"
          r"the embedding matrix reused as the unembedding|rows of E \(the same matrix that embedded|"
          r"logits = x Eᵀ",
          lambda f, m: f.tied == (m.group(0) == "an unembedding of its own"), ("forward-walk",)),
    Claim("every head's own W^K and W^V under grouped-query attention",
          r"each with its own small W\^Q, W\^K, W\^V", lambda f, m: f.grouped, ("multi-head",)),
    Claim("a norm named 'after' its sublayer under a pre-LN model", r"after self-attention \(ln1\)",
          lambda f, m: f.pre_ln),
    # --- lesson 11: the open model's routing rule, k, experts and capacity: issue #41 ------------
    Claim("the routing rule named as another", r"\*\* routes by \*\*(softmax → top-k → renormalise|"
          r"top-k → softmax|softmax → top-k)\*\*, (Mixtral's|Granite's|the Switch Transformer's) rule",
          lambda f, m: (m.group(1), m.group(2)) != _rule_named(f), ("mixture-of-experts",)),
    Claim("the router's formula of another rule", r"w_i = (p_i|\\frac\{p_i\}|\\frac\{e\^\{h_i\}\})",
          lambda f, m: f.is_moe and not _formula_ok(f, m.group(1)), ("mixture-of-experts",)),
    Claim("a count of experts, or of experts per token, that is not the model's",
          r"built to send each token to (\d+) of its (\d+) experts",
          lambda f, m: (int(m.group(1)), int(m.group(2))) != (f.moe_top_k, f.n_experts),
          ("mixture-of-experts",)),
    Claim("renormalised weights said of a model whose weights are not, or the other way",
          r"its weights are \*\*(not renormalised|renormalised)\*\*|its weights add up to 1 by construction",
          lambda f, m: _weights_said(m) != (f.moe_router, f.moe_renormalized), ("mixture-of-experts",)),
    Claim("no capacity said of a model that drops tokens", r"sets \*?\*?no capacity",
          lambda f, m: f.moe_capacity is not None, ("mixture-of-experts",)),
    Claim("a capacity factor that is not the model's", r"capacity factor of ([0-9.]+)",
          lambda f, m: f.moe_capacity is None or float(m.group(1)) != f.moe_capacity, ("mixture-of-experts",)),
    Claim("a mixture of experts called dense", r"\*\* is a dense model", lambda f, m: f.is_moe,
          ("mixture-of-experts",)),
    # --- looking inside (lessons 24-27): issue #45 --------------------------------------------
    Claim("a final norm named as another, or said of a model without one",
          r"through its final (LayerNorm|RMSNorm)",
          lambda f, m: not f.final_norm or m.group(1) != f.norm_name, ("logit-lens",)),
    Claim("no final norm said of a model that has one", r"it has no final norm",
          lambda f, m: f.final_norm, ("logit-lens",)),
    Claim("post-LN blocks said of a pre-LN model", r"each of its blocks already ends in one \(post-LN\)",
          lambda f, m: f.pre_ln, ("logit-lens",)),
    Claim("a tied unembedding said of an untied one", r"the embedding matrix itself, transposed",
          lambda f, m: not f.tied, ("logit-lens",)),
    Claim("LayerNorm's centring in the attribution formula of an RMSNorm model, or a norm where "
          "there is none", r"\\frac\{c - \\bar c\}\{s\}|\\frac\{c\}\{s\}",
          lambda f, m: not f.final_norm or ("bar c" in m.group(0)) != (f.norm_kind == "layernorm"),
          ("direct-attribution",)),
    Claim("MLPs said of a mixture of experts, or MoE layers of a dense model",
          r"each (MLP|MoE layer)'s output", lambda f, m: (m.group(1) == "MoE layer") != f.is_moe,
          ("direct-attribution",)),
)


def _rule_named(f: ModelFacts) -> tuple[str, str] | None:
    """How lesson 11 must name the model's routing rule, and whose rule it is."""
    if f.moe_router == "topk_softmax":
        return "top-k → softmax", "Granite's"
    if f.moe_router == "softmax_topk":
        return (("softmax → top-k → renormalise", "Mixtral's") if f.moe_renormalized
                else ("softmax → top-k", "the Switch Transformer's"))
    return None


def _formula_ok(f: ModelFacts, w: str) -> bool:
    """w_i = p_i (plain), p_i / Σ_T p_j (renormalised) or e^{h_i} / Σ_T e^{h_j} (top-k softmax)."""
    if f.moe_router == "topk_softmax":
        return w.startswith("\\frac{e")
    return w == ("\\frac{p_i}" if f.moe_renormalized else "p_i")


def _weights_said(m: re.Match) -> tuple[str, bool]:
    said = m.group(1)
    if said is None:  # "add up to 1 by construction": a softmax over the chosen k
        return "topk_softmax", True
    return "softmax_topk", said == "renormalised"


def _nonlinearity(f: ModelFacts) -> str:
    """What lesson 10 must call the model's nonlinearity: its activation's name, or for a
    gated block the function of its gate."""
    return {"swiglu": "SiLU", "geglu": "GELU", "gelu_tanh": "GELU (tanh form)"}.get(
        f.activation, f.activation_name)

FALLBACK_DECODER, FALLBACK_BERT = "gpt-tiny", "bert-tiny"


def page_model(url: str, sidebar: str, own=None) -> str | None:
    """The model a lesson teaches on when ``sidebar`` is chosen (as the pages decide it); None
    where the page's sentences are about several models or about images (no facts to check)."""
    from tfviz.analysis.pretraining import reads_masked_lm
    from tfviz.ui.cache import get_bundle

    b = own if own is not None else get_bundle(sidebar)
    if url in ("decoding", "kv-cache"):
        return sidebar if b.config.arch == "decoder" else FALLBACK_DECODER
    if url == "bert":
        return sidebar if reads_masked_lm(b.config, b.tokenizer) else FALLBACK_BERT
    if url == "encoder-decoder":
        return "reverse-encdec"
    if url in ("gqa", "vision"):
        return None  # gpt-tiny, gqa-tiny and mqa-tiny side by side; vit-tiny reads images
    return sidebar


def page_words(at) -> str:
    parts = [e.value for kind in ("title", "header", "subheader", "markdown", "caption", "latex",
                                  "info", "warning", "success", "error")
             for e in at.get(kind) if isinstance(e.value, str)]
    for frame in at.get("arrow_data_frame"):  # table headers ("finished (<eos>)")
        parts += [str(c) for c in frame.value.columns]
    return "\n".join(parts + chart_words(at))


def chart_words(at) -> list[str]:
    """The words the page's charts carry as data, which a learner reads in the chart: each
    chart's description, and the lines and step titles of charts that write text (the forward
    walk's explanations and formulas)."""
    from tests.app.specs import instant_charts
    from tfviz.viz.kit.instant import SEPARATOR

    words = []
    for spec, data in instant_charts(at):
        words.append(str(spec.get("description", "")))
        for table in data.values():
            for column in table.columns:
                if column in ("text", "line"):  # one step's lines, wrapped: read as one text
                    words.append(" ".join(str(v) for v in table[column] if isinstance(v, str)))
                elif str(column).endswith("titles"):
                    words += [str(v).replace(SEPARATOR, "\n") for v in table[column] if isinstance(v, str)]
    return words


def walk(at, model: str) -> dict[str, str]:
    """Every lesson's words with ``model`` in the sidebar, in one session."""
    from tfviz.ui.lessons import available

    seen = {}
    for lesson in available():
        at.switch_page(f"lessons/{lesson.file}").run()
        assert not at.exception, (lesson.file, at.exception)
        assert at.session_state["model"] == model, lesson.file
        seen[lesson.url or "home"] = page_words(at)
    return seen


def broken(seen: dict[str, str], sidebar: str, own=None) -> list[str]:
    """Every claim on the pages ``seen`` (url -> words) that the facts of the model the page
    teaches on contradict, with the words around it. ``own``: a bundle of this session only
    (a lab run), which the server-wide loader cannot open."""
    from tfviz.ui.cache import get_bundle

    found = []
    for url, words in seen.items():
        name = page_model(url, sidebar, own)
        if name is None:
            continue
        facts = (own if own is not None and name == sidebar else get_bundle(name)).facts
        for claim in CLAIMS:
            if claim.lessons and url not in claim.lessons:
                continue
            for m in re.finditer(claim.pattern, words):
                if claim.false_when(facts, m):
                    found.append(f"{url} on {name}: {claim.name}: …{words[max(0, m.start() - 80):m.end() + 40]}…")
    return found


