"""Lesson 14 (/decoding) with a checkpoint's own BOS and EOS. A Llama's tokenizer puts its
beginning-of-text token in front of every text: the page says so with the token's real name and
id and shows it first among the prompt's tokens, and generation stops at the end token the
folder's generation_config.json names, or at any of them when it names a list (Llama 3
Instruct's [128001, 128008, 128009]). transformers is the reference: its tokenizer for the
same folder (the ids and the BOS) and its own ``generate``, which stops at the same token."""
from __future__ import annotations

import json

import pytest
import torch

import tfviz
from tests.support.modern_sidebar import offer_llama_folders
from tfviz.decoding import generate, prompt_with_room
from tfviz.decoding.generate import continuation_text

pytest.importorskip("transformers")

PAGE = "14_decoding.py"
TEXT = "the animal didn't cross the street because it was too tired"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _words(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info") for e in at.get(kind))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    from tests.support.llama_folders import make_checkpoint

    root = tmp_path_factory.mktemp("bos-models")
    make_checkpoint(root / "llama3", "llama", tokenizer="llama3", positions=128)
    make_checkpoint(root / "llama2", "llama", tokenizer="llama2", positions=128)
    return root


@pytest.mark.parametrize("kind, bos", [("llama3", "<|begin_of_text|>"), ("llama2", "<s>")])
def test_the_tokenizers_bos_is_said_and_shown(app_page, monkeypatch, folders, kind, bos):
    import transformers

    offer_llama_folders(monkeypatch, folders)
    at = _ok(app_page(PAGE, model=kind, text=TEXT))
    b = tfviz.load(folders / kind)
    theirs = transformers.AutoTokenizer.from_pretrained(folders / kind)
    prompt = at.text_area(key="dec_prompt").value
    ids = b.encode(prompt)
    assert ids == theirs(prompt)["input_ids"] and ids[0] == theirs.bos_token_id  # the BOS, as transformers adds it
    assert b.facts.adds_bos and b.facts.specials.bos == theirs.bos_token == bos
    shown = " ".join(f"`{t}`" for t in b.token_strings(ids[:8]))
    assert (f"**{kind} reads `{bos}` first.** Its tokenizer puts its beginning-of-text token `{bos}` "
            f"(id {theirs.bos_token_id}) in front of every text") in _words(at)
    assert shown in _words(at) and shown.startswith(f"`{bos}`")
    eos_ids = json.loads((folders / kind / "generation_config.json").read_text())["eos_token_id"]
    eos_ids = eos_ids if isinstance(eos_ids, list) else [eos_ids]  # llama3's names two
    said = " or ".join(f"`{b.token_strings([i])[0]}` (id {i})" for i in eos_ids)
    assert b.tokenizer.eos_ids == tuple(eos_ids) and b.facts.specials.ends == tuple(b.token_strings(eos_ids))
    assert ("It ends a text with its own end token"
            + (f", {said}." if len(eos_ids) == 1 else f"s, either of 2: {said}.")) in _words(at)
    assert len([c for c in at.code if c.value.startswith(bos)]) == 1  # the text it continues, BOS first
    # the training loss scores the first word too, from the BOS
    assert f"The first input is `{bos}`, which {kind}'s tokenizer put there" in _words(at)


@pytest.mark.parametrize("listed", [False, True], ids=["one eos", "a list"])
def test_generation_stops_at_the_eos_the_folder_names(app_page, monkeypatch, tmp_path, listed):
    """The folder's generation_config.json is rewritten to name, as its end token, the 4th token
    greedy decoding writes, alone or second in a list after <|end_of_text|> (as Llama 3 Instruct
    lists three): our generation, beam search and the KV-cache lesson's run, and transformers'
    generate, all stop there; bundle.facts and the page name every end token."""
    import transformers

    from tests.support.llama_folders import make_checkpoint
    from tfviz.decoding import beam_search_tree
    from tfviz.experiments.kv_cache import side_by_side

    folder = tmp_path / "stopper"
    make_checkpoint(folder, "llama", tokenizer="llama3", positions=128)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    b = tfviz.load(folder)
    ids = b.encode(TEXT)
    prompt = dict(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long))
    free = theirs.generate(**prompt, max_new_tokens=8, do_sample=False, eos_token_id=None,
                           min_new_tokens=8)[0, len(ids):].tolist()
    k = next(i for i in range(3, 8) if free[i] not in free[:i])  # a token greedy writes first at step i
    stop = free[k]
    config = json.loads((folder / "generation_config.json").read_text())
    first = b.tokenizer.hf.token_to_id("<|end_of_text|>")
    assert stop != first
    ends = [first, stop] if listed else [stop]
    (folder / "generation_config.json").write_text(json.dumps({**config, "eos_token_id": ends if listed else stop}))
    b = tfviz.load(folder)
    assert b.tokenizer.eos_id == ends[0] and b.tokenizer.eos_ids == tuple(ends)
    assert b.facts.specials.ends == tuple(b.token_strings(ends)) and b.facts.specials.eos == b.facts.specials.ends[0]
    ours = generate(b, ids, strategy="greedy", max_new_tokens=20)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    stopped = theirs.generate(**prompt, max_new_tokens=20, do_sample=False)[0, len(ids):].tolist()
    assert list(ours.new_ids) == stopped == free[:k + 1]  # both end with the folder's end token
    assert ours.stop_reason == "eos" and ours.text == continuation_text(b, ids, free[:k])  # without it
    beam = beam_search_tree(b, ids, beam_width=1, max_new_tokens=20)  # one beam: greedy
    assert beam.hypotheses[0].new_ids == tuple(free[:k + 1]) and beam.finished(beam.hypotheses[0])
    side = side_by_side(b, ids, 20, repeats=1)
    assert side.stop_reason == "eos" and side.cached_ids == tuple(free[:k + 1])
    offer_llama_folders(monkeypatch, tmp_path)
    at = _ok(app_page(PAGE, model="stopper", text=TEXT))
    at.text_area(key="dec_prompt").set_value(TEXT)
    _ok(at.run())
    name = b.token_strings([stop])[0]
    assert f"Generation stops when the model writes `{b.token_strings(ends)[0]}`, which for stopper marks" in _words(at)
    if listed:
        assert f"the end of a whole document (a boundary between texts), or another of its end tokens, `{name}`." in _words(at)
    assert f"The model chose {name}: it ended the text." in _words(at)
    assert f"**stopper writes** ({k + 1} new tokens, greedy):" in _words(at)


def test_a_cut_prompt_keeps_its_bos(folders):
    b = tfviz.load(folders / "llama3")
    long = "the dog sat near the lake. " * 40
    ids, notice = prompt_with_room(b, long, 20)
    assert len(ids) == 108 and ids[0] == b.tokenizer.bos_id
    assert ids[1:] == tuple(b.encode(long)[-107:])
    assert notice.endswith("it continues from <|begin_of_text|>, as every text it reads begins, and the last 107.")
    gpt = tfviz.load("gpt-tiny")
    ids, notice = prompt_with_room(gpt, long, 20)
    assert ids == tuple(gpt.encode(long)[-108:]) and notice.endswith("from the last 108.")


def test_a_tokenizer_without_bos_says_so(app_page):
    at = _ok(app_page(PAGE, model="gpt-tiny", text=TEXT))
    f = tfviz.load("gpt-tiny").facts
    assert not f.adds_bos
    assert "gpt-tiny's tokenizer puts no beginning-of-text token in front of your prompt" in _words(at)
    assert "reads `" not in _words(at)
