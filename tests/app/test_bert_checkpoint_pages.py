"""Every lesson that applies to an encoder, on a random checkpoint of BERT-base's shape (12 x
12, d = 768, 30,522 ids, tests/support/bert_base.py): the page runs without an exception, and
numbers it sends to the browser are the trace's. Lesson 15 (BERT) runs on the checkpoint
itself: its masking never hides [CLS] or [SEP] and draws replacements from the checkpoint's
own tokens. A BERT saved without its masked-LM head (``BertModel``) gets the tour without a
guess, said in words.

The folder is named as a model the way the sidebar lists one (as in test_gpt2_small_pages).
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

import tfviz
from tests.app.specs import assert_layernorm_stats_are_the_hooks, instant_charts, static_rows
from tests.app.test_gpt2_small_pages import PICTURE_TOLERANCE, layers_sent, picture_values, shown_patterns
from tests.support.bert_base import bert_base_folder, bert_headless_folder

pytestmark = pytest.mark.slow
TEXT = ("The animal didn't cross the street because it was too tired. The dog saw the cat near "
        "the old bridge, and it ran home quickly!")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(bert_base_folder(tmp_path_factory))


@pytest.fixture(scope="module")
def bundle(folder):
    return tfviz.load(folder)


@pytest.fixture(scope="module")
def trace(bundle):
    return bundle.trace(TEXT)


def listing(monkeypatch, *folders):
    import tfviz.ui.cache as cache
    import tfviz.ui.live as live
    import tfviz.ui.model_offer as model_offer
    import tfviz.ui.sidebar as sidebar

    listed = cache.model_names
    for module in (cache, sidebar, live, model_offer):
        monkeypatch.setattr(module, "model_names", lambda: [*listed(), *folders])


@pytest.fixture
def page(folder, app_page, monkeypatch):
    listing(monkeypatch, folder)

    def run(lesson: str, text: str = TEXT, **query):
        at = app_page(lesson, model=folder, text=text, **query)
        assert at.session_state["model"] == folder  # the page ran on the checkpoint
        return at

    return run


def all_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for kind in ("info", "warning", "success", "error") for e in at.get(kind)]
    return " ".join(str(p) for p in parts)


def test_tour_hides_a_token_and_shows_the_checkpoints_guess(page, bundle, trace):
    at = page("01_tour.py")
    assert "12 blocks, 12 heads, 768 numbers per token" in " ".join(c.value for c in at.caption)
    bars = [spec for spec in (json.loads(c.proto.spec) for c in at.get("vega_lite_chart"))
            if "What hides at position" in json.dumps(spec.get("title", ""))]
    rows = bars[0]["layer"][0]["data"]["values"]
    position = int(at.session_state["tour_mask_pos"])
    ids = list(trace.ids)
    ids[position] = bundle.tokenizer.mask_id
    with torch.no_grad():  # the model's plain forward pass (its parity with transformers: test_hf_bert)
        logits = bundle.model(torch.tensor([ids]))[0, position].double().numpy()
    p = np.exp(logits - logits.max())
    p /= p.sum()
    assert [r["id"] for r in rows] == np.argsort(-p)[:5].tolist()
    np.testing.assert_allclose([r["probability"] for r in rows], np.sort(p)[::-1][:5], rtol=1e-5)


def test_lookup_weights_of_every_head_and_query_of_the_chosen_layer(page, trace):
    at = page("04_lookup.py", layer="10")
    assert layers_sent(at) == {10}
    assert shown_patterns(at, trace) >= 12 * len(trace.ids)


def test_self_attention_sends_the_chosen_layer(page, trace):
    at = page("05_self_attention.py", layer="7")
    assert layers_sent(at) == {7}
    assert shown_patterns(at, trace) >= 12 + 12 * len(trace.ids)


def test_self_attention_follows_the_first_tokens_of_a_long_text(page, bundle):
    """A 300-token text: lesson 5 says it follows the first 128 (SELF_ATTENTION_TOKENS) and
    shows the maps of exactly those ids, [CLS] first and the closing [SEP] last."""
    from tfviz.bundle import Reading
    from tfviz.ui.experiments_cache import SELF_ATTENTION_TOKENS as LIMIT

    text = "the cat sat on the mat . " * 43
    ids = bundle.read(text).ids
    assert len(ids) > LIMIT
    at = page("05_self_attention.py", text=text, layer="3")
    assert any(f"reads {len(ids)} tokens" in e.value and f"follows the first {LIMIT}" in e.value
               for e in at.info), [e.value for e in at.info]
    cut = bundle.trace(Reading((*ids[:LIMIT - 1], ids[-1]), None))
    assert layers_sent(at) == {3}
    assert shown_patterns(at, cut) >= 12  # every head's 128 × 128 map of layer 3


def test_multihead_maps_of_every_layer_and_head(page, trace):
    at = page("07_multihead.py")
    assert shown_patterns(at, trace) >= 12 * 12


def test_layernorm_statistics_are_the_hooks(page, trace):
    at = page("09_layernorm.py", layer="4")
    assert layers_sent(at) == {4}
    assert_layernorm_stats_are_the_hooks(at, trace, 4)


def test_forward_walk_of_one_block(page, trace):
    at = page("12_forward.py")
    walk = next(data["numbers"] for _, data in instant_charts(at) if "numbers" in data)
    heads = walk[walk["step"] == 3]  # tokens, embeddings, positions, then block 0's attention
    assert sorted(heads["head"]) == list(range(12))
    for row in heads.itertuples():
        shown = picture_values(row.img)
        assert np.abs(shown - trace["pattern", 0][int(row.head)]).max() <= PICTURE_TOLERANCE


@pytest.mark.parametrize("lesson", ["06_scaling.py", "08_masking.py"])
def test_scaling_and_masking_send_the_chosen_layer(page, lesson):
    at = page(lesson, layer="5")
    assert layers_sent(at) == {5}


@pytest.mark.parametrize("lesson", ["02_tokenizer.py", "03_embeddings.py", "10_ffn.py",
                                    "17_long_sequences.py", "18_gqa.py"])
def test_page_runs(page, lesson):
    """Runs without an exception on the checkpoint (the fixture's app_page asserts it)."""
    at = page(lesson)
    assert at.title


def test_bert_lesson_masks_the_checkpoints_own_tokens(page, bundle, trace):
    """Lesson 15 runs on the sidebar's BERT: the chosen positions are never [CLS] or [SEP],
    a random replacement is one of its tokenizer's own ordinary ids, and each chosen row's
    p(typed token) is the model's own softmax on what the row says it reads."""
    from tfviz.analysis.masking import special_ids

    tok = bundle.tokenizer
    taken = special_ids(tok)
    at = page("15_bert.py")
    assert "This lesson runs on the sidebar's" in all_text(at)
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert any(f"What {at.session_state['model']} reads" in json.dumps(spec, ensure_ascii=False)
               for spec in specs)
    for seed in range(4):  # several draws, so that some replace a token by a random one
        if seed:
            at.number_input(key="bert_seed").set_value(seed)
            at.run()
            assert not at.exception
        rows = static_rows(at, "p(typed token)")  # an HTML table: it follows the sentence
        n = len(trace.ids)
        ordinary = n - 2
        assert len(rows) == max(1, round(0.15 * ordinary))
        inputs = list(trace.ids)
        for r in rows:
            i = int(r["position"])
            assert 0 < i < n - 1 and r["typed"] == trace.tokens[i]
            read = r["model reads"]
            if r["becomes"] == "[MASK]":
                assert read == "[MASK]"
                inputs[i] = tok.mask_id
            elif r["becomes"] == "random token":
                rid = next(j for j in range(tok.vocab_size) if tok.id_to_token(j) == read)
                assert rid not in taken and rid < tok.vocab_size
                inputs[i] = rid
        with torch.no_grad():
            p = torch.softmax(bundle.model(torch.tensor([inputs]))[0].double(), -1).numpy()
        for r in rows:
            i = int(r["position"])
            assert float(r["p(typed token)"]) == pytest.approx(p[i, trace.ids[i]], abs=5e-5)  # shown to 4 places


def transformers_it_rows(folder, sentence: str):
    """transformers' own reading of an "it" sentence, found without tfviz: its tokenizer's ids,
    the token of "it" and the tokens of "animal" and "street" by their characters (offsets),
    and every head's attention row from "it", (layers, heads, n)."""
    import transformers

    from tests.support.bert_folders import reference

    enc = transformers.AutoTokenizer.from_pretrained(folder)(sentence, return_offsets_mapping=True)
    lower = sentence.lower()

    def pieces(word: str) -> list[int]:
        start = re.search(rf"\b{word}\b", lower).start()
        return [i for i, (a, b) in enumerate(enc["offset_mapping"]) if start <= a < start + len(word) and b > a]

    (it,), animal, street = pieces("it"), pieces("animal"), pieces("street")
    rows = np.stack([p[:, it, :] for p in reference(folder, enc["input_ids"])["patterns"]])
    return rows, it, animal, street


def test_bert_lesson_shows_the_checkpoints_it_head_that_moves_most(page, folder):
    """Section 3 on the checkpoint: WordPiece tokens hold "it" and its two nouns; the chart
    opens on the head whose (weight on animal − weight on street) from "it" moves most between
    the "tired" and the "wide" sentence, and the page's numbers are transformers' attention."""
    from tests.app.specs import param_values
    from tfviz.ui.state import EXAMPLES

    at = page("15_bert.py")
    model = at.session_state["model"]
    ref = [transformers_it_rows(folder, EXAMPLES[f"Coreference ({w})"]) for w in ("tired", "wide")]
    gaps = [rows[:, :, animal].sum(-1) - rows[:, :, street].sum(-1) for rows, _, animal, street in ref]
    change = gaps[0] - gaps[1]
    layer, head = (int(x) for x in np.unravel_index(np.argmax(np.abs(change)), change.shape))
    line = next(m.value for m in at.markdown if "head that moves most" in m.value)
    assert line.startswith(f"**{model}'s head that moves most: layer {layer}, head {head}.**")
    shown = [float(x) for x in re.findall(r"\*\*([+-]\d\.\d{3})\*\*", line)]
    np.testing.assert_allclose(shown, [gaps[0][layer, head], gaps[1][layer, head]], atol=6e-4)  # 3 decimals
    spec, data = next((s, d) for s, d in instant_charts(at) if "it_rows" in d)
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (layer, head)
    table = data["it_rows"]
    for s, (rows, *_) in enumerate(ref):
        got = table[table["s"] == s]
        assert len(got) == rows.size
        for r in got.itertuples():
            assert abs(r.v - rows[r.layer, r.head, r.i]) <= 6e-5  # four decimals sent
    # an encoder's "it" row changes with the word after it: up to "it", read at its own position
    it = ref[0][1]
    bert_change = np.abs(ref[0][0][..., :it + 1] - ref[1][0][..., :it + 1]).max()
    decoder = next(m.value for m in at.markdown if m.value.startswith("**A decoder cannot.**"))
    assert f"{model}'s rows change by up to **{bert_change:.2f}**" in decoder


def test_span_corruption_keeps_the_checkpoints_own_cls_and_sep(page, folder, trace):
    """Section 6 on the checkpoint: runs of the text's tokens are hidden, never [CLS] or
    [SEP], which stay first and last; each run reads as the tokenizers library's WordPiece
    decoder joins its tokens ("##" continues a word), and each hidden run comes back after its
    sentinel in the decoder's line."""
    import itertools

    import transformers
    from tokenizers import decoders

    from tfviz.analysis.pretraining import noise_mask, sentinel

    hf = transformers.AutoTokenizer.from_pretrained(folder)
    tokens = hf.convert_ids_to_tokens(hf(TEXT)["input_ids"])
    cls, inner, sep = tokens[0], tokens[1:-1], tokens[-1]
    assert (cls, sep) == ("[CLS]", "[SEP]")
    wordpiece = decoders.WordPiece(prefix="##", cleanup=False)
    at = page("15_bert.py")
    for seed in (0, 3):
        at.number_input(key="bert_span_seed").set_value(seed).run()
        assert not at.exception
        noise = noise_mask(len(inner), seed)
        encoder, decoder, k = [cls], [], 0
        for hide, run in itertools.groupby(zip(noise, inner), key=lambda x: x[0]):
            words = wordpiece.decode([t for _, t in run])
            if hide:
                encoder.append(sentinel(k))
                decoder += [sentinel(k), words]
                k += 1
            else:
                encoder.append(words)
        encoder.append(sep)
        decoder.append(sentinel(k))
        code = [c.value for c in at.code]
        assert " ".join(encoder) in code and " ".join(decoder) in code
        caption = next(c.value for c in at.caption if "tokens hidden" in c.value)
        assert caption.startswith(f"{sum(noise)} of {len(inner)} tokens hidden, in {k} span")
        assert "[CLS] and [SEP], which" in caption


def test_bert_lesson_fine_tunes_bert_tiny_and_says_so(page):
    at = page("15_bert.py")
    text = all_text(at)
    assert "section 5 fine-tunes bert-tiny" in text and "This section always uses bert-tiny" in text


def test_a_pair_of_sentences_has_one_cls_and_two_seps(bundle):
    """Section 2's pair input on a checkpoint whose tokenizer wraps every text in [CLS] ... [SEP]:
    each sentence's own ids come without them, so the pair has one [CLS] and two [SEP]."""
    from tfviz.analysis import pretraining as pt

    tok = bundle.tokenizer
    a, b = pt.sentence_ids(tok, "the dog ran."), pt.sentence_ids(tok, "it was [MASK].")
    assert [tok.bos_id, *a, tok.eos_id] == bundle.encode("the dog ran.")
    assert b[-2] == tok.mask_id  # a typed [MASK] inside the sentence stays
    cls, sep = pt.cls_sep_ids(tok)
    pair = bundle.token_strings([cls, *a, sep, *b, sep])
    assert pair.count("[CLS]") == 1 and pair.count("[SEP]") == 2 and pair[0] == "[CLS]"


def test_a_text_longer_than_the_context_keeps_its_sep(bundle):
    """Bundle.read cuts a BERT's text inside: [CLS], the first 510 tokens, [SEP]."""
    long = "the dog ran. " * 200
    ids, notice = bundle.read(long)
    full = bundle.encode(long)
    assert len(full) > 512 and len(ids) == 512
    assert list(ids) == full[:511] + [full[-1]]
    assert bundle.token_strings([ids[0], ids[-1]]) == ["[CLS]", "[SEP]"]
    assert notice == (f"Your text is {len(full)} tokens long; the model reads at most 512, so only "
                      "the first 511 are shown, then the [SEP] that ends every text.")


def test_a_long_text_in_the_app_ends_with_sep(tmp_path_factory, app_page, monkeypatch):
    """The tour on a text longer than a BERT's context: the notice says where it was cut, and
    the tokens shown end with [SEP]. On a small BERT of 64 positions (2 × 2, d = 32): the cut
    is the same code at any size (``Bundle.read``, checked at BERT-base's 512 just above), and
    the tour on 512 tokens of BERT-base cost this suite 45 s for the same two lines."""
    from tests.support.bert_folders import make_checkpoint

    folder = tmp_path_factory.mktemp("bert-64") / "bert-64"
    make_checkpoint(folder, n_positions=64)
    listing(monkeypatch, str(folder))
    at = app_page("01_tour.py", model=str(folder), text="! " * 100)
    assert at.session_state["model"] == str(folder)
    notices = [e.value for kind in ("warning", "info", "caption") for e in [*at.get(kind), *at.sidebar.get(kind)]]
    assert any("the model reads at most 64, so only the first 63 are shown, then the [SEP] that "
               "ends every text" in v for v in notices), notices
    assert any("<code>shape (64,)</code>" in h.value for h in at.get("html"))


@pytest.fixture
def headless(tmp_path_factory, app_page, monkeypatch):
    folder = str(bert_headless_folder(tmp_path_factory))
    listing(monkeypatch, folder)
    return folder


def test_tour_of_a_bert_without_head_says_so_and_shows_its_last_vectors(headless, app_page):
    at = app_page("01_tour.py", model=headless, text=TEXT)
    assert at.session_state["model"] == headless
    (info,) = [i.value for i in at.info if "without a head" in i.value]
    assert "makes no guess" in info
    shown = at.dataframe[0].value
    tr = tfviz.load(headless).trace(TEXT)
    want = np.linalg.norm(tr["blocks.1.hook_resid_post"].astype(np.float64), axis=-1)
    np.testing.assert_allclose(shown["length of its last vector"], want, atol=5e-4)  # rounded to 3 places
    assert list(shown["token"]) == list(tr.tokens)
    assert at.button(key="tour_switch")


def test_bert_lesson_on_a_bert_without_head_uses_ours(headless, app_page):
    at = app_page("15_bert.py", model=headless, text=TEXT)
    assert "it needs a BERT with a masked-LM head" in all_text(at)
