"""What one plotly chart of the multi-head page costs the browser to draw, in chromium.

    python -m bench.bench_plotly

Draws each figure of the multi-head page (gpt-tiny, the default sentence, layer 0) with the
plotly.js that ships with the plotly package, into a bare page, and times `Plotly.newPlot`
(what Streamlit does when a chart changes: it mounts a new one) and `Plotly.react`, median of
10 after 2 warm-up draws, under the layout part of Streamlit's chart theme. Each figure is drawn
twice: as built (automatic margins off, margins sized from the labels) and with the theme's
automatic margins left on, as they were before. The bare page is much cheaper to lay out than
the real one, so the times are a lower bound; the difference between the two columns is what
the fixed margins save.
"""
from __future__ import annotations

import asyncio
import copy
import statistics
from pathlib import Path

import plotly
import plotly.io as pio
from playwright.async_api import async_playwright

import tfviz
from bench.browser_common import launch
from tfviz.analysis import heads as hd
from tfviz.ui.state import DEFAULT_MODEL, DEFAULT_TEXT
from tfviz.viz import attention as attv
from tfviz.viz.heatmap import attention_heatmap

REPEATS = 12
TIME_JS = """async ([spec, n]) => {
    const gd = document.getElementById('chart'), out = {newPlot: [], react: []};
    for (let i = 0; i < n; i++) {
        Plotly.purge(gd);
        let t = performance.now(); await Plotly.newPlot(gd, JSON.parse(spec));
        out.newPlot.push(performance.now() - t);
        t = performance.now(); await Plotly.react(gd, JSON.parse(spec));
        out.react.push(performance.now() - t);
    }
    return out;
}"""


def figures() -> dict:
    bundle = tfviz.load(DEFAULT_MODEL)
    trace = bundle.trace(DEFAULT_TEXT)
    stats = hd.head_stats(trace["pattern", 0])
    return {
        "all heads of a layer (4 maps)": attv.head_grid(trace["pattern", 0], trace.tokens, layer=0,
                                                        names=[s.label for s in stats]),
        "one head, large": attention_heatmap(trace["pattern", 0][0], trace.tokens, title="head 0"),
    }


# The parts of Streamlit's plotly theme (streamlit/static/.../PlotlyChart.js) that decide layout:
# automatic margins on both axes, axis titles kept 20-24 px from the labels, padded margins.
STREAMLIT_THEME = {
    "font": {"size": 12}, "title": {"font": {"size": 16}, "xanchor": "left", "x": 0},
    "xaxis": {"automargin": True, "title": {"standoff": 20}, "showgrid": False, "zeroline": False},
    "yaxis": {"automargin": True, "title": {"standoff": 24}, "ticklabelposition": "outside"},
    "margin": {"pad": 8, "l": 0, "r": 0},
}


def themed(fig, *, ours: bool):
    """``fig`` as Streamlit draws it; with ``ours`` False, our automargin=False is dropped."""
    fig = copy.deepcopy(fig)
    fig.update_layout(template={"layout": STREAMLIT_THEME})
    if not ours:
        fig.update_xaxes(automargin=None)
        fig.update_yaxes(automargin=None)
    return fig


async def measure() -> list[tuple[str, float, float, float, float]]:
    page_html = ("<html><body><div id='chart' style='width:900px'></div><script>"
                 + (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text()
                 + "</script></body></html>")
    rows = []
    async with async_playwright() as p:
        browser = await launch(p)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        await page.set_content(page_html)
        for name, fig in figures().items():
            times = {}
            for label, shown in (("fixed", themed(fig, ours=True)), ("auto", themed(fig, ours=False))):
                out = await page.evaluate(TIME_JS, [pio.to_json(shown, validate=False), REPEATS])
                times[label] = [statistics.median(out[k][2:]) for k in ("newPlot", "react")]
            rows.append((name, *times["auto"], *times["fixed"]))
        await browser.close()
    return rows


def main() -> None:
    print("| figure | newPlot, automatic margins | react, automatic | newPlot, fixed margins | "
          "react, fixed |")
    print("|---|---:|---:|---:|---:|")
    for name, *ms in asyncio.run(measure()):
        print(f"| {name} | " + " | ".join(f"{v:.0f} ms" for v in ms) + " |")


if __name__ == "__main__":
    main()
