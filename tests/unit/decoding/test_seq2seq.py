"""reverse-encdec's step-by-step decoding (tfviz.decoding.seq2seq): cross-attention K and V are
projected once per source and reused, and that changes nothing but the work done.

References, each independent of ``translate``: torch forward hooks that count the calls of
each cross-attention W^K / W^V; the model re-run on the whole sequence at every step (no cache
at all); Bundle.seq2seq_inputs' own greedy loop; the training code's batched greedy decoder
with padding (tfviz.training.evaluate.greedy_reverse); and one full teacher-forced trace.
"""
import dataclasses

import numpy as np
import pytest
import torch

import tfviz
from tfviz.model import Transformer
from tfviz.data.tasks import make_reverse
from tfviz.decoding.seq2seq import ALLOWED, MAX_SOURCE, check_source, translate
from tfviz.training.evaluate import greedy_reverse

SOURCES = ["a", "hello", "pop", "abcdefghijkl", "ppppaaaa"]
# The same float32 operations on the same inputs: reuse and recompute agree to the last bit
# here, but BLAS may pick a different kernel for a differently shaped call, so allow float32
# rounding of logits of size ~10 (1e-6 relative).
SAME_OPS = 1e-5
# Different shapes (a whole sequence against one new row) sum in a different order: float32
# rounding of values up to ~20 accumulated over d = 64 terms.
REORDERED = 1e-4


@pytest.fixture(scope="module")
def bundle():
    return tfviz.load("reverse-encdec")


def count_projections(bundle, **kwargs):
    """(translation, calls of W^K and of W^V per decoder layer's cross-attention), counted by
    torch forward hooks on this test's own copy of the model."""
    calls = {}
    handles = []
    for i, block in enumerate(bundle.model.blocks):
        for name in ("W_k", "W_v"):
            calls[(i, name)] = 0

            def hook(module, inputs, output, key=(i, name)):
                calls[key] += 1
            handles.append(getattr(block.cross_attn, name).register_forward_hook(hook))
    try:
        result = translate(bundle, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return result, calls


@pytest.mark.parametrize("source", SOURCES)
def test_keys_and_values_of_the_memory_are_projected_once_and_reuse_changes_nothing(source):
    bundle = tfviz.load("reverse-encdec")  # our own copy: hooks go on its modules
    once, calls_once = count_projections(bundle, source=source)
    every, calls_every = count_projections(bundle, source=source, reuse_cross_kv=False)
    T = len(once.steps)
    assert T == len(source) + 1  # every letter, then <eos>
    assert set(calls_once.values()) == {1}  # each layer's W^K and W^V ran once for all T steps
    assert set(calls_every.values()) == {T}  # ... or once per step
    assert (once.kv_projections, every.kv_projections) == (1, T)  # translate counts the same
    assert once.new_ids == every.new_ids and once.output == every.output == source[::-1]
    for a, b in zip(once.steps, every.steps):
        np.testing.assert_allclose(a.logits, b.logits, rtol=0, atol=SAME_OPS)
        np.testing.assert_allclose(a.cross_rows, b.cross_rows, rtol=0, atol=SAME_OPS)


@pytest.mark.parametrize("source", SOURCES)
def test_every_step_equals_the_model_rerun_on_the_whole_sequence(bundle, source):
    t = translate(bundle, source)
    src = torch.tensor([t.source_ids])
    with torch.no_grad():
        for k, step in enumerate(t.steps):
            dec = torch.tensor([t.decoder_ids[:k + 1]])
            full = bundle.model(dec, enc_ids=src)[0, -1].numpy()  # encoder and all, from scratch
            np.testing.assert_allclose(step.logits, full, rtol=0, atol=REORDERED)
            assert step.chosen == int(full.argmax())


def test_greedy_ids_match_two_other_decoders(bundle):
    """Bundle.seq2seq_inputs (one sequence, the model's step) and the training code's batched,
    padded decoder give the same answers as translate."""
    sources = [bundle.encode(s) for s in SOURCES]
    batched = greedy_reverse(bundle.model, sources, bundle.tokenizer.bos_id,
                             bundle.tokenizer.eos_id, MAX_SOURCE + 1)
    for text, ids, other in zip(SOURCES, sources, batched):
        t = translate(bundle, ids)
        _, dec = bundle.seq2seq_inputs(text)
        assert list(t.decoder_ids) == dec
        assert [i for i in t.new_ids if i != bundle.tokenizer.eos_id] == other


def test_recorded_rows_stack_into_the_full_trace(bundle):
    """The rows recorded step by step are the maps of one teacher-forced pass over the answer;
    the encoder's maps and memory are those of that pass too."""
    t = translate(bundle, "hello")
    tr = bundle.trace("hello")  # the decoder reads <bos> + the greedy answer, in one pass
    assert tuple(int(i) for i in tr.ids) == t.decoder_ids
    L, n, T = bundle.config.n_layers, 5, len(t.steps)
    own = t.self_attention()
    for layer in range(L):
        full = tr["pattern", layer]  # (H, T, T), zeros above the diagonal
        above = np.triu(np.ones((T, T), bool), 1)
        assert np.isnan(own[layer][:, above]).all() and not np.isnan(own[layer][:, ~above]).any()
        np.testing.assert_allclose(np.nan_to_num(own[layer]), full, atol=REORDERED)
        np.testing.assert_allclose(t.cross_attention()[layer], tr["cross_attn.pattern", layer],
                                   atol=REORDERED)
        np.testing.assert_allclose(t.enc_patterns[layer], tr["pattern", layer, "enc"], atol=REORDERED)
    np.testing.assert_allclose(t.memory, tr["enc_blocks.1.hook_resid_post"], atol=REORDERED)
    assert t.memory.shape == (n, bundle.config.d_model) and t.cross_attention().shape == (L, 4, T, n)


def test_the_cache_holds_the_projected_memory(bundle):
    """After the first step the model's cache keeps, per decoder layer, memory W^K + b and
    memory W^V + b (computed here with torch's own linear), shaped (1, n, heads, d_head)."""
    model, cfg = bundle.model, bundle.config
    src = torch.tensor([bundle.encode("abcde")])
    with torch.no_grad():
        _, cache = model.step(torch.tensor([[bundle.tokenizer.bos_id]]), enc_ids=src)
        memory, _ = model.encode(src)
        for block, (k, v) in zip(model.blocks, cache.cross):
            a = block.cross_attn
            want_k = torch.nn.functional.linear(memory, a.W_k.weight, a.W_k.bias)
            want_v = torch.nn.functional.linear(memory, a.W_v.weight, a.W_v.bias)
            assert k.shape == (1, 5, cfg.n_heads, cfg.d_head)
            torch.testing.assert_close(k.reshape(1, 5, -1), want_k, atol=SAME_OPS, rtol=0)
            torch.testing.assert_close(v.reshape(1, 5, -1), want_v, atol=SAME_OPS, rtol=0)
        # without them the next step projects the memory again and gets the same logits
        nxt = torch.tensor([[bundle.encode("e")[0]]])
        kept, _ = model.step(nxt, cache)
        again, grown = model.step(nxt, dataclasses.replace(cache, cross=None))
    torch.testing.assert_close(kept, again, atol=SAME_OPS, rtol=0)
    assert grown.cross is not None  # and keeps them from then on


def test_held_out_sources_come_back_reversed(bundle):
    """The manifest's exact match (1.0 on 500 held-out sources), on a sample of them."""
    pairs = make_reverse(40, seed=1, lengths=(2, 12), split="heldout")
    for src, tgt in pairs:
        assert translate(bundle, "".join(src)).output == "".join(tgt)


def test_stops_at_length_and_at_the_context(bundle):
    t = translate(bundle, "abcdef", max_new_tokens=3)
    assert (t.output, t.stop_reason, len(t.steps)) == ("fed", "length", 3)
    tiny = dataclasses.replace(bundle, model=Transformer(
        bundle.config.replace(max_seq_len=4)).eval(), config=bundle.config.replace(max_seq_len=4))
    u = translate(tiny, "abc")  # untrained: it may never write <eos>; the context ends it
    assert len(u.steps) <= 4 and u.stop_reason in ("eos", "context")
    if u.stop_reason == "context":
        assert len(u.steps) == 4  # the decoder read <bos> + 3 tokens, all its positions


def test_only_an_encoder_decoder_translates():
    with pytest.raises(ValueError, match="encoder-decoder"):
        translate(tfviz.load("gpt-tiny"), "abc")


@pytest.mark.parametrize("typed, letters", [
    ("abc", "abc"), ("ABC", "abc"), ("a, b  c", "abc"), ("  p o p ", "pop"),
    ("a\x00b", "ab"),  # a control character counts as white space (textinput.clean_text)
    ("abcdefghijkl", "abcdefghijkl"),
])
def test_sources_that_can_be_read(typed, letters):
    check = check_source(typed)
    assert check.error is None and check.letters == letters
    assert (check.notice is None) == (typed == letters)


@pytest.mark.parametrize("typed, named", [
    ("", None), ("   ", None), (None, None), (", ,", None),
    ("abz", "`z`"), ("hello world", "`w`, `r`"), ("abc😀", "`😀`"), ("<bos>ab", "`<`, `s`, `>`"),
    ("שלום", "`ש`"), ("<b>ab</b>", "`<`, `>`, `/`"), ("a1b2", "`1`, `2`"),
    ("*_`$", "`*`, `_`, `` ` ``, `$`"),  # code spans: Markdown shows them as typed
    ("\u202eabc", "U+202E"),  # a right-to-left override, named, not obeyed
    ("e\u0301", "U+0301"),  # a combining accent
    ("abcdefghijklm", "13 letters"), ("a" * 100_000, "more than 2,000 letters"),
    ("".join(chr(0x4E00 + i) for i in range(20)), "and 12 more"),
])
def test_sources_that_cannot_be_read_say_what_is_allowed(typed, named):
    check = check_source(typed)
    assert check.letters == "" and check.error.endswith(ALLOWED)
    if named:
        assert named in check.error
    with pytest.raises(ValueError, match="letters from a to p"):
        translate(tfviz.load("reverse-encdec"), "" if typed is None else typed)
