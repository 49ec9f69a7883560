"""The learner's text is tokenised once per run: the sidebar's notice about cutting it and the
trace read the same cached ids. Equal what-ifs share one cached trace."""
import uuid

import numpy as np

from tfviz.bundle import Bundle
from tfviz.config import RunOptions
from tfviz.textinput import clean_text, truncation_notice


def test_a_long_text_is_read_once_and_the_sidebar_says_what_was_cut(app_page, monkeypatch):
    typed = f"the cat sat on the mat {uuid.uuid4().hex} " + "and the dog ran to the park " * 30
    text, _ = clean_text(typed)
    encoded = []
    real = Bundle.encode
    monkeypatch.setattr(Bundle, "encode", lambda self, t: encoded.append(t) or real(self, t))
    at = app_page("05_self_attention.py", text=typed)  # the frame's run, then the lesson's
    import tfviz

    bundle = tfviz.load("gpt-tiny")
    n = len(real(bundle, text))
    assert n > bundle.config.max_seq_len
    assert encoded.count(text) == 1  # the sidebar read it; the traces reused that reading
    notice = truncation_notice(n, bundle.config.max_seq_len)
    assert notice.startswith(f"Your text is {n} tokens long; the model reads at most 128")
    assert notice in [c.value for c in at.sidebar.caption]
    from tests.app.specs import instant_charts

    steps = [spec for spec, data in instant_charts(at) if "steps" in data]
    query = next(p for p in steps[0]["params"] if p["name"] == "query")
    assert query["bind"]["max"] == bundle.config.max_seq_len - 1  # the trace was cut


def test_equal_what_ifs_share_one_cached_trace(monkeypatch):
    from tfviz.ui.cache import get_bundle, get_trace

    traced = []
    real = Bundle.trace
    monkeypatch.setattr(Bundle, "trace",
                        lambda self, *a, **k: traced.append(k["options"]) or real(self, *a, **k))
    text, cfg = f"the cat sat {uuid.uuid4().hex}", get_bundle("gpt-tiny").config
    plain = get_trace("gpt-tiny", text)
    get_trace("gpt-tiny", text, RunOptions(scale=cfg.scale_attn, causal=cfg.causal, temperature=1,
                                           moe_top_k=cfg.moe_top_k))  # the model's own choices
    assert traced == [RunOptions()]
    a = get_trace("gpt-tiny", text, RunOptions(ablate_heads=frozenset({(0, 1), (1, 0)})))
    b = get_trace("gpt-tiny", text, RunOptions(ablate_heads=frozenset([(1, 0), (0, 1)])))
    off = get_trace("gpt-tiny", text, RunOptions(scale=False))
    assert traced[1:] == [RunOptions(ablate_heads=frozenset({(0, 1), (1, 0)})), RunOptions(scale=False)]
    # the same model and text in one process: the same kernels, the same bits
    np.testing.assert_array_equal(plain.logits, real(get_bundle("gpt-tiny"), text).logits)
    np.testing.assert_array_equal(a.logits, b.logits)
    assert not np.allclose(off["pattern", 0], plain["pattern", 0])  # the what-if took effect
