"""bert-tiny's extra training job (issue #16): coreference statements in which "it" must name its
noun (``batches.Antecedent``), with head dropout on those rows only. Each piece is checked
against something independent: the plain masking draw, the model's own head ablation, the
word lists of the coreference pattern."""
import re

import pytest
import torch

from tfviz.config import RunOptions, preset
from tfviz.data import story_corpus
from tfviz.data.coref import coref_split, coref_statements
from tfviz.data.lexicon import AGENT_ADJS
from tfviz.model import Transformer
from tfviz.training.batches import IGNORE, Antecedent, mlm_batch
from tfviz.training.objectives import heads_scaled, mlm_loss
from tfviz.training.recipes import BERT_DROP_HEADS, BERT_STATEMENTS, CORPUS_SENTENCES, RECIPES, antecedent_row
from tfviz.training.tokenizers import story_tokenizer

COMBO = re.compile(r"the (\w+) (?:didn't|did not) (\w+) the (\w+),? because it was (?:too|so|very) (\w+)")


@pytest.fixture(scope="module")
def tok():
    return story_tokenizer()


def _combos(texts):
    """(agent, verb, place, adjective) of every coreference sentence, read back from the text."""
    return [tuple(m.groups()) for m in map(COMBO.search, (t.lower() for t in texts)) if m]


def test_no_held_out_combination_is_ever_trained_on():
    held = set(coref_split(0)[1])
    statements = coref_statements(BERT_STATEMENTS[0], seed=BERT_STATEMENTS[1])
    for texts in (story_corpus(CORPUS_SENTENCES, seed=0), [s for s, _ in statements]):
        found = _combos(texts)
        assert found and held.isdisjoint(found)
    assert len(_combos(s for s, _ in statements)) == BERT_STATEMENTS[0]  # every row is one, no probe
    assert not any("refers" in s for s, _ in statements)


def test_the_noun_of_each_statement_follows_its_adjective():
    for statement, noun in coref_statements(300, seed=5):
        agent, _, place, adj = _combos([statement])[0]
        assert noun == (agent if adj in AGENT_ADJS else place)


def test_antecedent_rows_label_it_with_the_nouns_token(tok):
    for statement, noun in coref_statements(200, seed=7):
        row = antecedent_row(tok, statement, noun)
        toks = [tok.id_to_token(t) for t in row.ids]
        assert list(row.ids) == tok.encode(statement)
        assert toks[row.position] == "␣it" and "because" in "".join(toks[:row.position])
        assert row.label == tok.encode(noun)[0] and tok.id_to_token(row.label) == "␣" + noun
    with pytest.raises(ValueError):
        antecedent_row(tok, "the animal didn't cross the street because it was too tired.", "horse")


def test_an_antecedent_row_is_masked_like_its_plain_ids():
    rows = [[10 + i for i in range(12)], [30 + i for i in range(9)]]
    labelled = [rows[0], Antecedent(rows[1], 4, 99)]
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    x, y, m = mlm_batch(rows, g1, mask_id=4, vocab_size=120)
    xa, ya, ma = mlm_batch(labelled, g2, mask_id=4, vocab_size=120)
    assert torch.equal(m, ma) and torch.equal(g1.get_state(), g2.get_state())  # same draw, same stream
    other = torch.ones_like(x, dtype=torch.bool)
    other[1, 4] = False
    assert torch.equal(x[other], xa[other]) and torch.equal(y[other], ya[other])
    assert int(xa[1, 4]) == 34 and int(ya[1, 4]) == 99  # "it" kept as input; its noun as target
    assert int((ya != IGNORE).sum()) == int((y != IGNORE).sum()) + int(y[1, 4] == IGNORE)


def test_heads_scaled_by_zero_is_the_models_own_ablation():
    model = Transformer(preset("bert-tiny")).eval()
    x = torch.randint(7, 600, (2, 9), generator=torch.Generator().manual_seed(0))
    plain = model(x)
    ablated = model(x, options=RunOptions(ablate_heads=frozenset({(1, 2)})))
    keep = torch.ones(2, 4)
    keep[1, 2] = 0.0  # row 1 loses head 2 of layer 1; row 0 keeps everything
    with torch.no_grad(), heads_scaled(model, 1, keep):
        both = model(x)
    # the same products in the same order, one factor 1.0 or 0.0 apart: equal up to float rounding
    torch.testing.assert_close(both[0], plain[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(both[1], ablated[1], rtol=0, atol=1e-6)
    torch.testing.assert_close(model(x), plain, rtol=0, atol=0)  # the hook is gone afterwards


def test_head_dropout_touches_only_antecedent_rows_and_only_in_training(tok):
    model = Transformer(preset("bert-tiny")).train()
    rows = [tok.encode(s) for s in story_corpus(8, seed=4)]

    def loss(batch, **kw):
        return mlm_loss(model, batch, torch.Generator().manual_seed(0), tok, **kw)[0].item()

    assert loss(rows, drop_heads=(1, 0.5)) == loss(rows)  # no Antecedent row: nothing dropped
    statement, noun = coref_statements(1, seed=0)[0]
    mixed = rows + [antecedent_row(tok, statement, noun)] * 4
    assert loss(mixed, drop_heads=(1, 0.5)) != loss(mixed)
    model.eval()
    assert loss(mixed, drop_heads=(1, 0.5)) == loss(mixed)


def test_the_recipe_says_what_it_does():
    data = RECIPES["bert-tiny"].data
    assert (data["coref_statements"]["rows"], data["coref_statements"]["seed"]) == BERT_STATEMENTS
    assert (data["head_dropout"]["layer"], data["head_dropout"]["p"]) == BERT_DROP_HEADS
    assert RECIPES["bert-tiny"].loss.keywords == {"drop_heads": BERT_DROP_HEADS}
