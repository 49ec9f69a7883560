"""Every lesson on a training-lab run with Shaw et al.'s relative positions and on one with T5's
bucketed bias (issue #41 item 5): no exception, no sentence about "the model" that the run's
facts contradict (tests/support/claims.py, with the rows for positions inside attention), and
lesson 3's Shaw and T5 steps teach on the run itself when it is the sidebar's model."""
from __future__ import annotations

import pytest
import torch

from tests.support.claims import broken, page_words
from tfviz.lab.opened import run_bundle

LAB, EMBEDDINGS = "23_training_lab.py", "03_embeddings.py"


def _ok(at):
    assert not at.exception, at.exception
    return at


def _opened(app_page, positional: str, task: str):
    from tfviz.lab.settings import LabSettings
    from tfviz.lab.train import train

    torch.set_num_threads(1)
    run = train(LabSettings.default(task, d_model=16, n_heads=2, positional=positional, steps=5,
                                    batch_size=16))
    at = _ok(app_page(LAB))
    at.session_state["lab_runs"] = [run]
    _ok(at.run())
    _ok(at.button(key="lab_open").click().run())
    return at, run


@pytest.mark.parametrize("positional, task", [("relative", "sort"), ("t5_bias", "sort"),
                                              ("t5_bias", "order")])  # order: an encoder
def test_every_lesson_opens_on_a_run_with_positions_inside_attention(app_page, positional, task):
    from tfviz.ui.lessons import available

    at, run = _opened(app_page, positional, task)
    name = at.session_state["model"]
    seen = {}
    for lesson in available():
        _ok(at.switch_page(f"lessons/{lesson.file}").run())
        assert at.session_state["model"] == name, lesson.file
        seen[lesson.url or "home"] = page_words(at)
    bundle = run_bundle(run.settings, run.weights, name)
    assert broken(seen, name, bundle) == []
    # lesson 3 teaches this scheme on the run itself, and lesson 5 writes its score
    words = seen["embeddings"]
    assert f"Everything below comes from **{name}**, the sidebar's model." in words
    assert bundle.facts.positions_name in words  # step 3 names what the run uses
    if positional == "relative":
        assert r"q_i\cdot (k_j + a^K_{j-i})" in seen["self-attention"]
        assert "at that distance in your text:" in words  # a lab run reads its task's symbols, not stories
    else:
        assert r"+ b_h(j - i)" in seen["self-attention"]
        bidirectional = run.settings.spec.arch == "encoder"
        assert bundle.facts.t5_bidirectional == bidirectional


def test_the_claims_catch_a_plain_score_under_shaw():
    """The rows added for these schemes fire where they should (so the walk above can fail)."""
    import re

    import tfviz
    from tests.support.claims import CLAIMS

    shaw, t5 = tfviz.load("gpt-tiny-relative").facts, tfviz.load("gpt-tiny-t5").facts
    (plain,) = [c for c in CLAIMS if c.name == "a score of q·k alone under Shaw's relative positions"]
    m = re.search(plain.pattern, r"s_j = q_i\cdot k_j \;\to")
    assert m and plain.false_when(shaw, m) and not plain.false_when(t5, m)
    (named,) = [c for c in CLAIMS if c.name.startswith("the sidebar's model named as Shaw's")]
    m = re.search(named.pattern, "Everything below comes from **x**, the sidebar's model. Its table holds")
    assert m and named.false_when(shaw, m) and not named.false_when(t5, m)
