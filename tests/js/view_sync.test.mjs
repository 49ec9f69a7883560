// node --test tests/js: the pure parts of tfviz/ui/assets/view_sync.js (the page's view keys).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  absolute, canTake, fitted, merged, pngName, rangeProgress, reachable, relinked, scrollsSideways,
  shownPosition, startView,
} from "../../tfviz/ui/assets/view_sync.js";

test("the view starts from the keys the address names, and only those", () => {
  assert.deepEqual(startView("?layer=2&text=the+cat&head=0&slide=3", ["layer", "head", "query"]),
                   { layer: "2", head: "0" });
  assert.deepEqual(startView("", ["layer"]), {});
});

test("merged puts the view keys into a URL and keeps the rest", () => {
  const base = "http://h:8501/self-attention?layer=0&text=a+b";
  // Streamlit's own rewrite after a rerun knows only the keys the page opened with.
  assert.equal(merged("/self-attention?layer=0&text=a+b&model=gpt-tiny", { layer: "2", head: "1" }, base),
               "/self-attention?layer=2&text=a+b&model=gpt-tiny&head=1");
  // A relative address is read against the page's, and a hash stays.
  assert.equal(merged("masking#top", { query: "4" }, base), "/masking?query=4#top");
  assert.equal(merged(base, {}, base), "/self-attention?layer=0&text=a+b");
});

test("merged leaves an absent URL absent (pushState without one keeps the address)", () => {
  assert.equal(merged(undefined, { layer: "1" }, "http://h/"), undefined);
  assert.equal(merged(null, { layer: "1" }, "http://h/"), null);
});

test("a gradient named by a page address becomes same-document", () => {
  assert.equal(relinked('url("http://h:8501/self-attention?layer=2#gradient_0")'), 'url("#gradient_0")');
  assert.equal(relinked("url(http://h/p#gradient_3)"), "url(#gradient_3)");
  assert.equal(relinked("url('/p?a=1#g')"), "url('#g')");
  assert.equal(absolute("url(#gradient_0)"), false);
  assert.equal(relinked("url(#gradient_0)"), "url(#gradient_0)");
  assert.equal(relinked("#4c78a8"), "#4c78a8");
  assert.equal(absolute(null), false);
});

test("a slider takes values between its ends, a select box only its options", () => {
  const slider = { tagName: "INPUT", min: "0", max: "3" };
  assert.equal(canTake(slider, "0"), true);
  assert.equal(canTake(slider, "3"), true);
  assert.equal(canTake(slider, "4"), false);
  assert.equal(canTake(slider, "-1"), false);
  const select = { tagName: "SELECT", options: [{ value: "ln1" }, { value: "ln2" }] };
  assert.equal(canTake(select, "ln2"), true);
  assert.equal(canTake(select, "ln3"), false);
});

test("a fitted slider shows the learner's position kept below the length, else the default", () => {
  assert.equal(shownPosition("3", 8, 7), 3);
  assert.equal(shownPosition("12", 8, 7), 7); // past the end of an 8-token sentence: its last
  assert.equal(shownPosition("7", 8, 2), 7);
  assert.equal(shownPosition("0", 8, 5), 0);
  assert.equal(shownPosition(undefined, 8, 5), 5);
  assert.equal(shownPosition("", 8, 5), 5);
  assert.equal(shownPosition("12345", 8, 5), 5); // five digits: not a link's token
  assert.equal(shownPosition("-1", 8, 5), 5);
  assert.equal(shownPosition("2a", 8, 5), 5);
  // a slider counted from 1 (a step): 1..8
  assert.equal(shownPosition("0", 8, 3, 1), 1);
  assert.equal(shownPosition("9", 8, 3, 1), 8);
  assert.equal(shownPosition("8", 8, 3, 1), 8);
});

test("a length marker fits every slider it names, each to its own count", () => {
  const fit = JSON.stringify({ query: { n: 10, default: 6 }, pos: { n: 10, default: 9 } });
  assert.deepEqual(fitted(fit, {}), { query: { min: 0, max: 9, value: 6 },
                                      pos: { min: 0, max: 9, value: 9 } });
  // the learner chose query 3 and pos 14 (on a longer sentence): 3 stays, 14 becomes the last
  assert.deepEqual(fitted(fit, { query: "3", pos: "14", layer: "2" }),
                   { query: { min: 0, max: 9, value: 3 }, pos: { min: 0, max: 9, value: 9 } });
  // a target of its own length beside a source (an encoder-decoder), a step counted from 1
  const two = JSON.stringify({ query: { n: 4, default: 3 }, step: { n: 5, default: 1, from: 1 } });
  assert.deepEqual(fitted(two, { query: "7", step: "9" }),
                   { query: { min: 0, max: 3, value: 3 }, step: { min: 1, max: 5, value: 5 } });
});

test("a length marker's broken entries are left out, never half applied", () => {
  assert.deepEqual(fitted(undefined, {}), {});
  assert.deepEqual(fitted("", {}), {});
  assert.deepEqual(fitted("{not json", {}), {});
  assert.deepEqual(fitted("null", {}), {});
  assert.deepEqual(fitted("[1, 2]", {}), {}); // an array: no names
  const some = JSON.stringify({ query: { n: 0, default: 0 }, pos: { n: 3 },
                                head: { n: "3", default: 1 }, step: { n: 2.5, default: 1 },
                                neurons: null, layer: { n: 3, default: 1 } });
  assert.deepEqual(fitted(some, {}), { layer: { min: 0, max: 2, value: 1 } });
});

test("a PNG is named after its chart's title", () => {
  assert.equal(pngName("Layer 2, head 1: attention of it"), "Layer_2_head_1_attention_of_it.png");
  // Letters and signs from U+00C0 on stay (accents, quotes, arrows); ASCII punctuation goes.
  assert.equal(pngName("Scores → softmax (scaled)"), "Scores_→_softmax_scaled.png");
  assert.equal(pngName("“it”, layer 0"), "“it”_layer_0.png");
  assert.equal(pngName("Résumé über-tokens"), "Résumé_über-tokens.png");
  assert.equal(pngName(""), "tfviz_chart.png");
  assert.equal(pngName(undefined), "tfviz_chart.png");
  assert.equal(pngName("x".repeat(100)), "x".repeat(80) + ".png");
});

test("a fitted slider's track is filled up to its value, as Streamlit fills a moved one", () => {
  assert.equal(rangeProgress(0, 3, 0), "0%"); // the first head: nothing filled
  assert.equal(rangeProgress(0, 3, 3), "100%");
  assert.equal(rangeProgress(1, 11, 6), "50%"); // a step slider counted from 1
  assert.equal(rangeProgress(0, 0, 0), "0%"); // one position: nothing to fill
  assert.equal(rangeProgress(0, 4, 9), "100%"); // kept within the track
});

/** An element as far as `reachable` sees one: its widths and its attributes. */
function box(scrollWidth, clientWidth, attrs = {}) {
  const a = new Map(Object.entries(attrs));
  return {
    scrollWidth, clientWidth,
    getAttribute: (k) => (a.has(k) ? a.get(k) : null),
    hasAttribute: (k) => a.has(k),
    setAttribute: (k, v) => a.set(k, String(v)),
    removeAttribute: (k) => a.delete(k),
    attrs: a,
  };
}

test("a box scrolls sideways only when its content is wider than it (by more than rounding)", () => {
  assert.equal(scrollsSideways(box(400, 300)), true);
  assert.equal(scrollsSideways(box(301, 300)), false); // sub-pixel rounding, not a scroll bar
  assert.equal(scrollsSideways(box(300, 300)), false);
});

test("a box that scrolls gets a tab stop and a name; fitting again, it gives them back", () => {
  const el = box(600, 350);
  reachable(el, "Formula (scrolls sideways)");
  assert.equal(el.getAttribute("tabindex"), "0");
  assert.equal(el.getAttribute("role"), "region");
  assert.equal(el.getAttribute("aria-label"), "Formula (scrolls sideways)");
  el.clientWidth = 800; // a wider window
  reachable(el, "Formula (scrolls sideways)");
  assert.deepEqual([...el.attrs.keys()], []);
  const fits = box(300, 300);
  reachable(fits, "x");
  assert.deepEqual([...fits.attrs.keys()], []); // no tab stop where nothing scrolls
});

test("a box with a tab stop of its own keeps it, scrolling or not", () => {
  const own = box(600, 350, { tabindex: "-1" });
  reachable(own, "x");
  assert.deepEqual([...own.attrs.entries()], [["tabindex", "-1"]]);
  own.clientWidth = 800;
  reachable(own, "x");
  assert.deepEqual([...own.attrs.entries()], [["tabindex", "-1"]]);
});
