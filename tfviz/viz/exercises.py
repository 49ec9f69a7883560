"""Tables and pictures for the practice pages: an exercise's data, its worked steps, its arrows.

Pure builders, no streamlit: an exercise ``Instance`` (or one step's values) goes in, labelled
pandas DataFrames or a Vega-Lite chart (a dict) come out. Rows and columns carry the words of the exercise,
so a learner reads "flying · dim 3" rather than "0, 2".

>>> from tfviz.exercises import make_instance
>>> inst = make_instance("flying-arrows")
>>> [title for title, _ in data_tables(inst)]
['Input vectors X (one row per word)', 'Weight matrices: W^Q | W^K | W^V']
>>> data_tables(inst)[0][1].loc["arrows"].tolist()
[1.0, 1.0, 0.0, -1.0, -1.0, 1.0]
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tfviz.exercises.attention import solve_multihead
from tfviz.exercises.core import Arrows, Instance, fmt_number
from tfviz.exercises.worked import vector_text
from tfviz.viz.kit import chart_numbers
from tfviz.viz.kit.chart_numbers import Numbers
from tfviz.viz.kit.style import token_labels
from tfviz.viz.self_attention import arrows as flying

Table = tuple[str, pd.DataFrame]
PLACES = 4  # decimals shown in the tables; the answers are checked to ±0.01 or better

SETTING_NAMES = {
    "d_k": "d_k (size of a query or key)", "d": "d (size of a position vector)",
    "n": "n (base of the angles)", "d_model": "d_model", "n_heads": "h (heads)",
    "d_ff": "d_ff (feed-forward width)", "n_layers": "N (blocks per stack)",
    "vocab_size": "|V| (vocabulary size)", "beam_size": "beam size",
    "steps": "tokens to write", "k": "k (experts per token)",
    "renormalize": "rescale the chosen gates to add up to 1",
    "eps": "ε", "base": "b (base of the angles)", "query_position": "m (position of the query)",
    "key_position": "n (position of the key)", "d_head": "d_head (size of one head)",
    "layers": "layers", "q_heads": "query heads", "kv_heads": "K/V heads",
    "tokens": "tokens in the cache", "bits": "bits per number",
    "s": "s (the final norm's scale, frozen)", "clean": "C (the clean run's difference)",
    "corrupt": "c (the corrupt run's difference)", "half": "n (tokens in each half)",
}
VALUE_NAMES = {
    "q": "queries q", "k": "keys k", "v": "values v", "scores": "scores q·k",
    "scaled": "scaled scores", "masked": "masked scores", "weights": "attention weights",
    "output": "output", "concat": "concatenated heads", "divisors": "divisors",
    "angles": "angles (radians)", "table": "positional encodings", "logits": "router logits h",
    "gates": "gates p", "xhat": "normalised x̂", "candidates": "candidates",
    "kept": "kept sequences", "greedy": "greedy decoding",
    "mean_square": "mean of the squares", "rms": "RMS(x)", "gate": "gate g", "up": "up u",
    "act": "SiLU(g)", "hidden": "gated h", "theta": "θ_i (per position)",
    "rotated": "turned query q'", "k_rotated": "turned key k'", "score": "score q'·k'",
    "numbers_per_layer": "numbers per token, one layer",
    "numbers_per_token": "numbers per token, all layers", "per_token": "bytes per token",
    "total": "bytes in the cache",
    "a_centred": "ã = a − mean(a)", "b_centred": "b̃ = b − mean(b)",
    "shares": "share(a), share(b)", "logit": "logit", "fractions": "fraction restored",
    "cell": "layer, position", "layer": "layer", "fraction": "fraction restored there",
    "targets": "weights on the token after the earlier copy", "induction": "induction score",
    "previous": "previous-token score",
}
VECTOR_ROWS = {"x": "x", "gamma": "γ", "beta": "β", "a": "a (the head's output)",
               "b": "b (the MLP's output)", "u": "u (the answer's column of W_U)"}
_ROW_LABELS: dict[str, Callable[[int, Sequence[str]], list[str]]] = {
    "X": lambda n, t: _token_rows(n, t),
    "scores": lambda n, t: _token_rows(n, t),
    "values": lambda n, t: [f"v{i + 1}" + (f" ({t[i]})" if i < len(t) else "") for i in range(n)],
    "W_r": lambda n, t: [f"expert {i + 1}" for i in range(n)],
    "experts": lambda n, t: [f"E{i + 1}(x)" for i in range(n)],
    "W_gate": lambda n, t: _dims(n, "input dim "),
    "W_up": lambda n, t: _dims(n, "input dim "),
    "W_down": lambda n, t: _dims(n, "unit "),
    "patched": lambda n, t: [f"layer {i}" for i in range(n)],
    "pattern": lambda n, t: [f"{i} {w}" for i, w in enumerate(t)] if len(t) == n else _dims(n),
}
#: Columns of a given matrix, when they are not the dimensions of a vector: its hidden units.
_COL_LABELS: dict[str, Callable[[int], list[str]]] = {
    "W_gate": lambda m: _dims(m, "unit "),
    "W_up": lambda m: _dims(m, "unit "),
}
_TITLES = {
    "X": "Input vectors X (one row per word)",
    "scores": "Scores (row = the word asking, column = the word looked at)",
    "values": "Value vectors", "W_r": "Router matrix W_r (one row per expert)",
    "experts": "What each expert would output",
    "W_gate": "W_gate (one column per hidden unit)", "W_up": "W_up (one column per hidden unit)",
    "W_down": "W_down (one row per hidden unit)",
    "patched": "Logit difference with one cell patched (row: layer, column: position)",
    "pattern": "Attention (row: the query, column: the key)",
}
_SQUARE = ("scores", "scaled", "masked", "weights")  # n × n: columns are words too

#: The one formula each exercise is about, shown beside its numbers (the steps break it up).
FORMULAS = {
    "flying-arrows": r"z_i = \sum_j \alpha_{ij} v_j,\quad \alpha_{ij} = \frac{e^{q_i\cdot k_j/"
                     r"\sqrt{d_k}}}{\sum_{j'} e^{q_i\cdot k_{j'}/\sqrt{d_k}}}",
    "how-are-you": r"\mathrm{Concat}\big(z^{(1)}_i, z^{(2)}_i\big),\quad z^{(h)}_i = "
                   r"\sum_{j \le i} \alpha^{(h)}_{ij} v^{(h)}_j",
    "positional-table": r"PE(k,2i) = \sin\frac{k}{n^{2i/d}},\quad "
                        r"PE(k,2i+1) = \cos\frac{k}{n^{2i/d}}",
    "thinking-machines": r"z = \sum_j \alpha_j v_j,\quad \alpha_j = "
                         r"\frac{e^{s_j/\sqrt{d_k}}}{\sum_{j'} e^{s_{j'}/\sqrt{d_k}}}",
    "parameter-count": r"\text{parameters} = \underbrace{|V|\,d}_{\text{embedding}} + N \cdot "
                       r"(\text{attention} + \text{feed-forward} + \text{LayerNorms})",
    "beam-search": r"P(x_1 \dots x_t) = \prod_{s=1}^{t} P(x_s \mid x_{<s})",
    "layernorm": r"y = \gamma \odot \frac{x - \mu}{\sigma} + \beta",
    "moe-gate": r"y = \sum_{i \in T} p_i E_i(x),\quad p_i = \frac{e^{h_i}}{\sum_j e^{h_j}},"
                r"\quad h = W_r x",
    "bpe-merges": r"(a, b)^\star = \arg\max_{(a,b)} \sum_w f_w\, n_w(a, b)",
    "causal-mask": r"\alpha_{ij} = \frac{e^{s_{ij}}}{\sum_{j' \le i} e^{s_{ij'}}}\quad "
                   r"(s_{ij} = -\infty \text{ for } j > i)",
    "rope": r"\begin{pmatrix} q'_{2i} \\ q'_{2i+1} \end{pmatrix} = \begin{pmatrix} "
            r"\cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}"
            r"\begin{pmatrix} q_{2i} \\ q_{2i+1} \end{pmatrix},\quad \theta_i = b^{-2i/d}",
    "rmsnorm": r"y = \gamma \odot \frac{x}{\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}}",
    "swiglu": r"y = \big(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\big)\, W_{down},\quad "
              r"\mathrm{SiLU}(z) = z\,\sigma(z) = \frac{z}{1 + e^{-z}}",
    "gqa-cache": r"\text{bytes} = L \cdot 2 \cdot n_{kv} \cdot d_{head} \cdot T \cdot "
                 r"\frac{\text{bits}}{8}",
    "dla-by-hand": r"\mathrm{share}(a) = \Big(\frac{a - \bar a}{s} \odot \gamma\Big) \cdot u,"
                   r"\quad \mathrm{share}(a) + \mathrm{share}(b) = \mathrm{LN}(a + b) \cdot u",
    "patching-map": r"f = \frac{v - c}{C - c}\quad (0: \text{corrupt run},\ 1: \text{clean run})",
    "induction-score": r"\text{induction} = \tfrac{1}{n}\textstyle\sum_{i=0}^{n-1} A_{n+i,\,i+1},"
                       r"\quad \text{previous} = \tfrac{1}{2n-1}\textstyle\sum_{q\ge 1} A_{q,\,q-1}",
}


def _token_rows(n: int, tokens: Sequence[str]) -> list[str]:
    """Row labels: the words when there is one per row (numbered if a word repeats)."""
    tokens = list(tokens)
    if len(tokens) != n:
        return [f"row {i + 1}" for i in range(n)]
    return tokens if len(set(tokens)) == n else token_labels(tokens, start=1)


def _position_cols(m: int, tokens: Sequence[str]) -> list[str]:
    """Columns that are positions: "0 the", "1 cat", ... (numbered: words may repeat)."""
    return [f"{j} {tokens[j]}" for j in range(m)] if len(tokens) == m else _dims(m)


def _dims(n: int, prefix: str = "dim ") -> list[str]:
    return [f"{prefix}{j + 1}" for j in range(n)]


def _vector_cols(key: str, n: int, tokens: Sequence[str]) -> list[str]:
    """Columns of a single row of numbers: one per word, one per expert, or just numbered."""
    if key in _SQUARE and n == len(tokens):
        return [f"“{t}”" for t in tokens]
    if key in ("logits", "gates"):
        return [f"expert {j + 1}" for j in range(n)]
    if key in ("divisors", "theta", "angles"):  # one number per pair of dimensions
        return [f"i = {j}" for j in range(n)]
    return _dims(n, "")


def matrix_table(a, rows: Sequence[str], cols: Sequence[str]) -> pd.DataFrame:
    """A float table rounded for reading; −∞ stays −∞ (pandas shows it as -inf)."""
    a = np.atleast_2d(np.asarray(a, dtype=float))
    return pd.DataFrame(np.round(a, PLACES), index=list(rows), columns=list(cols))


def weights_table(W_q, W_k, W_v) -> pd.DataFrame:
    """W^Q, W^K and W^V side by side; row i is input dimension i."""
    W = [np.asarray(w, dtype=float) for w in (W_q, W_k, W_v)]
    cols = [f"{name}·{j + 1}" for name, w in zip(("W^Q", "W^K", "W^V"), W)
            for j in range(w.shape[1])]
    return matrix_table(np.concatenate(W, axis=1), _dims(W[0].shape[0], "input dim "), cols)


def _mapping_table(key: str, value: Mapping) -> Table:
    if key == "tree":  # prefix -> {token: probability}
        tokens = sorted({t for row in value.values() for t in row})
        frame = pd.DataFrame([[row.get(t, 0.0) for t in tokens] for row in value.values()],
                             index=[p or "(start)" for p in value],
                             columns=[f"P({t})" for t in tokens])
        return "Next-token probabilities after each prefix", frame
    if key == "corpus":
        frame = pd.DataFrame({"times it occurs": list(value.values())}, index=list(value))
        return "Corpus (word → how often it occurs)", frame
    return key, pd.DataFrame({"value": list(value.values())}, index=[str(k) for k in value])


def data_tables(inst: Instance) -> list[Table]:
    """Everything the exercise gives, as (title, table) pairs; small settings come last."""
    data, tokens = inst.data, inst.tokens
    out: list[Table] = []
    vectors: dict[str, np.ndarray] = {}
    settings: dict[str, object] = {}
    for key, value in data.items():
        if key in ("W_k", "W_v") or key.endswith("_text"):
            continue
        if key == "W_q":
            out.append(("Weight matrices: W^Q | W^K | W^V",
                        weights_table(data["W_q"], data["W_k"], data["W_v"])))
        elif key == "heads":
            out += [(f"Head {h}: W^Q | W^K | W^V", weights_table(*ws))
                    for h, ws in enumerate(value, start=1)]
        elif isinstance(value, Mapping):
            out.append(_mapping_table(key, value))
        elif isinstance(value, np.ndarray) and value.ndim == 2:
            n, m = value.shape
            rows = _ROW_LABELS.get(key, _token_rows)(n, tokens)
            cols = (_token_rows(m, tokens) if key == "scores"
                    else _position_cols(m, tokens) if key in ("patched", "pattern")
                    else _COL_LABELS[key](m) if key in _COL_LABELS else _dims(m))
            out.append((_TITLES.get(key, key), matrix_table(value, rows, cols)))
        elif isinstance(value, np.ndarray) and value.ndim == 1:
            vectors[key] = value
        else:
            settings[SETTING_NAMES.get(key, key)] = value
    if "scores" in vectors:  # one query's scores against each key
        s = vectors.pop("scores")
        cols = [f"with “{t}”" for t in tokens] if len(tokens) == len(s) else _dims(len(s), "")
        out.append(("Scores of the query with each key", matrix_table(s, ["q·k"], cols)))
    if vectors:
        width = max(len(v) for v in vectors.values())
        padded = [np.pad(np.asarray(v, float), (0, width - len(v)), constant_values=np.nan)
                  for v in vectors.values()]
        rows = [VECTOR_ROWS.get(k, k) for k in vectors]
        out.append(("Given vectors: " + ", ".join(rows),
                    matrix_table(np.stack(padded), rows, _dims(width, ""))))
    if tokens and "X" not in data and "scores" not in data:
        out.insert(0, ("Words and their positions",
                       pd.DataFrame({"word": list(tokens)}, index=[f"k = {i}" for i in
                                                                   range(len(tokens))])))
    if settings:
        shown = [fmt_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
                 else "yes" if v is True else "no" if v is False else str(v)
                 for v in settings.values()]
        out.append(("Settings", pd.DataFrame({"value": shown}, index=list(settings))))
    return out


def _is_pair(x) -> bool:
    return isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) \
        and isinstance(x[1], (int, float)) and not isinstance(x[1], bool)


def value_tables(values: Mapping[str, object], tokens: Sequence[str] = ()) -> list[Table]:
    """One worked step's numbers as tables; scalars and short lists share one "numbers" table.

    >>> [t for t, _ in value_tables({"weights": np.array([[0.8, 0.2], [0.5, 0.5]])}, ["a", "b"])]
    ['attention weights']
    """
    out: list[Table] = []
    small: dict[str, str] = {}
    for key, value in values.items():
        title = VALUE_NAMES.get(key, key)
        if isinstance(value, np.ndarray) and value.ndim == 2:
            n, m = value.shape
            cols = (_token_rows(m, tokens) if key in _SQUARE and m == len(tokens)
                    else [f"i = {j}" for j in range(m)] if key == "angles"
                    else [f"col {j}" for j in range(m)] if key == "table" else _dims(m))
            out.append((title, matrix_table(value, _token_rows(n, tokens), cols)))
        elif isinstance(value, np.ndarray) and value.ndim == 1:
            out.append((title, matrix_table(value, [title], _vector_cols(key, len(value), tokens))))
        elif _is_pair(value) or (isinstance(value, tuple) and value and all(map(_is_pair, value))):
            pairs = [value] if _is_pair(value) else list(value)
            out.append((title, pd.DataFrame({"probability": [round(p, PLACES) for _, p in pairs]},
                                            index=[s for s, _ in pairs])))
        elif isinstance(value, tuple):
            small[title] = ", ".join(map(str, value))
        elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            small[title] = f"{value:,}" if float(value).is_integer() else f"{value:.{PLACES}f}"
        else:
            small[title] = str(value)
    if small:
        out.append(("numbers", pd.DataFrame({"value": list(small.values())}, index=list(small))))
    return out


def exercise_arrows(arrows: Arrows) -> dict:
    """Lesson 5's flying arrows (``self_attention.arrows``) for an exercise's weights, every
    head and query word in the browser, opening on the word the exercise asks about (else the
    last, which sees most).

    Keys with weight exactly 0 were hidden by the causal mask (a softmax of finite scores is
    never exactly 0), so they are drawn as masked.
    """
    w = np.asarray(arrows.weights, dtype=float)  # (heads, n, n)
    focus = arrows_opening(arrows)
    return flying(np.where(w > 0, w, np.nan)[None], arrows.tokens, query=focus,
                  default_query=focus)


def arrows_numbers(arrows: Arrows) -> list[Numbers]:
    """The arrows' weights as tables, one a head ("The numbers as a table" under the chart):
    a row a word asking, a column a word it may look at."""
    w = np.asarray(arrows.weights, dtype=float)[None]  # (1, heads, n, n): one layer
    return chart_numbers.heads("attention weights", w, arrows.tokens, arrows.tokens)


def arrows_opening(arrows: Arrows) -> int:
    """The word the arrows open on: the one the exercise asks about, else the last."""
    return len(arrows.tokens) - 1 if arrows.focus is None else int(arrows.focus)


def attention_setup(inst: Instance):
    """(X, [(W_q, W_k, W_v) per head], causal) for the exercises an engine can run, else None."""
    d = inst.data
    if "X" not in d:
        return None
    if "heads" in d:
        heads = [tuple(h) for h in d["heads"]]
    elif all(k in d for k in ("W_q", "W_k", "W_v")):
        heads = [(d["W_q"], d["W_k"], d["W_v"])]
    else:
        return None
    causal = any("masked" in s.values for s in inst.steps)  # the worked solution has a mask step
    return np.asarray(d["X"], dtype=float), heads, causal


@dataclass(frozen=True)
class Agreement:
    """Hand solver vs engine: a table for the asked word, and the largest gap anywhere.

    ``answers[r]`` names the answer boxes that row ``r`` of the table gives away (its numbers
    are all or part of their answers), so a page can hold the row back until those boxes
    are answered."""

    table: pd.DataFrame
    max_difference: float
    answers: tuple[tuple[str, ...], ...] = ()


def boxes_stating(inst: Instance, values) -> tuple[str, ...]:
    """The number boxes of ``inst`` whose answer holds ``values`` as a run of entries.

    >>> from tfviz.exercises import make_instance
    >>> boxes_stating(make_instance("how-are-you"), [0.8884, 0.8884])
    ('head1', 'concat')
    """
    row = np.ravel(np.asarray(values, dtype=float))
    out = []
    for box in inst.answer_fields:
        if box.kind != "numbers":
            continue
        exp = np.ravel(np.asarray(box.expected, dtype=float))
        runs = (exp[i:i + len(row)] for i in range(len(exp) - len(row) + 1))
        if any(np.allclose(run, row, atol=10.0 ** -PLACES) for run in runs):
            out.append(box.name)
    return tuple(out)


def engine_agreement(inst: Instance, engine=None) -> Agreement | None:
    """Run the exercise's matrices through the real model and compare with the hand solver.

    ``engine`` defaults to :func:`tfviz.exercises.engine_check.engine_attention` (same signature).
    The table shows the asked word's row; ``max_difference`` covers every row and head.
    """
    setup = attention_setup(inst)
    if setup is None:
        return None
    if engine is None:
        from tfviz.exercises.engine_check import engine_attention as engine
    X, heads, causal = setup
    hand = solve_multihead(X, heads, causal=causal)
    eng_w, eng_z = engine(X, heads, causal=causal)
    focus = 0 if inst.focus is None else inst.focus
    name = (inst.tokens or ("?",) * len(X))[focus]
    rows, answers, worst = [], [], 0.0
    for h, r in enumerate(hand.heads):
        for what, mine, theirs in (("weights", r.weights, eng_w[h]), ("output", r.output, eng_z[h])):
            gap = np.abs(np.asarray(mine, float) - np.asarray(theirs, float))  # every row
            worst = max(worst, float(gap.max()))
            rows.append({"head": h + 1, "what": f"{what} of “{name}”",
                         "hand solver": vector_text(mine[focus], PLACES),
                         "engine": vector_text(theirs[focus], PLACES),
                         "largest |difference|": f"{float(gap.max()):.1e}"})
            answers.append(boxes_stating(inst, mine[focus]))
    return Agreement(pd.DataFrame(rows), worst, tuple(answers))
