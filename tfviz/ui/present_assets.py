"""What presenter view sends to the browser (``tfviz.ui.present.presenter_frame`` fills in the
names and sizes):

- ``PRESENTER_CSS``: large type (every text at least 24 px, KaTeX's sub- and superscripts too,
  :func:`katex_css`), no sidebar, black text on white, thick lines, room for the slide bar.
- ``PRESENTER_SCRIPT``, which shows one slide at a time *in the browser*, with no rerun.
  Slide 1 is everything before the first step (the title and the opening text); then each
  step's container is a slide, together with anything drawn after it before the next step.
  ← / → and PageDown / PageUp / Space (what presentation clickers send) move between slides;
  PageDown and Space first scroll a slide taller than the screen. The slide's number goes into
  the URL (``slide=3``), so a shared link opens on it. Esc, or the bar's button, leaves.

Plain text only: no streamlit here.
"""
from __future__ import annotations


def katex_css() -> str:
    """KaTeX draws sub- and superscripts at 0.5-0.7 of the formula's size (its ``sizing``
    classes, ``reset-sizeA sizeB``): each one here is at least 24 px instead."""
    sizes = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.44, 1.728, 2.074, 2.488)
    rules = []
    for a, base in enumerate(sizes, start=1):
        for b, size in enumerate(sizes, start=1):
            sel = f".reset-size{a}.size{b}"
            rules.append(f".katex .sizing{sel},.katex .fontsize-ensurer{sel}"
                         f"{{font-size:max(24px,{size / base:.4g}em)!important}}")
    return "\n".join(rules)


PRESENTER_CSS = """
:root { --tfviz-presenting: 1; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"], [data-testid="stHeader"], [data-testid="stToolbar"],
[data-testid="stDecoration"] { display: none !important; }
[data-testid="stMainBlockContainer"] {
  max-width: none !important; padding: %(top)dpx 40px 48px !important; }
[data-tfviz-off] { display: none !important; }
/* Large type: every text at least 24 px; bigger text (headings) keeps its size. */
:where([data-testid="stMain"] *:not(svg, svg *)) { font-size: max(24px, 1em) !important; }
[data-testid="stMain"] h1 { font-size: 52px !important; }
[data-testid="stMain"] h2 { font-size: 42px !important; }
[data-testid="stMain"] h3 { font-size: 34px !important; }
[data-testid="stMain"] :is(h4, h5, h6) { font-size: 28px !important; }
[data-testid="stMain"] [data-testid="stMetricValue"] { font-size: 44px !important; }
[data-testid="stMain"] .katex { font-size: 32px !important; }
/* Contrast: black text on white (captions and help texts are grey by default). */
[data-testid="stMain"] :is(p, li, span, label, small, div, td, th, caption, summary) { color: #000; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { opacity: 1 !important; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] * { color: #222 !important; }
/* Sliders: room above the track for the value, below it for the ends. */
[data-testid="stMain"] [data-testid="stSlider"] [data-testid="stWidgetLabel"] { margin-bottom: 36px; }
[data-testid="stMain"] [data-testid="stSlider"] { padding-bottom: 30px; }
[data-testid="stMain"] a { color: #0044aa !important; text-decoration: underline; }
/* Thick lines: borders of tables, expanders and bordered containers. */
[data-testid="stMain"] :is(th, td) { border-width: 2px !important; border-color: #444 !important; }
[data-testid="stMain"] [data-testid="stExpander"] details { border: 2px solid #444 !important; }
[data-testid="stMain"] .vega-bind { display: block; margin: 4px 0; }
[data-testid="stMain"] .vega-bind * { color: #000 !important; }
/* Whole link labels (Streamlit cuts a long one with an ellipsis). */
[data-testid="stMain"] [data-testid="stPageLink"] * { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; max-width: none !important; }
[data-testid="stMain"] .vega-bind input[type="range"] { width: 320px; height: 28px; }
#tfviz-present-bar {
  position: fixed; top: 0; left: 0; right: 0; height: %(bar)dpx; z-index: 999990;
  display: flex; align-items: center; gap: 12px; padding: 0 16px; box-sizing: border-box;
  background: #fff; border-bottom: 3px solid #000; font: 24px/1.2 "Source Sans Pro", sans-serif;
  color: #000; }
#tfviz-present-bar .tfviz-where { flex: 1; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
#tfviz-present-bar button { font: inherit; font-size: 24px; color: #000; background: #fff;
  border: 2px solid #000; border-radius: 6px; padding: 2px 14px; cursor: pointer; }
#tfviz-present-bar button:disabled { opacity: 0.35; cursor: default; }
%(katex)s
"""

PRESENTER_SCRIPT = """
<script>
(() => {
  const w = window, d = document;
  if (w.__tfvizPresent) { w.__tfvizPresent.wake(); return; }  // one per page load
  const STEP = '[class*="st-key-%(prefix)s"]', PARAM = '%(slide)s';
  const on = () => getComputedStyle(d.documentElement)
      .getPropertyValue('--tfviz-presenting').trim() === '1';
  const asked = () => {  // the slide a link asks for (1-based), else null
    const n = parseInt(new URLSearchParams(w.location.search).get(PARAM), 10);
    return Number.isInteger(n) && n >= 1 ? n : null;
  };
  let active = false, slides = [], index = 0, key = null, want = asked();
  let path = w.location.pathname, bar = null, queued = false;
  const state = {changes: 0};
  const stepKey = (el) => (String(el.className).match(/st-key-%(prefix)s[\\w-]*/) || [''])[0];
  const group = () => {  // the main block's children, in order, cut at every step
    const block = d.querySelector('[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
    if (!block) return [];
    const out = [{key: 'intro', els: [], title: ''}];
    for (const el of block.children) {
      const s = el.matches(STEP) ? el : el.querySelector(':scope > ' + STEP);
      if (s) {
        const h = s.querySelector('h2');
        out.push({key: stepKey(s), els: [el], title: h ? h.textContent.trim() : ''});
      } else out[out.length - 1].els.push(el);
    }
    const h1 = block.querySelector('h1');
    out[0].title = h1 ? h1.textContent.trim() : 'Introduction';
    return out;
  };
  const scroller = () => d.querySelector('[data-testid="stMain"]');
  const show = () => {
    slides.forEach((s, i) => s.els.forEach((el) => {
      if (i === index) { if (el.hasAttribute('data-tfviz-off')) el.removeAttribute('data-tfviz-off'); }
      else if (!el.hasAttribute('data-tfviz-off')) el.setAttribute('data-tfviz-off', '');
    }));
    if (!bar) return;
    const s = slides[index], text = `${index + 1} / ${slides.length} · ${s ? s.title : ''}`;
    const where = bar.querySelector('.tfviz-where');
    if (where.textContent !== text) { where.textContent = text; where.title = text; }
    bar.querySelector('[data-go="-1"]').disabled = index === 0;
    bar.querySelector('[data-go="1"]').disabled = index >= slides.length - 1;
  };
  const withSlide = (url) => {  // a URL with this page's slide in it (Streamlit rewrites URLs)
    if (url === undefined || url === null || !active) return url;
    const u = new URL(String(url), w.location.href);
    const n = want !== null ? want : index + 1;
    if (u.pathname !== w.location.pathname || n <= 1) u.searchParams.delete(PARAM);
    else u.searchParams.set(PARAM, String(n));
    return u.pathname + u.search + u.hash;
  };
  const push = w.history.pushState.bind(w.history);
  const replace = w.history.replaceState.bind(w.history);
  w.history.pushState = (s, t, url) => push(s, t, withSlide(url));
  w.history.replaceState = (s, t, url) => replace(s, t, withSlide(url));
  const resized = () => requestAnimationFrame(() => w.dispatchEvent(new Event('resize')));
  const go = (i) => {
    i = Math.max(0, Math.min(slides.length - 1, i));
    want = null;
    if (i === index) return;
    index = i; key = slides[i].key; state.changes += 1;
    show();
    const sc = scroller(); if (sc) sc.scrollTop = 0;
    w.history.replaceState(w.history.state, '', w.location.href);
    resized();
  };
  const refresh = () => {
    queued = false;
    if (!on()) { if (active) sleep(); return; }
    if (!active) start();
    if (w.location.pathname !== path) { path = w.location.pathname; key = null; want = null; index = 0; }
    slides = group();
    if (!slides.length) return;
    let i = key === null ? -1 : slides.findIndex((s) => s.key === key);
    if (want !== null) {  // a link's slide: wait until the page has drawn that far
      i = Math.min(want, slides.length) - 1;
    } else if (i < 0) i = Math.min(index, slides.length - 1);
    const moved = i !== index;
    index = i; key = want !== null && slides.length < want ? null : slides[i].key;
    if (want !== null && slides.length >= want) want = null;
    show();
    if (moved) resized();
  };
  const queue = () => { if (!queued) { queued = true; requestAnimationFrame(refresh); } };
  const leave = () => {
    const t = d.querySelector('.st-key-%(toggle)s input[type="checkbox"]');
    if (t) { t.click(); return; }
    const u = new URL(w.location.href);  // no toggle on this page: reload without the flag
    u.searchParams.delete('%(param)s'); u.searchParams.delete(PARAM);
    w.location.assign(u.toString());
  };
  const makeBar = () => {
    const b = d.createElement('div');
    b.id = 'tfviz-present-bar'; b.setAttribute('role', 'navigation');
    b.setAttribute('aria-label', 'Presenter view');
    const add = (tag, text, attrs) => {  // built node by node: st.html's sanitiser drops a
      const e = d.createElement(tag);  // script whose text holds markup
      e.textContent = text;
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      b.appendChild(e);
    };
    add('button', '\u2190', {type: 'button', 'data-go': '-1', 'aria-label': 'Previous step'});
    add('button', '\u2192', {type: 'button', 'data-go': '1', 'aria-label': 'Next step'});
    add('span', '', {class: 'tfviz-where'});
    add('button', 'Leave presenter view', {type: 'button', class: 'tfviz-leave', title: 'Esc'});
    b.addEventListener('click', (e) => {
      const t = e.target.closest('button'); if (!t) return;
      if (t.classList.contains('tfviz-leave')) leave(); else go(index + Number(t.dataset.go));
    });
    d.body.appendChild(b);
    return b;
  };
  const start = () => { active = true; bar = makeBar(); };
  const sleep = () => {  // presenter view was switched off: show the whole page again
    active = false;
    for (const el of d.querySelectorAll('[data-tfviz-off]')) el.removeAttribute('data-tfviz-off');
    if (bar) { bar.remove(); bar = null; }
    const u = new URL(w.location.href);
    if (u.searchParams.has(PARAM)) { u.searchParams.delete(PARAM); replace(w.history.state, '', u.pathname + u.search + u.hash); }
    key = null; index = 0; want = null;
    resized();
  };
  // Keys: not while an input, a select box, a slider or a tab list has the focus (the charts'
  // view sliders and Streamlit's tabs use the arrow keys themselves).
  const OWN_KEYS = 'input, select, textarea, [contenteditable="true"], [role="slider"], ' +
      '[role="tab"], [role="tablist"], [role="listbox"], [role="option"], [role="combobox"], ' +
      '[role="radiogroup"], [role="radio"], [role="spinbutton"], [role="menu"], .vega-bind';
  const PRESSABLE = 'button, summary, a, [role="button"], [role="checkbox"], [role="switch"]';
  const below = (dir) => {  // PageDown / Space: scroll a tall slide before moving on
    const sc = scroller(); if (!sc) return false;
    const room = dir > 0 ? sc.scrollHeight - sc.clientHeight - sc.scrollTop : sc.scrollTop;
    if (room <= 2) return false;
    sc.scrollBy({top: dir * Math.round(sc.clientHeight * 0.8), behavior: 'instant'});
    return true;
  };
  d.addEventListener('keydown', (e) => {
    if (!active || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target instanceof Element ? e.target : null;
    if (t && t.closest(OWN_KEYS)) return;
    const k = e.key;
    if (k === 'Escape') { e.preventDefault(); leave(); return; }
    if ((k === ' ' || k === 'Enter') && t && t.closest(PRESSABLE)) return;
    let dir = 0;
    if (k === 'ArrowRight') dir = 1;
    else if (k === 'ArrowLeft') dir = -1;
    else if (k === 'PageDown' || (k === ' ' && !e.shiftKey)) dir = below(1) ? 0 : 1;
    else if (k === 'PageUp' || (k === ' ' && e.shiftKey)) dir = below(-1) ? 0 : -1;
    else return;
    e.preventDefault();
    if (dir) go(index + dir);
  });
  const ours = (r) => bar && bar.contains(r.target);
  new MutationObserver((records) => {
    if (records.some((r) => !ours(r))) queue();
  }).observe(d.body, {childList: true, subtree: true});
  w.__tfvizPresent = Object.assign(state, {
    wake: queue, go: (n) => go(n - 1),
    slides: () => slides.map((s) => s.title), at: () => index + 1});
  queue();
})();
</script>
"""
