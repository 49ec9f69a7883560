"""Looking inside: which part of the model computed its answer, and how we know.

Pure functions of a trace and the model's weights, or of a bundle and texts; no streamlit.
Pages call them and draw what they return. One idea per file:

    lens.py         logit_lens: every layer's residual stream through the final norm and W_U
    attribution.py  direct_logit_attribution: each head's, MLP's and bias's share of one logit
    patching.py     patch: a clean run's activation put into a corrupt run, piece by piece
    induction.py    induction_scores: attention to what followed a token's earlier copy
    ablation.py     ablate_head: a head's direct share beside what removing it costs
    common.py       the weights, the unembedding and the final norm in float64

>>> import tfviz
>>> b = tfviz.load("llama-tiny")
>>> tr = b.trace("the dog didn't cross the road because it was too tired")
>>> bool(np.allclose(logit_lens(tr, b)[-1], tr.logits, atol=1e-4))
True
"""
import numpy as np  # noqa: F401  (the doctest above)

from tfviz.interpret.ablation import Ablation, ablate_head
from tfviz.interpret.attribution import (Attribution, decomposable, direct_logit_attribution,
                                         residual_parts)
from tfviz.interpret.induction import (Induction, induction_report, induction_score,
                                       induction_scores, previous_token_score, repeated_ids,
                                       token_losses)
from tfviz.interpret.lens import LensTop, lens_top, logit_lens, residual_stack
from tfviz.interpret.patching import PATCHABLE, Patching, logit_difference, patch, run_patched

__all__ = ["PATCHABLE", "Ablation", "Attribution", "ablate_head", "Induction", "LensTop", "Patching", "decomposable",
           "direct_logit_attribution", "induction_report", "induction_score", "induction_scores",
           "lens_top", "logit_difference", "logit_lens", "patch", "previous_token_score",
           "repeated_ids", "residual_parts", "residual_stack", "run_patched", "token_losses"]
