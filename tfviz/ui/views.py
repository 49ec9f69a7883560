"""Instant views on a page: draw a chart from ``tfviz.viz.instant``, and keep the URL in step.

The view controls of an instant chart (layer, head, query token, step) are inputs that Vega
binds under the chart; moving one changes the chart in the browser without a script rerun
(issue #15). The server never hears of it, so the browser owns those URL keys:

- ``VIEW_SCRIPT`` (drawn once by the frame, ``view_sync``) writes a moved input's value into
  the URL with ``history.replaceState``, and moves every other input of the same name with
  it (two charts of one page, or the same key on two pages, stay together);
- the other charts follow one per task, so a key press is never stuck behind them, and a
  chart out of sight (a hidden tab, far down the page) follows only when it comes near the
  viewport;
- when Streamlit writes the URL itself (after the text or model changed) it only knows the
  view keys the page was opened with, so the script patches ``history.pushState`` and
  ``replaceState`` to put the current view keys back in;
- a chart that is drawn anew (a new sentence) starts from the values the server knew; the
  script sets its inputs to the current view as soon as they appear.

On the server, ``view_value`` reads a key from the URL the run was started with, which is
right when the page opens (a shared link) and when the learner moves to another page.
"""
from __future__ import annotations

import json

import streamlit as st

from tfviz.ui.widgets import vega_lite
from tfviz.viz.instant import VIEW_KEYS

VIEW_SCRIPT = """
<script>
(() => {
  const w = window;
  if (w.__tfvizViews) return;  // once per page load: Streamlit keeps this element mounted
  const KEYS = new Set(%(keys)s);
  const view = {};
  const start = new URLSearchParams(w.location.search);
  for (const k of KEYS) if (start.has(k)) view[k] = start.get(k);
  const push = w.history.pushState.bind(w.history);
  const replace = w.history.replaceState.bind(w.history);
  const merged = (url) => {  // url with the current view keys in its query
    if (url === undefined || url === null) return url;
    const u = new URL(String(url), w.location.href);
    for (const [k, v] of Object.entries(view)) u.searchParams.set(k, v);
    return u.pathname + u.search + u.hash;
  };
  // Vega's SVG fills a colour legend with url(PAGE-ADDRESS#gradient_0). Once the address
  // changes (a moved view key, Streamlit's own rewrite), that names another document and the
  // colour bar goes blank; a same-document url(#gradient_0) never goes stale.
  const REF = /url\\((['"]?)[^)#'"]+#/;
  const relink = () => {
    for (const el of document.querySelectorAll('.vega-embed svg [fill^="url("], .vega-embed svg [stroke^="url("]')) {
      for (const a of ['fill', 'stroke']) {
        const v = el.getAttribute(a);
        if (v && REF.test(v)) el.setAttribute(a, v.replace(REF, 'url($1#'));
      }
    }
  };
  w.history.pushState = (s, t, url) => { push(s, t, merged(url)); relink(); };
  w.history.replaceState = (s, t, url) => { replace(s, t, merged(url)); relink(); };
  // Vega works a fill out before it paints it: a chart painting just after the address changed
  // (a slide shown in presenter view, a chart following a move) writes the old address. So
  // every gradient reference Vega writes is made same-document within a frame as well.
  let relinking = false;
  const absolute = (v) => typeof v === 'string' && REF.test(v);  // url(ADDRESS#id), not url(#id)
  new MutationObserver((records) => {
    if (relinking) return;
    const wrote = records.some((r) => r.type === 'attributes'
        ? absolute(r.target.getAttribute(r.attributeName))
        : Array.from(r.addedNodes).some((n) => n.namespaceURI === 'http://www.w3.org/2000/svg'));
    if (!wrote) return;
    relinking = true;
    requestAnimationFrame(() => { relinking = false; relink(); });
  }).observe(document.body, {attributes: true, attributeFilter: ['fill', 'stroke'],
                             childList: true, subtree: true});
  let applying = false;
  const inputs = (root, name) => Array.from(root.querySelectorAll(
      `.vega-bind input[name="${name}"], .vega-bind select[name="${name}"]`));
  const canTake = (el, value) => el.tagName === 'SELECT'
      ? Array.from(el.options).some((o) => o.value === value)
      : (+value >= +el.min && +value <= +el.max);
  const setInput = (el, value) => {
    if (el.value === value || !canTake(el, value)) return;
    el.value = value;
    el.dispatchEvent(new Event(el.tagName === 'SELECT' ? 'change' : 'input', {bubbles: true}));
  };
  const show = (root) => {  // every input under root to the current view
    applying = true;
    try { for (const [k, v] of Object.entries(view)) for (const el of inputs(root, k)) setInput(el, v); }
    finally { applying = false; }
  };
  // Charts that follow a moved input are redrawn one per task, so a key press that comes in
  // meanwhile is served first; charts out of sight (a hidden tab, far down the page) wait
  // until they come near the viewport, and cost nothing until then.
  const near = new Set(), stale = new Set(), queue = [];
  const drain = () => {
    const chart = queue.shift();
    if (chart) { if (chart.isConnected) show(chart); setTimeout(drain, 0); }
  };
  const follow = (chart) => {
    if (!near.has(chart)) { stale.add(chart); return; }
    if (queue.includes(chart)) return;
    queue.push(chart);
    if (queue.length === 1) setTimeout(drain, 0);
  };
  const seen = (entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) { near.delete(e.target); continue; }
      near.add(e.target);
      if (stale.delete(e.target)) follow(e.target);
    }
  };
  // The lesson scrolls inside Streamlit's own container, not the window, and an observer's
  // margin only widens its root: so one observer per scrolling container, 600 px beyond it.
  const sights = new Map();
  const scroller = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const y = getComputedStyle(p).overflowY;
      if (y === 'auto' || y === 'scroll') return p;
    }
    return null;
  };
  const watch = () => {
    for (const c of document.querySelectorAll('.vega-embed')) {
      const root = scroller(c);
      if (!sights.has(root)) sights.set(root, new IntersectionObserver(seen,
          {root, rootMargin: '600px 0px'}));
      sights.get(root).observe(c);
    }
  };
  const moved = (e) => {
    const el = e.target;
    if (applying || !el || !el.name || !KEYS.has(el.name) || !el.closest('.vega-bind')) return;
    view[el.name] = el.value;
    w.__tfvizViews.changes += 1;
    const own = el.closest('.vega-embed');
    // The moved chart paints first; the URL and the page's other charts follow after that
    // paint (two animation frames: the first runs before it, the second after it).
    requestAnimationFrame(() => requestAnimationFrame(() => {
      replace(w.history.state, '', merged(w.location.href));
      relink();
      const charts = new Set(inputs(document, el.name).map((i) => i.closest('.vega-embed')));
      for (const chart of charts) if (chart && chart !== own) follow(chart);
    }));
  };
  document.addEventListener('input', moved, true);
  document.addEventListener('change', moved, true);
  // "Save as PNG" under every instant chart (Streamlit shows no export menu for Vega-Lite):
  // the chart as drawn, at twice its size on white, named after its title.
  const download = (url, name) => {
    const a = document.createElement('a');
    a.href = url; a.download = name; document.body.appendChild(a); a.click(); a.remove();
  };
  const savePng = (chart) => {
    const depth = (e) => { let d = 0; for (; e && e !== chart; e = e.parentElement) d++; return d; };
    const title = Array.from(chart.querySelectorAll('g.role-title text'))  // the chart's own,
        .sort((x, y) => depth(x) - depth(y))[0];  // not a panel's
    const name = ((title && title.textContent) || 'tfviz chart').replace(/[^\\w\\u00C0-\\uFFFF-]+/g, ' ')
        .trim().slice(0, 80).replace(/ /g, '_') + '.png';
    const canvas = chart.querySelector('canvas.marks');
    if (canvas) { download(canvas.toDataURL('image/png'), name); return; }
    const svg = chart.querySelector('svg.marks');
    if (!svg) return;
    const width = svg.width.baseVal.value, height = svg.height.baseVal.value, k = 2;
    const img = new Image();
    img.onload = () => {
      const c = document.createElement('canvas');
      c.width = Math.ceil(width * k); c.height = Math.ceil(height * k);
      const g = c.getContext('2d');
      g.fillStyle = 'white'; g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      download(c.toDataURL('image/png'), name);
    };
    img.src = 'data:image/svg+xml;charset=utf-8,' +
        encodeURIComponent(new XMLSerializer().serializeToString(svg));
  };
  const addSave = (chart) => {
    if (chart.querySelector(':scope > .tfviz-save')) return;
    const b = document.createElement('button');
    b.type = 'button'; b.className = 'tfviz-save'; b.textContent = 'Save as PNG';
    b.title = 'Save this chart as a PNG picture';
    b.style.cssText = 'display:block;margin:4px 0 0;padding:2px 8px;font-size:0.8rem;' +
        'background:white;border:1px solid #bbb;border-radius:4px;cursor:pointer;color:#333';
    b.addEventListener('click', () => savePng(chart));
    chart.appendChild(b);
  };
  // Length-free charts (tfviz.viz.instant_length) are laid out for a range of lengths. The
  // page's marker (length_marker) says how long its sentence is and which token it opens on:
  // the query sliders beside it take the sentence's range and show the query the charts draw
  // (the learner's, kept below the length, else the sentence's own). No event is sent: the
  // charts already draw it.
  const fitQueries = () => {
    for (const m of document.querySelectorAll('.tfviz-length')) {
      const n = +m.dataset.ntok, dq = +m.dataset.dq;
      const root = m.closest('[data-testid="stVerticalBlock"]') || document;
      for (const el of inputs(root, 'query')) {
        const chosen = /^\\d{1,4}$/.test(view.query || '');  // as linked_value reads a link
        const shown = chosen ? Math.min(+view.query, n - 1) : dq;
        el.min = 0; el.max = n - 1; el.value = shown;
        const label = el.nextElementSibling;
        if (label && label.tagName === 'SPAN') label.textContent = shown;
      }
    }
  };
  const adopt = () => {  // a chart drawn anew: show the view, offer its PNG
    watch(); fitQueries(); show(document); relink();
    for (const c of document.querySelectorAll('.vega-embed')) addSave(c);
  };
  const SVG = 'http://www.w3.org/2000/svg';  // a chart's own drawing: never holds its inputs
  const bindsInputs = (n) => n.nodeType === 1 && n.namespaceURI !== SVG &&
      (n.matches('.vega-bind, .vega-bindings') || n.querySelector('.vega-bind') !== null);
  const marks = (n) => n.nodeType === 1 && n.namespaceURI !== SVG &&
      (n.matches('.tfviz-length') || n.querySelector('.tfviz-length') !== null);
  new MutationObserver((records) => {
    const added = records.flatMap((r) => Array.from(r.addedNodes));
    if (added.some(bindsInputs)) adopt();
    else if (added.some(marks)) fitQueries();  // a new sentence: same charts, new data
  }).observe(document.body, {childList: true, subtree: true});
  w.__tfvizViews = {view, changes: 0, adopt, stale};
  adopt();
})();
</script>
"""


def view_sync() -> None:
    """The page's view-keeping script (see the module docstring). The frame draws it on every
    page; the browser runs it once per page load."""
    st.html(VIEW_SCRIPT % {"keys": json.dumps(list(VIEW_KEYS))}, unsafe_allow_javascript=True)


def length_marker(n: int, default_query: int) -> None:
    """The length and default query of the sentence that the length-free charts beside it
    draw (``tfviz.viz.instant_length``): ``VIEW_SCRIPT`` fits their query sliders to it."""
    st.html(f'<div hidden class="tfviz-length" data-ntok="{int(n)}" '
            f'data-dq="{int(default_query)}"></div>')


def linked_value(key: str) -> int | None:
    """The view key ``key`` from the URL this run was started with, or None when the link
    names none (or nothing a whole number)."""
    raw = st.query_params.get(key)
    if raw is None or not raw.strip().isdigit() or len(raw.strip()) > 4:
        return None
    return int(raw)


def view_value(key: str, upper: int, default: int = 0) -> int:
    """The view key ``key`` from the URL this run was started with, as a whole number in
    0..upper, else ``default``: where an instant chart starts (a shared link's view)."""
    linked = linked_value(key)
    return min(max(default, 0), upper) if linked is None else min(linked, upper)


def arrow_bytes(rows: list[dict]) -> bytes:
    """A dataset (a list of flat dicts) as the Arrow IPC bytes Streamlit sends to the browser,
    built with pyarrow directly: through pandas, as Streamlit would, it took a third of lesson
    5's server time per new sentence. Every key of any row is a column; a row without it
    holds null there (the token labels ride in the first row only). A column pyarrow cannot
    type on its own (numbers mixed with text) goes Streamlit's own way instead."""
    import pyarrow as pa
    from streamlit.dataframe_util import (convert_anything_to_arrow_bytes,
                                          convert_arrow_table_to_arrow_bytes)

    names = list(dict.fromkeys(key for row in rows for key in row))
    try:
        table = pa.table({key: [row.get(key) for row in rows] for key in names})
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return convert_anything_to_arrow_bytes(rows)
    return convert_arrow_table_to_arrow_bytes(table)


@st.cache_data(max_entries=256, show_spinner=False)
def _instant_spec(name: str, args: tuple, kwargs: dict, _builder=None) -> dict:
    """The spec with its datasets already as Arrow bytes, which Streamlit sends as they are:
    converting them again on every rerun was a tenth of a class's server time (bench_class)."""
    spec = _builder(*args, **kwargs)
    spec["datasets"] = {name: arrow_bytes(rows) for name, rows in spec.get("datasets", {}).items()}
    return spec


def instant(builder, *args, **kwargs) -> None:
    """Draw the instant chart ``builder(*args, **kwargs)`` (a Vega-Lite dict from
    ``tfviz.viz.instant``), built once per distinct input; each caller gets its own copy."""
    spec = _instant_spec(f"{builder.__module__}.{builder.__qualname__}", args, kwargs,
                         _builder=builder)
    vega_lite(spec, width="content")  # presenter view draws a copy in large type
