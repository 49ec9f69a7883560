"""Lesson 15 (/bert) in AppTest: it always reads bert-tiny, its charts carry bert-tiny's own
numbers for the learner's sentence, "Draw again" draws anew, and hostile text is answered."""
import numpy as np
import pytest

import tfviz
from tests.app.specs import instant_charts, param_values, static_rows
from tfviz.analysis import coref
from tfviz.experiments import mlm

PAGE = "15_bert.py"
TOL = 6e-5  # four decimals sent (tfviz.viz.kit.instant.DIGITS) plus float printing


@pytest.fixture(scope="module")
def bert():
    return tfviz.load("bert-tiny")


def _chart(at, param: str):
    return next((spec, data) for spec, data in instant_charts(at) if param in param_values(spec))


def _check_guesses(at, bert, seed: int) -> None:
    """The guesses chart holds bert-tiny's top 5 at every position of this seed's draw."""
    tok = bert.tokenizer
    ids = bert.read(at.session_state["text"]).ids
    drawn = mlm.draw_masks(ids, seed, mask_id=tok.mask_id, vocab_size=tok.vocab_size)
    g = mlm.guesses(bert.model, drawn.inputs, drawn.ids, k=5)
    spec, data = _chart(at, "pos")
    assert param_values(spec)["pos"] == -1  # length-free: it opens where the data says
    assert data["strip"]["dpos"][0] == drawn.chosen[0]
    fit = [m for m in at.get("html") if m.proto.body.startswith("<div hidden class=\"tfviz-length\"")]
    assert len(fit) == 1 and f"{{&quot;pos&quot;: {{&quot;n&quot;: {len(ids)}, &quot;default&quot;: " \
        f"{drawn.chosen[0]}}}}}" in fit[0].proto.body  # the view script fits the slider to it
    assert list(data["strip"]["reads"]) == bert.token_strings(drawn.inputs)
    assert list(data["strip"]["kind"]) == [mlm.KIND_NAMES[k] for k in drawn.kinds]
    got = data["guesses"].sort_values(["pos", "rank"])
    np.testing.assert_allclose(got["p"].to_numpy().reshape(len(ids), 5), g.probs, atol=TOL)
    assert list(got["tok"]) == [t for row in g.ids for t in bert.token_strings(row)]


@pytest.mark.parametrize("model", ["gpt-tiny", "bert-tiny", "moe-tiny", "reverse-encdec"])
def test_the_page_reads_bert_tiny_whatever_the_sidebar_says(app_page, bert, model):
    at = app_page(PAGE, model=model)
    assert at.session_state["model"] == model
    _check_guesses(at, bert, seed=0)
    assert (model != "bert-tiny") == any("This lesson uses **bert-tiny**" in i.value for i in at.info)


def test_draw_again_and_the_seed(app_page, bert):
    at = app_page(PAGE)
    at.button(key="bert_draw").click().run()
    assert not at.exception and at.number_input(key="bert_seed").value == 1
    _check_guesses(at, bert, seed=1)
    at.number_input(key="bert_seed").set_value(0).run()
    _check_guesses(at, bert, seed=0)  # back to the same draw


def test_coreference_chart_opens_on_the_manifest_head_and_a_link_wins(app_page, bert):
    head = bert.manifest["eval"]["coref_head"]
    at = app_page(PAGE)
    spec, data = _chart(at, "layer")
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (head["layer"], head["head"])
    table = data["it_rows"]
    trace = bert.trace(at.session_state["text"])  # the default text is the "tired" sentence
    probe = coref.coref_spans(trace.tokens)[0][-1]
    for r in table[table["s"] == 0].itertuples():
        assert abs(r.v - trace["pattern", r.layer][r.head, probe, r.i]) <= TOL
    assert f"layer {head['layer']}, head {head['head']}" in "".join(m.value for m in at.markdown)
    linked = app_page(PAGE, layer="0", head="3", pos="2")
    spec, _ = _chart(linked, "layer")
    assert (param_values(spec)["layer"], param_values(spec)["head"]) == (0, 3)
    assert param_values(_chart(linked, "pos")[0])["pos"] == 2


def test_the_decoder_comparison_says_gpt_tiny_cannot(app_page):
    from tfviz.ui.state import EXAMPLES

    at = app_page(PAGE)
    text = "".join(m.value for m in at.markdown)
    changes = []
    for name in ("gpt-tiny", "bert-tiny"):
        b = tfviz.load(name)
        (tired, spans), (wide, _) = (coref.probe_rows(b.trace(EXAMPLES[f"Coreference ({w})"]))
                                     for w in ("tired", "wide"))
        changes.append(coref.row_change(tired, wide, spans[0][-1]))
    assert changes[0] < 1e-6 and changes[1] > 0.05
    # an exact zero (the same kernels for both rows) is worded "nothing", a rounding trace in numbers
    decoder = "**nothing**" if changes[0] == 0 else f"at most **{changes[0]:.1e}**"
    assert f"changes by {decoder}" in text and f"up to **{changes[1]:.2f}**" in text


def test_how_bert_tiny_learned_it_is_told_from_its_manifest(app_page, bert):
    """The page says what bert-tiny's training added (the manifest's data, which
    tests/test_bert_antecedent.py ties to the recipe), and its guess at "it" is the noun."""
    from tfviz.ui.state import EXAMPLES

    at = app_page(PAGE)
    box = next(e for e in at.expander if e.label.startswith("How bert-tiny learned it"))
    text = "".join(m.value for m in box.markdown)  # in an expander: it would interrupt the lesson
    data = bert.manifest["data"]
    rows, layer, p = data["coref_statements"]["rows"], data["head_dropout"]["layer"], data["head_dropout"]["p"]
    assert f"**{rows:,} extra “it” sentences**" in text
    assert f"each head of layer {layer} is also switched off at random with probability {p:.0%}" in text
    assert "masked LM (plus one labelled job" in "".join(w.value for w in at.warning)
    for word, noun in (("tired", "animal"), ("wide", "street")):  # the caption's exception, by hand
        trace = bert.trace(EXAMPLES[f"Coreference ({word})"])
        probe = coref.coref_spans(trace.tokens)[0][-1]
        assert bert.tokenizer.id_to_token(int(trace.logits[probe].argmax())) == "␣" + noun


def test_your_own_it_sentence_joins_the_chart(app_page):
    at = app_page(PAGE, text="The dog did not reach the lake because it was very wet.")
    spec, data = _chart(at, "layer")
    assert sorted(set(data["it_rows"]["s"])) == [0, 1, 2]
    titles = [p["title"]["text"] for p in spec["vconcat"]]
    assert titles[-1] == "your sentence"


def test_finetuning_table_by_hand(app_page):
    at = app_page(PAGE)
    at.slider(key="bert_rank").set_value(8).run()
    at.slider(key="bert_prefix").set_value(20).run()
    counted = next(d.value for d in at.dataframe if "model" in d.value.columns)
    rows = {r["model"]: r for r in counted.to_dict("records")}
    base = rows["BERT-base"]
    assert base["full fine-tuning"] == 109_482_240 and base["LoRA r=8"] == 294_912
    assert base["prefix p=20"] == 368_640 and base["prompt p=20"] == 15_360
    assert rows["bert-tiny"]["LoRA r=8"] == 8 * 128 * 2 * 2
    at.multiselect(key="bert_matrices").set_value([]).run()  # nothing chosen: W_Q alone
    assert not at.exception


def test_a_pair_from_two_sentences(app_page, bert):
    at = app_page(PAGE, text="The cat sat. It was tired.")
    assert not [t for t in at.text_input if t.key == "bert_sentence_b"]
    pair = {row[""]: [v for k, v in row.items() if k != ""]  # one column per position
            for row in static_rows(at, "")}
    tok = bert.tokenizer
    ids = [tok.cls_id, *tok.encode("The cat sat."), tok.sep_id, *tok.encode("It was tired."), tok.sep_id]
    assert pair["id"] == [str(i) for i in ids]
    assert pair["token"][0] == "[CLS]" and pair["token"].count("[SEP]") == 2
    assert pair["segment"] == ["0"] * (len(tok.encode("The cat sat.")) + 2) + \
        ["1"] * (len(tok.encode("It was tired.")) + 1)
    assert any("no segment table and no next-sentence head" in w.value for w in at.warning)


def test_a_long_pair_goes_in_a_data_grid(app_page):
    """Up to 64 positions the pair is an HTML table; beyond, a data grid, which draws only the
    columns in sight (a pasted page would be thousands of HTML cells)."""
    from tfviz.ui.pretraining_widgets import STATIC_POSITIONS

    def pair_tables(at):
        return ([t for t in at.table if "" in t.value.columns],
                [d for d in at.dataframe if "" in d.value.columns])

    short = app_page(PAGE, text="The cat sat. It was tired.")
    assert [len(x) for x in pair_tables(short)] == [1, 0]
    long = app_page(PAGE, text="The cat sat. " + "the dog ran to the lake and back " * 12 + ".")
    html, grid = pair_tables(long)
    assert (len(html), len(grid)) == (0, 1)
    assert len(grid[0].value.columns) - 1 > STATIC_POSITIONS  # one column per position
    assert list(grid[0].value[""]) == ["token", "id", "segment"]


@pytest.mark.parametrize("text", [
    "a", "🙂🙂🙂", "<script>alert(1)</script> [MASK] [CLS]", "مرحبا بالعالم שלום עולם",
    "attention " * 10_000, "The. . . It.", "it",
], ids=["one-letter", "emoji", "html", "rtl", "huge", "dots", "it"])
def test_hostile_text(app_page, text):
    at = app_page(PAGE, text=text)
    assert not at.exception
    assert instant_charts(at)  # the guesses chart at least
    for el in at.markdown:
        assert "<script>" not in el.value


def test_fine_tune_every_way_shows_measured_numbers(app_page, monkeypatch):
    """The button runs the fine-tune off the page thread (a short budget here), with the ways
    ticked (all six here), and the page then shows the job's own numbers: counts equal the
    formulas, the sentences are the analysis's, both charts carry every way."""
    import time

    from tfviz.analysis import finetune_measured as fm
    from tfviz.training.finetune import DEFAULT_MODES, MODES, expected_trained
    from tfviz.ui import finetune_cache as fc

    monkeypatch.setenv("TFVIZ_FINETUNE_STEPS", "4")
    at = app_page(PAGE)
    assert any("Press **Fine-tune**" in i.value for i in at.info)
    assert [at.checkbox(key=f"bert_ft_way_{i}").value for i in range(len(MODES))] == \
        [m in DEFAULT_MODES for m in MODES]
    for i in range(len(MODES)):
        at.checkbox(key=f"bert_ft_way_{i}").check()
    at.select_slider(key="bert_ft_rank").set_value(2).run()
    at.button(key="bert_ft_run").click().run()
    assert not at.exception
    asked = at.session_state[fc.ASKED]
    assert (asked.task, asked.rank, asked.steps, asked.modes) == ("number", 2, 4, MODES)
    end = time.monotonic() + 180
    while not any("numbers trained" in d.value.columns for d in at.dataframe):
        assert time.monotonic() < end, "the fine-tune did not finish in 180 s"
        time.sleep(0.5)
        at.run()  # as the fragment's polling would
        assert not at.exception
    result = fc.status("bert-tiny", asked).result
    rows = next(d.value for d in at.dataframe if "numbers trained" in d.value.columns).to_dict("records")
    cfg = tfviz.load("bert-tiny").config
    assert [r["way"] for r in rows] == list(MODES)
    assert [r["numbers trained"] for r in rows] == [expected_trained(cfg, m, 2) for m in MODES] == \
        [130, 770, 2690, 1154, 138498, 138498]
    assert [r["held-out % after"] for r in rows] == [round(100 * m.accuracy, 1) for m in result.modes]
    shown = [m.value for m in at.markdown]
    paragraphs = fm.paragraphs(result.modes, result.chance, fm.Sizes.of(cfg, asked.p), asked.every)
    assert len(paragraphs) == 3 and all(p in shown for p in paragraphs)
    assert paragraphs[0] == fm.summary(result.modes, result.chance)
    said = "; ".join(f"{m.mode}: {m.trained:,} numbers, {round(m.accuracy, 4):.1%}" for m in result.modes)
    assert any(spec.get("description", "").endswith(f"{said}.") for spec, _ in instant_charts(at))
    ends = "; ".join(f"{m.mode}: {m.curve[-1][1]:.1%} after 4 steps" for m in result.modes)
    assert any(spec.get("description", "").endswith(f"{ends}.") for spec, _ in instant_charts(at))
    at.button(key="bert_ft_run").click().run()  # pressed again: the server's result, no new run
    assert fc.status("bert-tiny", asked).result is result
