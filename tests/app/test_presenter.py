"""Presenter view (issue #19) and the normal page come from the same steps.

Every lesson 1-19 runs twice in one AppTest, as the normal page and with ``?present=1``. The
steps each run draws (the top-level ``tfviz-step-*`` containers, each opening with its header)
must be the same list, and the list the lesson's source declares with ``with step("...")``.
Presenter view's charts must carry presenter sizes, and the normal page's charts must come
out exactly as before presenter view ran (the cached specs and shared figures are never
changed). About 25 s, most of it loading the models.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tfviz.ui.lessons import ROOT, available
from tfviz.ui.present import step_key

LESSONS = [lesson for lesson in available() if lesson.number is not None and 1 <= lesson.number <= 19]
# Lessons whose every step needs a model of a kind: a mixture of experts; a sidebar model with
# grouped K/V heads (lesson 18's step 5 is about the sidebar's own cache)
MODEL = {"mixture-of-experts": "moe-tiny", "gqa": "llama-tiny"}


def declared_steps(path: Path) -> list[re.Pattern]:
    """The titles of a lesson's ``with step(...)`` blocks, in source order, as patterns: an
    f-string's fields (the model's name) match anything."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "step":
                    found.append((call.lineno, _pattern(call.args[0])))
    return [pattern for _, pattern in sorted(found, key=lambda f: f[0])]


def _pattern(arg: ast.expr) -> re.Pattern:
    if isinstance(arg, ast.Constant):
        return re.compile(re.escape(arg.value))
    assert isinstance(arg, ast.JoinedStr), ast.dump(arg)
    return re.compile("".join(re.escape(v.value) if isinstance(v, ast.Constant) else ".+"
                              for v in arg.values))


def drawn_steps(at) -> list[tuple[str, str]]:
    """(container key, its first element's header) of each top-level step the run drew."""
    from streamlit.testing.v1.element_tree import Block

    steps = []
    for child in at.main.children.values():
        if isinstance(child, Block) and "tfviz-step-" in child.proto.id:
            key = child.proto.id.split("-", 2)[2]  # "$$ID-<hash>-<key>"
            first = next(iter(child.children.values()), None)
            steps.append((key, first.value if first is not None and first.type == "header" else None))
    return steps


def chart_specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def test_the_normal_page_and_presenter_view_draw_the_declared_steps():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    problems, normal_specs = [], {}
    for lesson in LESSONS:
        for key in list(at.query_params):
            del at.query_params[key]
        at.session_state["model"] = MODEL.get(lesson.url, "gpt-tiny")  # the sidebar's model
        at.switch_page(f"lessons/{lesson.file}").run()
        assert not at.exception, (lesson.url, at.exception)
        normal, normal_specs[lesson.url] = drawn_steps(at), chart_specs(at)
        at.query_params["present"] = "1"
        at.run()
        assert not at.exception, (lesson.url, at.exception)
        presenter = drawn_steps(at)
        declared = declared_steps(ROOT / "lessons" / lesson.file)

        if presenter != normal:
            problems.append(f"{lesson.url}: presenter view drew {presenter}, the page {normal}")
        if len(normal) != len(declared) or not all(
                title is not None and pattern.fullmatch(title) and key == step_key(title)
                for (key, title), pattern in zip(normal, declared)):
            problems.append(f"{lesson.url}: drew {normal}, declared {[p.pattern for p in declared]}")
        if not normal:
            problems.append(f"{lesson.url}: no steps")
        for spec in chart_specs(at):
            if spec.get("config", {}).get("axis", {}).get("labelFontSize", 0) < 24:
                problems.append(f"{lesson.url}: a Vega-Lite chart without presenter sizes")
    assert not problems, "\n".join(problems)

    # The shared specs and figures came through presenter view unchanged.
    for url in ("scaling", "embeddings"):
        for key in list(at.query_params):
            del at.query_params[key]
        lesson = next(lesson for lesson in LESSONS if lesson.url == url)
        at.session_state["model"] = "gpt-tiny"
        at.switch_page(f"lessons/{lesson.file}").run()
        assert chart_specs(at) == normal_specs[url], url


@pytest.mark.parametrize("present", [False, True], ids=["normal", "presenter"])
def test_a_table_is_a_dataframe_on_the_page_and_html_in_presenter_view(app_page, present):
    at = app_page("06_scaling.py", **({"present": "1"} if present else {}))
    assert (len(at.table), len(at.dataframe)) == ((2, 0) if present else (0, 2))
    assert at.toggle(key="tfviz_presenter").value is present
    if present:  # the variance table: 20 rows, the first 12 shown, numbers to 4 decimals
        shown = at.table[0].value
        assert list(shown.columns) == ["d_k", "scores", "variance", "theory"] and len(shown) == 12
        assert all(len(v.split(".")[-1]) <= 4 for v in shown["variance"])
        assert any("first 12 of 20 rows" in c.value for c in at.caption)
        entropies = at.table[1].value  # NumberColumn(format="%.3f") kept
        assert all(re.fullmatch(r"\d+\.\d{3}", v) for v in entropies.iloc[:, 2])


def test_the_toggle_sets_and_clears_the_flag_and_a_page_switch_keeps_it(app_page):
    at = app_page("06_scaling.py")
    assert "present" not in at.query_params
    at.toggle(key="tfviz_presenter").set_value(True).run()
    assert at.query_params["present"] == "1" and len(at.table) == 2
    at.query_params.pop("present")  # what a page switch does to the query
    at.switch_page("lessons/05_self_attention.py").run()
    assert at.query_params.get("present") == "1", "a page switch left presenter view"
    at.toggle(key="tfviz_presenter").set_value(False).run()
    assert "present" not in at.query_params and not at.exception


def test_a_static_table_is_html_on_the_normal_page_with_every_row():
    """``table(static=True)``: an HTML table outside presenter view too, every row of it (20,
    not presenter view's 12), numbers to 4 decimals."""
    from streamlit.testing.v1 import AppTest

    def page():
        from tfviz.ui.tables import table

        table([{"i": i, "third": i / 3} for i in range(20)], static=True)

    at = AppTest.from_function(page).run()
    assert not at.exception and len(at.dataframe) == 0 and len(at.table) == 1
    shown = at.table[0].value
    assert len(shown) == 20 and list(shown["third"][:3]) == ["0", "0.3333", "0.6667"]
    assert not at.caption  # no "first 12 of 20 rows"


@pytest.mark.parametrize("rows, html", [(24, True), (25, False)])
def test_a_table_static_while_short_keeps_a_long_ones_scrolling_box(rows, html):
    """``table(static=None)``: HTML up to ``STATIC_ROWS`` (24) rows, a dataframe beyond."""
    from streamlit.testing.v1 import AppTest

    def page(n):
        from tfviz.ui.tables import table

        table([{"i": i} for i in range(n)], static=None)

    at = AppTest.from_function(page, args=(rows,)).run()
    assert (len(at.table), len(at.dataframe)) == ((1, 0) if html else (0, 1))
