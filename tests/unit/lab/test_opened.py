"""A lab run taken to the lessons (tfviz.lab.opened): its tokenizer against hand-written rows,
its bundle against the run's weights run by plain torch, and the run's weights left untouched."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.lab.opened import (RUN_LINK, LabTokenizer, example_text, example_texts, is_run_name,
                              lab_lesson_links, prompt_part, reads_letters, room_after, run_bundle,
                              run_title)
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import TASKS
from tfviz.lab.train import RunLog, train
from tfviz.tokenizer.base import Tokenizer

TINY = dict(d_model=16, n_heads=2, steps=8, batch_size=16)


@pytest.fixture(scope="module")
def run():
    torch.set_num_threads(1)
    return train(LabSettings.default("reverse", **TINY))


# ----- the tokenizer -------------------------------------------------------------------------
def test_letters_are_read_one_by_one_with_bos_first():
    tok = LabTokenizer(TASKS["reverse"])  # <pad> <bos> <eos> <sep>, then a = 4 ... p = 19
    assert isinstance(tok, Tokenizer)
    assert tok.encode("c a b") == tok.encode("cab") == tok.encode("C, A, B") == [1, 6, 4, 5]
    assert tok.encode("<bos> c a b <sep> b a c") == [1, 6, 4, 5, 3, 5, 4, 6]  # no second <bos>
    assert tok.encode("<bos>cab<sep>bac<eos>")[-1] == 2
    assert tok.decode([1, 6, 4, 5, 3]) == "<bos> c a b <sep>"
    for text in ("c a b", "<bos> c <sep> c", "xyz! ab"):
        assert tok.decode(tok.encode(text)) == tok.normalize(text)
    assert tok.unknown("abz! q<pad>") == ["z", "!", "q", "<pad>"]  # sort-free letters a-p: q is not one
    assert tok.encode("<pad>") == [1]
    assert tok.vocab_size == 20 and tok.id_to_token(19) == "p"
    with pytest.raises(IndexError):
        tok.id_to_token(20)


def test_the_stories_are_read_as_words():
    tok = LabTokenizer(TASKS["stories"])
    assert not tok.by_letter and not reads_letters(tok) and reads_letters(LabTokenizer(TASKS["order"]))
    words = "the dog didn't cross the road , because it was so wide . it refers to the".split()
    assert tok.tokens("The dog didn't cross the road, because it was so wide. It refers to the") == \
        ["<bos>", *words]
    assert tok.unknown("the zebra was wide") == ["zebra"]
    assert "words and marks of its stories" in tok.known()


def test_recall_reads_digits_and_says_symbols():
    tok = LabTokenizer(TASKS["recall"])
    assert tok.tokens("ab3") == ["<bos>", "a", "b", "3"]
    assert tok.known().startswith("the symbols a b c")


@pytest.mark.parametrize("text", ["", "😀🙂", "שלום עולם", "<script>alert(1)</script>", "x" * 100_000,
                                  "**[a](b)** `c`", "\x00\x07"], ids=lambda t: f"{t[:10]!r}x{len(t)}")
def test_any_text_is_read_and_named_without_an_error(text):
    tok = LabTokenizer(TASKS["sort"])
    ids = tok.encode(text)
    assert ids[0] == tok.bos_id and all(0 < i < tok.vocab_size for i in ids)
    note = tok.unknown_notice(text)
    if tok.unknown(text):
        assert note.startswith("Your run's model reads only the letters a b c d e f g h")
        assert "`" not in note.replace("\\`", "") and "**" not in note.replace("\\*", "")  # escaped
        assert len(note) < 400  # at most 8 symbols named, each cut to 12 characters
    else:
        assert note is None


# ----- names, texts, links -------------------------------------------------------------------------
def test_names_and_the_link_marker():
    s = LabSettings.default("sort", n_experts=4)
    assert run_title(s, 2) == "my run 2: sort, 2 layers × 2 heads, MoE 4 experts"
    assert run_title(LabSettings.default("recall"), 1) == "my run 1: recall, 1 layer × 1 head"
    assert is_run_name(run_title(s, 2)) and not is_run_name("gpt-tiny") and not is_run_name(None)
    assert not is_run_name(RUN_LINK)  # the link's marker names no run: the URL falls back


def test_examples_are_the_held_out_rows_the_lab_shows():
    for key, task in TASKS.items():
        texts = example_texts(task, 3)
        held = task.examples(3, 1, "heldout")  # tfviz.lab.train.HELDOUT_SEED
        assert list(texts.values()) == [" ".join(task.vocab.decode(task.encode(e)[0])) for e in held]
        tok = LabTokenizer(task)
        for text in texts.values():  # each reads back as exactly its row
            assert tok.decode(tok.encode(text)) == text and not tok.unknown(text)
            assert len(tok.encode(text)) <= task.max_len
    assert example_text(TASKS["sort"], (("c", "a"), ("a", "c"))) == "<bos> c a <sep> a c"


def test_prompt_room_and_links():
    assert prompt_part("<bos> c a <sep> a c") == "<bos> c a <sep>"
    assert prompt_part("<bos> the dog") == "<bos> the dog"
    urls = [u for u, _ in lab_lesson_links(LabSettings.default("sort", n_experts=2).model_config())]
    assert "mixture-of-experts" in urls and "decoding" in urls
    assert "decoding" not in [u for u, _ in lab_lesson_links(LabSettings.default("order").model_config())]


# ----- the bundle -------------------------------------------------------------------------------
def _layer0_weights_by_hand(W: dict, ids: list[int], n_heads: int, d: int) -> np.ndarray:
    """Layer 0's attention weights from the raw state dict: embedding + sine table, LayerNorm,
    Q and K, scaled scores, causal mask, softmax (torch functions only, no tfviz model code)."""
    t = {k: torch.from_numpy(np.array(v)) for k, v in W.items()}
    T = len(ids)
    pos = torch.zeros(T, d, dtype=torch.float64)
    k = torch.arange(T, dtype=torch.float64)[:, None]
    angle = k / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pos[:, 0::2], pos[:, 1::2] = torch.sin(angle), torch.cos(angle)
    x = t["embed.weight"][ids] + pos.float()
    h = F.layer_norm(x, (d,), t["blocks.0.ln1.weight"], t["blocks.0.ln1.bias"], eps=1e-5)
    q = F.linear(h, t["blocks.0.attn.W_q.weight"], t["blocks.0.attn.W_q.bias"]).view(T, n_heads, -1)
    kk = F.linear(h, t["blocks.0.attn.W_k.weight"], t["blocks.0.attn.W_k.bias"]).view(T, n_heads, -1)
    scores = torch.einsum("qhd,khd->hqk", q, kk) / math.sqrt(d // n_heads)
    scores = scores.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    return torch.softmax(scores, -1).numpy()  # (heads, T, T)


def test_a_finished_run_keeps_frozen_weights_and_its_bundle_computes_with_them(run):
    assert run.state == "done" and run.weights is not None
    assert all(not a.flags.writeable for a in run.weights.values())
    with pytest.raises(TypeError):
        run.weights["embed.weight"] = None  # the mapping itself is read-only too
    before = {k: v.copy() for k, v in run.weights.items()}
    bundle = run_bundle(run.settings, run.weights, "my run 1: reverse", {"steps": run.step})
    assert bundle.name == "my run 1: reverse" and bundle.trained and bundle.manifest["steps"] == 8
    assert all(not p.requires_grad for p in bundle.model.parameters()) and not bundle.model.training
    text = example_texts(TASKS["reverse"], 1).popitem()[1]
    trace = bundle.trace(text)
    ids = TASKS["reverse"].vocab.encode(text.split())  # the task's own vocabulary, not the tokenizer
    assert list(trace.tokens) == text.split()
    want = _layer0_weights_by_hand(run.weights, ids, 2, 16)
    # float32 through torch's layer_norm and linear, not the model's code: a float32 tolerance
    np.testing.assert_allclose(trace["pattern", 0], want, atol=1e-5)
    with torch.no_grad():  # the bundle's model is a copy: changing it leaves the run as it was
        for p in bundle.model.parameters():
            p.add_(1.0)
    assert all(np.array_equal(before[k], run.weights[k]) for k in before)


def test_a_stopped_run_has_weights_and_a_failed_one_none():
    import threading

    stop = threading.Event()
    stop.set()
    stopped = train(LabSettings.default("copy", **TINY), stop=stop)
    assert stopped.state == "stopped" and stopped.weights is not None
    log = RunLog(LabSettings.default("copy", **TINY))
    assert log.view().weights is None  # nothing before the run ends


def test_room_after_a_prompt(run):
    bundle = run_bundle(run.settings, run.weights, "my run 1: reverse")
    assert room_after(bundle, "<bos> a b c <sep>") == 18 - 5
    assert room_after(bundle, "a" * 40) == 1
