"""Colours and sizes that read well on a projector and for colour-blind viewers."""

SEQUENTIAL = "Cividis"  # perceptually uniform and colour-blind safe
DIVERGING = "RdBu_r"  # blue = negative, red = positive; safe for red-green deficiency
# Okabe & Ito's palette for categories (experts, heads, token classes).
CATEGORICAL = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000"]
FONT_SIZE = 16


def unique_labels(tokens) -> list[str]:
    """Axis labels that stay distinct when a token repeats: "the" at 0 and 4 -> "0 the", "4 the".

    >>> unique_labels(["the", "cat", "the"])
    ['0 the', '1 cat', '2 the']
    """
    return [f"{i} {t}" for i, t in enumerate(tokens)]
