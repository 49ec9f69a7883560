"""Lesson 15's what-if charts: masking drawn many times, and what each way of fine-tuning trains."""
import numpy as np

from tfviz.analysis import pretraining as pt
from tfviz.viz import pretraining as ptv
from tests.support.charts import rows_of


def test_masking_shares_follow_every_draw_then_a_log_spaced_sample():
    rng = np.random.default_rng(0)
    shares = rng.random((20000, 4))
    spec = ptv.masking_shares_figure(shares, pt.TARGETS)
    rows = rows_of(spec)
    kept = ptv.kept_draws(20000)
    assert kept[0] == 1 and kept[-1] == 20000 and len(kept) <= ptv.POINTS
    assert (np.diff(kept) > 0).all() and kept[:40].tolist() == list(range(1, 41))  # the start: every draw
    ratios = kept[1:] / kept[:-1]
    assert ratios[kept[:-1] >= 40].max() < 1.05  # then even steps on a log axis, none far apart
    for j, name in enumerate(pt.SHARES):
        label = ptv.share_label(j, name)
        line = [r for r in rows if r["share"] == label]
        assert [r["draws"] for r in line] == kept.tolist()
        np.testing.assert_array_equal([r["value"] for r in line], shares[kept - 1, j])
    assert [t["target"] for t in rows_of(spec, "targets")] == list(pt.TARGETS)
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    short = rows_of(ptv.masking_shares_figure(shares[:10], pt.TARGETS))
    assert [r["draws"] for r in short][:10] == list(range(1, 11))  # a short run keeps every draw


def test_masking_shares_of_a_real_tally_settle_on_their_targets():
    from tfviz.experiments.mlm import masking_tally

    shares = pt.running_shares(masking_tally(12, 5000, 0, vocab_size=100), 12)
    spec = ptv.masking_shares_figure(shares, pt.TARGETS)
    last = {r["share"]: r["value"] for r in rows_of(spec) if r["draws"] == 5000}
    for j, name in enumerate(pt.SHARES):  # 5,000 draws: each share within 0.02 of its target
        assert abs(last[ptv.share_label(j, name)] - pt.TARGETS[j]) < 0.02


def test_trainable_bars_carry_each_count_and_write_it():
    spec = ptv.trainable_figure(["full", "LoRA, r = 8"], [109_482_240, 294_912], title="BERT-base")
    assert rows_of(spec) == [{"way": "full", "numbers": 109_482_240, "label": "109,482,240"},
                             {"way": "LoRA, r = 8", "numbers": 294_912, "label": "294,912"}]
    bars, text = spec["layer"]
    assert bars["encoding"]["x"]["scale"] == {"type": "log"} and text["encoding"]["text"]["field"] == "label"
    assert bars["encoding"]["y"]["sort"] == ["full", "LoRA, r = 8"]  # top to bottom as given
    assert spec["title"] == "BERT-base" and "294,912" in spec["description"]
