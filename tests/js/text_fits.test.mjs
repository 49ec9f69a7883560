// node --test tests/js: the pure parts of tests/js/text_fits.js (the browser tests' measure of
// text that fits its box; the rest of it reads a laid-out page, in tests/browser/text_fits.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import { lineCount, overrun, wordSpans } from "./text_fits.js";

const box = (top, bottom, left = 0, right = 10) => ({ top, bottom, left, right, width: right - left });

test("a word is letters and digits, with an apostrophe inside it", () => {
  assert.deepEqual(wordSpans("a b-cd"), [[0, 1], [2, 3], [4, 6]]);
  assert.deepEqual(wordSpans("didn't go"), [[0, 6], [7, 9]]);
  assert.deepEqual(wordSpans("13 · Encoder, decoder"), [[0, 2], [5, 12], [14, 21]]);
  assert.deepEqual(wordSpans("√d_k"), [[1, 4]]); // the root sign is not part of the word
  assert.deepEqual(wordSpans("Tokenizer (BPE)"), [[0, 9], [11, 14]]);
  assert.deepEqual(wordSpans("  · "), []);
});

test("boxes on one line count once; a heading's next line overlaps it a little", () => {
  assert.equal(lineCount([]), 0);
  assert.equal(lineCount([box(0, 37)]), 1);
  assert.equal(lineCount([box(0, 37), box(0, 37, 10, 20)]), 1); // two inline boxes, one line
  // "Foundation / s" as chromium measured it: glyph boxes 37 px tall on 33.6 px lines
  assert.equal(lineCount([box(384.4, 421.4, 380, 502), box(418.0, 455.0, 380, 407)]), 2);
  assert.equal(lineCount([box(0, 20), box(0, 20, 10, 10)]), 1); // a line's end takes no line
  assert.equal(lineCount([box(0, 20), box(20, 40), box(40, 60)]), 3);
});

test("text overruns a box by its furthest edge past either side, beyond a pixel", () => {
  const b = { left: 100, right: 200 };
  assert.equal(overrun([box(0, 10, 100, 200)], b), 0);
  assert.equal(overrun([box(0, 10, 100, 201)], b), 0); // grazing the edge is not cut
  assert.equal(overrun([box(0, 10, 120, 230.4)], b), 30);
  assert.equal(overrun([box(0, 10, 90, 150), box(10, 20, 100, 205)], b), 10);
  assert.equal(overrun([box(0, 10, 300, 300)], b), 0); // an empty box holds no text
});
