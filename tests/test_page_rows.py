"""The rows and totals lessons 14, 16 and 18 show, computed in tfviz (the pages only place them),
each checked against numbers worked by hand here."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tfviz.analysis import gqa
from tfviz.analysis.decoding import BeamTree, beam_rows
from tfviz.decoding.objective import TokenLoss
from tfviz.experiments.kv_cache import CacheStep, SideBySide
from tfviz.experiments.kv_cache_lengths import LengthCost


def _step(i, t, wrote, ms_c, ms_u, logit_gap, row_gap):
    return CacheStep(i, t, read=0, wrote=wrote, wrote_uncached=wrote, ms_cached=ms_c,
                     ms_uncached=ms_u, tokens_in_cached=t if i == 0 else 1, tokens_in_uncached=t,
                     cache_shape=(2, 2, 1, t, 4), cache_bytes=64 * t, logit_gap=logit_gap,
                     row_gap=row_gap)


def test_lesson_16s_totals_and_table_by_hand():
    steps = (_step(0, 3, 7, 1.25, 3.0, 1e-6, 2e-7), _step(1, 4, 8, 0.5, 4.0, 3e-6, 1e-7))
    side = SideBySide((5, 6, 9), (7, 8), (7, 8), steps, rows=(), scores=(), stop_reason="length")
    assert side.ms_cached == 1.75 and side.ms_uncached == 7.0 and side.slowdown == 4.0
    assert side.logit_gap == 3e-6 and side.row_gap == 2e-7
    rows = side.table(lambda ids: [f"<{i}>" for i in ids])
    # step 0 read the prompt's last token (t = 3: position 2, id 9) and wrote 7; step 1 read 7
    assert [(r["step"], r["reads"], r["writes"], r["t"]) for r in rows] == [
        (0, "<9>", "<7>", 3), (1, "<7>", "<8>", 4)]
    assert [(r["ms (cache)"], r["ms (no cache)"]) for r in rows] == [(1.25, 3.0), (0.5, 4.0)]
    assert rows[0]["tokens fed (cache)"] == 3 and rows[1]["tokens fed (cache)"] == 1
    assert rows[1]["cache shape (layers × 2 × K/V heads × t × d_head)"] == "2 × 2 × 1 × 4 × 4"
    assert rows[1]["max |logit gap|"] == 3e-6 and rows[1]["cache bytes (fp32)"] == 256
    still = SideBySide((1,), (2,), (2,), (_step(0, 1, 2, 0.0, 1.0, 0.0, 0.0),), (), (), "length")
    assert still.slowdown is None  # nothing to divide by: the page says "–"


def test_lesson_16s_cost_row_and_ratios_by_hand():
    c = LengthCost(t=8, ms_cached=0.12345, ms_uncached=0.5, macs_cached=1000, macs_uncached=8000,
                   attn_macs_cached=64, attn_macs_uncached=512, cells_cached=16, cells_uncached=128)
    assert c.macs_ratio == 8.0 and c.ms_ratio == pytest.approx(0.5 / 0.12345, rel=1e-12)
    row = c.row()
    assert row["ms (cache)"] == 0.123 and row["ms (no cache)"] == 0.5
    assert (row["t"], row["multiply-adds (no cache)"], row["scores computed (no cache: L·H·t²)"]) == \
        (8, 8000, 128)


def test_lesson_14s_beam_numbers_by_hand():
    tree = BeamTree(nodes=tuple(range(7)), scored=(50, 150, 150), rows=3)
    assert tree.total_scored == 350 and tree.drawn == 6
    a = SimpleNamespace(new_ids=(4, 5, 2), logprob=-1.234567)
    b = SimpleNamespace(new_ids=(4, 6), logprob=-2.5)
    search = SimpleNamespace(hypotheses=(a, b), finished=lambda h: h.new_ids[-1] == 2)
    assert beam_rows(search, ["x y.", "x z"], "finished") == [
        {"rank": 1, "continuation": "x y.", "tokens": 3, "sum of log p": -1.2346, "finished": "yes"},
        {"rank": 2, "continuation": "x z", "tokens": 2, "sum of log p": -2.5, "finished": "no"}]


def test_lesson_14s_loss_table_by_hand():
    losses = (0.5, 2.0, 2.0, 0.25)
    loss = TokenLoss((1, 2, 3, 4), (2, 3, 4, 5), ("a", "b", "c", "d"), ("b", "c", "d", "e"),
                     losses, tuple(float(np.exp(-x)) for x in losses))
    assert loss.hardest == 1  # the first of the two largest
    rows = loss.rows()
    assert [r["loss (nats)"] for r in rows] == [0.5, 2.0, 2.0, 0.25]
    assert rows[0] == {"position": 0, "input": "a", "target": "b", "p(target)": 0.6065,
                       "loss (nats)": 0.5}  # e^-0.5 = 0.60653...


def test_lesson_18s_crossing_row_and_loss_spread_by_hand():
    c = gqa.Crossing("m", 2, weight_bytes=1000, cache_bytes_per_token=3, context=100)
    assert c.row() == {"model": "m", "K/V heads": 2, "weights": "1000 bytes",
                       "KV cache per token": "3 bytes", "cache = weights at (tokens)": 333,
                       "= sequences at full context": 3.3}
    rows = [gqa.TradeOff("MHA", "a", 4, 1, 2.5, 9), gqa.TradeOff("GQA", "b", 2, 1, 2.0, 8),
            gqa.TradeOff("MQA", "c", 1, 1, 2.25, 7)]
    assert gqa.loss_spread(rows) == 0.5
    assert gqa.loss_spread([*rows[:2], gqa.TradeOff("MQA", "c", 1, 1, None, 7)]) is None


# --- the other lessons' small numbers, moved off the pages (issue #43) ----------------------------

def test_lesson_3s_numbers_by_hand():
    from tfviz.analysis.positions import LearnedPositions
    from tfviz.analysis.relative_positions import DistanceRows
    from tfviz.experiments.extrapolation import Shifted, longest_row, widest_spread

    nan = float("nan")
    rows = LearnedPositions(4, np.array([1.0, 0.5, -0.25, 0.75]), np.zeros(4), np.zeros((1, 1)),
                            0.5, nan)
    assert rows.far_cosine == 0.5  # (|-0.25| + 0.75) / 2
    assert np.isnan(LearnedPositions(2, np.array([1.0, 0.5]), np.zeros(2), np.zeros((1, 1)),
                                     0.5, nan).far_cosine)
    used = DistanceRows(1, np.array([-1, 0, 1]), np.zeros((1, 3, 2)), np.zeros((1, 3, 2)),
                        np.array([True, True, False]), 0.1, 0.2)
    assert used.some_unused
    a, b = Shifted((0, 1, 2), (2.0, 2.5, 2.25), 5), Shifted((0, 4), (3.0, 3.01), 9)
    assert a.spread == 0.5 and a.worse_later(0.2) and not a.worse_later(0.25)
    assert widest_spread([a, b]) == 0.5 and longest_row([a, b]) == 9


def test_lesson_4_5_7_numbers_by_hand():
    from tfviz.analysis.attention import worked_example
    from tfviz.analysis.contextual import NounPull, SameWord, Stage
    from tfviz.analysis.lookup import Lookup
    from tfviz.experiments.pruning import Pruning

    assert Lookup(np.zeros(3), np.array([0.2, 0.5, 0.5]), np.zeros(1)).best == 1  # the first of two
    ex = worked_example((112.0, 96.0), 64)  # the notes' "Thinking Machines": 14 and 12
    cols = ex.columns()
    assert cols["÷ √d_k"] == [14.0, 12.0]
    assert cols["softmax"] == [0.8808, 0.1192]  # 1 / (1 + e^-2) = 0.880797...
    same = SameWord("it", 3, 4, (Stage("into block 0", 0.123456, False, (("a", 0.5),),
                                       (("b", 0.25), ("c", 0.125))),), True)
    assert same.columns(("A", "B")) == {"stage": ["into block 0"], "cosine": [0.1235],
                                        "nearest in A": ["a 0.50"], "nearest in B": ["b 0.25, c 0.12"]}
    pull = NounPull("animal", "street", 0.25, 0.75)
    assert (pull.nearer, pull.nearer_cos, pull.farther, pull.farther_cos) == ("street", 0.75, "animal", 0.25)
    p = Pruning(2.0, {(0, 1): 0.012345, (0, 0): 0.5}, ((0, 1), (0, 0)), (2.0, 2.0123456, 2.6))
    assert p.columns() == {"removed": [1, 2], "head (layer, head)": ["0, 1", "0, 0"],
                           "alone: loss rise": [0.0123, 0.5], "loss after": [2.0123, 2.6]}


def test_lesson_2_13_15_numbers_by_hand():
    from tfviz.experiments.mlm import Guesses
    from tfviz.tokenizer.task import TaskTokenizer
    from tfviz.tokenizer.teaching_bpe import MergeStep

    step = MergeStep(1, ("l", "o"), 7, "lo", 5, ("low", "lo"), (5, 2),
                     (("lo", "w"), ("lo",)))
    assert step.symbol_count == 3  # "lo" "w" and "lo"
    assert step.pair_count == 5  # ("lo", "w") five times; the word "lo" has no pair
    assert TaskTokenizer().skipped("z9z! ab") == ["!", "9", "z"]
    g = Guesses(np.zeros((2, 1)), np.zeros((2, 1)), np.array([0.123456, 0.5]))
    assert g.typed_prob(0) == 0.1235 and g.typed_prob(1) == 0.5


def test_lessons_24_25_27_numbers_by_hand():
    from tfviz.experiments.inside import AttributionView, InductionView, LensView

    lens = LensView(tokens=("a", "b", "c"), layers=("embed", "after block 0", "after block 1"),
                    top=(("x", "y", "z"), ("x", "y", "w"), ("x", "q", "w")),
                    top_prob=np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.81234, 0.9]]),
                    final_prob=np.zeros((3, 3)), settles=np.array([0, 2, 1]))
    assert (lens.settled_at_embeddings, lens.settled_after_last) == (1, 1)
    assert lens.columns(range(1, 3)) == {"position": ["1 b", "2 c"], "final prediction": ["q", "w"],
                                         "its probability": [0.812, 0.9],
                                         "on top from": ["after block 1", "after block 0"]}
    dla = AttributionView(("a",), ("x",), (1,), ({"embed": 0.5, "L0H0": 1.25, "L0H1": -0.25},),
                          {"embed": "embed", "L0H0": "head", "L0H1": "head"}, (1.5001,), (None,))
    assert dla.total(0) == 1.5 and dla.rounding_gap(0) == pytest.approx(1e-4, rel=1e-6)
    scores = np.array([[0.1, 0.2, 0.3], [0.9, 0.4, 0.9]])  # the first of the two 0.9s
    previous = np.array([[0.5, 0.8, 0.1], [0.95, 0.0, 0.0]])
    view = InductionView(SimpleNamespace(scores=scores, previous=previous), (), np.zeros((0, 1, 1)))
    assert view.strongest_induction == (1, 0)
    assert view.strongest_previous_before(1) == (0, 1)  # layer 1's 0.95 is not before layer 1
