// node --test tests/js: the pure part of tfviz/ui/assets/countdown.js (a live class's countdown).
import assert from "node:assert/strict";
import { test } from "node:test";

import { label } from "../../tfviz/ui/assets/countdown.js";

test("minutes and seconds left, a started second counted whole", () => {
  assert.equal(label(65), "1:05 left");
  assert.equal(label(59.01), "1:00 left");
  assert.equal(label(0.2), "0:01 left");
  assert.equal(label(600), "10:00 left");
});

test("at zero, below it, or with nothing to count, there is no time left", () => {
  for (const s of [0, -3, NaN, undefined, null]) assert.equal(label(s), null);
});
