// A following student's page waits for the teacher's next move: it holds a request to
// /_tfviz/live/CODE?after=VERSION open (the server answers when the class passes VERSION, or
// after 20 s with the class as it is then). Failed requests back off up to 5 s.
//   - A move of the charts' view alone (layer, head, step; the same lesson, sentence, model
//     and check-in as this page shows) is made here, in the browser: nothing runs on the
//     server, and the page keeps waiting.
//   - Any other move (a new page, sentence, model or check-in), or a class that has ended,
//     starts one run of the follower (setStateValue), which applies it.
// data: {path: "_tfviz/live/K7QM4XPD", after: 7, same: {lesson, text, model, checkin_phase}}
const VIEW_KEYS = ["layer", "head", "step"];

/** Whether the reply changed nothing but the view: every key of `same` (what this page shows:
 * lesson, sentence, model, check-in, and the question's pacing when the reply carries it) is
 * as the page has it. Lists (a question's [exercise, box]) compare by their contents. */
export function viewOnly(said, same) {
  return Object.keys(same).every((k) => JSON.stringify(said[k]) === JSON.stringify(same[k]));
}

export function moveView(w, said) {
  const v = w.__tfvizViews; // the page's view script (tfviz.ui.views)
  if (!v) return false;
  const view = {};
  for (const k of VIEW_KEYS) view[k] = String(said[k]);
  w.__tfvizViewMoves = (w.__tfvizViewMoves || 0) + 1; // the browser tests count them
  Object.assign(v.view, view);
  v.adopt();
  w.history.replaceState(w.history.state, "", w.location.href);
  return true;
}

export default function ({ data, setStateValue }) {
  const w = window;
  if (w.__tfvizLiveWatch) w.__tfvizLiveWatch(); // a new run of the follower: one loop only
  const abort = new AbortController();
  let stopped = false;
  let after = data.after;
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  (async () => {
    let backoff = 0;
    while (!stopped) {
      try {
        const url = new URL(data.path, document.baseURI);
        url.searchParams.set("after", String(after));
        const reply = await fetch(url, { signal: abort.signal, cache: "no-store" });
        if (!reply.ok) throw new Error(String(reply.status));
        const said = await reply.json();
        backoff = 0;
        if (said.status === "busy") {
          backoff = 1000;
        } else if (said.status) { // ended, or this replica does not know the class yet
          setStateValue("moved", `${said.status}@${Date.now()}`);
          return;
        } else if (typeof said.version === "number" && said.version > after) {
          w.__tfvizLiveMoves = (w.__tfvizLiveMoves || 0) + 1;
          if (viewOnly(said, data.same) && moveView(w, said)) {
            after = said.version; // moved here; wait for the next one
          } else {
            setStateValue("moved", String(said.version));
            return;
          }
        }
      } catch { // a failed request (or this loop stopped): try again, more slowly
        if (stopped) return;
        backoff = Math.min(Math.max(backoff * 2, 250), 5000);
      }
      if (backoff) await pause(backoff);
    }
  })();
  w.__tfvizLiveWatch = () => {
    stopped = true;
    abort.abort();
  };
  return w.__tfvizLiveWatch;
}
