"""What one Streamlit element means to a headless learner (bench/headless.py): the texts a run
shows, the errors it fails on, and the widgets it keeps state for, with their values on the wire.

A widget's value is the server's when the element carries ``set_value``, else the one the
session already holds for that id, else the element's default, as Streamlit's frontend does.
"""
from __future__ import annotations

from dataclasses import dataclass

from streamlit.proto.WidgetStates_pb2 import WidgetState

ERROR_TEXT = "Sorry, something went wrong"  # tfviz.ui.errors' message to the learner
# element type -> (wire field, kind of value); charts with ids are not widgets unless selectable
WIDGETS = {"selectbox": "string_value", "radio": "string_value", "text_area": "string_value",
           "text_input": "string_value", "checkbox": "bool_value", "number_input": "double_value",
           "slider": "double_array_value", "button_group": "string_array_value",
           "multiselect": "string_array_value", "button": "trigger_value",
           "bidi_component": "json_value"}  # a component's state: JSON, set by its own JS
TEXT_FIELDS = {"markdown": "body", "heading": "body", "alert": "body", "text": "body",
               "code": "code_text", "plotly_chart": "spec", "vega_lite_chart": "spec",
               "json": "body", "toast": "body", "metric": "body", "html": "body"}


def dataset_tokens(chart) -> list[str]:
    """The token labels an instant chart carries in the first row of a dataset (the column
    ``tokens``, tfviz.viz.kit.charts.chart(tokens=...)), as text; [] for a chart without them."""
    import pyarrow as pa

    out = []
    for dataset in chart.datasets:
        try:
            table = pa.ipc.open_stream(dataset.data.data).read_all()
        except (pa.ArrowInvalid, OSError):
            continue
        if "tokens" in table.column_names and table.num_rows:
            first = table.column("tokens")[0].as_py()
            if isinstance(first, str):
                out.append(first.replace("\x1f", "\n"))
    return out


@dataclass
class Widget:
    """A widget as the last run drew it, with the value this session holds for it."""

    id: str
    kind: str  # element type ("slider", "selectbox", ...); a select slider is "select_slider"
    label: str
    options: list[str]
    value: object  # what goes on the wire: str, bool, float, [float], [str]; None = not sent
    fragment_id: str  # the fragment it lives in ("" = the full page)
    script_hash: str  # the script that drew it: the frame (main script) or the page
    element: object  # the element's proto (min, max, step, disabled ...)

    def state(self) -> WidgetState | None:
        if self.value is None or self.kind == "button":  # a trigger is only sent when clicked
            return None
        s = WidgetState(id=self.id)
        wire = "string_array_value" if self.kind == "select_slider" else WIDGETS[self.kind]
        if wire.endswith("_array_value"):
            getattr(s, wire).data[:] = self.value
        else:
            setattr(s, wire, self.value)
        return s


def widget_of(kind: str, el, fragment_id: str, script_hash: str, held: Widget | None) -> Widget:
    """The widget an element describes; ``held`` is the one this session already has by id."""
    options: list[str] = []
    if kind in ("selectbox", "radio", "multiselect"):
        options = list(el.options)
    elif kind == "button_group":
        options = [o.content for o in el.options]
    elif kind == "slider" and el.type == el.SELECT_SLIDER:
        kind, options = "select_slider", list(el.options)
    if getattr(el, "set_value", False):  # buttons have none
        value = _set_value(kind, el)
    elif held is not None and held.kind == kind:
        value = held.value
    else:
        value = _default(kind, el, options)
    label = el.component_name if kind == "bidi_component" else el.label
    return Widget(el.id, kind, label, options, value, fragment_id, script_hash, el)


def _set_value(kind: str, el):
    if kind in ("selectbox", "radio"):
        return el.raw_value if el.HasField("raw_value") else None
    if kind in ("button_group", "multiselect"):
        return list(el.raw_values)
    if kind == "select_slider":
        return list(el.raw_value)
    if kind == "slider":
        return list(el.value)
    return el.value


def _default(kind: str, el, options: list[str]):
    if kind in ("selectbox", "radio"):
        has = el.HasField("default") and el.default < len(options)
        return options[el.default] if has else None
    if kind in ("button_group", "multiselect", "select_slider"):  # indices (a slider's are doubles)
        return [options[int(i)] for i in el.default if int(i) < len(options)]
    if kind == "slider":
        return list(el.default)
    if kind == "button":
        return False
    if kind in ("text_area", "text_input", "number_input"):
        return el.default if el.HasField("default") else None
    if kind == "bidi_component":  # nothing until its JS sets a value
        return None
    return el.default  # checkbox


def read_element(run, msg, held: dict[str, Widget]) -> None:
    """What a ``delta`` message (a ``ForwardMsg``) adds to ``run`` (a bench.headless.Run):
    its texts and headings, an error shown, a widget (``held``: the session's, by id)."""
    delta = msg.delta
    if delta.WhichOneof("type") != "new_element":
        return
    el = delta.new_element
    kind = el.WhichOneof("type")
    body = getattr(el, kind)
    run.elements += 1
    if kind == "exception":
        run.fail(f"exception shown: {body.type}: {body.message[:200]}")
    elif kind in TEXT_FIELDS:
        text = getattr(body, TEXT_FIELDS[kind])
        run.texts.append(text)
        if kind == "heading":
            run.headings.append((body.tag, text))
        if ERROR_TEXT in text:
            run.fail(f"error message shown: {text[:200]}")
        if kind == "vega_lite_chart":  # an instant chart's words ride in its data
            run.texts.extend(dataset_tokens(body))
    elif kind in WIDGETS and body.id:
        w = widget_of(kind, body, delta.fragment_id, msg.metadata.active_script_hash,
                      held.get(body.id))
        run.widgets[w.id] = w
