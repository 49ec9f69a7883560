// A teacher's page reports its charts' view (layer, head, step) to the server, which pushes it
// to the class (tfviz.ui.live_push.teacher_beacon draws this component in the sidebar). The
// view moves in the browser with no run (view_sync.js), so the server would never hear of it.
//   - The view is the view script's current keys (moved inputs, the URL's), and for a key it
//     never saw, the first chart input of that name on the page (what the charts show).
//   - It is reported when it differs from what the server knows, and once: one run of the
//     teacher's fragment per move, none while the teacher does not move.
//   - A moved chart input is reported at once; a slow check catches a view set any other way.
// data: {keys: ["layer", "head", "step"], known: {layer: "0", head: "1", step: "0"}}

/** The view to report: for each of `keys`, the view script's value, else what `shown(key)`
 * says the page's first chart input of that name holds (null: no such input, left out). */
export function current(view, keys, shown) {
  const out = {};
  for (const k of keys) {
    if (k in view) { out[k] = String(view[k]); continue; }
    const value = shown(k);
    if (value !== null) out[k] = String(value);
  }
  return out;
}

/** Whether `now` is news: some key differs from what the server knows, and it is not the
 * view this page last reported (`said`, as JSON). */
export function isNews(now, known, said) {
  return Object.entries(now).some(([k, v]) => known[k] !== v) && JSON.stringify(now) !== said;
}

export default function ({ data, setStateValue }) {
  const w = window;
  const shown = (k) => {
    const el = document.querySelector(
      `.vega-bind input[name="${k}"], .vega-bind select[name="${k}"]`);
    return el ? el.value : null;
  };
  const check = () => { // report a view the server does not know yet, once
    const now = current((w.__tfvizViews && w.__tfvizViews.view) || {}, data.keys, shown);
    if (isNews(now, data.known, w.__tfvizViewSaid)) {
      w.__tfvizViewSaid = JSON.stringify(now);
      setStateValue("view", now);
    }
  };
  // A moved chart input is reported at once (the view script, listening since the page
  // loaded, has already taken it); a slow check catches a view set any other way.
  if (w.__tfvizViewReport) w.__tfvizViewReport(); // this function runs again when data changes
  const onInput = () => setTimeout(check, 0);
  document.addEventListener("input", onInput, true);
  document.addEventListener("change", onInput, true);
  const timer = setInterval(check, 500);
  w.__tfvizViewReport = () => {
    clearInterval(timer);
    document.removeEventListener("input", onInput, true);
    document.removeEventListener("change", onInput, true);
  };
  check();
  return w.__tfvizViewReport;
}
