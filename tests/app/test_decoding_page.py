"""Lesson 14 (/decoding) in AppTest: every strategy writes what generate() writes, a seed makes
a sample reproducible, the charts carry the model's own numbers (torch's softmax and
cross_entropy), and hostile or empty prompts get an answer, never a traceback."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tests.app.specs import fits, instant_charts, param_values, static_rows
from tfviz.viz.kit.instant_length import length_cap
from tfviz.decoding import beam_search, generate
from tfviz.decoding.generate import continuation_text

PAGE = "14_decoding.py"
TOL = 6e-5  # four decimals sent (tfviz.viz.kit.instant.DIGITS) plus float printing
DEFAULT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def gpt():
    return tfviz.load("gpt-tiny")


def _ok(at):
    assert not at.exception, at.exception
    return at


def _chart(at, dataset: str):
    return next((spec, data) for spec, data in instant_charts(at) if dataset in data)


def _written(at) -> str:
    """What the page says the model wrote (prompt + continuation, in a code block)."""
    return next(c.value for c in at.code if not c.value.startswith("def "))


def _set(at, **widgets):
    for key, value in widgets.items():
        widget = next(w for w in (*at.radio, *at.slider, *at.number_input, *at.text_area) if w.key == key)
        widget.set_value(value)
    return _ok(at.run())


@pytest.mark.parametrize("model", ["gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec"])
def test_the_page_uses_a_decoder_whatever_the_sidebar_says(app_page, model):
    at = app_page(PAGE, model=model)
    assert at.title[0].value == "The LM head and decoding"
    used = model if model in ("gpt-tiny", "moe-tiny") else "gpt-tiny"
    assert (used != model) == any("is not a decoder" in i.value for i in at.info)
    bundle = tfviz.load(used)
    g = generate(bundle, DEFAULT, max_new_tokens=20)  # the default: greedy, 20 tokens at most
    assert _written(at) == bundle.tokenizer.decode(g.prompt_ids) + g.text
    assert at.text_area(key="dec_prompt").value == DEFAULT
    assert len(instant_charts(at)) == 4  # head, steps, beam tree, loss
    assert sum(e.label == "Show the code" for e in at.expander) == 4


def test_lm_head_section_checks_the_tie_and_sends_softmax_of_the_logits(app_page, gpt):
    at = app_page(PAGE)
    tied = next(s.value for s in at.success if "Tied" in s.value)
    assert "the same tensor" in tied and "600 × 64 = 38,400 parameters" in tied
    tr = gpt.trace(DEFAULT)
    spec, data = _chart(at, "head")
    T = len(tr.tokens)
    # opens on the last position, the next token: read from the data while the slider says -1
    assert param_values(spec)["pos"] == -1 and data["head"]["dpos"].iloc[0] == T - 1
    assert spec["params"][0]["bind"]["max"] == length_cap(T) - 1  # the layout's; fitted to T:
    assert fits(at)[0] == {"pos": {"n": T, "default": T - 1}}
    # the sequence length is n here: T is the sampling temperature of step 2, and only that
    head = next(e.value for e in at.latex if "logits" in e.value)
    assert f"n = {T}" in head and "T" not in head
    assert any("temperature** T divides" in m.value for m in at.markdown)
    p = torch.softmax(torch.from_numpy(tr.logits).double(), -1).numpy()
    for pos in (0, T - 1):
        rows = data["head"][data["head"]["pos"] == pos].sort_values("rank")
        top = np.argsort(-p[pos], kind="stable")[:10]
        assert list(rows["tok"]) == gpt.token_strings(top)
        np.testing.assert_allclose(rows["p"], p[pos, top], atol=TOL)
        np.testing.assert_allclose(rows["logit"], tr.logits[pos, top], atol=TOL)


@pytest.mark.parametrize("strategy, widgets, settings", [
    ("greedy", {}, dict(strategy="greedy")),
    ("sample", {"dec_temp": 1.5, "dec_seed": 3}, dict(strategy="sample", temperature=1.5, seed=3)),
    ("top-k", {"dec_k": 3, "dec_seed": 7}, dict(strategy="sample", top_k=3, seed=7)),
    ("top-p", {"dec_p": 0.6, "dec_temp": 0.8, "dec_seed": 1},
     dict(strategy="sample", top_p=0.6, temperature=0.8, seed=1)),
])
def test_every_strategy_writes_what_generate_writes(app_page, gpt, strategy, widgets, settings):
    at = _set(app_page(PAGE), dec_prompt="the dog", dec_strategy=strategy, dec_new=12)
    at = _set(at, **widgets)  # a disabled control cannot be moved: the strategy first
    g = generate(gpt, "the dog", max_new_tokens=12, **settings)
    assert _written(at) == "the dog" + g.text
    spec, data = _chart(at, "cands")
    assert spec["params"][0]["bind"]["max"] == length_cap(len(g.steps)) and param_values(spec)["step"] == 1
    assert fits(at)[1] == {"step": {"n": len(g.steps), "default": 1, "from": 1}}  # fitted to the steps
    cands = data["cands"]
    for t, s in enumerate(g.steps, start=1):
        rows = cands[cands["step"] == t].sort_values("rank")
        assert list(rows["tok"]) == list(s.tokens)
        np.testing.assert_allclose(rows["after"], s.probs, atol=TOL)
        assert list(rows["status"]).count("chosen") == 1
        cut = rows[rows["status"].str.startswith("cut")]
        assert (cut["after"] == 0).all()
        assert list(rows["nucleus"]) == [strategy == "top-p" and k and p
                                         for k, p in zip(s.in_top_k, s.in_top_p)]
    if strategy == "greedy":
        assert not any(w.key == "dec_seed" and not w.disabled for w in at.number_input)


def test_the_same_seed_gives_the_same_text(app_page, gpt):
    at = _set(app_page(PAGE), dec_prompt="the dog", dec_strategy="sample")
    at = _set(at, dec_temp=2.0, dec_seed=5)
    first = _written(at)
    table = static_rows(at, "seed")  # an HTML table: it follows the prompt
    assert [int(r["seed"]) for r in table] == [5, 6, 7, 8]
    want = [generate(gpt, "the dog", strategy="sample", temperature=2.0, seed=s, max_new_tokens=20).text
            for s in (5, 6, 7, 8)]
    assert [r["continuation"] for r in table] == want and len(set(want)) > 1
    _set(at, dec_seed=6)
    assert _written(at) == "the dog" + want[1] != first
    _set(at, dec_seed=5)
    assert _written(at) == first == "the dog" + want[0]


def test_beam_tree_and_the_comparison_with_greedy(app_page, gpt):
    at = _set(app_page(PAGE), dec_prompt="the dog jumped", dec_width=2, dec_depth=8)
    final = static_rows(at, "sum of log p")  # an HTML table: it follows the prompt
    want = beam_search(gpt, "the dog jumped", beam_width=2, max_new_tokens=8)
    ids = gpt.encode("the dog jumped")
    assert [r["continuation"] for r in final] == [continuation_text(gpt, ids, new) for new, _ in want]
    assert [r["finished (<eos>)"] for r in final] == [
        "yes" if new[-1] == gpt.tokenizer.eos_id else "no" for new, _ in want]
    np.testing.assert_allclose([float(r["sum of log p"]) for r in final], [lp for _, lp in want], atol=1e-4)
    said = " ".join(m.value for m in at.markdown)
    assert "Greedy's path left the beam at step 3" in said and "greedy's text is the more likely" in said
    _, data = _chart(at, "nodes")
    nodes = data["nodes"]
    assert (nodes.groupby("step")["status"].apply(lambda s: (s == "best beam").sum()) == 1).all()
    assert nodes["greedy"].any()


def test_the_exercise_button_opens_the_beam_search_exercise(app_page):
    at = app_page(PAGE)
    at.button(key="dec_exercise").click().run()
    _ok(at)
    assert at.session_state["ex_pick"] == "beam-search"
    assert at.title[0].value == "Worked exercises"
    assert "Lesson 14 · LM head and decoding" in [link.proto.label for link in at.get("page_link")]


def test_the_training_loss_is_torch_cross_entropy(app_page, gpt):
    at = app_page(PAGE)
    table = static_rows(at, "loss (nats)")  # a short text's rows: an HTML table
    row = gpt.encode(DEFAULT) + [gpt.tokenizer.eos_id]
    with torch.no_grad():
        logits = gpt.model(torch.tensor([row[:-1]]))[0].double()
    ce = F.cross_entropy(logits, torch.tensor(row[1:]), reduction="none").numpy()
    np.testing.assert_allclose([float(r["loss (nats)"]) for r in table], ce, atol=1e-4)  # rounded to 4
    assert [r["target"] for r in table] == gpt.token_strings(row[1:])
    assert any(f"**{ce.mean():.3f}** nats" in m.value for m in at.markdown)
    _, data = _chart(at, "loss")
    np.testing.assert_allclose(data["loss"]["loss"], ce, atol=TOL)
    assert data["loss"]["mean_text"].iloc[0] == f"mean {ce.mean():.3f}"  # the chart's mean line


def test_a_sentence_that_ends_starts_the_prompt_before_its_last_word(app_page, gpt):
    """After "mat." gpt-tiny's greedy choice is <eos>: from the whole sentence greedy writes
    nothing and beam search ends at once. The prompt starts before "mat." instead, and says so."""
    text = "The cat sat on the mat."
    assert generate(gpt, text, strategy="greedy", max_new_tokens=20).new_ids == (gpt.tokenizer.eos_id,)
    at = app_page(PAGE, text=text)
    prompt = at.text_area(key="dec_prompt").value
    assert prompt == "The cat sat on the"
    why = [c.value for c in at.caption if c.value.startswith("The prompt starts from your text")]
    assert len(why) == 1 and "“mat.”" in why[0] and "`<eos>`" in why[0]
    g = generate(gpt, prompt, strategy="greedy", max_new_tokens=20)
    assert g.text.strip() and _written(at) == gpt.tokenizer.decode(g.prompt_ids) + g.text
    assert not any("ends at once" in m.value for m in at.markdown)
    _ok(at.text_area(key="dec_prompt").set_value(text).run())  # a prompt the learner types stays
    assert at.text_area(key="dec_prompt").value == text
    assert not [c for c in at.caption if c.value.startswith("The prompt starts from your text")]
    unfinished = app_page(PAGE, text="The cat sat on the")  # no full stop: nothing is cut
    assert unfinished.text_area(key="dec_prompt").value == "The cat sat on the"


def test_an_empty_prompt_waits_and_the_rest_still_works(app_page):
    at = _set(app_page(PAGE), dec_prompt="   \n  ")
    assert any("Type a prompt above" in i.value for i in at.info)
    assert not any(c.value.startswith("the") for c in at.code)
    assert {"head", "loss"} <= {name for _, data in instant_charts(at) for name in data}
    assert not any("nodes" in data or "cands" in data for _, data in instant_charts(at))


@pytest.mark.parametrize("prompt", [
    "a", "🙂🙂🙂", "<script>alert(1)</script> <eos> ``` **bold**", "مرحبا بالعالم שלום עולם",
    "attention " * 10_000, "x" * 100_000, "\u202e\u200b\x00tired",
], ids=["one-letter", "emoji", "html", "rtl", "huge-words", "huge-chars", "controls"])
def test_hostile_prompts(app_page, prompt):
    at = _set(app_page(PAGE), dec_prompt=prompt, dec_strategy="top-p")
    assert _written(at)
    assert "cands" in {name for _, data in instant_charts(at) for name in data}
    for el in at.markdown:
        assert "<script>" not in el.value
    if len(prompt) > 1000:  # cut to the characters the app keeps, then to the room left
        assert any("continues from the last" in c.value for c in at.caption)
