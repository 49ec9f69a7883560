"""The claims matrix: every lesson, rendered under every kind of model the app can hold, says
nothing about "the model" that the model's own facts (``bundle.facts``) contradict.

Each kind is one AppTest session that opens the model in the sidebar and walks every lesson, as
a learner would, checking the words of each page against the table in tests/support/claims.py.
The kinds: our bundled decoder, encoder and encoder-decoder (vit-tiny is lesson 19's own model,
met on every walk), llama-tiny (the modern block: RMSNorm, SwiGLU, RoPE, 4 query heads over 2
K/V heads, no biases, untied), the two bundled mixtures of experts (moe-tiny: softmax -> top-1,
not renormalised, a capacity; mixtral-tiny: Mixtral's softmax -> top-2 -> renormalise, none),
a random GPT-2 folder (cased, pre-LN, <|endoftext|>), a random
BERT folder saved with its pooler and next-sentence head (WordPiece with [UNK]), a random Llama
folder (byte-level BPE with <|begin_of_text|>, GQA 4/2, untied), a random Qwen2 folder (biases
on q, k and v only, one K/V head, tied), and a random Mixtral (top-2 of 4) and GraniteMoe
folder (top-3 of 5 by Granite's top-k -> softmax, its multipliers). A training-lab run is walked in
tests/app/test_own_model_page.py, which already opens every lesson on one.
A new lesson inherits the matrix (it walks ``available()``); a new family adds one kind here.
"""
from __future__ import annotations

import dataclasses
import re

import pytest

import tfviz
from tests.support.claims import CLAIMS, broken, walk
from tfviz.facts import Specials


#: Sentences fixed after the audit whose truth does not depend on the model's facts, checked on
#: the walk that renders them: (model kind, lesson) -> (words that must be there, words that must not).
FIXED = {
    ("gpt-tiny", "long-sequences"): (
        ["all but BigBird's, whose random keys are drawn for each query", "is not that distance but a span",
         "previous l = 4 positions and the token itself"],
        ["so each grid is symmetric and", "\"Farthest away\" is the notes' receptive field"]),
    ("bert", "bert"): (["Google's original data code takes the 15% of all"], ["as BERT's own data code does"]),
    # Granite's multipliers, each said where it acts (its folder: d_head 8, m_att 0.125, top-3 of 5)
    ("granitemoe", "forward-walk"): (
        ["× embedding multiplier", "x_t ← 12 x_t", "softmax(0.125 R(q) R(k)ᵀ + M)", "x ← x + 0.22 Attn(RMS(x))",
         "x ← x + 0.22 MoE(RMS(x))", "logits = (x Eᵀ) / 6", "Granite's multipliers: the embeddings multiplied by 12"],
        []),
    ("granitemoe", "scaling"): (["multiplies every score by its attention_multiplier 0.125 instead of dividing by "
                                 "√d_k = √8 ≈ 2.83: a division by 8, d_k itself"], []),
    ("granitemoe", "decoding"): (["1 · The LM head: logits = h Eᵀ / 6"], []),
    # an expert's gate and up, neuron by neuron (lesson 10 showed none on a mixture of experts)
    ("granitemoe", "feed-forward"): (
        [r"E_i(x) = \big(\mathrm{SiLU}(xW_{\text{gate}}^i) \odot (xW_{\text{in}}^i)\big)",
         "The way down by hand, Σ w_i · E_i(x) over each token's 3 chosen experts times 0.22, against "
         "the model's hook_mlp_out"], ["no single layer of neurons to follow"]),
    ("mixtral-tiny", "feed-forward"): (
        ["The way down by hand, Σ w_i · E_i(x) over each token's 2 chosen experts, against the model's "
         "hook_mlp_out"], ["no single layer of neurons to follow"]),
    ("mixtral-tiny", "decoding"): (["1 · The LM head: logits = h W_U"], []),
}


def fixed_sentences(seen: dict[str, str], kind: str) -> None:
    for (k, url), (there, gone) in FIXED.items():
        if k == kind:
            assert all(w in seen[url] for w in there), (url, [w for w in there if w not in seen[url]])
            assert not any(w in seen[url] for w in gone), url


@pytest.mark.parametrize("model", ["gpt-tiny", "bert-tiny", "reverse-encdec", "llama-tiny", "moe-tiny",
                                   "mixtral-tiny"])
def test_bundled_models(app_page, model):
    at = app_page("01_tour.py", model=model)
    seen = walk(at, model)
    assert len(seen) >= 20
    assert broken(seen, model) == []
    fixed_sentences(seen, model)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.bert_folders import make_checkpoint as make_bert
    from tests.unit.hf.test_gpt2 import make_checkpoint as make_gpt2

    from tests.support.llama_folders import make_checkpoint as make_llama
    from tests.support.moe_folders import make_moe_checkpoint

    root = tmp_path_factory.mktemp("claims")
    make_gpt2(root / "gpt2")
    make_bert(root / "bert", "BertForPreTraining")  # its pooler and NSP head: set aside
    make_llama(root / "llama")  # GQA 4/2, untied, Llama 3's tokenizer with <|begin_of_text|>
    make_llama(root / "qwen2", "qwen2", tokenizer="qwen", kv_heads=1, tie_word_embeddings=True)
    make_moe_checkpoint(root / "mixtral", "mixtral", experts=4, top_k=2, heads=4, kv_heads=2)
    make_moe_checkpoint(root / "granitemoe", "granitemoe", experts=5, top_k=3, heads=4, kv_heads=1,
                        tie_word_embeddings=True, embedding_multiplier=12.0, attention_multiplier=0.125,
                        residual_multiplier=0.22, logits_scaling=6.0)
    return root


@pytest.mark.parametrize("kind", ["gpt2", "bert", "llama", "qwen2", "mixtral", "granitemoe"])
def test_checkpoint_folders(app_page, folders, monkeypatch, kind):
    from tests.app.test_bert_checkpoint_pages import listing

    folder = str(folders / kind)
    listing(monkeypatch, folder)
    at = app_page("01_tour.py", model=folder)
    seen = walk(at, folder)
    assert broken(seen, folder) == []
    fixed_sentences(seen, kind)


def test_the_matrix_catches_the_sentences_false_of_a_mixture_of_experts():
    """Sentences the lessons said of every model, false of mixtral-tiny (an untied head, experts
    with no capacity, SwiGLU experts behind a renormalising router) or of a GraniteMoe (its four
    multipliers, Granite's top-k -> softmax): caught under those facts, not under gpt-tiny's or
    llama-tiny's, of which they are true."""
    gpt, llama, mixtral = (tfviz.load(n).facts for n in ("gpt-tiny", "llama-tiny", "mixtral-tiny"))
    granite = dataclasses.replace(mixtral, d_head=8, attention_multiplier=0.125, embedding_multiplier=12.0,
                                  residual_multiplier=0.22, logits_scaling=6.0, tied=True,
                                  moe_router="topk_softmax", moe_renormalized=True)
    old = {  # the old sentence -> the facts it was false of, and those it was true of
        r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}+M\right)V": ([granite], [gpt]),
        r"\begin{cases} q_i\cdot k_j/\sqrt{d_k} & j \le i": ([granite], [gpt]),
        r"a_t=\mathrm{softmax}\!\left(\frac{s_t}{\sqrt{d_{head}}}\right)": ([granite], [gpt]),
        "α = softmax((R(q) R(k)ᵀ) / √d_k + M),   z = α V": ([granite], [llama]),
        "mixtral-tiny uses heads of d_k = 8, so the scale divides every score by √8 ≈ 2.83.": ([granite, gpt], []),
        "The model's own score for this pair (hook_scores_raw, before dividing by √d_k)": ([granite], [llama]),
        r"x_{\ell} \;=\; x_{\ell-1} + \mathrm{Sublayer}(x_{\ell-1})": ([granite], [gpt, mixtral]),
        "x ← x + Attn(RMS(x))": ([granite], [llama, mixtral]),
        "x here is what the first block receives: the token's embedding. The model's": ([granite], [llama]),
        "embed = the token embeddings (g adds no position vectors": ([granite], [llama]),
        "logits = x Eᵀ": ([granite], [gpt]),
        "1 · The LM head: logits = h Eᵀ": ([dataclasses.replace(granite, tied=False), mixtral, granite], [gpt]),
        "and multiply it by the transpose of the token embedding matrix E, the very matrix": ([mixtral, llama], [gpt]),
        "each sentence's expert capacity is counted as it goes, so they never take": ([mixtral, granite],
                                                                                   [tfviz.load("moe-tiny").facts]),
        "every token goes through the same small network **on its own**": ([mixtral, granite], [gpt, llama]),
        "so there is no single layer of neurons to follow here.": ([mixtral, granite], []),
        "p = softmax(W_r x),   y = Σ_(i ∈ 𝒯) p_i E_i(x)": ([mixtral, granite], [tfviz.load("moe-tiny").facts]),
        r"\mathrm{out}_i = \sum_{h} z^{(h)}_i\, W^O_{h} + b^O": ([mixtral, llama], [gpt]),
        "Check: for every layer and token, the heads' shares plus b^O equal the model's attention output to "
        "within 8.3e+00.": ([gpt], []),
        "The new token's attention row, computed from the cached keys, matches the last row of the full run's "
        "attention pattern to 6.7e-01 in every layer and head.": ([granite, gpt], []),
        # and what the pages say now, true of the Granite and false of a model without its multipliers
        "α = softmax(0.125 R(q) R(k)ᵀ + M),   z = α V": ([llama, mixtral], [granite]),
        r"\tilde s_{ij} = \begin{cases} 0.125\,q_i\cdot k_j & j \le i": ([gpt], [granite]),
        "x ← x + 0.22 MoE(RMS(x))": ([mixtral], [granite]),
        "x_t ← 12 x_t": ([mixtral], [granite]),
        "logits = (x Eᵀ) / 6": ([gpt], [granite]),
        "1 · The LM head: logits = h Eᵀ / 6": ([gpt, mixtral], [granite]),
        "1 · The LM head: logits = h W_U": ([gpt, granite], [mixtral, llama]),
        "but as a Granite it multiplies every score by its attention_multiplier 0.125 instead": ([gpt], [granite]),
        "its experts have no capacity limit, so a pad token never takes": ([tfviz.load("moe-tiny").facts],
                                                                          [mixtral, granite]),
        "𝒯 = top_2 (W_r x̂),   w = softmax_𝒯 (W_r x̂)": ([tfviz.load("moe-tiny").facts], [granite]),
    }
    for sentence, (false_of, true_of) in old.items():
        for facts in false_of:
            assert [c.name for c in CLAIMS for m in re.finditer(c.pattern, sentence)
                    if c.false_when(facts, m)], (sentence, facts.name)
        for facts in true_of:
            assert not [c.name for c in CLAIMS for m in re.finditer(c.pattern, sentence)
                        if c.false_when(facts, m)], (sentence, facts.name)


def test_the_matrix_catches_the_old_sentences():
    """The table is not vacuous: each sentence the audit found false, run through it with the
    facts of a model it was false of, is caught, and with gpt-tiny's facts, of which each was
    true, it is not."""
    base = tfviz.load("gpt-tiny").facts
    old = {  # the old sentence -> the change of facts that made it false
        "the model reads text lower-cased.": dict(cased=True),
        "Our tokenizer works on **bytes**, not letters": dict(unknown="unk-token"),
        "**Post-LN** (the original paper, our sources, and our models)": dict(norm="pre"),
        r"q_i = \mathrm{LN}(x_i)\,W^Q,\quad k_j = x_j W^K": dict(norm="pre"),
        "Each time is the best of 5 runs of the step": dict(timing_repeats=1),
        "Generation stops when the model writes `<eos>`.": dict(specials=Specials(eos="<|endoftext|>")),
        "Our models use heads of d_k = 64": dict(origin="folder"),
        # lesson sentences that assumed LayerNorm, ReLU/GELU, one K/V head per query head and a
        # tied unembedding, false of llama-tiny or a Llama folder
        r"v_j = \mathrm{LN}(x_j)\, W^V": dict(norm="pre", norm_kind="rmsnorm"),
        "with a final LayerNorm after the last block.": dict(norm_kind="rmsnorm"),
        "LayerNorm of the block's input (pre-LN)": dict(norm_kind="rmsnorm"),
        "Final LayerNorm": dict(norm_kind="rmsnorm"),
        "A last LayerNorm tidies the stream (shown before γ and β).": dict(norm_kind="rmsnorm"),
        "and each token's vector is normalised to mean 0, spread 1, then scaled by γ, β.":
            dict(norm_kind="rmsnorm"),
        "x ← LN(x + SelfAttn(x))": dict(norm_kind="rmsnorm"),
        r"\mathrm{FFN}(x) = \mathrm{SwiGLU}(xW_1 + b_1)\,W_2 + b_2": dict(activation="swiglu"),
        "h = max(0, xW_1 + b_1),   FFN(x) = hW_2 + b_2": dict(activation="swiglu"),
        "every head has its own keys and values": dict(kv_heads=2),
        "Each token's final vector is scored against every one of the 600 vocabulary rows of E (the "
        "same matrix that embedded the input)": dict(tied=False),
        "logits = x Eᵀ": dict(tied=False),
    }
    for sentence, change in old.items():
        facts = dataclasses.replace(base, **change)
        assert [c.name for c in CLAIMS for m in re.finditer(c.pattern, sentence)
                if c.false_when(facts, m)], sentence
        assert not [c.name for c in CLAIMS for m in re.finditer(c.pattern, sentence)
                    if c.false_when(base, m)], sentence


def test_the_matrix_catches_the_modern_blocks_sentences_under_an_old_block():
    """The modern block's sentences, true of llama-tiny (RMSNorm, SwiGLU, RoPE at base 10000,
    4 query heads over 2 K/V heads, no biases, untied), are caught under gpt-tiny's facts
    (LayerNorm, ReLU, sinusoidal positions, 4 K/V heads, biases, tied), and not under its own."""
    modern, old = tfviz.load("llama-tiny").facts, tfviz.load("gpt-tiny").facts
    sentences = [
        "**llama-tiny** normalises each token with **RMSNorm**: it divides",
        "with a final RMSNorm after the last block.",
        "but its mean is **not** 0: RMSNorm takes nothing away",
        "γ starts at 1; training moves it, dimension by dimension. An RMSNorm has no β.",
        r"q_i = R_i\,(\mathrm{RMS}(x_i)\,W^Q)",
        "x ← x + Attn(RMS(x))",
        r"\mathrm{FFN}(x) = \big(\mathrm{SiLU}(xW_{\text{gate}}) \odot (xW_{\text{in}})\big)\,W_{\text{out}}",
        "The nonlinearity is **SiLU**, on the gate only",
        "4 query heads over 2 key/value heads (grouped-query attention); a SwiGLU feed-forward; "
        "no biases; an unembedding of its own.",
        "GQA: the 4 query heads share 2 key/value heads, 2 query heads each",
        "RoPE, base 10000, so that q · k depends on how far apart",
    ]
    for sentence in sentences:
        assert not [c.name for c in CLAIMS for m in re.finditer(c.pattern, sentence)
                    if c.false_when(modern, m)], sentence
        assert [c.name for c in CLAIMS for m in re.finditer(c.pattern, sentence)
                if c.false_when(old, m)], sentence


def test_the_matrix_catches_lesson_11s_sentences_under_another_router():
    """Lesson 11's sentences about the open model's routing, each true of one model, are caught
    under the facts of the others: moe-tiny (softmax -> top-1, not renormalised, capacity
    factor 3), mixtral-tiny (softmax -> top-2 -> renormalise, no capacity), a Granite-routed
    copy of it (top-2 -> softmax) and a dense gpt-tiny."""
    moe, mixtral = tfviz.load("moe-tiny").facts, tfviz.load("mixtral-tiny").facts
    granite = dataclasses.replace(mixtral, moe_router="topk_softmax")
    dense = tfviz.load("gpt-tiny").facts
    said = [  # (sentence, the facts it is true of, the facts it is false of)
        ("**moe-tiny** routes by **softmax → top-k**, the Switch Transformer's rule (which takes k = 1)",
         moe, [mixtral, granite, dense]),
        ("**m** routes by **softmax → top-k → renormalise**, Mixtral's rule: a softmax", mixtral,
         [moe, granite, dense]),
        ("**g** routes by **top-k → softmax**, Granite's rule: the 2 highest", granite, [moe, mixtral, dense]),
        (r"p = \mathrm{softmax}(h) \qquad w_i = p_i", moe, [mixtral, granite]),
        (r"\qquad w_i = \frac{p_i}{\sum_{j \in \mathcal{T}} p_j}", mixtral, [moe, granite]),
        (r"w_i = \frac{e^{h_i}}{\sum_{j \in \mathcal{T}} e^{h_j}}", granite, [moe, mixtral]),
        ("- it was built to send each token to 1 of its 4 experts, in each of its 2 blocks;", moe,
         [mixtral, granite, dense]),
        ("its weights are **not renormalised**: they add up", moe, [mixtral, granite]),
        ("its weights are **renormalised**: divided by their sum", mixtral, [moe, granite]),
        ("its weights add up to 1 by construction, a softmax over the chosen k alone", granite, [moe, mixtral]),
        ("it has a **capacity factor of 3**: an expert that is", moe, [mixtral, granite, dense]),
        ("it sets **no capacity**: every token is served", mixtral, [moe]),
        ("**gpt-tiny** is a dense model: every block has one feed-forward network", dense,
         [moe, mixtral, granite]),
    ]

    def caught(sentence, facts):
        return [c.name for c in CLAIMS if not c.lessons or "mixture-of-experts" in c.lessons
                for m in re.finditer(c.pattern, sentence) if c.false_when(facts, m)]

    for sentence, true_of, false_of in said:
        assert not caught(sentence, true_of), sentence
        for facts in false_of:
            assert caught(sentence, facts), (sentence, facts.name, facts.moe_router)
