"""Pure figure builders: numpy arrays + token strings in, plotly Figures / altair Charts out."""
