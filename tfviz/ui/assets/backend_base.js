// Tell Streamlit's frontend where its server is before it starts (tfviz.ui.index_page).
// Opened at a lesson's own URL (/tour), the frontend does not know whether the app lives at
// /tour or at /, so it asks /tour/_stcore/health first, is told 404, waits 100 ms and asks
// /_stcore/health: every link straight to a lesson paid that detour. A page's URL is the
// app's base followed by one of our page names, so the base is known here, and Streamlit
// reads it from window.__streamlit.BACKEND_BASE_URL (its setting for apps hosted elsewhere).
// config: {pages: ["tour", "tokens", ...]}  (every page's URL name; home is the base itself)

/** The app's base path for a page's path: "/tour" -> "/", "/class/tour" -> "/class/",
 * "/" -> "/". A last part that is not one of `pages` is part of the base. */
export function backendBase(pathname, pages) {
  const parts = pathname.replace(/\/+$/, "").split("/");
  if (parts.length > 1 && pages.includes(parts[parts.length - 1])) parts.pop();
  return parts.join("/").replace(/\/*$/, "/");
}

export function start(w, config) {
  if (w.__streamlit && w.__streamlit.BACKEND_BASE_URL) return; // a host has said already
  const base = w.location.origin + backendBase(w.location.pathname, config.pages);
  w.__streamlit = { ...(w.__streamlit || {}), BACKEND_BASE_URL: base };
}
