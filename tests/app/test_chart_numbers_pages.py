"""The numbers behind lessons 12 and 13's charts, as tables (tfviz.ui.tables.numbers_table): the
expander opens on the view the chart opens on, and its table holds the numbers the chart
draws, checked against the chart's own data and the model."""
import numpy as np

import tfviz
from tests.app.specs import instant_charts, param_values, unpacked
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT


def _numbers(at, key: str):
    """The select box of a numbers table and the table under it."""
    box = at.selectbox(key=key)
    exp = next(e for e in at.expander if e.label == "The numbers as a table"
               and any(s.key == key for s in e.selectbox))
    return box, exp.dataframe[0].value


def test_the_forward_walk_numbers_are_the_models(app_page):
    at = app_page("12_forward.py")
    trace = tfviz.load(DEFAULT_MODEL).trace(DEFAULT_TEXT)
    box, frame = _numbers(at, "fw_numbers")
    assert box.value == 0 and box.options[0].startswith("1 · Tokens")
    assert frame.values[0].tolist() == list(trace.ids)
    head2 = next(i for i, o in enumerate(box.options) if "Block 1 · self-attention (head 2)" in o)
    at = box.set_value(head2).run()
    assert not at.exception, at.exception
    box, frame = _numbers(at, "fw_numbers")
    # the page traced in its own thread, on one torch thread: float32 weights up to 1
    np.testing.assert_allclose(frame.to_numpy(dtype=float), trace["pattern", 1][2], atol=1e-5)
    assert list(frame.index)[:2] == [f"0 {trace.tokens[0]}", f"1 {trace.tokens[1]}"]


def test_the_encoder_decoder_numbers_open_on_the_charts_heads(app_page):
    at = app_page("13_encoder_decoder.py")
    charts = instant_charts(at)
    enc_spec, enc_data = next((s, d) for s, d in charts if "enc" in d)
    assert (param_values(enc_spec)["layer"], param_values(enc_spec)["head"]) == (-1, -1)
    first = enc_data["enc"].iloc[0]  # with no link, the chart opens on the head its data names
    layer, head = int(first["s_open_layer"]), int(first["s_open_head"])
    box, frame = _numbers(at, "ed_enc_numbers")
    assert box.options[box.index] == f"encoder self-attention · layer {layer}, head {head}"
    rows = enc_data["enc"]
    packed = rows[(rows["layer"] == layer) & (rows["head"] == head)].iloc[0]["v"]
    n = len(frame)
    np.testing.assert_allclose(frame.to_numpy(dtype=float), unpacked(packed).reshape(n, n), atol=6e-5)
    np.testing.assert_allclose(frame.sum(axis=1), 1.0, atol=1e-5)  # every row a softmax
    dec_spec = next(s for s, d in charts if "enc" not in d and "layer" in param_values(s)
                    and "step" in param_values(s))
    box, frame = _numbers(at, "ed_dec_numbers")
    v = param_values(dec_spec)
    assert (v["layer"], v["head"]) == (-1, -1)
    first = next(d for s, d in charts if s is dec_spec)["self"].iloc[0]  # the head it opens on
    assert box.options[box.index] == \
        f"decoder self-attention · layer {int(first['s_open_layer'])}, head {int(first['s_open_head'])}"
    t = len(frame)
    assert np.isnan(frame.to_numpy(dtype=float)[np.triu_indices(t, 1)]).all()  # the causal mask
    cross = next(i for i, o in enumerate(box.options) if o.startswith("cross-attention"))
    at = box.set_value(cross).run()
    box, frame = _numbers(at, "ed_dec_numbers")
    np.testing.assert_allclose(frame.sum(axis=1), 1.0, atol=1e-5)
