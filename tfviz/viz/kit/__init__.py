"""The kit every chart of tfviz is built with: one constructor (``charts.chart``), the pieces of
an encoding, the view controls and layouts of instant charts, the colours and sizes
(``style``), and one helper for each convention (a slider's binding, the layer × head pair,
a heatmap's cell size, the greys). The topic files beside it, one idea each, build their
charts from these; ``tfviz.ui.drawing.vega`` draws them."""
