// node --test tests/js: the pure parts of tfviz/ui/assets/view_report.js (the teacher's view).
import assert from "node:assert/strict";
import { test } from "node:test";

import { current, isNews } from "../../tfviz/ui/assets/view_report.js";

const keys = ["layer", "head", "step"];

test("the view script's keys come first, then what the charts' inputs show", () => {
  const inputs = { head: "3", step: "1" };
  const shown = (k) => (k in inputs ? inputs[k] : null);
  assert.deepEqual(current({ layer: 2, head: "0" }, keys, shown), { layer: "2", head: "0", step: "1" });
});

test("a key with no value and no input on the page is left out", () => {
  assert.deepEqual(current({}, keys, () => null), {});
  assert.deepEqual(current({ query: "4" }, keys, () => null), {});
});

test("a view is news when it differs from the server's and was not said already", () => {
  const known = { layer: "0", head: "0", step: "0" };
  const now = { layer: "2", head: "0", step: "0" };
  assert.equal(isNews(now, known, undefined), true);
  assert.equal(isNews(now, known, JSON.stringify(now)), false); // reported once
  assert.equal(isNews({ ...known }, known, undefined), false);
  assert.equal(isNews({ layer: "0" }, known, undefined), false); // a part, all known
});
