"""A shared link with nonsense in it still opens a working page, with a notice."""
import pytest

from tests.app.specs import instant_charts
from tfviz.ui.lessons import available
from tfviz.viz.kit.instant_length import shown_names

BAD_PARAMS = [
    {"layer": "99999999999999999999"},
    {"layer": "-3"},
    {"head": "abc"},
    {"layer": "1e9", "head": "0x10"},
    {"model": "gpt-999"},
    {"model": "<script>alert(1)</script>"},
    {"text": "x" * 50_000},
    {"text": "<img src=x onerror=alert(1)>"},
    {"text": ""},
    {"query": "-1", "step": "x"},  # view keys of the instant charts
    {"query": "999", "layer": "2", "head": "3"},
]


@pytest.mark.parametrize("params", BAD_PARAMS, ids=lambda p: ",".join(f"{k}={v[:12]}" for k, v in p.items()))
@pytest.mark.parametrize("lesson", [l for l in available() if l.url in
                                    ("self-attention", "multi-head", "layernorm", "tour", "exercises")],
                         ids=lambda l: l.url)
def test_bad_query_parameters(app_page, lesson, params):
    at = app_page(lesson.file, **params)
    assert not at.exception
    assert at.session_state["model"] in ("gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec")
    assert "layer" not in at.session_state and "head" not in at.session_state  # the browser's keys
    assert 0 < len(at.session_state["text"]) <= 2000
    for spec, _ in instant_charts(at):  # every instant chart opens on a view that exists
        for param in spec.get("params", []):
            bind = param.get("bind", {})
            exprs = {p["name"]: p.get("expr", "") for p in spec["params"]}
            name = param["name"]
            shown = {"layer": "li", "head": "hi"}.get(name, shown_names(name)[1])
            if bind.get("input") == "range" and param["value"] == -1 and name in exprs.get(shown, ""):
                continue  # a slider saying -1 opens on the sentence's own position (query, pos)
                # or head (lesson 13), read from the data (tfviz.viz.kit.instant_length) into the
                # expression it draws (qi, posi, li, hi); the page's script shows it
            if bind.get("input") == "range":
                assert bind["min"] <= param["value"] <= bind["max"], (spec.get("description"), param)
            elif bind.get("input") == "select":
                assert param["value"] in bind["options"], (spec.get("description"), param)
