"""One recipe per bundled model: tokenizer, training rows, loss, schedule, and the held-out
evaluation whose numbers go into the manifest.

    gpt-tiny        next token on story sentences (one sentence + <eos> per row, as typed:
                    no <bos>, because the app traces text exactly as the learner types it)
    moe-tiny        the same, with 4 experts (top-1) in every feed-forward block
    mixtral-tiny    moe-tiny's recipe on Mixtral's block: top-2 of 4 SwiGLU experts, renormalised
    gpt-tiny-learned, gpt-tiny-rope, gpt-tiny-relative, gpt-tiny-t5
                    gpt-tiny's recipe with a trained position table, RoPE, Shaw et al.'s
                    relative positions or T5's bucketed bias (lesson 3)
    bert-tiny       masked LM on the same sentences (15%; 80% [MASK] / 10% random / 10% kept),
                    plus "it" statements in which "it" must name its noun (see below)
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

bert-tiny (lesson 15): the page shows a head whose "it" looks at the right noun in "the animal
didn't cross the street because it was too tired." (animal) / "... too wide." (street).
Masked LM alone gave no such head: its corpus already holds the statements with their probe
("... it refers to the animal."), but nothing in masked LM asks "it" for its noun, and every
head scored about 50% (chance). Adding the statements alone (no probe) changed nothing (best head
55%). So bert-tiny has a second, labelled objective on 10,000 extra rows: the statement of a
training combination (``coref_statements``, never a held-out one, no probe, so the answer is
not in the text), where the position of "it" keeps "it" as input and must predict the noun
"it" stands for (``batches.Antecedent``). Every other position is plain masked LM.

With that objective alone the job was split over two layer-1 heads (one looks at the agent
only for agent adjectives, the other at the place only for place adjectives): 54-78% for
the best single head over training seeds 0-4, though "it" named the right noun in every
held-out sentence. Head dropout in those rows only (each layer-1 head off with probability
0.5, see ``objectives.mlm_loss``) makes a single head do the whole job: 97% with seed 0 (93%
with seed 2, but 75% with seed 1: the seed still matters). Dropping heads in every row gave
93% / 95% / 77% and a lower masked accuracy. The manifest records the chosen head, its share
per kind of answer and per form (``encoder_coref_metrics``).

>>> sorted(RECIPES)
['bert-tiny', 'gpt-tiny', 'gpt-tiny-learned', 'gpt-tiny-relative', 'gpt-tiny-rope', 'gpt-tiny-t5',
 'gqa-tiny', 'llama-tiny', 'mixtral-tiny', 'moe-tiny', 'mqa-tiny', 'reverse-encdec', 'vit-tiny']
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, partial

from tfviz.data import coref_eval_items, make_reverse, story_corpus, words_of
from tfviz.analysis.coref import coref_spans
from tfviz.data.coref import FORMS, coref_answer, coref_statements
from tfviz.data.lexicon import AGENT_ADJS, AGENTS, COREF_VERBS, PLACE_ADJS, PLACES
from tfviz.data.stories import COREF_FRACTION
from tfviz.tokenizer.task import TaskTokenizer
from tfviz.training import evaluate as ev
from tfviz.training.batches import Antecedent
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
BERT_STATEMENTS = (10_000, 99)  # bert-tiny's extra rows: coref_statements(10_000, seed=99)
BERT_DROP_HEADS = (1, 0.5)  # in those rows, each head of layer 1 is off with probability 0.5


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


def antecedent_row(tok, statement: str, noun: str) -> Antecedent:
    """The statement's ids, with the target at "it" set to the id of ``noun`` (one token, read
    from the sentence itself)."""
    ids = tok.encode(statement)
    probe, agent, place = coref_spans([tok.id_to_token(t) for t in ids])
    span = agent if tok.decode([ids[j] for j in agent]).strip() == noun else place
    if len(span) != 1 or tok.decode([ids[span[0]]]).strip() != noun:
        raise ValueError(f"{noun!r} is not one token of {statement!r}")
    return Antecedent(ids, probe[-1], ids[span[0]])


def _bert_rows(n: int, statements: tuple[int, int]) -> Callable:
    """story_corpus(n, seed=0) as plain masked-LM rows, then the Antecedent rows."""
    def make(tok) -> list:
        plain = [tok.encode(s) for s in story_corpus(n, seed=0)]
        count, seed = statements
        return plain + [antecedent_row(tok, s, noun) for s, noun in coref_statements(count, seed=seed)]
    return make


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


def _eval_mixtral(model, tok) -> dict:
    """moe-tiny's measurements plus gpt-tiny's "it refers to the" probe (a held-out accuracy
    the pages that show any bundle with RoPE quote beside its loss)."""
    return _eval_moe(model, tok) | ev.coref_metrics(model, tok, coref_eval_items(seed=0))


def _eval_bert(model, tok) -> dict:
    rows = [tok.encode(s) for s in _val_sentences()]
    return (ev.mlm_metrics(model, tok, rows, seed=MASK_SEED) | ev.encoder_coref_metrics(model, tok)
            | {"val_sentences": VAL_SENTENCES, "vocabulary": story_vocabulary()})


def _reverse_pairs(tok, n: int, seed: int, split: str) -> list[tuple[list[int], list[int]]]:
    examples = make_reverse(n, seed=seed, lengths=REVERSE_LENGTHS, split=split)
    return [(tok.vocab.encode(s), tok.vocab.encode(t)) for s, t in examples]


def _eval_reverse(model, tok) -> dict:
    n, seed = REVERSE_HELDOUT
    return ev.reverse_metrics(model, tok, _reverse_pairs(tok, n, seed, "heldout"))


def _eval_kv(model, tok) -> dict:
    """gpt-tiny's measurements plus what lesson 18 compares: cache bytes per token, parameters.
    gpt-tiny records them too, as the MHA row of that comparison."""
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
        make_rows=_story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION), loss=lm_loss, evaluate=_eval_kv,
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
    # table added to the embeddings, RoPE turning q and k, Shaw's distance vectors or T5's
    # bucket biases inside attention), measured as gpt-tiny is.
    **{name: Recipe(
        name, steps=1600, batch_size=48, lr=3e-3, seed=1, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION), loss=lm_loss, evaluate=_eval_positions,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": GPT_COREF_FRACTION, "row": "sentence <eos>",
                            "compared_with": "gpt-tiny (sinusoidal)"})
       for name in ("gpt-tiny-learned", "gpt-tiny-rope", "gpt-tiny-relative", "gpt-tiny-t5")},
    # The modern block (RoPE, GQA, RMSNorm, SwiGLU): gpt-tiny's data, seeds, steps and settings.
    "llama-tiny": Recipe(
        "llama-tiny", steps=1600, batch_size=48, lr=3e-3, seed=1, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, GPT_COREF_FRACTION), loss=lm_loss, evaluate=_eval_kv,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": GPT_COREF_FRACTION, "row": "sentence <eos>",
                            "compared_with": "gpt-tiny (same recipe, the 2017 block)"}),
    "moe-tiny": Recipe(
        "moe-tiny", steps=1000, batch_size=48, lr=3e-3, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, COREF_FRACTION), loss=lm_loss, evaluate=_eval_moe,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": COREF_FRACTION, "row": "sentence <eos>",
                            "routing": f"first {ROUTING_SENTENCES} val sentences, one at a time"}),
    # Mixtral's routing (top-2 of 4 SwiGLU experts, renormalised, no capacity) with moe-tiny's
    # data, seed, steps and settings, so lesson 11 compares the two routings on trained weights.
    "mixtral-tiny": Recipe(
        "mixtral-tiny", steps=1000, batch_size=48, lr=3e-3, make_tokenizer=story_tokenizer,
        make_rows=_story_rows(CORPUS_SENTENCES, COREF_FRACTION), loss=lm_loss, evaluate=_eval_mixtral,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "coref_fraction": COREF_FRACTION, "row": "sentence <eos>",
                            "routing": f"first {ROUTING_SENTENCES} val sentences, one at a time",
                            "compared_with": "moe-tiny (same recipe, Switch routing: top-1 of 4 ReLU experts)"}),
    "bert-tiny": Recipe(
        "bert-tiny", steps=1000, batch_size=48, lr=3e-3, make_tokenizer=story_tokenizer,
        make_rows=_bert_rows(CORPUS_SENTENCES, BERT_STATEMENTS), loss=partial(mlm_loss, drop_heads=BERT_DROP_HEADS),
        evaluate=_eval_bert,
        data=_STORY_DATA | {"sentences": CORPUS_SENTENCES, "row": "sentence (no [CLS]/[SEP])",
                            "masking": "15% per row (rounded, >= 1); of those 80% [MASK], 10% random, "
                                       "10% unchanged", "mask_seed": MASK_SEED,
                            "objective": "masked LM on every row; in each coref statement the position of "
                                         "'it' is also a target (input kept as 'it'): the noun it stands for",
                            "coref_statements": {"rows": BERT_STATEMENTS[0], "seed": BERT_STATEMENTS[1],
                                                 "made_by": "coref_statements(rows, seed)",
                                                 "combinations": "coref_split(0)[0] (training) only, no probe"},
                            "head_dropout": {"layer": BERT_DROP_HEADS[0], "p": BERT_DROP_HEADS[1],
                                             "rows": "coref statements only", "kept_heads": "scaled by 1/(1-p)"},
                            "heldout": "coref_split(0)[1]: combinations in neither the corpus nor the statements"}),
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
