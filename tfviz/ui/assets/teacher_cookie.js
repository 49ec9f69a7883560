// A teacher's class is remembered in a cookie of the teacher's browser (tfviz.ui.live_push):
// if the replica that served the teacher dies, or the server restarts, the page reconnects as
// a new session, which finds the class (and its key) in the cookie its websocket request
// carries. Set when the class starts, for as long as an idle class lives; cleared at its end
// (an empty value that expires at once).
// config: {name: "tfviz_teacher", value: "K7QM4XPD.key", maxAge: 21600}

/** The cookie's text: "tfviz_teacher=K7QM.k; Path=/; Max-Age=60; SameSite=Strict". */
export function cookieText(name, value, maxAge) {
  return `${name}=${value}; Path=/; Max-Age=${maxAge}; SameSite=Strict`;
}

export function start(w, config) {
  w.document.cookie = cookieText(config.name, config.value, config.maxAge);
}
