"""Push every widget on an AppTest page through its values, re-running after each change."""
from __future__ import annotations

SKIP_KEYS = {"model", "_example", "_typed"}  # the frame's own controls; tested separately


def _key(widget) -> str | None:
    return getattr(widget, "key", None)


def _label_is_value(widget, label) -> bool:
    """AppTest shows only formatted labels; a label can be set back only if it is its value."""
    try:
        return str(widget.format_func(label)) == str(label)
    except Exception:
        return False


def _values(widget) -> list:
    kind = type(widget).__name__
    if kind in ("Slider", "SelectSlider"):
        lo, hi = getattr(widget, "min", None), getattr(widget, "max", None)
        if kind == "SelectSlider":
            ends = list(widget.options)[:1] + list(widget.options)[-1:]
            return [v for v in ends if _label_is_value(widget, v)]
        if isinstance(widget.value, tuple):
            return [(lo, hi)]
        return [hi, lo]
    if kind in ("Selectbox", "Radio"):
        return [("index", i) for i in range(min(len(widget.options), 6))]
    if kind in ("Checkbox", "Toggle"):
        return [not widget.value, widget.value]
    if kind == "NumberInput":
        return [widget.max if widget.max is not None else (widget.value or 0) + 1,
                widget.min if widget.min is not None else 0]
    return []


def drive_all(at, max_runs: int = 60) -> int:
    """Set every slider, select box, radio, checkbox, toggle and number input on the page to
    its extremes / each option, and click every button. Returns how many runs it made."""
    runs = 0
    kinds = ("slider", "select_slider", "selectbox", "radio", "checkbox", "toggle", "number_input")
    for kind in kinds:
        index = 0
        while index < len(at.get(kind)) and runs < max_runs:
            widget = at.get(kind)[index]
            if _key(widget) in SKIP_KEYS or getattr(widget, "disabled", False):
                index += 1
                continue
            for value in _values(widget):
                widgets = at.get(kind)
                if index >= len(widgets):
                    break
                w = widgets[index]
                if isinstance(value, tuple) and value and value[0] == "index":
                    # AppTest knows only the formatted labels and formats the value it is given
                    # again (select_index too): usable only where a label is its own value
                    label = w.options[value[1]]
                    if not _label_is_value(w, label):
                        break
                    w.set_value(label)
                else:
                    w.set_value(value)
                at.run()
                runs += 1
                assert not at.exception, (kind, _key(w), value, at.exception)
            index += 1
    for index in range(len(at.button)):
        if runs >= max_runs or index >= len(at.button):
            break
        if at.button[index].disabled:  # e.g. the lab's buttons while its run goes on
            continue
        at.button[index].click()
        at.run()
        runs += 1
        assert not at.exception, ("button", index, at.exception)
    return runs
