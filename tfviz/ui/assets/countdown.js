// A live class's countdown, ticking in the browser: the server says how many seconds were
// left when it drew the page, and this counts them down each second with no run on the
// server (a run per second per student would cost a hall of 300 students 300 runs a second).
// At zero it says that time is up; the store refuses later answers in words of its own.
// config: {id: "tfviz-countdown", left: 42.3, up: "Time is up: ..."}
//   id: the element whose text is the countdown; left: seconds left when drawn;
//   up: what it says at zero.

/** "1:05 left" for 65 s; "0:01 left" for 0.2 s (a partial second still counts); null at 0. */
export function label(seconds) {
  if (!(seconds > 0)) return null;
  const whole = Math.ceil(seconds);
  const m = Math.floor(whole / 60);
  const s = String(whole % 60).padStart(2, "0");
  return `${m}:${s} left`;
}

export function start(w, config) {
  const end = w.performance.now() + config.left * 1000;
  const tick = () => {
    const el = w.document.getElementById(config.id);
    if (!el) return false; // the page drew something else: this countdown is over
    const left = label((end - w.performance.now()) / 1000);
    el.textContent = left === null ? config.up : left;
    return left !== null;
  };
  const key = `__tfvizCountdown_${config.id}`;
  if (w[key]) w.clearInterval(w[key]); // a newer drawing of the same countdown replaces it
  if (tick()) {
    w[key] = w.setInterval(() => {
      if (!tick()) w.clearInterval(w[key]);
    }, 250);
  }
}
