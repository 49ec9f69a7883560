"""Class codes, worksheets and progress."""

import numpy as np
import pytest

import tfviz.exercises as ex
from tests.support.html_tables import html_tables
from tfviz.curriculum import LESSONS
from tfviz.exercises.core import rng_for
from tfviz.exercises.progress import Progress
from tfviz.exercises.registry import EXERCISES, make_instance, parse_class_code
from tfviz.exercises.worksheet import worksheet, worksheet_html


def fingerprint(inst):
    return [np.asarray(f.expected).tolist() if f.kind == "numbers" else list(f.expected)
            for f in inst.answer_fields] + [inst.prompt]


@pytest.mark.parametrize("ex_id", list(EXERCISES))
def test_same_code_same_numbers(ex_id):
    assert fingerprint(make_instance(ex_id, 4711)) == fingerprint(make_instance(ex_id, 4711))
    assert fingerprint(make_instance(ex_id)) == fingerprint(EXERCISES[ex_id].make(None))


@pytest.mark.parametrize("ex_id", list(EXERCISES))
def test_codes_give_variety(ex_id):
    prompts = {make_instance(ex_id, code).prompt for code in range(8)}
    assert len(prompts) >= 5


def test_exercises_draw_independently_and_without_global_state():
    np.random.seed(0)
    a = make_instance("layernorm", 5).prompt
    np.random.seed(1)
    assert make_instance("layernorm", 5).prompt == a
    assert rng_for("a", 1).integers(1 << 30) != rng_for("b", 1).integers(1 << 30)
    assert make_instance("layernorm", -3).prompt  # negative codes work too


def test_parse_class_code():
    assert parse_class_code(" 12 ") == 12
    for bad in ("", "1.5", "-3", "١٢", "9" * 13, None, "12a"):
        assert parse_class_code(bad) is None


def test_registry_lists_seventeen_exercises_with_metadata():
    assert len(EXERCISES) == 17
    for spec in EXERCISES.values():
        assert spec.title and spec.summary and spec.lesson in LESSONS
    with pytest.raises(KeyError):
        make_instance("nope")
    with pytest.raises(TypeError):
        EXERCISES["x"] = None  # read-only


def test_worksheet_markdown_matches_class_codes():
    sheet, key = worksheet(["flying-arrows", "layernorm"], n_variants=3, seed=20)
    assert sheet.count("## ") == 6 and "1c." in sheet and "2a." in sheet
    assert "class code 22" in sheet
    inst = make_instance("layernorm", 21)
    assert inst.prompt in sheet
    assert f"**{inst.field('output').answer_text}**" in key
    assert "Worked steps" in key and "Worked steps" not in sheet


def test_prompt_tables_and_lists_become_html_with_every_text_escaped():
    from tfviz.exercises.worksheet import prompt_html

    page = prompt_html("See <b>this</b>:\n\n| a | <script> |\n|---|---|\n| 1 | & |\n\n- <i>x</i>")
    assert html_tables(page) == [[["a", "<script>"], ["1", "&"]]]  # texts intact once parsed
    assert "<script>" not in page and "<b>" not in page and "<i>" not in page
    assert page.count("<ul><li>") == 1 and page.startswith("<p>See &lt;b&gt;")


def test_worksheet_html_is_escaped():
    sheet, key = worksheet_html(list(EXERCISES), n_variants=1, seed=3)
    for page in (sheet, key):
        assert page.startswith("<!doctype html>") and page.endswith("</html>")
        assert "<script" not in page
    inst = make_instance("causal-mask", 3)
    assert "|---|" not in sheet  # the prompt's score table arrives as a table, not raw pipes
    # Read the table back with the standard library's parser: the header is the tokens, and
    # each row is a token followed by the scores the exercise itself holds.
    (rows,) = [t for t in html_tables(sheet) if t[0][0] == "asks \\ looks at"]
    tokens = list(inst.tokens)
    assert rows[0][1:] == tokens
    for token, row, scores in zip(tokens, rows[1:], inst.data["scores"], strict=True):
        assert row[0] == token and [float(c) for c in row[1:]] == [float(v) for v in scores]
    assert "</w>" not in key.replace("&lt;/w&gt;", "")  # BPE symbols arrive escaped


def test_worksheet_rejects_bad_requests():
    with pytest.raises(ValueError):
        worksheet(["layernorm"], n_variants=0)
    with pytest.raises(KeyError):
        worksheet(["layernorm", "<b>"], n_variants=1)


def test_progress_value():
    p = Progress()
    q = p.solve("layernorm").solve("layernorm").solve("bpe-merges")
    assert p.count == 0 and q.count == 2  # p itself unchanged
    assert q.is_solved("bpe-merges") and not q.is_solved("moe-gate")
    assert q.fraction(EXERCISES) == pytest.approx(2 / 17)
    assert q.forget("layernorm").to_list() == ["bpe-merges"]
    assert Progress.from_list(q.to_list()) == q and hash(q) == hash(Progress.from_list(q.to_list()))
    assert Progress().fraction([]) == 0.0


def test_package_namespace_is_lazy_and_complete():
    for name in ex.__all__:
        assert getattr(ex, name) is not None
    with pytest.raises(AttributeError):
        ex.no_such_name
