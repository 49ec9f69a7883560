"""One recipe per bundled model: tokenizer, training rows, loss, schedule, and the held-out
evaluation whose numbers go into the manifest.

    gpt-tiny        next token on story sentences (one sentence + <eos> per row, as typed:
                    no <bos>, because the app traces text exactly as the learner types it)
    moe-tiny        the same, with 4 experts (top-1) in every feed-forward block
    gpt-tiny-learned, gpt-tiny-rope
                    gpt-tiny's recipe with a trained position table, or with RoPE (lesson 3)
    bert-tiny       masked LM on the same sentences (15%; 80% [MASK] / 10% random / 10% kept)
    reverse-encdec  source letters -> the same letters reversed (make_reverse, lengths 2-12)
    vit-tiny        which shape a 16×16 picture holds (tfviz.training.vit: images, no tokenizer)

Seeds are part of the recipe. gpt-tiny uses seed 1 (training) and init_seed 1 (weights):
with seed 0 the choice of noun was split over two heads (one attends the agent only when the
adjective is about the agent, the other the place only for place adjectives), so no single
head scored above ~51%. With seed 1 one head carries most of it; the manifest records which
(``eval.coref_head``) and how often it looks at the right noun.

Since the corpus writes each "it" sentence in many ways (see ``tfviz.data.coref.Surface``),
gpt-tiny trains for 1,600 steps: at 800 it copied the wrong place noun on 5-9% of the
held-out items in some forms (comma, "very", all variations at once); at 1,600 it answers
every held-out item in every form. The manifest records the accuracy per form.

>>> sorted(RECIPES)
['bert-tiny', 'gpt-tiny', 'gpt-tiny-learned', 'gpt-tiny-rope', 'gqa-tiny', 'moe-tiny', 'mqa-tiny',
 'reverse-encdec', 'vit-tiny']
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from tfviz.data import coref_eval_items, make_reverse, story_corpus, words_of
from tfviz.data.coref import FORMS
from tfviz.data.lexicon import AGENT_ADJS, AGENTS, COREF_VERBS, PLACE_ADJS, PLACES
from tfviz.data.stories import COREF_FRACTION
from tfviz.tokenizer.task import TaskTokenizer
from tfviz.training import evaluate as ev
from tfviz.training.objectives import lm_loss, mlm_loss, seq2seq_loss
from tfviz.training.routing import routing_metrics
from tfviz.training.tokenizers import STORY_TOKENIZER, story_tokenizer
from tfviz.training import vit

# Held-out data, fixed for every run (the training corpus uses seed 0).
VAL_SEED, VAL_SENTENCES = 1001, 512  # validation sentences: story_corpus(512, seed=1001)
ROUTING_SENTENCES = 200  # the first 200 validation sentences, for moe-tiny's routing table
MASK_SEED = 1234  # the masking draw for bert-tiny's held-out accuracy
REVERSE_LENGTHS = (2, 12)
REVERSE_HELDOUT = (500, 1)  # make_reverse(500, seed=1, split="heldout")
CORPUS_SENTENCES = 30_000  # story_corpus(30_000, seed=0): what every story model trains on
GPT_COREF_FRACTION = 0.5  # gpt-tiny reads more "it" items than the corpus default (COREF_FRACTION)


@dataclass(frozen=True)
class Recipe:
    preset: str
    steps: int
    batch_size: int
    lr: float
    make_tokenizer: Callable[[], object]
    make_rows: Callable[[object], list]  # tokenizer -> training rows
    loss: Callable  # (model, rows, generator, tokenizer) -> (loss, cross-entropy)
    evaluate: Callable  # (model, tokenizer) -> {metric: value}
    data: dict = field(default_factory=dict)  # how the data was made, for the manifest
    warmup: int = 100
    weight_decay: float = 0.01
    seed: int = 0
    # None: the preset's Transformer (text models); else builds the model (vit-tiny's ViT)
    make_model: Callable[[], object] | None = None


def _val_sentences() -> list[str]:
    return story_corpus(VAL_SENTENCES, seed=VAL_SEED)


def _story_rows(n: int, coref_fraction: float) -> Callable:
    def make(tok) -> list[list[int]]:
        return [tok.encode(s) + [tok.eos_id] for s in story_corpus(n, seed=0, coref_fraction=coref_fraction)]
    return make


def _bert_rows(n: int) -> Callable:
    return lambda tok: [tok.encode(s) for s in story_corpus(n, seed=0)]


@cache
def story_vocabulary(coref_fraction: float = COREF_FRACTION) -> dict:
    """What a story model read in training, for the app's "words it never saw" notices:
    every word of its training corpus, and the words each role of the "it" pattern used."""
    corpus = story_corpus(CORPUS_SENTENCES, seed=0, coref_fraction=coref_fraction)
    words = {w for s in corpus for w in words_of(s) if w[0].isalpha()}
    return {"words": sorted(words),
            "coref": {"agents": list(AGENTS), "places": list(PLACES), "verbs": list(COREF_VERBS),
                      "agent_adjectives": list(AGENT_ADJS), "place_adjectives": list(PLACE_ADJS)}}


def _coref_by_form(model, tok) -> dict:
    """Held-out accuracy of the "it refers to the" probe, written in each way of FORMS."""
    return {form: ev.coref_metrics(model, tok, coref_eval_items(0, surface))["coref_accuracy"]
            for form, surface in FORMS.items()}


def _eval_gpt(model, tok) -> dict:
    rows = [tok.encode(s) + [tok.eos_id] for s in _val_sentences()]
    out = {"val_loss": ev.rounded(ev.lm_val_loss(model, rows)), "val_sentences": VAL_SENTENCES}
    return (out | ev.coref_metrics(model, tok, coref_eval_items(seed=0))
            | {"coref_accuracy_by_form": _coref_by_form(model, tok), "vocabulary": story_vocabulary(GPT_COREF_FRACTION)})


def _eval_moe(model, tok) -> dict:
    sentences = _val_sentences()
    rows = [tok.encode(s) + [tok.eos_id] for s in sentences]
    return {"val_loss": ev.rounded(ev.lm_val_loss(model, rows)), "val_sentences": VAL_SENTENCES,
            "moe": routing_metrics(model, tok, sentences[:ROUTING_SENTENCES]),
            "coref_accuracy_by_form": _coref_by_form(model, tok), "vocabulary": story_vocabulary()}


def _eval_bert(model, tok) -> dict:
    rows = [tok.encode(s) for s in _val_sentences()]
    return (ev.mlm_metrics(model, tok, rows, seed=MASK_SEED)
            | {"val_sentences": VAL_SENTENCES, "vocabulary": story_vocabulary()})


def _reverse_pairs(tok, n: int, seed: int, split: str) -> list[tuple[list[int], list[int]]]:
    examples = make_reverse(n, seed=seed, lengths=REVERSE_LENGTHS, split=split)
    return [(tok.vocab.encode(s), tok.vocab.encode(t)) for s, t in examples]


def _eval_reverse(model, tok) -> dict:
    n, seed = REVERSE_HELDOUT
    return ev.reverse_metrics(model, tok, _reverse_pairs(tok, n, seed, "heldout"))


def _eval_kv(model, tok) -> dict:
    """gpt-tiny's measurements plus what lesson 18 compares: cache bytes per token, parameters."""
    from tfviz.decoding.memory import config_kv_cache_bytes
    cfg = model.cfg
    return _eval_gpt(model, tok) | {"kv_cache_bytes_per_token": config_kv_cache_bytes(cfg, 1),
                                    "kv_heads": cfg.kv_heads,
                                    "parameters": sum(p.numel() for p in model.parameters())}


def _eval_positions(model, tok) -> dict:
    """gpt-tiny's measurements plus how many positions the training rows reached. A row's last
    input is <eos>, which has no next token to predict, so a row of n ids trains positions
    0 .. n-2; a learned table's rows past those never received a gradient (lesson 3)."""
    rows = _story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION)(tok)
    return _eval_gpt(model, tok) | {"positions_trained": max(len(r) for r in rows) - 1}


_STORY_DATA = {"corpus": "tfviz.data.story_corpus(N, seed=0)", "tokenizer": STORY_TOKENIZER,
               "val": f"story_corpus({VAL_SENTENCES}, seed={VAL_SEED})"}

RECIPES: dict[str, Recipe] = {
    "gpt-tiny": Recipe(
        "gpt-tiny", steps=1600, batch_size=48, lr=3e-3, seed=1, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION), loss=lm_loss, evaluate=_eval_gpt,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": GPT_COREF_FRACTION, "row": "sentence <eos>",
                            "heldout": "coref_eval_items(seed=0): combinations never seen in training"}),
    # Lesson 18: gpt-tiny's data, seeds, steps and settings; only the number of K/V heads differs.
    **{name: Recipe(
        name, steps=1600, batch_size=48, lr=3e-3, seed=1, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION), loss=lm_loss, evaluate=_eval_kv,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": GPT_COREF_FRACTION, "row": "sentence <eos>",
                            "compared_with": "gpt-tiny (same recipe, 4 K/V heads)"})
       for name in ("gqa-tiny", "mqa-tiny")},
    # Lesson 3: gpt-tiny's data, seeds, steps and settings; only the positions differ (a trained
    # table added to the embeddings, or RoPE turning q and k), measured as gpt-tiny is.
    **{name: Recipe(
        name, steps=1600, batch_size=48, lr=3e-3, seed=1, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION), loss=lm_loss, evaluate=_eval_positions,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": GPT_COREF_FRACTION, "row": "sentence <eos>",
                            "compared_with": "gpt-tiny (sinusoidal)"})
       for name in ("gpt-tiny-learned", "gpt-tiny-rope")},
    "moe-tiny": Recipe(
        "moe-tiny", steps=1000, batch_size=48, lr=3e-3, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, COREF_FRACTION), loss=lm_loss, evaluate=_eval_moe,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": COREF_FRACTION, "row": "sentence <eos>",
                            "routing": f"first {ROUTING_SENTENCES} val sentences, one at a time"}),
    "bert-tiny": Recipe(
        "bert-tiny", steps=1000, batch_size=48, lr=3e-3, make_tokenizer=story_tokenizer,
        make_rows=_bert_rows(CORPUS_SENTENCES), loss=mlm_loss, evaluate=_eval_bert,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "row": "sentence (no [CLS]/[SEP])",
                            "masking": "15% per row (rounded, >= 1); of those 80% [MASK], 10% random, "
                                       "10% unchanged", "mask_seed": MASK_SEED}),
    "reverse-encdec": Recipe(
        "reverse-encdec", steps=500, batch_size=64, lr=3e-3, make_tokenizer=TaskTokenizer,
        make_rows=lambda tok: _reverse_pairs(tok, 20_000, 0, "train"), loss=seq2seq_loss,
        evaluate=_eval_reverse,
        data={"task": f"make_reverse(20000, seed=0, lengths={REVERSE_LENGTHS}, split='train')",
              "heldout": f"make_reverse({REVERSE_HELDOUT[0]}, seed={REVERSE_HELDOUT[1]}, "
                         f"lengths={REVERSE_LENGTHS}, split='heldout')",
              "decoding": "greedy; decoder reads <bos> + reversed prefix"}),
    "vit-tiny": Recipe(
        "vit-tiny", steps=4000, batch_size=64, lr=2e-3, make_tokenizer=vit.no_tokenizer,
        make_rows=vit.image_rows, loss=vit.image_loss, evaluate=vit.evaluate, data=vit.DATA,
        make_model=vit.make_model),
}
