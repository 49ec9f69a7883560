"""Reading what a page sent to the browser back out of AppTest's protos."""
from __future__ import annotations

import base64
import json

import numpy as np


def plotly_specs(at) -> list[dict]:
    """Every plotly figure on the page, as the JSON Streamlit sends."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def shown_z(trace: dict) -> np.ndarray:
    """A heatmap trace's values as sent to the browser (plotly ships arrays as typed base64)."""
    z = trace["z"]
    if isinstance(z, dict):
        flat = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return flat.reshape([int(s) for s in str(z.get("shape", len(flat))).split(",")])
    return np.asarray(z, dtype=float)
