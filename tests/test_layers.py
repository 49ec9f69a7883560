"""The floors of tfviz, declared: which part may import which.

A part is a top-level module or package of tfviz (``tfviz/config.py``, ``tfviz/analysis/``),
plus the pages (``lessons/``) and the entry files (``app.py``, ``server.py``). Each stands on a
floor of :data:`FLOORS`; a part may import its own modules and any part on a lower floor, and
nothing else: no import runs up a floor or sideways along one, except the few sideways pairs
:data:`SIDEWAYS` names with their reason. Every import counts, at any depth of a file (a
function's own import, one under ``if TYPE_CHECKING:``), because each is a dependency a reader
has to follow. No code imports another module's private (``_name``) names either: what one
module needs from another is public in that other module. And no two modules import each other,
however far round (the floors see parts, not the modules inside one).

Below the table, the checks that keep ``tfviz/analysis`` numpy only: it reads finished traces
and exported weights; whatever runs a model lives in ``tfviz/experiments``. Analysis neither
imports what runs a model, nor reaches into a bundle's torch model (``bundle.model``,
``.parameters()``: it reads ``bundle.weights()``), nor loads torch through ``tfviz.trace`` for a
type hint (that import stays under ``if TYPE_CHECKING:``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The floors, from the ground up: (what the floor is for, its parts).
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("definitions and pure maths that import no other part",
     ("config", "reference", "labels", "manifest", "textinput", "curriculum", "vision",
      "notes_errata", "weights", "threads")),
    ("the model, our data, counting a model's parameters, and what a model is (its facts)",
     ("model", "data", "params", "facts")),
    ("reading a model and text: traces and tokenizers",
     ("trace", "tokenizer")),
    ("what works on a traced model: decoding, looking inside it, the vision bundle",
     ("decoding", "interpret", "vision_bundle")),
    ("a model of ours with its tokenizer: the bundle",
     ("bundle",)),
    ("a Hugging Face folder (GPT-2, BERT) converted into a bundle",
     ("hf",)),
    ("tfviz.load: a model by name or folder (``tfviz`` is the package's face)",
     ("opening", "tfviz")),
    ("numbers a lesson explains, from traces and weights (numpy only: see the checks below)",
     ("analysis",)),
    ("training and the hand-calculation exercises",
     ("training", "exercises")),
    ("what runs models or people: what-ifs, the training lab, live classes, the training CLI",
     ("experiments", "lab", "classroom", "train")),
    ("figures: arrays and tokens in, chart specs out",
     ("viz",)),
    ("the only streamlit code in tfviz: cached loaders, widgets, views",
     ("ui",)),
    ("pages and the frame",
     ("lessons", "app")),
)

#: Imports along one floor, each with its reason. Keep this short: a pair here is a pair a
#: reader must keep in mind.
SIDEWAYS: dict[tuple[str, str], str] = {
    ("tfviz", "opening"): "the package's face hands on tfviz.load",
}

FLOOR_OF = {part: n for n, (_, parts) in enumerate(FLOORS) for part in parts}
SOURCES = sorted([*(ROOT / "tfviz").rglob("*.py"), *(ROOT / "lessons").glob("*.py"),
                  ROOT / "app.py", ROOT / "server.py"])


def module_name(path: Path) -> str:
    """``tfviz/analysis/moe.py`` -> ``tfviz.analysis.moe``; a package's ``__init__`` is the package."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def part_of(module: str) -> str | None:
    """The part a module belongs to (``tfviz.analysis.moe`` -> ``analysis``); None outside ours."""
    top, _, rest = module.partition(".")
    if top == "lessons":
        return "lessons"
    if top in ("app", "server"):
        return "app"
    if top != "tfviz":
        return None
    return rest.partition(".")[0] or "tfviz"


def is_module(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports(source: str, module: str, *, package: bool = False) -> list[tuple[int, str, list[str]]]:
    """Every import of a source, at any depth: (line, the module imported, the names taken).

    ``from tfviz import reference`` imports the module ``tfviz.reference``; a relative import
    is read against ``module`` (``package``: the source is the package's ``__init__``).
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".")[: None if package else -1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if is_module(sub):  # `from tfviz import reference`: the module itself
                    found.append((node.lineno, sub, []))
                else:
                    found.append((node.lineno, base, [alias.name]))
    return found


def arrows(path: Path) -> list[tuple[int, str, str]]:
    """(line, part, module) for each import of another part of ours."""
    module = module_name(path)
    here = part_of(module)
    return list(dict.fromkeys(  # one row per imported module and line, however many names
        (line, part_of(target), target)
        for line, target, _ in imports(path.read_text(), module, package=path.name == "__init__.py")
        if part_of(target) not in (None, here)))


def wrong_way(part: str, other: str) -> str | None:
    """Why ``part`` may not import ``other``, or None when the table allows it."""
    if part not in FLOOR_OF:
        return f"{part} stands on no floor: add it to FLOORS"
    if other not in FLOOR_OF:
        return f"{other} stands on no floor: add it to FLOORS"
    if FLOOR_OF[other] < FLOOR_OF[part] or (part, other) in SIDEWAYS:
        return None
    way = "along its floor" if FLOOR_OF[other] == FLOOR_OF[part] else "up"
    return f"{part} (floor {FLOOR_OF[part] + 1}) imports {other} (floor {FLOOR_OF[other] + 1}): {way}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_down_the_floors(path):
    bad = [f"line {line}: {target}: {why}" for line, part, target in arrows(path)
           if (why := wrong_way(part_of(module_name(path)), part))]
    assert not bad, f"{path.relative_to(ROOT)}:\n  " + "\n  ".join(bad)


def private_reaches(source: str, module: str, *, package: bool = False) -> list[str]:
    """Where a source takes another module's private names: ``from m import _x`` or ``m._x``
    on a module it imported (``import tfviz.trace as t; t._x``)."""
    found = [f"line {line}: {target}.{name}"
             for line, target, names in imports(source, module, package=package)
             if target != module for name in names
             if name.startswith("_") and not name.startswith("__")]
    tree = ast.parse(source)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.partition(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.attr.startswith("_") and not node.attr.startswith("__")
                and part_of(aliases.get(node.value.id, "")) is not None):
            found.append(f"line {node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_reaches_into_another_modules_private_names(path):
    bad = private_reaches(path.read_text(), module_name(path), package=path.name == "__init__.py")
    assert not bad, (f"{path.relative_to(ROOT)} takes private names ({', '.join(bad)}): make "
                     "the name public where it lives, or move the code that needs it there")


def test_every_part_stands_on_one_floor_and_every_sideways_pair_is_on_one_floor():
    parts = [part for _, floor in FLOORS for part in floor]
    assert len(parts) == len(set(parts))
    present = {part_of(module_name(path)) for path in SOURCES}
    assert present == set(parts), f"on no floor: {present - set(parts)}; gone: {set(parts) - present}"
    for a, b in SIDEWAYS:
        assert FLOOR_OF[a] == FLOOR_OF[b], (a, b)


def test_the_table_check_sees_an_upward_a_sideways_and_a_private_import():
    assert wrong_way("analysis", "viz") == "analysis (floor 8) imports viz (floor 11): up"
    assert wrong_way("model", "trace") == "model (floor 2) imports trace (floor 3): up"
    assert wrong_way("experiments", "lab") == "experiments (floor 10) imports lab (floor 10): along its floor"
    assert wrong_way("viz", "analysis") is None
    assert wrong_way("hf", "bundle") is None
    assert wrong_way("bundle", "hf") == "bundle (floor 5) imports hf (floor 6): up"
    assert [t for _, t, _ in imports("from tfviz import reference\n", "tfviz.exercises.x")] == \
        ["tfviz.reference"]
    assert imports("from .core import Step\n", "tfviz.exercises.x") == \
        [(1, "tfviz.exercises.core", ["Step"])]
    assert imports("from . import core\n", "tfviz.exercises", package=True) == \
        [(1, "tfviz.exercises.core", [])]
    assert private_reaches("from tfviz.trace import Trace, _wanted\n", "tfviz.model.vit") == \
        ["line 1: tfviz.trace._wanted"]
    assert private_reaches("import tfviz.weights as w\nw._np(x)\n", "tfviz.vision_bundle") == \
        ["line 2: tfviz.weights._np"]
    assert private_reaches("from tfviz.weights import __doc__\nself._x = 1\n", "tfviz.a") == []


# --- no circle between modules ----------------------------------------------------------------

def import_graph(sources: list[Path]) -> dict[str, set[str]]:
    """Each module of ours -> the modules of ours it imports (at any depth of the file, like the
    floors: an import inside a function closes a circle as surely as one at the top)."""
    graph = {}
    for path in sources:
        module = module_name(path)
        graph[module] = {target for _, target, _ in
                         imports(path.read_text(), module, package=path.name == "__init__.py")
                         if part_of(target) is not None and target != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through their imports (the strongly
    connected components of more than one module, or of one that imports itself), each
    sorted, found by Tarjan's walk; a module the graph does not list is a dead end.

    >>> circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    [['a', 'b', 'c']]
    """
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in order:
            continue
        work = [(root, iter(sorted(graph[root])))]  # iterative: no recursion limit to meet
        order[root] = low[root] = len(order)
        stack.append(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in graph:
                    continue
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in stack:
                    low[node] = min(low[node], order[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1 or node in graph[node]:
                        found.append(sorted(group))
    return sorted(found)


def test_no_two_modules_import_each_other_however_far_round():
    """The floors check parts; two modules of one part (``ui/cache.py`` and ``ui/warmup.py``)
    could still import each other, and then neither can be read, tested or moved alone."""
    found = circles(import_graph(SOURCES))
    assert not found, "modules that import each other: " + "; ".join(
        " <-> ".join(group) for group in found)


def test_the_circle_check_sees_a_circle_inside_one_package_and_none_in_a_line():
    cache = "from tfviz.ui.warmup import one_thread_per_op\n"
    warmup = "def warm_up():\n    from tfviz.ui.cache import get_trace\n"
    graph = {m: {t for _, t, _ in imports(src, m)}
             for m, src in (("tfviz.ui.cache", cache), ("tfviz.ui.warmup", warmup))}
    assert circles(graph) == [["tfviz.ui.cache", "tfviz.ui.warmup"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert circles({"a": {"a"}}) == [["a"]]
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}) == [["a", "b"], ["c", "d"]]


# --- tfviz/analysis is numpy only -------------------------------------------------------------

ANALYSIS = sorted((ROOT / "tfviz" / "analysis").glob("*.py"))
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
