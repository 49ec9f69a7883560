// node --test tests/js: the pure parts of tfviz/ui/assets/presenter.js (presenter view).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  asked, barText, clamp, keyStep, room, settle, stepKey, withSlide,
} from "../../tfviz/ui/assets/presenter.js";

test("a link asks for a slide by its number, from 1", () => {
  assert.equal(asked("?present=1&slide=3", "slide"), 3);
  assert.equal(asked("?slide=12abc", "slide"), 12); // parseInt reads the leading digits
  for (const bad of ["?slide=0", "?slide=-2", "?slide=x", "?present=1", ""]) {
    assert.equal(asked(bad, "slide"), null, bad);
  }
});

test("a step's key is read from its container's classes", () => {
  assert.equal(stepKey("stVerticalBlock st-key-tfviz-step-2-what-large-scores-do emotion-x",
                       "tfviz-step-"), "st-key-tfviz-step-2-what-large-scores-do");
  assert.equal(stepKey("stVerticalBlock st-key-sidebar", "tfviz-step-"), "");
  // The prefix is taken as written, not as a pattern: "." matches only a dot.
  assert.equal(stepKey("st-key-aXb-1", "a.b-"), "");
  assert.equal(stepKey("st-key-a.b-1", "a.b-"), "st-key-a.b-1");
});

test("the URL carries the slide on this page, from slide 2 on", () => {
  const here = "http://h/masking?present=1&slide=2";
  assert.equal(withSlide("/masking?present=1&model=gpt-tiny", here, 4, "slide"),
               "/masking?present=1&model=gpt-tiny&slide=4");
  assert.equal(withSlide(here, here, 1, "slide"), "/masking?present=1"); // slide 1: no key
  // Another page starts at its own first slide.
  assert.equal(withSlide("/scaling?present=1&slide=2", here, 3, "slide"), "/scaling?present=1");
});

test("a step past either end stays on the deck", () => {
  assert.equal(clamp(-1, 5), 0);
  assert.equal(clamp(5, 5), 4);
  assert.equal(clamp(2, 5), 2);
});

test("the bar names the slide and its place", () => {
  assert.equal(barText(1, ["Masking", "1 · Why mask", "2 · The triangle"]), "2 / 3 · 1 · Why mask");
  assert.equal(barText(0, []), "1 / 0 · ");
});

const keys = ["intro", "st-key-tfviz-step-a", "st-key-tfviz-step-b", "st-key-tfviz-step-c"];

test("after a redraw the same slide stays, found by its key", () => {
  assert.deepEqual(settle(keys, { index: 1, key: "st-key-tfviz-step-b", want: null }),
                   { index: 2, key: "st-key-tfviz-step-b", want: null });
});

test("a slide whose key is gone keeps its place, within the deck", () => {
  assert.deepEqual(settle(keys, { index: 2, key: "st-key-tfviz-step-gone", want: null }),
                   { index: 2, key: "st-key-tfviz-step-b", want: null });
  assert.deepEqual(settle(keys.slice(0, 2), { index: 3, key: null, want: null }),
                   { index: 1, key: "st-key-tfviz-step-a", want: null });
});

test("a link's slide waits until the page has drawn that far", () => {
  // Slide 4 asked, two slides drawn so far: the last one shows, the wish stays.
  assert.deepEqual(settle(keys.slice(0, 2), { index: 0, key: null, want: 4 }),
                   { index: 1, key: null, want: 4 });
  // Drawn far enough: slide 4 (index 3), and the wish is met.
  assert.deepEqual(settle(keys, { index: 1, key: null, want: 4 }),
                   { index: 3, key: "st-key-tfviz-step-c", want: null });
});

test("arrows step at once; PageDown, PageUp and Space scroll a tall slide first", () => {
  assert.deepEqual(keyStep("ArrowRight", false), { dir: 1, scroll: false });
  assert.deepEqual(keyStep("ArrowLeft", true), { dir: -1, scroll: false });
  assert.deepEqual(keyStep("PageDown", false), { dir: 1, scroll: true });
  assert.deepEqual(keyStep(" ", false), { dir: 1, scroll: true });
  assert.deepEqual(keyStep(" ", true), { dir: -1, scroll: true });
  assert.deepEqual(keyStep("PageUp", false), { dir: -1, scroll: true });
  assert.equal(keyStep("Enter", false), null);
  assert.equal(keyStep("a", false), null);
});

test("room is what a slide can still scroll", () => {
  const box = { scrollHeight: 2000, clientHeight: 800, scrollTop: 300 };
  assert.equal(room(1, box), 900); // 2000 - 800 - 300
  assert.equal(room(-1, box), 300);
});
