// A following student's page takes the teacher's view (layer, head, step) after a run of the
// follower (tfviz.ui.live): the instant charts move in the browser, and the URL keeps in step.
// On a new page the view script (view_sync.js) is drawn after this one, so this waits for it
// (every 100 ms, 5 s at most).
// config: {view: {layer: "2", head: "1", step: "0"}, stamp: 7}  (stamp: the class's version
// this move applies; a new one makes a new element, which runs again)

/** Show `view` on the page through its view script (window.__tfvizViews): false when the
 * page has none yet. */
export function moveView(w, view) {
  const v = w.__tfvizViews;
  if (!v) return false;
  w.__tfvizViewMoves = (w.__tfvizViewMoves || 0) + 1; // the browser tests count them
  Object.assign(v.view, view);
  v.adopt();
  w.history.replaceState(w.history.state, "", w.location.href);
  return true;
}

export function start(w, config) {
  const go = (tries) => {
    if (!moveView(w, config.view) && tries < 50) setTimeout(() => go(tries + 1), 100);
  };
  go(0);
}
