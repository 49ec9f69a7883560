"""A learner's own model never reaches a server-wide cache (tfviz.ui.own_model).

A lab run's model is named "my run 1: …" in every session that opens one, so a server-wide
cache keyed by the model's name could hand one learner's numbers to another. Every cached
function in tfviz/ui that takes a model name and runs that model must therefore go through
``per_model`` (which answers a run's name from the asking session's own memo). This reads the
source, so a new cached function that forgets it fails here, not in a class.
"""
from __future__ import annotations

import ast
from pathlib import Path

UI = Path(__file__).resolve().parents[1] / "tfviz" / "ui"
RUNS_A_MODEL = {"get_bundle", "get_trace", "read_text"}  # plus every per_model function


def _decorator_names(fn: ast.FunctionDef) -> list[str]:
    out = []
    for d in fn.decorator_list:
        call = d.func if isinstance(d, ast.Call) else d
        out.append(ast.unparse(call))
    return out


def _functions(tree: ast.Module):
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


def unguarded(sources: dict[str, str]) -> list[str]:
    """Functions cached server-wide (``@st.cache_data``/``@st.cache_resource`` directly) that
    pass one of their own parameters, as the model, to a function that runs a model."""
    trees = {name: ast.parse(src) for name, src in sources.items()}
    runs = set(RUNS_A_MODEL)
    for tree in trees.values():
        runs |= {f.name for f in _functions(tree) if any(n == "per_model" for n in _decorator_names(f))}
    bad = []
    for name, tree in trees.items():
        for fn in _functions(tree):
            if not any(n in ("st.cache_data", "st.cache_resource") for n in _decorator_names(fn)):
                continue
            params = {a.arg for a in fn.args.args}
            for call in ast.walk(fn):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in runs
                        and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in params):
                    bad.append(f"{name}:{fn.name}")
    return bad


def test_every_cached_function_that_runs_a_named_model_goes_through_per_model():
    sources = {p.name: p.read_text() for p in sorted(UI.glob("*.py"))}
    assert unguarded(sources) == []
    wrapped = [f.name for src in sources.values() for f in _functions(ast.parse(src))
               if "per_model" in _decorator_names(f)]
    assert {"_trace", "read_text", "masked", "positionless", "peek", "generation", "side_by_side",
            "class_tables", "masked_guesses"} <= set(wrapped)


def test_the_check_sees_a_forgotten_one():
    forgot = ("import streamlit as st\n"
              "@st.cache_data(max_entries=4)\n"
              "def twin(model: str, text: str):\n"
              "    return get_trace(model, text).tokens\n"
              "@st.cache_data\n"
              "def fixed(text: str):\n"
              "    return get_bundle('gpt-tiny').read(text)\n")  # a fixed shared model is fine
    assert unguarded({"x.py": forgot}) == ["x.py:twin"]
