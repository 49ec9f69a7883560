"""Every lesson's charts, as sent to the browser, against a snapshot taken before ``tfviz/viz``
was regrouped into a kit and topic files (issue #43): a regrouping moves code, it must not
change a chart.

Each lesson opens once, on its default view and the model its steps need, in one AppTest; each
Vega-Lite chart it draws is compared with the snapshot's chart at the same place on the page:

- the spec (what Streamlit sends as JSON, the datasets moved out of it) must be the same,
  key for key, apart from the config unifications listed in ``UNIFIED``: the kit gives every
  chart one config, where the two constructors it replaced each had their own;
- each dataset (sent as an Arrow table) must have the same columns and rows, its text the same,
  and its numbers the same to float32's precision: the snapshot keeps a fingerprint of each
  numeric column (count, blanks, sum, sum of magnitudes) rather than every value, which keeps
  it small, and compares them with a tolerance, since the numbers come from a model run whose
  last bits may differ on another CPU or thread count.

Retake the snapshot only when a chart is meant to change: ``python3 -m tests.app.test_spec_snapshot``
(about two minutes), and say in the commit which charts changed and why.
"""
from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import pytest

from tfviz.ui.lessons import ROOT, available

SNAPSHOT = Path(__file__).resolve().parents[1] / "unit" / "viz" / "spec_snapshot" / "lessons.json.gz"
# Lessons whose steps need a model of a kind (as in test_presenter.py): a mixture of experts;
# a model with grouped K/V heads
MODEL = {"mixture-of-experts": "moe-tiny", "gqa": "llama-tiny"}
# Each lesson on its own model, then on mixtral-tiny (RoPE, RMSNorm, grouped K/V heads and
# experts: the branches a GPT's page does not take)
CASES = [*(lesson.url for lesson in available()),
         *(f"{lesson.url}@mixtral-tiny" for lesson in available()
           if lesson.number is not None and lesson.number <= 19)]
# The cases the snapshot holds, in the order it took them (a lesson's widgets stay in the
# session for the next): a lesson written after it has no "before" to compare with.
_HELD = set(json.loads(gzip.decompress(SNAPSHOT.read_bytes()))) if SNAPSHOT.exists() else set()
TAKEN = [case for case in CASES if case in _HELD]

#: The config settings the kit unified, each removed from both sides before comparing, with
#: why it may differ. Before the kit, ``charts.chart`` and ``instant.spec`` each wrote a config.
UNIFIED = (
    # One schema URL for every chart (both wrote v6, by two constants).
    ("$schema",),
    # Legend label limit: plain charts cut labels at 400 px (160 with SMALL_LEGEND), instant
    # charts at Vega-Lite's default; the kit's one config sets it for both.
    ("config", "legend", "labelLimit"),
    # Legend title size: plain charts 16 px (14 with SMALL_LEGEND), instant charts 14 px.
    ("config", "legend", "titleFontSize"),
    # Title anchor: instant charts' titles started at the left, plain charts' were centred.
    ("config", "title", "anchor"),
    # Facet header sizes: instant charts set them, plain charts took Vega-Lite's.
    ("config", "header"),
    # The grey frame round a view: instant charts drew none, plain charts Vega-Lite's default.
    ("config", "view", "stroke"),
    # Colours of a nominal field without a scale of its own: instant charts Okabe-Ito
    # (style.CATEGORICAL), plain charts Vega-Lite's tableau10.
    ("config", "range", "category"),
    # The renderer: instant charts named it (SVG or canvas by mark count), plain charts took
    # Streamlit's; the kit picks it for every chart by its mark count.
    ("usermeta", "embedOptions"),
    # No view controls: instant charts wrote an empty list of parameters, the kit writes none.
    ("params", []),
)
#: Columns holding times measured as the page ran, (lesson, chart index, dataset, column):
#: only how many numbers they hold is compared.
MEASURED = {("kv-cache", 0, "timing", "ms"), ("kv-cache", 1, "cost", "ms"),
            ("long-sequences", 0, "rows", "value")}
PACKED = re.compile(r"^[-0-9.,e+]*,[-0-9.,e+]*$")  # instant.stack_rows: "0.5,0.3333,,-2"


def _drop(tree: dict, path: tuple) -> None:
    *parents, last = path
    for key in parents:
        tree = tree.get(key)
        if not isinstance(tree, dict):
            return
    tree.pop(last, None)


def normalised(spec: dict) -> dict:
    """``spec`` without the settings ``UNIFIED`` lists (a deep copy), and without sections the
    removals emptied."""
    spec = json.loads(json.dumps(spec))
    for path in UNIFIED:
        if path[-1] == []:  # removed only when it holds that value
            if spec.get(path[0]) == []:
                del spec[path[0]]
        else:
            _drop(spec, path)
    for section in ("config", "usermeta"):
        inner = spec.get(section)
        if isinstance(inner, dict):
            for key in [k for k, v in inner.items() if v == {}]:
                del inner[key]
            if not inner:
                del spec[section]
    return spec


def _numbers(values) -> dict:
    finite = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return {"n": len(values), "blank": len(values) - len(finite), "sum": math.fsum(finite),
            "abs": math.fsum(abs(v) for v in finite)}


def fingerprint(frame) -> dict:
    """A dataset (a DataFrame) as its columns: text exactly, numbers (columns, and the packed
    strings of ``instant.stack_rows``) as a fingerprint compared with a tolerance."""
    out = {"rows": len(frame), "columns": {}}
    for name in frame.columns:
        values = frame[name].tolist()
        texts = [v for v in values if isinstance(v, str)]
        if texts and len(texts) == len(values) and all(PACKED.match(v) for v in texts):
            cells = [c for v in texts for c in v.split(",")]
            out["columns"][str(name)] = {"packed": _numbers([float(c) if c else None for c in cells])}
        elif all(v is None or isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out["columns"][str(name)] = {"numbers": _numbers(values)}
        else:
            out["columns"][str(name)] = {"text": [None if v is None else str(v) for v in values]}
    return out


def lesson_charts(at, case: str) -> list[dict]:
    """The charts of ``case``: a lesson's url, "@" and a model when not the lesson's own."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    url, _, model = case.partition("@")
    for key in list(at.query_params):
        del at.query_params[key]
    at.session_state["model"] = model or MODEL.get(url, "gpt-tiny")
    lesson = next(lesson for lesson in available() if lesson.url == url)
    at.switch_page(f"lessons/{lesson.file}").run()
    assert not at.exception, (case, at.exception)
    return [{"spec": json.loads(c.proto.spec),
             "datasets": {d.name: fingerprint(convert_arrow_bytes_to_pandas_df(d.data.data))
                          for d in c.proto.datasets}}
            for c in at.get("vega_lite_chart")]


def differences(old, new, where: str = "") -> list[str]:
    """Where two JSON trees differ: text and structure exactly, floats to a relative 1e-4 (a
    sum of many float32 numbers rounded to 4 decimals, or a number a title computed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}.{k}: only in the snapshot" for k in old.keys() - new.keys()]
        out += [f"{where}.{k}: new" for k in new.keys() - old.keys()]
        for k in sorted(old.keys() & new.keys()):
            out += differences(old[k], new[k], f"{where}.{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} items in the snapshot, {len(new)} now"]
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{where}[{i}]")]
    if isinstance(old, float) or isinstance(new, float):
        if isinstance(old, (int, float)) and isinstance(new, (int, float)) and \
                math.isclose(old, new, rel_tol=1e-4, abs_tol=1e-3):
            return []
    if old != new or type(old) is not type(new) and not (
            isinstance(old, (int, float)) and isinstance(new, (int, float))):
        return [f"{where}: {str(old)[:120]!r} in the snapshot, {str(new)[:120]!r} now"]
    return []


@pytest.fixture(scope="module")
def app():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    return at


@pytest.fixture(scope="module")
def snapshot() -> dict:
    return json.loads(gzip.decompress(SNAPSHOT.read_bytes()))


@pytest.mark.parametrize("url", TAKEN)
def test_every_chart_is_as_the_snapshot_took_it(app, snapshot, url):
    then, now = snapshot[url], lesson_charts(app, url)
    assert len(now) == len(then), f"{url}: {len(then)} charts in the snapshot, {len(now)} now"
    problems = []
    for i, (old, new) in enumerate(zip(then, now)):
        for name, column in ((d, c) for (u, j, d, c) in MEASURED if u == url.split("@")[0] and j == i):
            for side in (old, new):
                side["datasets"][name]["columns"][column]["numbers"].update(sum=0, abs=0)
        problems += differences(normalised(old["spec"]), normalised(new["spec"]), f"{url}[{i}].spec")
        problems += differences(old["datasets"], new["datasets"], f"{url}[{i}].datasets")
    assert not problems, "\n".join(problems[:40])


def test_the_normalising_removes_only_what_it_lists():
    spec = {"$schema": "x", "mark": "bar", "config": {"view": {"stroke": None},
            "legend": {"labelLimit": 400, "labelFontSize": 14}}, "usermeta": {"embedOptions": {}}}
    assert normalised(spec) == {"mark": "bar", "config": {"legend": {"labelFontSize": 14}}}


def take() -> None:
    """Write the snapshot: every lesson's charts as they are now."""
    import os
    import tempfile

    from streamlit.testing.v1 import AppTest

    # as tests/app/conftest.py sets up every app test: errors raised, the bundled models only,
    # a live-class store of its own
    scratch = tempfile.mkdtemp()
    os.environ["TFVIZ_RAISE"] = "1"
    os.environ.pop("TFVIZ_MODELS", None)
    os.environ["HF_HUB_CACHE"] = f"{scratch}/no-hub-cache"
    os.environ["TFVIZ_STORE"] = f"sqlite:///{scratch}/live.sqlite3"
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    taken = {url: lesson_charts(at, url) for url in CASES}
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_bytes(gzip.compress(json.dumps(taken, sort_keys=True).encode(), mtime=0))
    print(f"{sum(map(len, taken.values()))} charts of {len(taken)} lessons, "
          f"{SNAPSHOT.stat().st_size:,} bytes")


if __name__ == "__main__":
    take()
