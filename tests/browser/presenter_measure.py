"""What tests/browser/test_presenter.py measures on a slide, in the page's own JavaScript: which
groups of the main block show (the slides, recomputed from the page itself), when the charts are
drawn, and everything a projector would get wrong (MEASURE_JS: overflow, clipped charts, text
under MIN_TEXT px, cut text, broken colour bars, axis labels that run into each other).
"""
from __future__ import annotations

import time

MIN_TEXT = 24  # px
STEP = '[class*="st-key-tfviz-step-"]'

# The slide as this test sees it, independently of the presenter script: which children of
# the main block are visible, and whether they form exactly one slide.
SLIDES_JS = """(STEP) => {
  const block = document.querySelector('[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
  const groups = [[]];
  for (const el of block.children) {
    if (el.matches(STEP) || el.querySelector(':scope > ' + STEP)) groups.push([]);
    groups[groups.length - 1].push(el);
  }
  const shown = (el) => el.getClientRects().length > 0;
  const visible = groups.map((g, i) => g.some(shown) ? i : -1).filter((i) => i >= 0);
  return {count: groups.length, visible, steps: document.querySelectorAll(STEP).length};
}"""

READY_JS = """() => {  // the visible charts are drawn (one in a closed expander is not visible:
  // it keeps a zero-height box, and Vega draws it only when the expander opens)
  const shown = (el) => el.getClientRects().length > 0 && !el.closest('details:not([open])');
  const main = document.querySelector('[data-testid="stMain"]');
  const vega = Array.from(main.querySelectorAll('[data-testid="stVegaLiteChart"]')).filter(shown);
  return vega.every((c) => c.querySelector('.vega-embed svg.marks, .vega-embed canvas.marks'));
}"""

# Everything measured on the slide on screen (the slide scrolls inside stMain: elements below
# the fold are measured too).
MEASURE_JS = """([MIN]) => {
  const problems = [];
  const main = document.querySelector('[data-testid="stMain"]');
  const box = main.getBoundingClientRect();
  const right = box.left + main.clientWidth;  // inside the vertical scroll bar
  const root = document.documentElement;
  const name = (el) => {
    const t = (el.getAttribute && (el.getAttribute('data-testid') || el.getAttribute('class'))) || '';
    return `${el.tagName.toLowerCase()}${t ? '.' + String(t).split(' ')[0] : ''}`;
  };
  const text = (el) => (el.textContent || '').trim().slice(0, 40);
  const seen = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) &&
      el.getClientRects().length > 0;
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  if (sidebar && seen(sidebar)) problems.push('the sidebar is visible');
  if (root.scrollWidth > root.clientWidth + 1) problems.push(`the document is ${root.scrollWidth} px wide`);
  if (main.scrollWidth > main.clientWidth + 1) problems.push(`the lesson is ${main.scrollWidth} px wide, ${main.clientWidth} px shown`);
  for (const el of [main, ...main.querySelectorAll('*')]) {
    if (getComputedStyle(el).zoom !== '1') { problems.push(`CSS zoom on ${name(el)}: measure it`); break; }
  }
  // Charts: inside the screen sideways, and not clipped by a container of their own.
  let canvases = 0;
  const charts = Array.from(main.querySelectorAll('.vega-embed, img, [data-testid="stDataFrame"]')).filter(seen);
  for (const c of charts) {
    if (c.matches('[data-testid="stDataFrame"]')) {
      problems.push('st.dataframe (a canvas at 14 px): draw it with tfviz.ui.tables.table');
      continue;
    }
    if (c.matches('.vega-embed') && c.querySelector('canvas.marks')) canvases += 1;
    const r = c.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > right + 0.5) {
      problems.push(`${name(c)} "${text(c)}" spans x ${Math.round(r.left)}..${Math.round(r.right)}, the screen ${Math.round(box.left)}..${Math.round(right)}`);
      continue;
    }
    for (let a = c.parentElement; a && a !== main; a = a.parentElement) {
      const s = getComputedStyle(a), q = a.getBoundingClientRect();
      const clipsX = s.overflowX !== 'visible', clipsY = s.overflowY !== 'visible';
      if ((clipsX && (r.left < q.left - 1 || r.right > q.right + 1)) ||
          (clipsY && (r.top < q.top - 1 || r.bottom > q.bottom + 1))) {
        problems.push(`${name(c)} "${text(c)}" (${Math.round(r.width)}×${Math.round(r.height)}) is clipped by ${name(a)} (${Math.round(q.width)}×${Math.round(q.height)})`);
        break;
      }
    }
  }
  // Text: every element with a text node of its own, at its size on screen.
  const shrink = (a) => {  // the scale a CSS transform of an HTML element applies
    const t = getComputedStyle(a).transform;
    if (!t || t === 'none') return 1;
    const m = new DOMMatrix(t);
    return Math.hypot(m.a, m.b);
  };
  const small = new Map(), cut = new Map();
  const scope = [main, document.getElementById('tfviz-present-bar')].filter(Boolean);
  for (const top of scope) {
    for (const el of [top, ...top.querySelectorAll('*')]) {
      if (!Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
      if (el.closest('.katex-mathml, script, style, title, desc')) continue;  // not drawn
      if (!seen(el)) continue;
      const r = el.getBoundingClientRect();
      if (r.width <= 1 && r.height <= 1) continue;  // visually hidden (screen-reader text)
      let scale = 1;  // what SVG and CSS transforms make of the computed size on screen
      if (el instanceof SVGElement) {  // getScreenCTM: the SVG's own and every CSS transform
        const m = el.getScreenCTM(); if (m) scale = Math.hypot(m.a, m.b);
      } else for (let a = el; a; a = a.parentElement) scale *= shrink(a);
      const px = parseFloat(getComputedStyle(el).fontSize) * scale;
      for (const a of [el, el.parentElement]) {  // a text cut short, or scrolling sideways
        if (!a || a instanceof SVGElement || a === main) continue;
        if (getComputedStyle(a).overflowX !== 'visible' && a.scrollWidth > a.clientWidth + 1) {
          const key = `${name(a)} shows ${a.clientWidth} of ${a.scrollWidth} px`;
          if (!cut.has(key)) cut.set(key, text(el));
          break;
        }
      }
      if (px < MIN - 0.05) {
        const key = `${name(el)} at ${px.toFixed(1)} px`;
        if (!small.has(key)) small.set(key, text(el));
      }
    }
  }
  for (const [key, t] of small) problems.push(`text "${t}" (${key})`);
  for (const [key, t] of cut) problems.push(`text "${t}" cut: ${key}`);
  // Formulas, tables and code that scroll sideways inside their own box (KaTeX's display
  // box and a wide table's wrapper do): their right end is off the screen.
  for (const el of main.querySelectorAll('.katex-display, [data-testid="stTable"], [data-testid="stTable"] *, pre')) {
    if (seen(el) && getComputedStyle(el).overflowX !== 'visible' && el.scrollWidth > el.clientWidth + 4) {  // KaTeX's italic overhang: 2-3 px
      problems.push(`${name(el)} "${text(el)}" scrolls sideways: ${el.clientWidth} of ${el.scrollWidth} px shown`);
    }
  }
  // Colour bars: a gradient legend whose fill no longer resolves draws nothing.
  for (const el of main.querySelectorAll('.vega-embed svg [fill^="url("]')) {
    if (seen(el) && !/^url\(['"]?#/.test(el.getAttribute('fill'))) {
      problems.push(`a colour bar's fill points at ${el.getAttribute('fill').slice(0, 60)}`);
      break;
    }
  }
  // Axis labels that run into each other (24 px labels on an axis sized for 14 px ones).
  const axes = main.querySelectorAll('.vega-embed g.role-axis');
  for (const axis of axes) {
    if (!seen(axis)) continue;
    const labels = Array.from(axis.querySelectorAll(axis.matches('.role-axis') ? 'g.role-axis-label text' : 'text'))
        .filter((t) => t.textContent.trim() && seen(t)).map((t) => [t, t.getBoundingClientRect()]);
    // Labels side by side along their lines overlap as soon as their boxes do. Labels next
    // to each other across their lines (a vertical axis's, or a horizontal axis's turned
    // ones) overlap when their lines come closer than 0.85 em: a line's box is ~1.3 em high
    // and has air above and below, a turned label's box more (it is the box of a slanted line).
    const spread = (f) => Math.max(...labels.map(([, r]) => f(r))) - Math.min(...labels.map(([, r]) => f(r)));
    const vertical = spread((r) => r.top + r.bottom) > spread((r) => r.left + r.right);
    const angle = (t) => { const m = /rotate\(\s*(-?[\d.]+)/.exec(t.getAttribute('transform') || '');
                           return m ? +m[1] : 0; };
    const em = (t) => { const m = t.getScreenCTM(); return parseFloat(getComputedStyle(t).fontSize) * (m ? Math.hypot(m.a, m.b) : 1); };
    for (let i = 0; i + 1 < labels.length; i++) {
      const [ta, a] = labels[i], [tb, b] = labels[i + 1];
      const turn = Math.abs(Math.sin(angle(ta) * Math.PI / 180)) > 0.1;
      let clash;
      if (vertical && !turn) clash = Math.abs((a.top + a.bottom) - (b.top + b.bottom)) / 2 < 0.85 * em(ta);
      else if (!vertical && turn) clash = Math.abs((a.left + a.right) - (b.left + b.right)) / 2 *
          Math.abs(Math.sin(angle(ta) * Math.PI / 180)) < 0.85 * em(ta);
      else clash = Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 &&
          Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
      if (clash) {
        problems.push(`axis labels "${text(ta)}" and "${text(tb)}" run into each other`);
        break;
      }
    }
  }
  return {problems, canvases, tall: main.scrollHeight > main.clientHeight + 1,
          at: window.__tfvizPresent ? window.__tfvizPresent.at() : null,
          bar: (document.querySelector('#tfviz-present-bar .tfviz-where') || {}).textContent || ''};
}"""


LOADED_JS = """(STEP) => {  // the number of steps, once the run is over and all are slides
  const app = document.querySelector('[data-testid="stApp"]'), p = window.__tfvizPresent;
  if (!app || app.getAttribute('data-test-script-state') === 'running' || !p ||
      !document.querySelector('[data-testid="stMain"] h1')) return -1;
  const steps = document.querySelectorAll(STEP).length;
  return p.slides().length === steps + 1 ? steps : -1;
}"""


def _drawn(page) -> None:
    """Wait until the script run is over and every step is a slide, the same three times in a
    row 150 ms apart (a run can pause between two steps)."""
    counts: list[int] = []
    deadline = time.monotonic() + 90
    while len(counts) < 3 or len(set(counts[-3:])) > 1:
        assert time.monotonic() < deadline, f"the slides never settled: {counts[-8:]}"
        counts.append(page.evaluate(LOADED_JS, STEP))
        if counts[-1] < 0:
            counts.clear()
        page.wait_for_timeout(150)


def _settle(page) -> None:
    """Wait until the visible charts are drawn and the layout stopped moving."""
    page.wait_for_function(READY_JS, timeout=30_000, polling=100)
    page.evaluate("""() => new Promise((done) => {  // two frames without a change in height
        const main = document.querySelector('[data-testid="stMain"]');
        let last = -1, same = 0;
        const tick = () => { const h = main.scrollHeight;
            same = h === last ? same + 1 : 0; last = h;
            if (same >= 2) done(); else requestAnimationFrame(tick); };
        requestAnimationFrame(tick); })""")
