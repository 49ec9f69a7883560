"""The layers of tfviz (issue #14): ``tfviz/analysis`` reads finished traces and exported
weights with numpy only; whatever runs a model lives in ``tfviz/experiments``. Analysis neither
imports what runs a model, nor reaches into a bundle's torch model (``bundle.model``,
``.parameters()``: it reads ``bundle.weights()``), nor loads torch through ``tfviz.trace`` for
a type hint (that import stays under ``if TYPE_CHECKING:``)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ANALYSIS = sorted((Path(__file__).resolve().parents[1] / "tfviz" / "analysis").glob("*.py"))
RUNS_A_MODEL = ("torch", "tfviz.model", "tfviz.bundle", "tfviz.training", "streamlit")
TORCH_MODEL_ATTRS = ("model", "parameters", "named_parameters", "state_dict")
TYPE_HINTS_ONLY = ("tfviz.trace",)  # imports torch; analysis names its Trace in hints only


def imported(source: str) -> set[str]:
    """Every module a source file imports, at any depth of the file (a function's own import too)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: p.name)
def test_analysis_is_numpy_only(path):
    bad = {m for m in imported(path.read_text())
           if any(m == top or m.startswith(top + ".") for top in RUNS_A_MODEL)}
    assert not bad, f"{path.name} imports {sorted(bad)}: move what runs a model to tfviz/experiments"


def test_the_check_sees_an_import_inside_a_function():
    assert imported("def f():\n    import torch.nn.functional as F\n") == {"torch.nn.functional"}
    assert imported("from tfviz.model import masks\n") == {"tfviz.model"}


def torch_model_uses(source: str) -> list[str]:
    """Where a source reaches into a torch model: ``x.model``, ``x.parameters()`` and the like."""
    return [f"line {node.lineno}: .{node.attr}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in TORCH_MODEL_ATTRS]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def run_time_imports(source: str) -> set[str]:
    """The modules a source imports when it runs: :func:`imported` less ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            node.body = [ast.Pass()]
    return imported(ast.unparse(tree))


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: p.name)
def test_analysis_reads_exported_weights_not_the_torch_model(path):
    uses = torch_model_uses(path.read_text())
    assert not uses, (f"{path.name} reaches into a torch model ({', '.join(uses)}): read "
                      "bundle.weights() (numpy) instead, or move the code to tfviz/experiments")


@pytest.mark.parametrize("path", ANALYSIS, ids=lambda p: p.name)
def test_analysis_imports_trace_for_type_hints_only(path):
    bad = run_time_imports(path.read_text()) & set(TYPE_HINTS_ONLY)
    assert not bad, (f"{path.name} imports {sorted(bad)} when it runs (it loads torch): "
                     "put it under `if TYPE_CHECKING:` with `from __future__ import annotations`")


def test_the_checks_see_a_torch_model_and_a_run_time_trace_import():
    assert torch_model_uses("n = sum(p.numel() for p in bundle.model.parameters())\n") == \
        ["line 1: .parameters", "line 1: .model"]
    assert torch_model_uses("W = bundle.weights()\n") == []
    hinted = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tfviz.trace import Trace\n"
    assert run_time_imports(hinted) == {"typing"}
    assert run_time_imports("from tfviz.trace import Trace\n") == {"tfviz.trace"}
    assert run_time_imports("def f():\n    import tfviz.trace\n") == {"tfviz.trace"}
