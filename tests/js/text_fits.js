// Text that fits its box, read off a page as the browser laid it out (test-only browser code:
// tests/browser/text_fits.py loads it into the page under test; node's test runner checks its
// pure parts in tests/js/text_fits.test.mjs). Two ways text stops being readable:
//
// - a heading broken inside a word ("Foundation / s"): a column too narrow for its longest
//   word, which CSS's overflow-wrap then splits. Each word of a heading is measured with a
//   Range: a word on one line has all its boxes on that line.
// - text cut at its box's edge ("4 · Attention as so", "Explore on …"): an element that hides
//   what overflows it sideways (overflow hidden or clip, with or without an ellipsis), holding
//   text that runs past its edge. Scroll boxes do not count: what they hide can be scrolled to.
//
// Text inside SVG and canvas (Vega's charts) is not read here: Vega shortens a label itself
// (labelLimit) before it draws it, so the page never holds the longer text to compare with.

// A word: letters, digits and marks, with an apostrophe inside ("didn't"). A break at a space,
// after a hyphen or at a slash falls between two words, so it is never a break inside one.
const WORD = /[\p{L}\p{N}\p{M}_]+(?:['\u2019][\p{L}\p{N}\p{M}_]+)*/gu;

/** Where the words of `text` start and end: "a b-cd" -> [[0, 1], [2, 3], [4, 6]]. */
export function wordSpans(text) {
  return Array.from(text.matchAll(WORD), (m) => [m.index, m.index + m[0].length]);
}

/** How many lines some boxes of text sit on: boxes that share more than half their height
 * share a line (a heading's glyph boxes are taller than its lines, so the boxes of two lines
 * overlap a little); boxes with no width (a line's end) take no line. */
export function lineCount(rects) {
  const lines = [];
  const shared = (r, l) => Math.min(r.bottom, l.bottom) - Math.max(r.top, l.top) >
    Math.min(r.bottom - r.top, l.bottom - l.top) / 2;
  for (const r of rects) {
    if (r.width <= 0) continue;
    const line = lines.find((l) => shared(r, l));
    if (line) {
      line.top = Math.min(line.top, r.top);
      line.bottom = Math.max(line.bottom, r.bottom);
    } else {
      lines.push({ top: r.top, bottom: r.bottom });
    }
  }
  return lines.length;
}

/** How far boxes of text run past a box's left or right edge, in px (0 when all are inside,
 * within `slack` px: text that grazes its box's edge is not cut). */
export function overrun(rects, box, slack = 1) {
  let most = 0;
  for (const r of rects) {
    if (r.width <= 0) continue;
    most = Math.max(most, r.right - box.right, box.left - r.left);
  }
  return most > slack ? Math.round(most) : 0;
}

/** An element's place in a report: sidebar or main, the nearest element with a data-testid,
 * and its own tag ("sidebar stSidebarNavLink span"). */
export function where(el) {
  const side = el.closest('[data-testid="stSidebar"]') ? "sidebar" : "main";
  const named = el.closest("[data-testid]");
  const id = named ? named.getAttribute("data-testid") : "page";
  return `${side} ${named === el ? id : `${id} ${el.tagName.toLowerCase()}`}`;
}

const short = (text) => {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > 80 ? `${t.slice(0, 77)}...` : t;
};

function shown(el) {
  const s = getComputedStyle(el);
  return s.display !== "none" && s.visibility !== "hidden" && el.getClientRects().length > 0;
}

// Where no text of the page's own is: Vega's drawings (thousands of SVG marks on a long text's
// page, not walked at all) and code
const NOT_TEXT = new Set(["svg", "canvas", "script", "style", "noscript", "iframe"]);

// The nodes under `root` (itself excluded) that `what` shows (NodeFilter.SHOW_...), outside
// NOT_TEXT; text nodes only when they hold more than white space
function under(root, what) {
  const doc = root.ownerDocument || root;
  const walker = doc.createTreeWalker(root, what, {
    acceptNode: (node) => {
      if (node.nodeType === Node.TEXT_NODE) {
        return node.data.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
      }
      return NOT_TEXT.has(node.localName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
    },
  });
  const out = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) out.push(n);
  return out;
}

const textNodes = (root) => under(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT)
  .filter((n) => n.nodeType === Node.TEXT_NODE);
const htmlElements = (root) => under(root, NodeFilter.SHOW_ELEMENT);

function rectsOf(node, start = 0, end = node.data.length) {
  const range = node.ownerDocument.createRange();
  range.setStart(node, start);
  range.setEnd(node, end);
  return Array.from(range.getClientRects());
}

/** Every word, in the elements `selector` finds, that the browser broke across lines. */
export function brokenWords(doc, selector) {
  const found = [];
  for (const el of doc.querySelectorAll(selector)) {
    if (!shown(el)) continue;
    for (const node of textNodes(el)) {
      for (const [start, end] of wordSpans(node.data)) {
        const lines = lineCount(rectsOf(node, start, end));
        if (lines > 1) {
          found.push({ kind: "broken", where: where(el), text: short(el.textContent),
                       detail: `"${node.data.slice(start, end)}" on ${lines} lines` });
        }
      }
    }
  }
  return found;
}

// Does this element hide what runs past its left or right edge (not by scrolling)? An
// ellipsis needs that too: on a box whose overflow shows, text-overflow does nothing.
function hides(style) {
  return style.overflowX === "hidden" || style.overflowX === "clip";
}

// A box made to hide its content from sight, for screen readers only (1 px, or clipped away)
function screenReaderOnly(el, style) {
  return el.clientWidth <= 1 || el.clientHeight <= 1 || style.clip !== "auto" ||
    style.clipPath !== "none";
}

/** Every element under `root` that hides text running past its edge: its text, and by how
 * many px the text runs past (an ellipsis in the box shows that it cuts, whatever the px). */
export function clippedText(root) {
  const found = [];
  const cut = [];
  for (const el of htmlElements(root)) {
    const style = getComputedStyle(el);
    if (!hides(style) || el.scrollWidth <= el.clientWidth + 1) continue;
    if (screenReaderOnly(el, style) || !shown(el)) continue;
    const nodes = textNodes(el);
    if (!nodes.length) continue;
    const box = el.getBoundingClientRect();
    const inner = { left: box.left + el.clientLeft, right: box.left + el.clientLeft + el.clientWidth };
    const px = Math.max(0, ...nodes.map((n) => overrun(rectsOf(n), inner)));
    const ellipsis = style.textOverflow === "ellipsis";
    if (px || ellipsis) {
      cut.push(el);
      found.push({ kind: "clipped", where: where(el), text: short(el.textContent),
                   detail: px ? `runs ${px} px past its box (${el.clientWidth} px)`
                     : `cut with an ellipsis (${el.scrollWidth} px in ${el.clientWidth} px)` });
    }
  }
  // One report a cut: the innermost box that cuts (its ancestors overflow because of it)
  return found.filter((_, i) => !cut.some((other, j) => j !== i && cut[i].contains(other)));
}

/** The page itself, or its main area, scrolling sideways: something in it is wider than the
 * screen and pushes every line of the page along with it. */
export function sideways(doc) {
  const found = [];
  for (const el of [doc.documentElement, doc.querySelector('[data-testid="stMain"]')]) {
    if (el && el.scrollWidth > el.clientWidth + 1) {
      found.push({ kind: "sideways", where: where(el), text: "",
                   detail: `scrolls sideways: ${el.scrollWidth} px in ${el.clientWidth} px` });
    }
  }
  return found;
}

/** Every check on a page: headings (`selector`) broken inside a word, text cut by its box,
 * the page scrolling sideways. */
export function measure(doc, selector) {
  return brokenWords(doc, selector).concat(clippedText(doc.body), sideways(doc));
}
