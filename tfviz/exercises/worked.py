"""Worked-solution steps for one attention head, written around one query word.

>>> dot_text([0, 1], [1, -1])
'0·1 + 1·(-1) = -1'
>>> vector_text([0.80444, -0.5])
'[0.804, -0.5]'
"""
from __future__ import annotations

import numpy as np

from tfviz.exercises.attention import AttentionSteps
from tfviz.exercises.core import Step, fmt_number, frozen_array


def vector_text(v, places: int = 3) -> str:
    """A vector in square brackets, numbers trimmed, minus signs plain for copy-paste."""
    return "[" + ", ".join(fmt_number(x, places).replace("−∞", "-inf") for x in np.ravel(v)) + "]"


def matrix_text(m, places: int = 3) -> str:
    """Rows one per line: '[1, 0]\\n[0, 1]'."""
    return "\n".join(vector_text(row, places) for row in np.atleast_2d(m))


def dot_text(a, b) -> str:
    """The dot product written out term by term."""
    def num(x):
        return fmt_number(x) if x >= 0 else f"({fmt_number(x)})"
    terms = " + ".join(f"{num(x)}·{num(y)}" for x, y in zip(np.ravel(a), np.ravel(b)))
    return f"{terms} = {fmt_number(float(np.dot(a, b)))}"


def head_steps(r: AttentionSteps, tokens, focus: int, head: str = "") -> list[Step]:
    """Project, score, scale, (mask), softmax, mix: one Step each, numbers for row ``focus``."""
    w, name = tokens, tokens[focus]
    h = f" ({head})" if head else ""
    steps = [Step(
        f"Queries, keys and values{h}", r"q_i = x_i W^Q,\; k_i = x_i W^K,\; v_i = x_i W^V",
        "Each word's vector is multiplied by the three weight matrices. A matrix that picks "
        "some of the dimensions simply copies those numbers out. "
        + "; ".join(f"{t}: q = {vector_text(r.q[i])}, k = {vector_text(r.k[i])}, "
                    f"v = {vector_text(r.v[i])}" for i, t in enumerate(w)) + ".",
        {"q": frozen_array(r.q), "k": frozen_array(r.k), "v": frozen_array(r.v)})]
    visible = [j for j in range(len(w)) if not r.causal or j <= focus]
    steps.append(Step(
        f"Scores{h}", r"s_{ij} = q_i \cdot k_j",
        f"Compare the query of “{name}” with every key by a dot product: "
        + "; ".join(f"with “{w[j]}”: {dot_text(r.q[focus], r.k[j])}" for j in range(len(w))) + ".",
        {"scores": frozen_array(r.scores)}))
    if r.scale:
        root = np.sqrt(r.d_k)
        steps.append(Step(
            f"Scale{h}", r"s_{ij} / \sqrt{d_k}",
            f"Divide by √d_k = √{r.d_k} ≈ {fmt_number(root, 4)} so that the scores do not grow "
            f"with the vector size. Row of “{name}”: {vector_text(r.scaled[focus], 4)}.",
            {"scaled": frozen_array(r.scaled)}))
    if r.causal:
        hidden = [w[j] for j in range(len(w)) if j > focus]
        later = ", ".join(f"“{t}”" for t in hidden) or "nothing (it is the last word)"
        steps.append(Step(
            f"Mask{h}", r"s_{ij} = -\infty \text{ for } j > i",
            f"A decoder must not look ahead. For “{name}” that hides {later}: those scores "
            f"become −∞, which the softmax turns into weight 0. Row: "
            f"{vector_text(r.masked[focus], 4)}.",
            {"masked": frozen_array(r.masked)}))
    e = np.exp(r.masked[focus] - np.max(r.masked[focus]))
    steps.append(Step(
        f"Softmax{h}", r"\alpha_{ij} = e^{s_{ij}} / \textstyle\sum_{j'} e^{s_{ij'}}",
        f"Exponentiate the visible scores of “{name}” and divide each by their total, so the "
        f"weights are positive and add up to 1. Relative sizes {vector_text(e, 4)} give weights "
        f"{vector_text(r.weights[focus], 4)}.",
        {"weights": frozen_array(r.weights)}))
    mix = " + ".join(f"{fmt_number(r.weights[focus, j], 4)}·{vector_text(r.v[j])}" for j in visible)
    steps.append(Step(
        f"Weighted sum of values{h}", r"z_i = \textstyle\sum_j \alpha_{ij} v_j",
        f"Blend the value vectors with these weights: {mix} = "
        f"{vector_text(r.output[focus], 4)}.",
        {"output": frozen_array(r.output)}))
    return steps
