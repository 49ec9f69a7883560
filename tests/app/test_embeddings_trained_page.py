"""Lesson 3 (/embeddings) shows the trained position models: gpt-tiny-learned's table beside the
sines, and gpt-tiny-rope's turn and scores. Every number is recomputed here independently:
torch cosine_similarity on the model's own weights, RoPE as complex numbers, a fresh trace."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

import tfviz
from tests.app.specs import static_rows
from tfviz.model.positional import sinusoidal_table

PAGE = "03_embeddings.py"
TEXT = "the dog didn't reach the bridge because it was too steep. it refers to the"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _charts(at):
    """Every altair chart's datasets on the page, as DataFrames (one list per chart)."""
    return [[convert_arrow_bytes_to_pandas_df(d.data.data) for d in c.proto.datasets]
            for c in at.get("vega_lite_chart")]


def _text(at) -> str:
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "warning", "success")
                     for e in at.get(kind))


def _by_distance(table: torch.Tensor) -> np.ndarray:
    t = table.double()
    return np.array([F.cosine_similarity(t[: len(t) - d], t[d:], dim=1).mean().item() for d in range(len(t))])


def test_learned_table_beside_the_sines_is_the_trained_models(app_page):
    at = _ok(app_page(PAGE, text=TEXT))
    b = tfviz.load("gpt-tiny-learned")
    reached = b.manifest["eval"]["positions_trained"]
    (df,) = [ds[0] for ds in _charts(at) if "table" in ds[0] and ds[0]["table"].str.contains("gpt-tiny-learned").any()]
    learned = df[df["table"] == "gpt-tiny-learned"]["cosine similarity"].to_numpy()
    sine = df[df["table"] == "sine (gpt-tiny)"]["cosine similarity"].to_numpy()
    # float64 cosines of the same float32 weights (read from the file) on both sides
    np.testing.assert_allclose(learned, _by_distance(b.model.pos_embed.weight.detach()[:reached]), atol=1e-9)
    np.testing.assert_allclose(sine, _by_distance(sinusoidal_table(reached, 64)), atol=1e-9)
    table = b.model.pos_embed.weight.detach().double()
    neighbours = F.cosine_similarity(table[:-1], table[1:], dim=1)
    shown = _text(at)
    assert f"{neighbours[: reached - 1].mean().item():.2f} on average for k and k + 1" in shown
    assert f"neighbours' cosine {neighbours[reached:].mean().item():.2f} on average" in shown
    assert f"positions 0–{reached - 1}" in shown


def test_rope_numbers_are_the_trained_models(app_page):
    at = _ok(app_page(PAGE, text=TEXT))
    at.slider(key="emb_rope_head").set_value(2)
    at.slider(key="emb_rope_key").set_value(3)
    _ok(at.run())
    b = tfviz.load("gpt-tiny-rope")
    tr = b.trace(TEXT)
    i, j, head = len(tr.tokens) - 1, 3, 2
    # the diamond: the model's own raw score for (query i, key j) in layer 0, head 2
    (rope,) = [ds for ds in _charts(at) if any("q·k after rotation" in d for d in ds) and len(ds) == 2]
    lines, point = sorted(rope, key=len, reverse=True)
    assert point["query position"].tolist() == [i] and point["distance"].tolist() == [i - j]
    # the page's trace ran in its own thread: a float32 score, to float32 precision
    assert point["q·k after rotation"].iloc[0] == pytest.approx(float(tr["scores_raw", 0][head, i, j]),
                                                                rel=1e-5, abs=1e-5)
    # the lines: q_m·k_{m−d} written with complex numbers, for each distance drawn
    dh = 16
    thetas = 10000.0 ** (-np.arange(0, dh, 2) / dh)
    zq = tr["q", 0][i, head][0::2] + 1j * tr["q", 0][i, head][1::2]
    zk = tr["k", 0][j, head][0::2] + 1j * tr["k", 0][j, head][1::2]
    assert set(lines["distance"]) == {0, 3, i - j}  # default slider distance 3
    for d, rows in lines.groupby("distance"):
        exact = np.real(np.sum(zq * np.conj(zk) * np.exp(1j * d * thetas)))
        # float32 turns at positions up to ~60: ~1e-5 relative (see tests/test_positions_trained.py)
        np.testing.assert_allclose(rows["q·k after rotation"], exact, atol=1e-4 * abs(zq).sum() * abs(zk).max())
    # the table: how far each pair of q turned, against i·θ_i wrapped
    turns = static_rows(at, "turned by")  # an HTML table, as the learner reads it
    assert len(turns) == dh // 2
    for row in turns:
        expected = math.remainder(i * thetas[int(row["pair i"])], 2 * math.pi)
        assert float(row[f"{i}·θ_i (wrapped)"]) == pytest.approx(expected, abs=1e-3)
        if abs(zq[int(row["pair i"])]) > 0.1:
            assert abs(math.remainder(float(row["turned by"]) - expected, 2 * math.pi)) < 3e-3
    shown = _text(at)
    assert f"q·k = {float(tr['scores_raw', 0][head, i, j]):.3f}" in shown
    assert "gpt-tiny-rope" in shown and "moves 8 places on" in shown


def test_rope_sliders_and_the_distance_slider(app_page):
    at = _ok(app_page(PAGE))
    for key, value in (("emb_rope_dist", 7), ("emb_rope_query", 1), ("emb_rope_key", 4), ("emb_rope_head", 3)):
        at.slider(key=key).set_value(value)
        _ok(at.run())
    assert "Pick a key at or before the query" in _text(at)  # key 4 after query 1


@pytest.mark.parametrize("model", ["bert-tiny", "moe-tiny", "reverse-encdec"])
def test_trained_position_sections_whatever_the_sidebar_model(app_page, model):
    at = _ok(app_page(PAGE, model=model, text="a b"))
    assert "gpt-tiny-learned" in _text(at) and "gpt-tiny-rope" in _text(at)


@pytest.mark.parametrize("text", ["", "it", "A" * 100_000, "<b>x</b> it 😀", "שלום עולם it was tired"])
def test_hostile_text(app_page, text):
    at = _ok(app_page(PAGE, text=text))
    assert "gpt-tiny-rope" in _text(at)


def test_positions_never_trained_on_are_each_models_shifted_losses(app_page):
    """Lesson 3's last step, on request: the sentence gives each story model's loss at position 0
    and the range further along, and the relative schemes' spread, each as computed here by
    tfviz.experiments.extrapolation (itself checked against rows moved by hand)."""
    import tfviz
    from tfviz.data import story_corpus
    from tfviz.experiments.extrapolation import shifted_losses
    from tfviz.ui.positions_cache import HELDOUT, SHIFTED_SENTENCES

    at = app_page("03_embeddings.py")
    assert not [m for m in at.markdown if "when its sentences start later" in m.value]
    at.button(key="emb_shift_run").click().run()
    assert not at.exception, at.exception
    (said,) = [m.value for m in at.markdown if "when its sentences start later" in m.value]
    sentences = story_corpus(HELDOUT[0], seed=HELDOUT[1])[:SHIFTED_SENTENCES]
    runs = {}
    for name in ("gpt-tiny", "gpt-tiny-learned", "gpt-tiny-rope", "gpt-tiny-relative", "gpt-tiny-t5"):
        b = tfviz.load(name)
        rows = [b.encode(s) + [b.tokenizer.eos_id] for s in sentences]
        runs[name] = shifted_losses(b.model, rows, b.config.pad_id, b.config.max_seq_len)
    for name in ("gpt-tiny", "gpt-tiny-learned"):
        run = runs[name]
        assert (f"**{name}** ({'sine' if name == 'gpt-tiny' else 'learned'} table) goes from "
                f"{run.losses[0]:.3f} at position 0 to between {min(run.losses[1:]):.3f} and "
                f"{max(run.losses[1:]):.3f}") in said
    relative = ("gpt-tiny-rope", "gpt-tiny-relative", "gpt-tiny-t5")
    spread = max(max(runs[n].losses) - min(runs[n].losses) for n in relative)
    assert spread < 1e-4  # only distances reach their attention: float32 rounding at most
    assert "stay within" in said
    (chart,) = [c for c in at.get("vega_lite_chart") if "further along" in c.proto.spec]
