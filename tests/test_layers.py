"""The layers of tfviz (issue #14): ``tfviz/analysis`` reads finished traces and exported
weights with numpy only; whatever runs a model lives in ``tfviz/experiments``."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ANALYSIS = sorted((Path(__file__).resolve().parents[1] / "tfviz" / "analysis").glob("*.py"))
RUNS_A_MODEL = ("torch", "tfviz.model", "tfviz.bundle", "tfviz.training", "streamlit")


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
