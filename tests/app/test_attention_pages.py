"""Lessons 5-8 in the real app frame: every widget once, and every model."""
import pytest

from tfviz.ui.state import EXAMPLES


def _ok(at):
    assert not at.exception, at.exception
    return at


def test_self_attention_every_widget(app_page):
    """Only the what-ifs and the worked example are server widgets; each what-if reruns the
    page with new numbers in the instant charts."""
    import numpy as np

    from tests.app.specs import instant_charts, unpacked

    at = app_page("05_self_attention.py")
    assert at.title[0].value == "Self-attention, step by step"
    # layer, head and query token are chosen in the browser, not by server-side widgets
    assert not {"layer", "head", "sa_query"} & {w.key for w in [*at.slider, *at.selectbox]}
    latex = " ".join(x.value for x in at.latex)
    assert r"\frac{112}{\sqrt{64}} = 14" in latex and "0.88" in latex

    def steps(at):  # step 2's rows of (layer, head, query)
        (spec, data), = [c for c in instant_charts(at) if "steps" in c[1]]
        return spec, data["steps"]

    spec, before = steps(at)
    assert "datum.raw / 4.0" in str(spec["transform"])
    at.toggle(key="sa_scale").set_value(False)
    _ok(at.run())
    assert any(r"\frac{s_j}{1}" in x.value for x in at.latex)  # no division any more
    spec, after = steps(at)
    assert "datum.raw / 1.0" in str(spec["transform"])
    at.toggle(key="sa_causal").set_value(False)
    _ok(at.run())
    _, bidirectional = steps(at)
    assert not any("" in row.split(",") for row in bidirectional["w"])  # nothing masked any more
    assert any("" in row.split(",") for row in after["w"])
    at.slider(key="sa_temp").set_value(2.5)
    _ok(at.run())
    _, warm = steps(at)
    w0, w1 = unpacked(bidirectional["w"].iloc[-1]), unpacked(warm["w"].iloc[-1])
    assert np.isfinite(w1).all() and w1.max() < w0.max()  # a higher temperature flattens them
    at.number_input(key="sa_ex_s1").set_value(100.0)
    _ok(at.run())
    at.number_input(key="sa_ex_s2").set_value(100.0)
    _ok(at.run())
    at.number_input(key="sa_ex_dk").set_value(16)
    _ok(at.run())
    assert any("(0.50,\\ 0.50)" in x.value for x in at.latex)  # equal scores share evenly


def test_self_attention_what_ifs_return_to_the_model_settings(app_page):
    at = app_page("05_self_attention.py")
    assert at.toggle(key="sa_scale").value is True and at.toggle(key="sa_causal").value is True
    at.switch_page("lessons/06_scaling.py").run()
    at.switch_page("lessons/05_self_attention.py").run()
    _ok(at)
    assert at.toggle(key="sa_scale").value is True  # not silently switched off
    at.session_state["model"] = "bert-tiny"
    _ok(at.run())
    assert at.toggle(key="sa_causal").value is False  # an encoder starts bidirectional


def test_self_attention_says_a_what_if_moves_the_queries_of_later_layers(app_page):
    """Scale off acts in every layer, so the queries of layers 1 and 2 move too (layer 0's come
    from the embeddings): the page says so, and the q chart carries each query's move, read
    here from two fresh traces."""
    import numpy as np
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    import tfviz

    at = app_page("05_self_attention.py")
    said = [c.value for c in at.caption if "acts in every layer" in c.value]
    assert not said and "changes this run only" not in " ".join(e.label for e in at.expander)
    _ok(at.toggle(key="sa_scale").set_value(False).run())
    (said,) = [c.value for c in at.caption if "acts in every layer" in c.value]
    assert "the queries of layers 1 and 2 differ from the model's own run" in said
    bundle = tfviz.load("gpt-tiny")
    text = at.session_state["text"]
    off, own = bundle.trace(text, options=tfviz.RunOptions(scale=False)), bundle.trace(text)
    (chart,) = [c.proto for c in at.get("vega_lite_chart") if '"shift"' in c.proto.spec]
    (q,) = [d.data.data for d in chart.datasets if d.name == "q"]
    for row in convert_arrow_bytes_to_pandas_df(q).to_dict("records"):
        moved = np.abs(off["q", row["layer"]] - own["q", row["layer"]]).max(-1)[:, row["head"]]
        got = np.array([float(x) for x in row["shift"].split(",")])
        np.testing.assert_allclose(got, moved, atol=6e-5)
        assert (got.max() > 0) == (row["layer"] > 0)  # layer 0 reads the embeddings alone
    _ok(at.toggle(key="sa_scale").set_value(True).run())
    assert not [c for c in at.get("vega_lite_chart") if '"shift"' in c.proto.spec]


def test_scaling_every_widget(app_page):
    """Every widget once, then the numbers against independent computations: torch's softmax
    Jacobian for the gradient metric, torch's entr for the model's entropies (the table of
    every head, and the means the instant chart's title shows for the link's layer and head),
    and the law Var(q·k) = d_k that the first table measures."""
    import numpy as np
    import torch

    import tfviz
    from tests.app.specs import instant_charts, param_values, unpacked
    from tfviz.analysis import scaling as sc
    from tfviz.config import RunOptions

    at = app_page("06_scaling.py", layer="2", head="1")
    assert at.title[0].value.startswith("Why divide")
    # layer and head are chosen in the browser, under the instant chart
    assert not {"layer", "head"} & {w.key for w in at.slider}
    for kind, key, value in [("slider", "sc_samples", 1000), ("number_input", "sc_seed", 7),
                             ("select_slider", "sc_dk", 512)]:
        getattr(at, kind)(key=key).set_value(value)  # looked up afresh after every run
        _ok(at.run())
    metrics = {m.label: m.value for m in at.metric}

    raw, _, _ = sc.example_row(512, seed=7)  # the page's draw; the maths below is torch's own
    for label, scores in [("without", torch.tensor(raw)), ("with", torch.tensor(raw) / 512 ** 0.5)]:
        jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
        assert metrics[f"Largest gradient entry, {label} the scale"] == f"{jac.abs().max():.2e}"

    bundle = tfviz.load("gpt-tiny")
    bits = {}
    for scale in (True, False):
        trace = bundle.trace(at.session_state["text"], options=RunOptions(scale=scale))
        p = torch.tensor(np.stack([trace["pattern", layer] for layer in range(3)]), dtype=torch.float64)
        bits[scale] = (torch.special.entr(p).sum(-1) / np.log(2)).mean(-1).numpy()  # (layers, heads)
    (spec, data), = [c for c in instant_charts(at) if "layer" in param_values(c[0])]  # not altair's
    assert param_values(spec)["layer"] == 2 and param_values(spec)["head"] == 1
    # what the title prints for each view, sent in the data (4 decimals: the length-free spec).
    # The page traced in its own thread: entropies of float32 weights, ~1e-6 apart at most.
    means = unpacked(data["on"]["s_means"][0]).reshape(3, 4, 2)
    np.testing.assert_allclose(means[..., 0], bits[True], atol=5e-5 + 1e-5)
    np.testing.assert_allclose(means[..., 1], bits[False], atol=5e-5 + 1e-5)
    assert means[2, 1, 1] < means[2, 1, 0]  # the scale off sharpens the link's head
    table = at.dataframe[1].value  # every head's mean entropy, with and without
    np.testing.assert_allclose(table["with ÷√d_k"], bits[True].ravel(), atol=1e-5)
    np.testing.assert_allclose(table["without ÷√d_k"], bits[False].ravel(), atol=1e-5)
    assert (table["change"] < 0).all()  # every head of the trained model sharpens

    table = at.dataframe[0].value  # measured variance of q·k per d_k, 1,000 draws
    at_512 = table[table["d_k"] == 512].set_index("scores")["variance"]
    assert abs(at_512["without ÷√d_k"] - 512) < 0.2 * 512  # its standard error is about 23 here
    assert abs(at_512["with ÷√d_k"] - 1) < 0.2  # and about 0.045 once divided by √d_k


def test_multihead_every_widget(app_page):
    at = app_page("07_multihead.py")
    assert at.title[0].value == "Multi-head attention"
    assert any("Largest gap" in m.value for m in at.markdown)
    assert any(r"\alpha_{\text{animal}}" in x.value for x in at.latex)
    assert any("No head changes" in i.value for i in at.info)  # a decoder's "it" is blind to it
    assert not at.metric  # and then no head is crowned for moving the most
    # layer, head and token are chosen in the browser, not by server-side widgets
    assert not {"layer", "head", "mh_query"} & {w.key for w in [*at.slider, *at.selectbox]}
    at.radio(key="mh_probe").set_value("last")
    _ok(at.run())
    assert not any("No head changes" in i.value for i in at.info)
    assert any("moves the most" in m.label for m in at.metric)  # tired vs wide comparison
    at.button(key="mh_wide").click()
    _ok(at.run())
    assert at.session_state["text"] == EXAMPLES["Coreference (wide)"]
    assert any("it” means **street**" in m.value for m in at.markdown)
    at.button(key="mh_tired").click()
    _ok(at.run())
    assert at.session_state["text"] == EXAMPLES["Coreference (tired)"]


@pytest.mark.parametrize("example", ["Coreference (tired)", "Coreference (wide)"])
@pytest.mark.parametrize("probe", ["it", "last"])
def test_multihead_says_whether_the_heads_top_choice_is_the_right_noun(app_page, example, probe):
    import re

    at = app_page("07_multihead.py", text=EXAMPLES[example])
    _ok(at.radio(key="mh_probe").set_value(probe).run())
    (line,) = [m.value for m in at.markdown if m.value.startswith("Largest gap")]
    (a, wa), (b, wb) = re.findall(r"“(\w+)” (\d\.\d+)", line)
    right = re.search(r"“it” means \*\*(\w+)\*\*", line).group(1)
    top = a if float(wa) > float(wb) else b
    if top == right:
        assert "that is this head's top choice" in line and "wrong" not in line
    else:
        assert f"this head's top choice is “{top}”: it gets this one wrong" in line


def test_multihead_without_a_coreference_sentence(app_page):
    at = app_page("07_multihead.py", text="the cat sat on the mat")
    assert any("not a sentence of the form" in i.value for i in at.info)


def test_masking_every_widget(app_page):
    at = app_page("08_masking.py")
    assert at.title[0].value == "Masking"
    assert at.success and "exactly the same logits" in at.success[0].value
    # layer and head are chosen in the browser; what stays are the experiments' own widgets
    assert not {"layer", "head"} & {w.key for w in at.slider}
    at.text_input(key="mk_pad_a").input("a much longer first sentence")
    _ok(at.run())
    at.text_input(key="mk_pad_b").input("hi")
    _ok(at.run())
    at.selectbox(key="mk_pos").set_value(5)
    _ok(at.run())
    at.selectbox(key="mk_new").select_index(2)
    _ok(at.run())
    at.toggle(key="mk_nomask").set_value(True)
    _ok(at.run())
    assert at.warning and "could see the future" in at.warning[0].value


@pytest.mark.parametrize("model", ["bert-tiny", "moe-tiny", "reverse-encdec"])
@pytest.mark.parametrize("page", ["05_self_attention.py", "06_scaling.py", "07_multihead.py",
                                  "08_masking.py"])
def test_pages_work_for_every_model(app_page, page, model):
    """Each page draws this model's own numbers for layer 0, head 0 of the learner's text (read
    back from what was sent to the browser and compared with a fresh trace), and the masking
    proof gives each kind of model its verdict."""
    import numpy as np

    import tfviz
    from tests.app.specs import shown_arrays

    at = app_page(page, model=model)
    assert at.session_state["model"] == model
    trace = tfviz.load(model).trace(at.session_state["text"])
    shown = shown_arrays(at)
    if page == "05_self_attention.py":  # step 1's q of every token, head 0's slice
        wanted = [trace["q", 0][:, 0]]
    else:
        wanted = [trace["pattern", 0][0]]
    for w in wanted:  # each at the precision it was sent with (see shown_arrays)
        assert any(z.size == w.size and np.allclose(z, w.ravel(), atol=tol) for z, tol in shown), (page, w.shape)
    if page == "08_masking.py" and model == "bert-tiny":
        assert at.warning  # an encoder peeks
    if page == "08_masking.py" and model != "bert-tiny":
        assert at.success  # decoders (and the encoder-decoder's decoder) do not


def test_self_attention_sends_every_view_once_and_opens_on_the_link(app_page):
    """All three tabs arrive at once (a tab switch reruns nothing), each as instant charts
    holding every layer, head and query of the model's own run, opening on the link's view."""
    import numpy as np

    import tfviz
    from tests.app.specs import instant_charts, param_values, unpacked
    from tfviz.analysis import attention as att
    from tfviz.analysis import attention_matrix as atm
    from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT

    at = app_page("05_self_attention.py", layer="2", head="1", query="3")
    assert [t.label for t in at.tabs] == ["One query, step by step", "All tokens as matrices",
                                          "Flying arrows"]
    charts = instant_charts(at)
    # step 1's three, the matrices, the arrows; then step 3's cosines and step 4's two maps
    assert len(charts) == 7
    assert param_values(charts[6][0]) == {"head": 1, "tokens": param_values(charts[6][0])["tokens"]}
    charts = charts[:5]
    for spec, _ in charts:
        view = param_values(spec)
        assert (view["layer"], view["head"], view.get("query", 3)) == (2, 1, 3), spec["description"]
    bundle = tfviz.load(DEFAULT_MODEL)
    trace = bundle.trace(DEFAULT_TEXT)
    every, n = att.all_queries(trace), len(trace.tokens)
    (vectors, vdata), (steps, sdata), (wsum, wdata), (mats, mdata), (arrows, adata) = charts
    for row in vdata["q"].itertuples():  # step 1: every head's q of every token
        np.testing.assert_allclose(unpacked(row.v).reshape(n, -1), every.q[row.layer, row.head],
                                   atol=6e-5)
    for row in sdata["steps"].itertuples():  # step 2: every query's scores and weights
        view = row.layer, row.head, row.q
        np.testing.assert_allclose(unpacked(row.raw), every.raw[view], atol=6e-5)
        np.testing.assert_allclose(np.nan_to_num(unpacked(row.w)), every.weights[view], atol=6e-5)
    chosen = wdata["weights"].query("layer == 2 and head == 1 and q == 3").iloc[0]  # step 3
    np.testing.assert_allclose(unpacked(chosen.z), trace["z", 2][3, 1], atol=6e-5)
    forms, _ = atm.matrix_forms(trace, bundle.weights())
    for name in "QKVZ":  # pictures, each with its largest |value| for the legend
        picture = mdata[name].query("layer == 2 and head == 1").iloc[0]
        assert picture.img.startswith("data:image/png")
        assert abs(picture.m - np.abs(forms[name][2, 1]).max()) < 6e-5
    a = mdata["A"].query("layer == 2 and head == 1").iloc[0]
    np.testing.assert_allclose(unpacked(a.v).reshape(n, n), trace["pattern", 2][1], atol=6e-5)
    assert len(adata["weights"]) == 3 * 4 * n


def test_self_attention_same_word_two_vectors_and_no_projections(app_page):
    """Steps 3 and 4 on gpt-tiny (a decoder: the notes' "it" keeps its vector, the page says
    why), then bert-tiny (an encoder: "it" leans to the noun it stands for), then texts that
    share nothing and hostile text. The chart's cosines and the self shares are recomputed here
    from the model's own traces."""
    import numpy as np

    import tfviz
    from tests.app.specs import instant_charts
    from tfviz.analysis import contextual as cx

    at = app_page("05_self_attention.py")
    text = at.session_state["text"]
    assert at.text_input(key="ctx_other").value == cx.partner_text(text) != text
    words = " ".join(m.value for m in at.markdown)
    assert "equal to the last bit" in words
    (said,) = [c.value for c in at.caption if "is a decoder" in c.value]
    assert "Up to *it* the two texts are the same" in said

    def cosines(at):
        (data,) = [d for s, d in instant_charts(at) if "one" in d and "rows" in d]
        return data["rows"]["cos"].to_numpy()

    gpt = tfviz.load("gpt-tiny")
    a, b = gpt.trace(text), gpt.trace(cx.partner_text(text))
    pos = a.tokens.index("␣it")
    np.testing.assert_allclose(cosines(at), [round(s.cos, 4) for s in cx.same_word(a, pos, b, pos).stages])
    plain = cx.plain_attention(a["hook_resid_pre", 0], causal=True)
    heads = cx.self_share(a["pattern", 0], True)
    assert f"**{plain.self_share:.1%}** with no projections, **{heads:.1%}**" in words
    _ok(at.toggle(key="np_scale").set_value(True).run())
    scaled = cx.plain_attention(a["hook_resid_pre", 0], causal=True, scale=True)
    assert f"**{scaled.self_share:.1%}** with no projections" in " ".join(m.value for m in at.markdown)

    at.session_state["model"] = "bert-tiny"
    _ok(at.run())
    assert not [c for c in at.caption if "is a decoder" in c.value]
    bert = tfviz.load("bert-tiny")
    a, b = bert.trace(text), bert.trace(cx.partner_text(text))
    pos = a.tokens.index("␣it")
    np.testing.assert_allclose(cosines(at), [round(s.cos, 4) for s in cx.same_word(a, pos, b, pos).stages])
    pulls = [cx.noun_pull(t, pos) for t in (a, b)]
    (lean,) = [m.value for m in at.markdown if "lean towards" in m.value]
    for pull in pulls:
        assert f"*{pull.nearer}* (cosine {max(pull.agent_cos, pull.place_cos):.3f}" in lean

    _ok(at.text_input(key="ctx_other").set_value("zzz qqq").run())
    assert any("share no token" in i.value for i in at.info)
    for hostile in ("", "😀 مرحبا <b>bold</b> " * 50, "x" * 5000):
        _ok(at.text_input(key="ctx_other").set_value(hostile).run())


def test_multihead_rarest_token_column_and_pruning(app_page):
    """Lesson 7's rarest-token column is each head's weight on its query's rarest visible key,
    recomputed here from gpt-tiny's trace and corpus counts; the pruning what-if's sentence and
    table are prune() run here on the same held-out rows; an encoder is told why it has none."""
    import numpy as np

    import tfviz
    from tfviz.experiments import pruning as pr
    from tfviz.training.counts import corpus_counts, heldout_sentences
    from tfviz.ui.experiments_cache import PRUNING_SENTENCES

    at = app_page("07_multihead.py")
    gpt = tfviz.load("gpt-tiny")
    trace = gpt.trace(at.session_state["text"])
    counts = corpus_counts("gpt-tiny", gpt.tokenizer)
    rarest = pr.rarest_keys(trace.ids, counts, True)
    frame = next(d.value for d in at.dataframe if "→ rarest token" in d.value.columns)
    for _, row in frame.iterrows():
        got, _ = pr.rare_share(trace["pattern", int(row["layer"])], rarest, True)
        # the page's float32 trace and this one: the same model, text and thread settings
        assert row["→ rarest token"] == pytest.approx(got[int(row["head"])], rel=1e-5, abs=1e-6)
    assert not [m for m in at.markdown if "can go before the loss" in m.value]  # only on request
    _ok(at.button(key="mh_prune").click().run())
    rows = [gpt.encode(s) + [gpt.tokenizer.eos_id] for s in heldout_sentences("gpt-tiny", PRUNING_SENTENCES)]
    want = pr.prune(gpt.model, rows, gpt.config.pad_id, gpt.config.n_layers, gpt.config.n_heads)
    (said,) = [m.value for m in at.markdown if "can go before the loss" in m.value]
    assert f"loss **{want.base:.3f}**" in said and f"**{want.removable(0.05)} of 12**" in said
    table = next(d.value for d in at.dataframe if "loss after" in d.value.columns)
    np.testing.assert_allclose(table["loss after"], np.round(want.losses[1:], 4), atol=2e-4)
    at.session_state["model"] = "bert-tiny"
    _ok(at.run())
    assert any("not a decoder-only model" in i.value for i in at.info)
