"""What a live class may report about the worked exercises: their answer boxes and named slips.

A student's answer to one box of an exercise reaches the teacher as (exercise id, box name,
right or not, the slip the checker diagnosed). The checker names a slip by the ``mistake``
of its :class:`~tfviz.exercises.feedback.Feedback` (``"no_scale"``, or ``"no_scale+divide_dk"``
when two slips give the same numbers). The teacher's dashboard counts them under a short
phrase that reads after a number:

>>> f"12 {slip_label('no_scale')}"
'12 forgot to divide by √d_k'
>>> slip_label("divide_dk+no_scale")
'divided by d_k instead of √d_k, or forgot to divide by √d_k'
>>> normal_slip("no_scale+divide_dk")  # one name per combination, whatever its order
'divide_dk+no_scale'

The tables are written out here (building every exercise to read them takes seconds), and
``tests/unit/classroom/test_live.py`` checks them against the exercises themselves, so a new box or
a new slip cannot be missed.
"""
from __future__ import annotations

from types import MappingProxyType

#: exercise id -> the names of its answer boxes, in the order the page shows them. A variant
#: may have fewer boxes (positional-table draws 3 or 4 positions), never others.
STEPS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType({
    "flying-arrows": ("scores", "scaled", "weights", "output"),
    "how-are-you": ("weights", "head1", "head2", "concat"),
    "positional-table": ("pos0", "pos1", "pos2", "pos3"),
    "rope": ("angles", "rotated", "score"),
    "thinking-machines": ("scaled", "weights", "output"),
    "parameter-count": ("encoder", "decoder", "encdec"),
    "beam-search": ("kept", "sequence", "probability"),
    "layernorm": ("mean", "std", "output"),
    "rmsnorm": ("mean_square", "rms", "output"),
    "swiglu": ("gate", "act", "hidden", "output"),
    "moe-gate": ("logits", "gates", "chosen", "output"),
    "bpe-merges": ("merges", "counts"),
    "causal-mask": ("masked", "weights"),
    "gqa-cache": ("per_token", "total"),
    "dla-by-hand": ("shares", "logit"),
    "patching-map": ("cell", "layer", "fraction"),
    "induction-score": ("induction", "previous"),
})

#: slip name (a ``Mistake.name`` of the exercises) -> what the students did, after a count.
SLIP_LABELS: MappingProxyType[str, str] = MappingProxyType({
    # attention (tfviz.exercises.slips and the exercises built on it)
    "no_scale": "forgot to divide by √d_k",
    "divide_dk": "divided by d_k instead of √d_k",
    "wrong_axis": "took the softmax down the columns, not along the rows",
    "no_mask": "forgot the causal mask",
    "keys_not_values": "mixed the keys instead of the values",
    "heads_swapped": "put the two heads in the wrong order",
    "no_exp": "normalised without exponentiating",
    "no_softmax": "skipped the softmax",
    # positions
    "swap": "swapped sine and cosine",
    "exponent_i": "used i/d instead of 2i/d in the exponent",
    "degrees": "worked in degrees instead of radians",
    # parameter count
    "no_bias": "left out the biases",
    "no_wo": "left out W^O",
    "tied_twice": "counted the tied output matrix again",
    "no_ln": "left out the LayerNorms",
    # beam search
    "last_only": "ranked by the last step's probability only",
    "greedy": "decoded greedily instead of keeping two beams",
    "added": "added the probabilities instead of multiplying",
    # LayerNorm
    "sample_var": "divided by d − 1 instead of d",
    "variance": "gave the variance, not the standard deviation",
    "no_affine": "stopped before γ and β",
    "beta_first": "added β before multiplying by γ",
    "no_center": "forgot to subtract the mean",
    "by_variance": "divided by σ² instead of σ",
    # mixture of experts
    "chosen_only": "took the softmax over the chosen experts only",
    "lowest": "kept the smallest gates instead of the largest",
    "dense": "mixed in every expert, not just the top-k",
    "raw_logits": "used the router logits as weights",
    "renormalized": "rescaled gates that this layer uses as they are",
    "not_renormalized": "forgot to rescale the chosen gates",
    "equal_weights": "averaged the chosen experts equally",
    "gate_ignored": "forgot to multiply by the gate",
    # BPE
    "ignore_freq": "ignored how often each word occurs",
    "no_recount": "did not count the pairs again after each merge",
    "no_eow": "forgot the end-of-word symbol",
    # causal mask
    "wrong_triangle": "hid the past instead of the future",
    "diagonal": "masked the diagonal too",
    "zero_fill": "filled hidden scores with 0 instead of −∞",
    # RoPE
    "dim_index": "counted i by dimensions, not by pairs",
    "positive_exponent": "dropped the minus sign of the exponent",
    "no_position": "forgot to multiply θ_i by the position",
    "sin_sign": "turned the pair the wrong way (sign of sin)",
    "halves": "paired the halves instead of neighbouring dimensions",
    "k_not_rotated": "left the key unturned",
    "no_rotation": "turned neither the query nor the key",
    "score_sign": "turned both vectors the wrong way",
    # RMSNorm
    "centred": "took the mean away, as LayerNorm does",
    "sum_squares": "summed the squares instead of averaging them",
    "no_eps": "forgot ε",
    "no_root": "forgot the square root",
    "by_std": "divided by the standard deviation instead of the RMS",
    "no_gamma": "forgot to multiply by γ",
    # SwiGLU
    "swapped": "used W_up where W_gate belongs",
    "sigmoid": "used the sigmoid instead of SiLU",
    "silu_on_up": "put SiLU on the up projection",
    "silu_after": "applied SiLU after multiplying",
    "no_up": "forgot to multiply by the up projection",
    "no_gate": "let the up projection through without its gate",
    "no_activation": "forgot SiLU",
    "no_down": "skipped the down projection",
    # KV cache of a grouped-query model
    "query_heads": "counted the query heads instead of the K/V heads",
    "no_kv_factor": "forgot the factor 2 for keys and values",
    "no_layers": "forgot to multiply by the layers",
    "bits": "counted bits instead of bytes",
    # direct logit attribution by hand (also no_center, no_gamma)
    "own_scale": "divided each part by its own scale instead of the frozen one",
    "unscaled": "forgot to divide by the frozen scale s",
    # reading a patching map
    "from_one": "counted layers or positions from 1",
    "transposed": "gave position and layer the wrong way round",
    "smallest": "picked the cell that restores least",
    "raw_half": "compared the raw value with C / 2 instead of the fraction",
    "no_baseline": "divided by C, leaving out the corrupt run's c",
    "not_restored": "gave the fraction still missing (1 − f)",
    # induction and previous-token scores
    "same_copy": "read the earlier copy itself, not the token after it",
    "summed": "added the weights up instead of averaging them",
    "from_n_minus_1": "started at the first half's last token",
    "self_weight": "read each token's weight on itself",
    "with_first": "counted position 0, which has no previous token",
})

MAX_SLIPS_AT_ONCE = 4  # the most slips one answer can match at once (the checker joins them by +)


def normal_slip(slip: object) -> str | None:
    """The one spelling of a diagnosed slip (its names sorted), or None if it is not one:
    an unknown name, a repeated one, or more than ``MAX_SLIPS_AT_ONCE`` of them.

    >>> normal_slip("no_mask"), normal_slip("made_up"), normal_slip(""), normal_slip(3)
    ('no_mask', None, None, None)
    """
    if not isinstance(slip, str) or not 0 < len(slip) <= 200:
        return None
    names = slip.split("+")
    if len(names) > MAX_SLIPS_AT_ONCE or len(set(names)) != len(names):
        return None
    if not all(name in SLIP_LABELS for name in names):
        return None
    return "+".join(sorted(names))


def slip_label(slip: str) -> str:
    """The dashboard's phrase for a slip spelled by :func:`normal_slip`."""
    return ", or ".join(SLIP_LABELS[name] for name in slip.split("+"))


def worked_steps(steps, box: str) -> tuple[int, ...]:
    """Which worked steps (indices into an instance's ``steps``) compute the answer box
    ``box``: those whose numbers are named after it. Empty when no step names it (the box is
    read off the whole solution: a positional table's row, a BPE merge list); then the teacher's
    "show the worked step" shows every step.

    >>> from types import SimpleNamespace as S
    >>> worked_steps([S(values={"q": 1}), S(values={"scores": 2}), S(values={"scaled": 3})], "scaled")
    (2,)
    >>> worked_steps([S(values={"pe": 1})], "pos0")
    ()
    """
    return tuple(i for i, step in enumerate(steps) if box in step.values)
