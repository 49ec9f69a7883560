// The page's view keys (layer, head, query token, step, ...) live in the browser: the instant
// charts' inputs change the charts with no script run, so the server never hears of a move.
// This script, drawn once by the frame (tfviz.ui.views.view_sync), keeps the URL and the page
// in step:
//   - a moved input's value goes into the URL (history.replaceState), and every other input of
//     the same name follows it (two charts of one page, the same key on the next page);
//   - the moved chart paints first; the others follow one per task, and a chart out of sight
//     (a hidden tab, far down the page) follows only when it comes near the viewport;
//   - when Streamlit rewrites the URL itself (after a rerun) it only knows the keys the page
//     was opened with, so pushState and replaceState put the current view keys back in;
//   - a chart drawn anew (a new sentence) is set to the current view as soon as it appears;
//   - a formula or HTML table that scrolls sideways in its own box (a phone's screen) gets a
//     tab stop, so that a keyboard can reach and scroll it.
// config: {keys: ["layer", "head", "query", ...]}  (tfviz.viz.kit.instant.VIEW_KEYS)
//
// The browser runs this file as an inline module followed by `start(window, config)`; node's
// test runner imports the pure functions below (tests/js/view_sync.test.mjs).

// Vega's SVG fills a colour legend with url(PAGE-ADDRESS#gradient_0). Once the address changes
// (a moved view key, Streamlit's own rewrite), that names another document and the colour bar
// goes blank; a same-document url(#gradient_0) never goes stale.
const REF = /url\((['"]?)[^)#'"]+#/;

/** The view keys a page address names: {key: value} for each of `keys` in `search`. */
export function startView(search, keys) {
  const start = new URLSearchParams(search);
  const view = {};
  for (const k of keys) if (start.has(k)) view[k] = start.get(k);
  return view;
}

/** `url` (absolute, or relative to `base`) with the view's keys set in its query, as the
 * path, query and hash that history.pushState takes; undefined and null stay as they are. */
export function merged(url, view, base) {
  if (url === undefined || url === null) return url;
  const u = new URL(String(url), base);
  for (const [k, v] of Object.entries(view)) u.searchParams.set(k, v);
  return u.pathname + u.search + u.hash;
}

/** Whether a fill or stroke names a gradient by a page address (url(ADDRESS#id)). */
export function absolute(value) {
  return typeof value === "string" && REF.test(value);
}

/** A fill or stroke's gradient reference made same-document: url("http://x/p?a=1#g") ->
 * url("#g"); anything else as it was. */
export function relinked(value) {
  return absolute(value) ? value.replace(REF, "url($1#") : value;
}

/** Whether an input can show `value`: a select box one of its options, a slider a value
 * between its ends. */
export function canTake(el, value) {
  return el.tagName === "SELECT"
    ? Array.from(el.options).some((o) => o.value === value)
    : (+value >= +el.min && +value <= +el.max);
}

/** The position a fitted token slider shows (a length-free chart, `fitted`): the learner's
 * (`chosen`, read as a link is: 1-4 digits), kept within the slider's `n` positions counted
 * from `from`, else the sentence's default `dflt`. */
export function shownPosition(chosen, n, dflt, from = 0) {
  const ok = /^\d{1,4}$/.test(chosen || "");
  return ok ? Math.max(from, Math.min(+chosen, from + n - 1)) : dflt;
}

/** The token sliders a length marker fits (`tfviz.ui.views.length_marker`), from its JSON
 * `data-fit` = {name: {n, default, from?}} (from: the first position, 0 unless a slider counts
 * from 1), and the view's chosen positions: {name: {min, max, value}}. A name whose entry is not
 * whole numbers with n >= 1 is left out, and so is all of it when the JSON does not parse. */
export function fitted(json, view) {
  let fit;
  try { fit = JSON.parse(json || "{}"); } catch { return {}; }
  const out = {};
  if (!fit || typeof fit !== "object") return out;
  for (const [name, f] of Object.entries(fit)) {
    const from = f && f.from !== undefined ? f.from : 0;
    if (!f || ![f.n, f.default, from].every(Number.isInteger) || f.n < 1) continue;
    out[name] = { min: from, max: from + f.n - 1, value: shownPosition(view[name], f.n, f.default, from) };
  }
  return out;
}

/** How far a range input's track is filled, as Streamlit's stylesheet draws it (the CSS
 * variable --vega-range-progress, which it sets only when the input itself moves): `value`
 * from `min` to `max` as a percentage, 0 for a slider of one position. */
export function rangeProgress(min, max, value) {
  const span = max - min;
  const at = span > 0 ? ((value - min) / span) * 100 : 0;
  return `${Math.min(100, Math.max(0, at))}%`;
}

/** A PNG's file name from a chart's title: letters, digits and dashes, the rest as one
 * underscore, at most 80 characters before ".png". */
export function pngName(title) {
  return (title || "tfviz chart").replace(/[^\w\u00C0-\uFFFF-]+/g, " ")
    .trim().slice(0, 80).replace(/ /g, "_") + ".png";
}

/** Whether a box scrolls sideways: its content is wider than the box. */
export function scrollsSideways(el) {
  return el.scrollWidth > el.clientWidth + 1;
}

/** Give a box that scrolls sideways a tab stop and a name (`label`), so that a keyboard can
 * reach and scroll it; take them back from a box that fits again (a wider window), so that
 * the tab order stays the page's own controls. */
export function reachable(el, label) {
  const named = el.getAttribute("data-tfviz-reach") !== null;
  if (scrollsSideways(el)) {
    if (named || el.hasAttribute("tabindex")) return;
    el.setAttribute("tabindex", "0");
    el.setAttribute("role", "region");
    el.setAttribute("aria-label", label);
    el.setAttribute("data-tfviz-reach", "");
  } else if (named) {
    for (const a of ["tabindex", "role", "aria-label", "data-tfviz-reach"]) el.removeAttribute(a);
  }
}

export function start(w, config) {
  if (w.__tfvizViews) return; // once per page load: Streamlit keeps this element mounted
  const KEYS = new Set(config.keys);
  const view = startView(w.location.search, config.keys);
  const push = w.history.pushState.bind(w.history);
  const replace = w.history.replaceState.bind(w.history);
  const here = (url) => merged(url, view, w.location.href);
  const relink = () => {
    for (const el of document.querySelectorAll(
      '.vega-embed svg [fill^="url("], .vega-embed svg [stroke^="url("]')) {
      for (const a of ["fill", "stroke"]) {
        const v = el.getAttribute(a);
        if (absolute(v)) el.setAttribute(a, relinked(v));
      }
    }
  };
  w.history.pushState = (s, t, url) => { push(s, t, here(url)); relink(); };
  w.history.replaceState = (s, t, url) => { replace(s, t, here(url)); relink(); };
  // Vega works a fill out before it paints it: a chart painting just after the address changed
  // (a slide shown in presenter view, a chart following a move) writes the old address. So
  // every gradient reference Vega writes is made same-document within a frame as well.
  let relinking = false;
  new MutationObserver((records) => {
    if (relinking) return;
    const wrote = records.some((r) => r.type === "attributes"
      ? absolute(r.target.getAttribute(r.attributeName))
      : Array.from(r.addedNodes).some((n) => n.namespaceURI === "http://www.w3.org/2000/svg"));
    if (!wrote) return;
    relinking = true;
    requestAnimationFrame(() => { relinking = false; relink(); });
  }).observe(document.body, {
    attributes: true, attributeFilter: ["fill", "stroke"],
    childList: true, subtree: true,
  });
  let applying = false;
  const inputs = (root, name) => Array.from(root.querySelectorAll(
    `.vega-bind input[name="${name}"], .vega-bind select[name="${name}"]`));
  const setInput = (el, value) => {
    if (el.value === value || !canTake(el, value)) return;
    el.value = value;
    el.dispatchEvent(new Event(el.tagName === "SELECT" ? "change" : "input", { bubbles: true }));
  };
  const show = (root) => { // every input under root to the current view
    applying = true;
    try {
      for (const [k, v] of Object.entries(view)) for (const el of inputs(root, k)) setInput(el, v);
    } finally { applying = false; }
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
      if (y === "auto" || y === "scroll") return p;
    }
    return null;
  };
  const watch = () => {
    for (const c of document.querySelectorAll(".vega-embed")) {
      const root = scroller(c);
      if (!sights.has(root)) {
        sights.set(root, new IntersectionObserver(seen, { root, rootMargin: "600px 0px" }));
      }
      sights.get(root).observe(c);
    }
  };
  const moved = (e) => {
    const el = e.target;
    if (applying || !el || !el.name || !KEYS.has(el.name) || !el.closest(".vega-bind")) return;
    view[el.name] = el.value;
    w.__tfvizViews.changes += 1;
    const own = el.closest(".vega-embed");
    // The moved chart paints first; the URL and the page's other charts follow after that
    // paint (two animation frames: the first runs before it, the second after it).
    requestAnimationFrame(() => requestAnimationFrame(() => {
      replace(w.history.state, "", here(w.location.href));
      relink();
      const charts = new Set(inputs(document, el.name).map((i) => i.closest(".vega-embed")));
      for (const chart of charts) if (chart && chart !== own) follow(chart);
    }));
  };
  document.addEventListener("input", moved, true);
  document.addEventListener("change", moved, true);
  // "Save as PNG" under every instant chart (Streamlit shows no export menu for Vega-Lite):
  // the chart as drawn, at twice its size on white, named after its title.
  const download = (url, name) => {
    const a = document.createElement("a");
    a.href = url; a.download = name; document.body.appendChild(a); a.click(); a.remove();
  };
  const savePng = (chart) => {
    const depth = (e) => { let d = 0; for (; e && e !== chart; e = e.parentElement) d++; return d; };
    const title = Array.from(chart.querySelectorAll("g.role-title text")) // the chart's own,
      .sort((x, y) => depth(x) - depth(y))[0]; // not a panel's
    const name = pngName(title && title.textContent);
    const canvas = chart.querySelector("canvas.marks");
    if (canvas) { download(canvas.toDataURL("image/png"), name); return; }
    const svg = chart.querySelector("svg.marks");
    if (!svg) return;
    const width = svg.width.baseVal.value, height = svg.height.baseVal.value, k = 2;
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = Math.ceil(width * k); c.height = Math.ceil(height * k);
      const g = c.getContext("2d");
      g.fillStyle = "white"; g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      download(c.toDataURL("image/png"), name);
    };
    img.src = "data:image/svg+xml;charset=utf-8," +
      encodeURIComponent(new XMLSerializer().serializeToString(svg));
  };
  const addSave = (chart) => {
    if (chart.querySelector(":scope > .tfviz-save")) return;
    const b = document.createElement("button");
    b.type = "button"; b.className = "tfviz-save"; b.textContent = "Save as PNG";
    b.title = "Save this chart as a PNG picture";
    b.style.cssText = "display:block;margin:4px 0 0;padding:2px 8px;font-size:0.8rem;" +
      "background:white;border:1px solid #bbb;border-radius:4px;cursor:pointer;color:#333";
    b.addEventListener("click", () => savePng(chart));
    chart.appendChild(b);
  };
  // Length-free charts (tfviz.viz.kit.instant_length) are laid out for a range of lengths. The
  // page's marker (length_marker) says, as JSON data, which token sliders beside it follow the
  // sentence (query, pos, ...), over how many positions and where the sentence opens: each
  // takes that range and shows the position the charts draw (the learner's, kept in range,
  // else the sentence's own). No event is sent: the charts already draw it.
  const fitSliders = () => {
    for (const m of document.querySelectorAll(".tfviz-length")) {
      const root = m.closest('[data-testid="stVerticalBlock"]') || document;
      for (const [name, fit] of Object.entries(fitted(m.dataset.fit, view))) {
        for (const el of inputs(root, name)) {
          el.min = fit.min; el.max = fit.max; el.value = fit.value;
          el.style.setProperty("--vega-range-progress", rangeProgress(fit.min, fit.max, fit.value));
          const label = el.nextElementSibling;
          if (label && label.tagName === "SPAN") label.textContent = fit.value;
        }
      }
    }
  };
  const adopt = () => { // a chart drawn anew: show the view, offer its PNG
    watch(); fitSliders(); show(document); relink();
    for (const c of document.querySelectorAll(".vega-embed")) addSave(c);
  };
  const SVG = "http://www.w3.org/2000/svg"; // a chart's own drawing: never holds its inputs
  const bindsInputs = (n) => n.nodeType === 1 && n.namespaceURI !== SVG &&
    (n.matches(".vega-bind, .vega-bindings") || n.querySelector(".vega-bind") !== null);
  const marks = (n) => n.nodeType === 1 && n.namespaceURI !== SVG &&
    (n.matches(".tfviz-length") || n.querySelector(".tfviz-length") !== null);
  // A wide formula or HTML table scrolls sideways in its own box on a narrow screen (KaTeX's
  // display box, st.table's): that box must be reachable by keyboard too (reachable), checked
  // whenever formulas or tables come or the window changes size. (A dataframe's grid handles
  // the keyboard itself.)
  let reaching = false;
  const reach = () => {
    if (reaching) return;
    reaching = true;
    w.requestAnimationFrame(() => {
      reaching = false;
      for (const el of document.querySelectorAll(".katex-display")) {
        reachable(el, "Formula (scrolls sideways)");
      }
      for (const el of document.querySelectorAll('[data-testid="stTableStyledTable"]')) {
        if (el.parentElement) reachable(el.parentElement, "Table (scrolls sideways)");
      }
    });
  };
  const wide = ".katex, [data-testid=\"stTable\"]"; // what may scroll sideways
  const widens = (n) => n.nodeType === 1 && n.namespaceURI !== SVG && // new, or new inside
    (n.closest(wide) !== null || n.querySelector(wide) !== null);
  w.addEventListener("resize", reach);
  new MutationObserver((records) => {
    const added = records.flatMap((r) => Array.from(r.addedNodes));
    if (added.some(bindsInputs)) adopt();
    else if (added.some(marks)) fitSliders(); // a new sentence: same charts, new data
    if (added.some(widens)) reach();
  }).observe(document.body, { childList: true, subtree: true });
  w.__tfvizViews = { view, changes: 0, adopt, stale };
  adopt();
  reach();
}
