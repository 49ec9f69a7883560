"""Which models the caches treat as large, and how much they keep of them: the one policy
that ``tfviz.ui.cache.per_model`` (results of a model's calls) and ``tfviz.ui.drawing`` (the
charts drawn on its pages) both follow.

A large model is a Hugging Face folder found on the server (``tfviz.ui.checkpoints``): one of
its results is many times a bundled model's (``bench/bench_trace.py`` measures a trace's
bytes), so its results go to caches of their own that keep few entries. The bundled models and
a learner's own lab run are small, whatever they are called.
"""
from __future__ import annotations

#: Entries each cached function keeps for a large model's calls: the bundled models'
#: allowance of 512 traces of GPT-2 small would be tens of GB.
LARGE_MODEL_ENTRIES = 8
#: ...and the bytes they may hold together: a trace grows with the square of the text's length
#: (a 512-token BERT-base trace is about 1 GB), so eight entries alone do not bound the memory.
LARGE_MODEL_BYTES = 1 << 30
#: Drawn charts kept for pages whose sidebar model is large, apart from the bundled models' 256:
#: one layer of a GPT-2 small chart is up to a few MB, so 256 of them would hold the better
#: part of a GB; 32 keep a few pages' charts at a few layers.
LARGE_MODEL_CHARTS = 32


def is_large(model: object) -> bool:
    """Whether ``model`` (a name from the sidebar) is a large model: a found folder."""
    from tfviz.ui import checkpoints  # here: the tour's first view imports no more than it needs

    return checkpoints.found(model) is not None
