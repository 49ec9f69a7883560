"""``bundle.facts``: what each kind of model the app can hold is, computed from its config,
tokenizer and manifest, checked against what is independently known of each: our recipes,
transformers' own tokenizer and model classes, the lab's settings."""
from __future__ import annotations

import pytest

import tfviz
from tfviz.facts import BIG_MODEL, timing_repeats


def test_our_bundled_decoder():
    f = tfviz.load("gpt-tiny").facts
    assert (f.origin, f.family, f.arch, f.norm, f.norm_kind) == ("bundled", "tfviz", "decoder", "post", "layernorm")
    assert (f.activation_name, f.positions, f.tokenizer, f.unknown) == ("ReLU", "sinusoidal", "byte-level BPE", "never")
    assert not f.cased  # the served tokenizer lower-cases (tfviz.tokenizer.served)
    assert (f.specials.bos, f.specials.eos, f.specials.unk) == ("<bos>", "<eos>", "<unk>")
    assert f.eos_ends == "sentence"  # its manifest: one "sentence <eos>" per training row
    assert f.n_params == 188_352 == tfviz.load("gpt-tiny").manifest["eval"]["parameters"]
    assert (f.size_class, f.timing_repeats, f.timing) == ("tiny", 5, "the best of 5 runs")
    assert (f.n_heads, f.kv_heads, f.grouped, f.gated, f.biases, f.tied) == (4, 4, False, False, "all", True)
    assert f.rope_base is None and f.rope_scaling is None


def test_the_modern_block_at_gpt_tinys_size():
    """llama-tiny's config, fresh or trained: RMSNorm, SwiGLU, RoPE, GQA, no biases, untied."""
    from tfviz.bundle import fresh
    from tfviz.config import preset

    f = fresh(preset("llama-tiny")).facts
    assert (f.norm, f.norm_kind, f.norm_name, f.final_norm) == ("pre", "rmsnorm", "RMSNorm", True)
    assert (f.activation_name, f.gated, f.positions, f.rope_base) == ("SwiGLU", True, "rope", 10000.0)
    assert (f.n_heads, f.kv_heads, f.grouped, f.biases, f.tied) == (4, 2, True, "none", False)


def test_our_encoder_and_seq2seq():
    bert = tfviz.load("bert-tiny").facts
    assert (bert.arch, bert.activation, bert.eos_ends, bert.eos_meaning) == ("encoder", "gelu", None, None)
    rev = tfviz.load("reverse-encdec").facts
    assert (rev.tokenizer, rev.unknown, rev.eos_ends) == ("letters", "skipped", "row")
    assert rev.specials.mask is None and rev.specials.sep == "<sep>"


def test_a_fresh_preset_reads_bytes_and_is_cased():
    from tfviz.bundle import fresh
    from tfviz.config import preset

    f = fresh(preset("gpt-tiny")).facts
    assert (f.origin, f.tokenizer, f.unknown, f.cased) == ("fresh", "bytes", "never", True)


def test_a_lab_run():
    import torch

    from tfviz.lab.opened import run_bundle
    from tfviz.lab.settings import LabSettings
    from tfviz.lab.train import train

    torch.set_num_threads(1)
    settings = LabSettings.default("reverse", d_model=16, n_heads=2, steps=2, batch_size=8)
    run = train(settings)
    f = run_bundle(run.settings, run.weights, "my run 1: reverse").facts
    cfg = settings.model_config()
    assert (f.origin, f.tokenizer, f.unknown, f.eos_ends) == ("lab", "task symbols", "skipped", "row")
    assert (f.norm, f.positions, f.activation) == (cfg.norm, cfg.positional, cfg.activation)


def test_timing_repeats_follow_the_size():
    assert timing_repeats(BIG_MODEL) == 5 and timing_repeats(BIG_MODEL + 1) == 1


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    pytest.importorskip("transformers")
    from tests.support.bert_folders import make_checkpoint as make_bert
    from tests.unit.hf.test_gpt2 import make_checkpoint as make_gpt2

    root = tmp_path_factory.mktemp("facts")
    make_gpt2(root / "gpt2")
    make_bert(root / "bert-pretraining", "BertForPreTraining")
    return root


def test_a_gpt2_folder(folders):
    import transformers

    f = tfviz.load(folders / "gpt2").facts
    hf = transformers.AutoConfig.from_pretrained(folders / "gpt2")
    assert (f.origin, f.family, f.norm, f.final_norm) == ("folder", "GPT-2", "pre", True)
    assert (f.activation, f.positions) == ("gelu_tanh", "learned")  # GPT-2's gelu_new, learned wpe
    assert f.cased and (f.tokenizer, f.unknown) == ("byte-level BPE", "never")
    eos = "<|endoftext|>"
    assert (f.specials.eos, f.specials.bos, f.specials.mask, f.specials.unk) == (eos, eos, None, None)
    assert f.eos_ends == "document" and "document" in f.eos_meaning
    assert f.context == hf.n_positions and not f.parts.pooler


def test_a_bert_pretraining_folder_names_what_the_loader_set_aside(folders):
    b = tfviz.load(folders / "bert-pretraining")
    f = b.facts
    assert (f.family, f.arch, f.norm, f.tokenizer, f.unknown) == ("BERT", "encoder", "post", "WordPiece", "unk-token")
    assert not f.cased  # transformers' BertTokenizer default: do_lower_case
    assert (f.specials.cls, f.specials.sep, f.specials.mask, f.specials.unk) == ("[CLS]", "[SEP]", "[MASK]", "[UNK]")
    # BertForPreTraining holds a pooler and a next-sentence head; tfviz computes neither, so the
    # loader reads them not, and the facts still say the file has them
    assert f.parts.pooler and f.parts.next_sentence_head and f.parts.segment_table
    assert any(k.startswith("bert.pooler.") for k in f.parts.set_aside)
    assert any("seq_relationship" in k for k in f.parts.set_aside)
    assert not any("pooler" in k for k in b.model.state_dict())
    # the unknown token is real: WordPiece writes it for a character it has no piece for
    assert "[UNK]" in b.token_strings(b.encode("🦜"))


def test_rope_pairs_and_an_added_bos_on_our_models():
    """gpt-tiny-rope turns adjacent dimensions, llama-tiny Llama's halves; none of our story
    tokenizers puts <bos> in front of a text (their training rows start with the first word)."""
    facts = {name: tfviz.load(name).facts for name in ("gpt-tiny", "gpt-tiny-rope", "llama-tiny")}
    assert {n: f.rope_pairs for n, f in facts.items()} == {
        "gpt-tiny": None, "gpt-tiny-rope": "adjacent", "llama-tiny": "halves"}
    for name, f in facts.items():
        assert not f.adds_bos
        assert tfviz.load(name).encode("the cat")[0] != tfviz.load(name).tokenizer.bos_id


@pytest.mark.parametrize("kind, bos", [("llama3", "<|begin_of_text|>"), ("llama2", "<s>"),
                                       ("metaspace", "<s>"), ("qwen", None)])
def test_a_llama_folder_adds_its_bos_as_transformers_tokenizer_does(tmp_path, kind, bos):
    """The tokenizer transformers loads from the same folder is the reference: its first id of
    a plain text is the BOS exactly when the facts say so."""
    pytest.importorskip("transformers")
    import transformers

    from tests.support.llama_folders import make_checkpoint

    make_checkpoint(tmp_path, "qwen2" if kind == "qwen" else "llama", tokenizer=kind, layers=1)
    f = tfviz.load(tmp_path).facts
    theirs = transformers.AutoTokenizer.from_pretrained(tmp_path)
    first = theirs("the cat")["input_ids"][0]
    if bos is not None:  # (a Qwen tokenizer has none; transformers' bos_token is None there)
        assert f.specials.bos == theirs.bos_token == bos
    assert f.adds_bos == (theirs.bos_token is not None and first == theirs.bos_token_id)
    assert f.adds_bos == (kind != "qwen")
    assert f.rope_pairs == "halves"


@pytest.mark.parametrize("tokenizer", ["llama2", "llama3"])
def test_a_llama_folder(tmp_path, tokenizer):
    """The modern block from a folder: its facts are config.json's, and its BOS and EOS are the
    checkpoint's own (a Llama tokenizer adds BOS only: no [CLS] ... [SEP] wrapping)."""
    pytest.importorskip("transformers")
    from tests.support.llama_folders import SPECIALS, make_checkpoint

    make_checkpoint(tmp_path, tokenizer=tokenizer, kv_heads=2, rope_theta=500000.0)
    b = tfviz.load(tmp_path)
    f = b.facts
    assert (f.origin, f.norm, f.norm_kind, f.activation, f.positions) == ("folder", "pre", "rmsnorm", "swiglu", "rope")
    assert (f.n_heads, f.kv_heads, f.grouped, f.biases, f.rope_base) == (4, 2, True, "none", 500000.0)
    assert f.specials.cls is None and f.specials.sep is None
    assert b.token_strings(b.encode("a b"))[0] == f.specials.bos == SPECIALS[tokenizer][0 if tokenizer == "llama3" else 1]
    assert f.eos_ends == "document" and f.cased
    assert f.tokenizer == ("byte-level BPE" if tokenizer == "llama3" else "SentencePiece BPE")
    assert f.unknown == "never"  # byte-level, or byte fallback


def test_a_tokenizer_that_refuses_words_still_has_facts():
    """A few-symbol vocabulary (tests/support/tiny_lm.py reads the letters a-e only) raises on
    "The Cat": the facts are still computed, and generation, which names the end token from them,
    still runs."""
    from tests.support.tiny_lm import tiny_bundle

    f = tiny_bundle().facts
    assert (f.specials.eos, f.cased, f.adds_bos) == ("<eos>", True, False)
