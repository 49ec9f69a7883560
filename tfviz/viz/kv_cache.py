"""Instant charts for lesson 16 (the KV cache), in the conventions of ``tfviz.viz.kit.instant``.

- ``steps_chart``: a generation with and without the cache, one step at a time. The ``step``
  slider under it picks the step in the browser (no rerun): the per-step times of both runs
  (the chosen step outlined), the cache as it stands after that step (one strip per layer for
  K and one for V, a cell per token, the newest in vermillion), and the new token's 1 × t row
  of attention weights in every layer and head, read from the cache's keys. A model with many
  layers and heads (``rows_pictured``: GPT-2 small's 144 rows) sends each step's rows as one
  picture instead of a cell per weight.
- ``cost_chart``: one step's measured time at each length beside the multiply-adds the formula
  counts, with and without the cache (a static chart: nothing to choose).

``steps_chart`` is length-free (``tfviz.viz.kit.instant_length``): it is laid out for a prompt of
``length_cap`` tokens followed by the most steps the page lets the model write, and reads the
prompt's length, the tokens written and the number of steps taken from its data. So a new
prompt of another length within the cap swaps its data, however soon the model stops
(``<eos>``); the page's marker fits the step slider to the steps taken.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tfviz.viz.kit.charts import chart
from tfviz.viz.kit.conventions import cell_size
from tfviz.viz.kit.instant import SCHEME, constant, heat_layer, packed, rounded, slider
from tfviz.viz.kit.instant_length import LENGTH_CAPS, TOKENS_DOMAIN, length_cap
from tfviz.viz.kit.instant_pictures import PICTURE_CELLS, image_layer, index_layer, picture
from tfviz.viz.kit.style import CATEGORICAL, FONT_SIZE, token_labels

CACHED, UNCACHED = CATEGORICAL[0], CATEGORICAL[1]  # blue with the cache, orange without
NEW = CATEGORICAL[5]  # vermillion: the token this step added
RUNS = ("with the KV cache", "re-reading everything")


def _row_transforms(H: int) -> list[dict]:
    """The chosen step's rows, one (layer, head) row of t weights each, back into cells."""
    return [{"filter": "datum.step == stepi"},
            {"calculate": "split(datum.v, ',')", "as": "v"},
            {"flatten": ["v"]},
            {"window": [{"op": "row_number", "as": "cell"}], "groupby": ["layer", "head"]},
            {"calculate": "toNumber(datum.v)", "as": "v"},
            {"calculate": "datum.cell - 1", "as": "col"},
            {"calculate": f"datum.layer * {H} + datum.head", "as": "row"}]


def rows_pictured(layers: int, heads: int) -> bool:
    """Whether the rows of weights travel as one picture per step (``instant_pictures``)
    rather than a cell per weight: when the model's layers × heads rows pass
    ``PICTURE_CELLS`` cells even at the shortest layout (``LENGTH_CAPS[0]`` tokens). Every
    step change filters, splits and numbers each cell in the browser and draws it, and for
    GPT-2 small's 144 rows of up to ~80 weights (some 11,000 cells) that work is most of the
    change (BENCHMARKS.md, lesson 16 at 12 × 12); a picture is one mark. The choice follows
    the model, not the prompt, so a chart stays length-free and our small models (12 rows)
    keep their cells and hover values at any length.

    >>> rows_pictured(3, 4), rows_pictured(6, 6), rows_pictured(12, 12)
    (False, False, True)
    """
    return layers * heads * LENGTH_CAPS[0] > PICTURE_CELLS


def steps_pictures(rows: Sequence[np.ndarray]) -> list[dict]:
    """One picture per step: its (layers, heads, t) weights as (layers · heads) × t pixels, a
    row per layer and head (layer-major, as the cells' rows), cividis from 0 to 1 like the
    cells (``instant_pictures.picture``). Only the t positions the step read are in it."""
    out = []
    for s, r in enumerate(rows):
        L, H, t = np.shape(r)
        out.append({"step": s, "img": picture(np.reshape(r, (L * H, t)))})  # (L·H, t)
    return out


def _pictured_layer(T_cap: int, n_rows: int, cell: int) -> dict:
    """The rows of weights drawn from the chosen step's picture (``steps_pictures``): an image
    ``cur_t`` cells wide from the top left corner, over hidden points that give the axes the
    sentence's tokens (``ntok`` of them, laid out for ``T_cap``) and the layer · head rows, and
    the cividis legend the cells have. There are too many weights to point at: no hover."""
    image = image_layer({"expr": f"{cell} * cur_t"}, cell * n_rows, [{"filter": "datum.step == stepi"}])
    x = index_layer("x", T_cap, title="key (every token so far)", free=True)
    y = index_layer("y", n_rows, title="layer · head", labels="heads")
    x["encoding"]["color"] = {"field": "i", "type": "quantitative", "title": "weight",
                              "scale": {"domain": [0, 1], "scheme": SCHEME}}
    return {"width": {"step": cell}, "height": {"step": cell}, "layer": [image, x, y]}


def steps_layout(prompt: int, most: int) -> tuple[int, int]:
    """The tokens (prompt and answer) and steps a length-free ``steps_chart`` is laid out for:
    a prompt of ``length_cap(prompt)`` tokens, then ``most`` steps, each but the last adding
    the token it wrote to what the next one reads.

    >>> steps_layout(13, 20), steps_layout(16, 20), steps_layout(17, 5)
    ((35, 20), (35, 20), (28, 5))
    """
    return length_cap(prompt) + most - 1, most


def steps_chart(steps: Sequence, rows: Sequence[np.ndarray], tokens: Sequence[str],
                dims: tuple[int, int, int], *, most: int | None = None,
                step: int | None = None) -> dict:
    """``steps``: ``CacheStep`` per step (``tfviz.experiments.kv_cache``); ``rows[s]`` (layers,
    heads, t_s) weights of step s's new query; ``tokens``: labels of every position read
    (prompt and tokens written, at least as many as the last step's t); ``dims``: (layers,
    K/V heads, d_head) of the model. ``most``: the most steps the generation could take (the
    page's "new tokens at most"; default: the steps taken). ``step``: a shared link's step,
    else None: the chart opens on step 1, the first that reads the cache.

    Length-free (module docstring): laid out by ``steps_layout``, the chart draws the step
    ``stepi``, the slider's kept below the steps taken (``nsteps``, in its data), and the
    prompt's and answer's tokens (``ntok``) read from its data."""
    n = len(steps)
    L, H, _ = np.shape(rows[0])
    T = int(steps[-1].t)
    T_cap, n_cap = steps_layout(int(steps[0].t), max(n, most or n))  # step 0 reads the prompt
    n_kv, dh = dims[1], dims[2]
    labels = token_labels(tokens[:T])
    # two rows per step (cached first), each with the step's facts, which the titles read as
    # data('timing')[2 * step]: a dataset no view draws would not reach the browser
    timing = [{"step": s.index, "run": RUNS[r], "ms": rounded(ms), "fed": fed, "t": s.t,
               "read": labels[s.t - 1], "wrote": str(tokens[s.t]) if s.t < len(tokens) else "",
               "bytes": s.cache_bytes, "shape": " × ".join(map(str, s.cache_shape))}
              for s in steps for r, (ms, fed) in enumerate(((s.ms_cached, s.tokens_in_cached),
                                                            (s.ms_uncached, s.tokens_in_uncached)))]
    pictured = rows_pictured(L, H)
    weights = (steps_pictures(rows) if pictured else
               [{"step": s, "layer": lyr, "head": h, "v": packed(rows[s][lyr, h])}
                for s in range(n) for lyr in range(L) for h in range(H)])
    strips = [{"strip": 2 * lyr + kv, "pos": p} for lyr in range(L) for kv in range(2) for p in range(T)]

    times = {
        "data": {"name": "timing"}, "width": max(300, min(720, 26 * n_cap)), "height": 180,
        "encoding": {
            "x": {"field": "step", "type": "ordinal", "title": "step",
                  "axis": {"labelAngle": 0, "labelOverlap": True}},
            "xOffset": {"field": "run", "sort": list(RUNS)},
            "y": {"field": "ms", "type": "quantitative", "title": "time of the step (ms)"},
            "color": {"field": "run", "type": "nominal", "title": None, "sort": list(RUNS),
                      "scale": {"domain": list(RUNS), "range": [CACHED, UNCACHED]},
                      "legend": {"orient": "top"}},
            "opacity": {"condition": {"test": "datum.step == stepi", "value": 1}, "value": 0.45},
            "stroke": {"condition": {"test": "datum.step == stepi", "value": "black"}, "value": None},
            "tooltip": [{"field": "step"}, {"field": "run"},
                        {"field": "ms", "title": "ms", "format": ".3f"},
                        {"field": "fed", "title": "tokens fed to the model"}],
        },
        "mark": {"type": "bar", "strokeWidth": 2},
        "title": {"text": "Time of each step, measured on this server", "fontSize": FONT_SIZE},
    }
    cell = max(4, min(22, 720 // T_cap))  # a cell a token; the answer's own tokens are drawn
    cache = {
        "data": {"name": "strips"}, "width": {"step": cell}, "height": 24 * 2 * L,
        "transform": [{"calculate": "cur_t", "as": "t"},
                      {"filter": "datum.pos < datum.t"},
                      {"calculate": "datum.pos == datum.t - 1 ? 'added this step' : 'kept from earlier steps'",
                       "as": "age"}],
        "mark": {"type": "rect", "stroke": "white", "strokeWidth": 1, "aria": False},
        "encoding": {
            "x": {"field": "pos", "type": "ordinal", "scale": {"domain": TOKENS_DOMAIN},
                  "axis": {"title": "position (one key or value per token)", "labelOverlap": True,
                           "labelAngle": 0}},
            "y": {"field": "strip", "type": "ordinal", "scale": {"domain": list(range(2 * L))},
                  "axis": {"title": None, "labelExpr": "'layer ' + floor(datum.value / 2) + "
                                                       "(datum.value % 2 ? ' V' : ' K')"}},
            "color": {"field": "age", "type": "nominal", "title": None,
                      "scale": {"domain": ["kept from earlier steps", "added this step"],
                                "range": ["#9ecae1", NEW]}, "legend": {"orient": "top"}},
        },
        "title": {"text": {"expr": f"'The cache after step ' + stepi + ': {L} layers × 2 × {n_kv} "
                                   f"K/V heads × ' + cur_t + ' tokens × {dh} = ' + "
                                   "cur_bytes + ' bytes'"},
                  "fontSize": FONT_SIZE},
    }
    heat_cell = cell_size(T_cap, L * H, width=720)
    if pictured:
        heat = _pictured_layer(T_cap, L * H, heat_cell)
        y = heat["layer"][2]["encoding"]["y"]
    else:
        heat = heat_layer(T_cap, L * H, x_title="key (every token so far)", y_title="layer · head",
                          value_title="weight", before=_row_transforms(H), y_labels="heads",
                          text=False, masked=True, free=True, cell=heat_cell)
        y = heat["layer"][0]["encoding"]["y"]
        y["scale"] = {"domain": list(range(L * H))}  # the model's rows, whatever the answer's length
    if heat_cell >= 20:  # room for every head's name (Vega's overlap check drops every other)
        y["axis"]["labelOverlap"] = False
    score = {"data": {"name": "weights"}, **heat,
             "title": {"text": {"expr": "'The query of ' + cur_read + ' against the ' + cur_t + "
                                        "' cached keys: one 1 × ' + cur_t + ' row per layer and head'"},
                       "fontSize": FONT_SIZE}}
    params = [slider("step", n_cap - 1, "Step", 1 if step is None else step),
              constant("heads", [f"L{lyr} H{h}" for lyr in range(L) for h in range(H)]),
              # the chosen step's facts, read from the data once it has arrived
              *({"name": f"cur_{field}", "expr": f"length(data('timing')) > 2 * stepi ? "
                                                 f"data('timing')[2 * stepi].{field} : {empty}"}
                for field, empty in (("t", "0"), ("bytes", "0"), ("read", "''"), ("wrote", "''")))]
    out = chart({"vconcat": [times, cache, score], "spacing": 26}, params=params,
                datasets={"weights": weights, "timing": timing, "strips": strips},
                tokens=labels, free=True, sentence={"nsteps": n},
                # bars and cells; a picture's panel is one image and hidden points, and then the
                # cache's 2 L strips of cells decide
                marks=2 * n_cap + (2 * L * T_cap + 1 + T_cap + L * H if pictured else L * H * T_cap),
                title={"text": {"expr": "'Step ' + stepi + ': reads ' + cur_read + ', writes ' + cur_wrote"}},
                description="Generation with and without the KV cache, one step at a time.",
                own_size=True)
    # the step drawn: the slider's, kept below the steps this answer took
    out["params"].append({"name": "stepi", "expr": "max(0, min(step, nsteps - 1))"})
    return out


def cost_chart(lengths: Sequence[int], ms_cached: Sequence[float], ms_uncached: Sequence[float],
               macs_cached: Sequence[int], macs_uncached: Sequence[int]) -> dict:
    """Two panels over the length t: measured ms of one step, and the formula's multiply-adds."""
    rows = [{"t": int(t), "run": RUNS[r], "ms": rounded(ms), "macs": int(m)}
            for r, (mss, macs) in enumerate(((ms_cached, macs_cached), (ms_uncached, macs_uncached)))
            for t, ms, m in zip(lengths, mss, macs)]
    colour = {"field": "run", "type": "nominal", "title": None, "sort": list(RUNS),
              "scale": {"domain": list(RUNS), "range": [CACHED, UNCACHED]}, "legend": {"orient": "top"}}
    x = {"field": "t", "type": "quantitative", "title": "tokens so far, t"}

    def panel(field: str, title: str, heading: str, fmt: str) -> dict:
        return {"mark": {"type": "line", "point": True},
                "encoding": {"x": x, "y": {"field": field, "type": "quantitative", "title": title},
                             "color": colour,
                             "tooltip": [{"field": "t"}, {"field": "run"},
                                         {"field": field, "title": title, "format": fmt}]},
                "width": 330, "height": 240, "title": {"text": heading, "fontSize": FONT_SIZE}}

    body = {"data": {"name": "cost"},
            "hconcat": [panel("ms", "ms per step", "Measured here", ".3f"),
                        panel("macs", "multiply-adds per step", "The formula", ",d")],
            "spacing": 40}
    return chart(body, datasets={"cost": rows}, marks=8 * len(rows),
                 description="One generation step's time and multiply-adds at each length.",
                 own_size=True)
