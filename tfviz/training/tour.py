"""Write the tour's stored first view (``tfviz.analysis.tour_numbers``) from a model's folder.

    python -m tfviz.training.tour                   # rewrite assets/gpt-tiny/tour_numbers.json

``python -m tfviz.train --preset gpt-tiny`` calls :func:`write_for` after it has written the
weights, so the file always comes with them. Run this alone after a change to what the tour
computes (its stage notes, its predictions): ``tests/test_tour_numbers.py`` says when.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfviz.analysis import tour_numbers as tn
from tfviz.bundle import ASSETS, Bundle, load_dir


def compute(bundle: Bundle, model: str = tn.MODEL, text: str = tn.TEXT) -> tn.TourNumbers:
    """The tour's numbers of ``text`` on ``bundle``, traced now (this imports torch)."""
    reading = bundle.read(text)
    return tn.tour_numbers(model, text, bundle, bundle.trace(reading), reading.notice,
                           tn.vocabulary_notice(bundle, model, text))


def write_for(folder: str | Path) -> Path:
    """Trace the default sentence on the model in ``folder`` and store what the tour shows."""
    folder = Path(folder)
    return tn.write(folder, compute(load_dir(folder), folder.name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tfviz.training.tour",
                                 description="Rewrite assets/<model>/tour_numbers.json from the "
                                             "weights in assets/ (the tour's first view).")
    ap.add_argument("--model", default=tn.MODEL)
    print(write_for(ASSETS / ap.parse_args(argv).model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
