"""Lesson 3's shifted reading against a second route to the same numbers: the sentence fed as
vectors whose position rows are moved by hand (W_E[id] + P[k + t] - P[t], to which the model
adds P[t] back), and, for the relative schemes, the unshifted loss itself."""
import pytest
import torch
import torch.nn.functional as F

import tfviz
from tfviz.experiments import extrapolation as ex
from tfviz.experiments.pruning import heldout_loss

SENTENCES = ["The cat rested near the lake.", "The dog jumped over the boat.",
             "The animal didn't cross the street because it was too tired."]


def _rows(b):
    return [b.encode(s) + [b.tokenizer.eos_id] for s in SENTENCES]


def _moved_by_hand(b, rows, k) -> float:
    """Each row alone, its position rows moved from t to k + t through inputs_embeds."""
    model, total, count = b.model, 0.0, 0
    table = model.pos_embed.weight if b.config.positional == "learned" else model.pos_table
    for r in rows:
        t = torch.arange(len(r))
        x = model.embed(torch.tensor(r)) + table[k + t] - table[t]  # (T, d)
        with torch.no_grad():
            logits = model(inputs_embeds=x[None])[0].double()
        total += float(F.cross_entropy(logits[:-1], torch.tensor(r[1:]), reduction="sum"))
        count += len(r) - 1
    return total / count


@pytest.mark.parametrize("name", ["gpt-tiny", "gpt-tiny-learned"])
@pytest.mark.parametrize("k", [0, 3, 40])
def test_an_absolute_models_shifted_loss_is_its_rows_moved_by_hand(name, k):
    b = tfviz.load(name)
    rows = _rows(b)
    got = ex.loss_at_offset(b.model, rows, b.config.pad_id, k)
    # two float32 routes (a padded batch, and rows alone with vectors added and taken away):
    # they agree to float32 rounding, not bit for bit
    assert got == pytest.approx(_moved_by_hand(b, rows, k), rel=1e-5)
    if k == 0:  # no padding in front: the very batch heldout_loss builds, the same kernels
        assert got == pytest.approx(heldout_loss(b.model, rows, b.config.pad_id), rel=1e-6)


@pytest.mark.parametrize("name", ["gpt-tiny-rope", "gpt-tiny-relative", "gpt-tiny-t5"])
def test_a_relative_models_loss_does_not_move_with_the_sentence(name):
    b = tfviz.load(name)
    rows = _rows(b)
    shifted = ex.shifted_losses(b.model, rows, b.config.pad_id, b.config.max_seq_len)
    assert shifted.offsets[0] == 0 and shifted.offsets[-1] == b.config.max_seq_len - shifted.longest
    # every distance i - j is the same at every offset; RoPE's turned q and k differ in float32
    # rounding (angles k + t instead of t), so equal to float32 precision, not to the bit
    for loss in shifted.losses:
        assert loss == pytest.approx(shifted.losses[0], rel=1e-5)


def test_a_learned_table_has_no_row_past_its_end():
    b = tfviz.load("gpt-tiny-learned")
    rows = _rows(b)
    with pytest.raises(ValueError, match="context"):
        ex.loss_at_offset(b.model, rows, b.config.pad_id, b.config.max_seq_len)
    with pytest.raises(ValueError):
        ex.offsets_for(16, 21)


def test_the_chart_is_valid_vega_lite():
    import altair as alt

    from tfviz.viz.positions import shifted_chart

    runs = {"sines": ex.Shifted((0, 1, 107), (1.0, 4.0, 5.0), 21),
            "RoPE": ex.Shifted((0, 1, 107), (1.0, 1.0, 1.0), 21)}
    spec = shifted_chart(runs, 20)
    alt.Chart.from_dict(spec)
    assert [r["loss"] for r in spec["datasets"]["rows"]] == [1.0, 4.0, 5.0, 1.0, 1.0, 1.0]
