"""Pure chart builders: numpy arrays + token strings in, Vega-Lite specs (plain dicts) out."""
