"""Hand-calculation exercises: solvers, generators, answer checking, worked steps.

Importing this package costs nothing: the names below load their module on first use
(``tfviz.exercises.quiz`` and other light modules stay cheap to import).

Solvers (numpy only, every step returned as data):
    solve_attention(X, W_q, W_k, W_v, causal=False, scale=True)   -> .q .k .v .scores ...
    solve_multihead(X, [(W_q, W_k, W_v), ...], W_o=None, ...)      -> .heads .concat .output
    positional_table(n_positions, d, base=10000)
    count_parameters(config_or_ParamSpec, **conventions)           -> .parts .total
Exercises:
    EXERCISES[id].make(seed) -> Instance with .prompt .data .answer_fields .steps .check()
    worksheet(ids, n_variants, seed) / worksheet_html(...) -> (sheet, answer key)
Answers and progress:
    parse_numbers(text, expected_count=None), parse_number(text), Progress

>>> from tfviz.exercises import solve_attention
>>> solve_attention([[1, 0], [0, 1]], [[1], [0]], [[1], [0]], [[1], [1]]).weights.round(3).tolist()
[[0.731, 0.269], [0.5, 0.5]]
"""
from __future__ import annotations

import importlib

_WHERE = {
    "solve_attention": "attention", "solve_multihead": "attention", "select": "attention",
    "AttentionSteps": "attention", "MultiHeadSteps": "attention",
    "positional_table": "tfviz.reference",  # the reference maths, a floor down
    "count_parameters": "tfviz.params", "ParamSpec": "tfviz.params", "ParamCount": "tfviz.params",
    "parse_numbers": "answers", "parse_number": "answers", "ParseResult": "answers",
    "DEFAULT_TOLERANCE": "answers",
    "EXERCISES": "registry", "make_instance": "registry", "parse_class_code": "registry",
    "Instance": "core", "ExerciseSpec": "core", "AnswerField": "core", "Step": "core",
    "Feedback": "feedback",
    "worksheet": "worksheet", "worksheet_html": "worksheet",
    "Progress": "progress",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tfviz.exercises' has no attribute {name!r}")
    full = module if module.startswith("tfviz.") else f"tfviz.exercises.{module}"
    return getattr(importlib.import_module(full), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
