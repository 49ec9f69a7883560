// Presenter view shows one slide at a time, in the browser, with no rerun
// (tfviz.ui.present.presenter_frame draws this file while ?present=1).
//   - Slide 1 is everything before the lesson's first step (its title and opening text); then
//     each step's container is a slide, with anything drawn after it before the next step.
//   - ← / → and PageDown / PageUp / Space (what presentation clickers send) move between
//     slides; PageDown and Space first scroll a slide taller than the screen.
//   - The slide's number goes into the URL (slide=3), so a shared link opens on it; Esc, or
//     the bar's button, leaves.
//   - presenter.css says whether presenter view is on (--tfviz-presenting: 1); when a run
//     drops it, the whole page shows again.
// config: {prefix: "tfviz-step-", slide: "slide", param: "present", toggle: "tfviz_presenter"}
//   prefix: the start of every step container's key (Streamlit's class st-key-KEY);
//   slide, param: the URL keys of the slide and of presenter view; toggle: the sidebar
//   toggle's key, which the bar's button clicks to leave.
//
// The browser runs this file as an inline module followed by `start(window, config)`; node's
// test runner imports the pure functions below (tests/js/presenter.test.mjs).

/** The slide a link asks for (1-based), else null: ?slide=3 -> 3; 0, -2 or "x" -> null. */
export function asked(search, param) {
  const n = parseInt(new URLSearchParams(search).get(param), 10);
  return Number.isInteger(n) && n >= 1 ? n : null;
}

/** A step container's key from its class list: "stVerticalBlock st-key-tfviz-step-2-x" ->
 * "st-key-tfviz-step-2-x" (prefix "tfviz-step-"), "" when it has none. */
export function stepKey(className, prefix) {
  const own = prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return (String(className).match(new RegExp(`st-key-${own}[\\w-]*`)) || [""])[0];
}

/** `url` (absolute, or relative to `here`, the page's address) with slide `n` in its query
 * (as pushState takes it): a link to another page, or to slide 1, carries none. */
export function withSlide(url, here, n, param) {
  const u = new URL(String(url), here);
  if (u.pathname !== new URL(here).pathname || n <= 1) u.searchParams.delete(param);
  else u.searchParams.set(param, String(n));
  return u.pathname + u.search + u.hash;
}

/** Slide `i` kept within a deck of `n` slides (0-based). */
export function clamp(i, n) {
  return Math.max(0, Math.min(n - 1, i));
}

/** What the bar says: "2 / 5 · Title". */
export function barText(index, titles) {
  return `${index + 1} / ${titles.length} · ${titles[index] === undefined ? "" : titles[index]}`;
}

/** The slide to show after the page drew again, from the slides' keys and where presenter view
 * was: {index (0-based), key (that slide's key), want (a link's slide not drawn yet, else
 * null)}. The slide shown before stays (found by its key, else by its place, kept within the
 * deck); a link's slide is shown once the page has drawn that far, its last slide until then. */
export function settle(keys, { index, key, want }) {
  let i = key === null ? -1 : keys.indexOf(key);
  if (want !== null) i = Math.min(want, keys.length) - 1;
  else if (i < 0) i = Math.min(index, keys.length - 1);
  const waiting = want !== null && keys.length < want;
  return { index: i, key: waiting ? null : keys[i], want: waiting ? want : null };
}

/** What a key press does: {dir: +1 or -1, scroll: whether a tall slide scrolls first}, or null
 * for a key presenter view leaves alone. */
export function keyStep(key, shift) {
  if (key === "ArrowRight") return { dir: 1, scroll: false };
  if (key === "ArrowLeft") return { dir: -1, scroll: false };
  if (key === "PageDown" || (key === " " && !shift)) return { dir: 1, scroll: true };
  if (key === "PageUp" || (key === " " && shift)) return { dir: -1, scroll: true };
  return null;
}

/** How far a scrolling box can still move down (dir 1) or up (dir -1), in px. */
export function room(dir, { scrollHeight, clientHeight, scrollTop }) {
  return dir > 0 ? scrollHeight - clientHeight - scrollTop : scrollTop;
}

// Keys: not while an input, a select box, a slider or a tab list has the focus (the charts'
// view sliders and Streamlit's tabs use the arrow keys themselves).
const OWN_KEYS = 'input, select, textarea, [contenteditable="true"], [role="slider"], ' +
  '[role="tab"], [role="tablist"], [role="listbox"], [role="option"], [role="combobox"], ' +
  '[role="radiogroup"], [role="radio"], [role="spinbutton"], [role="menu"], .vega-bind';
const PRESSABLE = 'button, summary, a, [role="button"], [role="checkbox"], [role="switch"]';

export function start(w, config) {
  const d = w.document;
  if (w.__tfvizPresent) { w.__tfvizPresent.wake(); return; } // one per page load
  const STEP = `[class*="st-key-${config.prefix}"]`, PARAM = config.slide;
  const on = () => getComputedStyle(d.documentElement)
    .getPropertyValue("--tfviz-presenting").trim() === "1";
  let active = false, slides = [], index = 0, key = null, want = asked(w.location.search, PARAM);
  let path = w.location.pathname, bar = null, queued = false;
  const state = { changes: 0 };
  const group = () => { // the main block's children, in order, cut at every step
    const block = d.querySelector(
      '[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
    if (!block) return [];
    const out = [{ key: "intro", els: [], title: "" }];
    for (const el of block.children) {
      const s = el.matches(STEP) ? el : el.querySelector(":scope > " + STEP);
      if (s) {
        const h = s.querySelector("h2");
        out.push({ key: stepKey(s.className, config.prefix), els: [el],
                   title: h ? h.textContent.trim() : "" });
      } else out[out.length - 1].els.push(el);
    }
    const h1 = block.querySelector("h1");
    out[0].title = h1 ? h1.textContent.trim() : "Introduction";
    return out;
  };
  const scroller = () => d.querySelector('[data-testid="stMain"]');
  const show = () => {
    slides.forEach((s, i) => s.els.forEach((el) => {
      if (i === index) { if (el.hasAttribute("data-tfviz-off")) el.removeAttribute("data-tfviz-off"); }
      else if (!el.hasAttribute("data-tfviz-off")) el.setAttribute("data-tfviz-off", "");
    }));
    if (!bar) return;
    const text = barText(index, slides.map((s) => s.title));
    const where = bar.querySelector(".tfviz-where");
    if (where.textContent !== text) { where.textContent = text; where.title = text; }
    bar.querySelector('[data-go="-1"]').disabled = index === 0;
    bar.querySelector('[data-go="1"]').disabled = index >= slides.length - 1;
  };
  // A URL with this page's slide in it (Streamlit rewrites URLs after a run).
  const slideIn = (url) => (url === undefined || url === null || !active)
    ? url : withSlide(url, w.location.href, want !== null ? want : index + 1, PARAM);
  const push = w.history.pushState.bind(w.history);
  const replace = w.history.replaceState.bind(w.history);
  w.history.pushState = (s, t, url) => push(s, t, slideIn(url));
  w.history.replaceState = (s, t, url) => replace(s, t, slideIn(url));
  const resized = () => requestAnimationFrame(() => w.dispatchEvent(new Event("resize")));
  const go = (i) => {
    i = clamp(i, slides.length);
    want = null;
    if (i === index) return;
    index = i; key = slides[i].key; state.changes += 1;
    show();
    const sc = scroller(); if (sc) sc.scrollTop = 0;
    w.history.replaceState(w.history.state, "", w.location.href);
    resized();
  };
  const refresh = () => {
    queued = false;
    if (!on()) { if (active) sleep(); return; }
    if (!active) begin();
    if (w.location.pathname !== path) { path = w.location.pathname; key = null; want = null; index = 0; }
    slides = group();
    if (!slides.length) return;
    const was = index;
    ({ index, key, want } = settle(slides.map((s) => s.key), { index, key, want }));
    show();
    if (index !== was) resized();
  };
  const queue = () => { if (!queued) { queued = true; requestAnimationFrame(refresh); } };
  const leave = () => {
    const t = d.querySelector(`.st-key-${config.toggle} input[type="checkbox"]`);
    if (t) { t.click(); return; }
    const u = new URL(w.location.href); // no toggle on this page: reload without the flag
    u.searchParams.delete(config.param); u.searchParams.delete(PARAM);
    w.location.assign(u.toString());
  };
  const makeBar = () => {
    const b = d.createElement("div");
    b.id = "tfviz-present-bar"; b.setAttribute("role", "navigation");
    b.setAttribute("aria-label", "Presenter view");
    const add = (tag, text, attrs) => { // built node by node: st.html's sanitiser drops a
      const e = d.createElement(tag); // script whose text holds markup
      e.textContent = text;
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      b.appendChild(e);
    };
    add("button", "\u2190", { type: "button", "data-go": "-1", "aria-label": "Previous step" });
    add("button", "\u2192", { type: "button", "data-go": "1", "aria-label": "Next step" });
    add("span", "", { class: "tfviz-where" });
    add("button", "Leave presenter view", { type: "button", class: "tfviz-leave", title: "Esc" });
    b.addEventListener("click", (e) => {
      const t = e.target.closest("button"); if (!t) return;
      if (t.classList.contains("tfviz-leave")) leave(); else go(index + Number(t.dataset.go));
    });
    d.body.appendChild(b);
    return b;
  };
  const begin = () => { active = true; bar = makeBar(); };
  const sleep = () => { // presenter view was switched off: show the whole page again
    active = false;
    for (const el of d.querySelectorAll("[data-tfviz-off]")) el.removeAttribute("data-tfviz-off");
    if (bar) { bar.remove(); bar = null; }
    const u = new URL(w.location.href);
    if (u.searchParams.has(PARAM)) {
      u.searchParams.delete(PARAM);
      replace(w.history.state, "", u.pathname + u.search + u.hash);
    }
    key = null; index = 0; want = null;
    resized();
  };
  const below = (dir) => { // PageDown / Space: scroll a tall slide before moving on
    const sc = scroller(); if (!sc) return false;
    if (room(dir, sc) <= 2) return false;
    sc.scrollBy({ top: dir * Math.round(sc.clientHeight * 0.8), behavior: "instant" });
    return true;
  };
  d.addEventListener("keydown", (e) => {
    if (!active || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    const t = e.target instanceof Element ? e.target : null;
    if (t && t.closest(OWN_KEYS)) return;
    const k = e.key;
    if (k === "Escape") { e.preventDefault(); leave(); return; }
    if ((k === " " || k === "Enter") && t && t.closest(PRESSABLE)) return;
    const step = keyStep(k, e.shiftKey);
    if (!step) return;
    const dir = step.scroll && below(step.dir) ? 0 : step.dir;
    e.preventDefault();
    if (dir) go(index + dir);
  });
  const ours = (r) => bar && bar.contains(r.target);
  new MutationObserver((records) => {
    if (records.some((r) => !ours(r))) queue();
  }).observe(d.body, { childList: true, subtree: true });
  w.__tfvizPresent = Object.assign(state, {
    wake: queue, go: (n) => go(n - 1),
    slides: () => slides.map((s) => s.title), at: () => index + 1,
  });
  queue();
}
