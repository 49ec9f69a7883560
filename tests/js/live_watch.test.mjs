// node --test tests/js: the pure parts of tfviz/ui/assets/live_watch.js.
import assert from "node:assert/strict";
import { test } from "node:test";

import { moveView, viewOnly } from "../../tfviz/ui/assets/live_watch.js";

const same = { lesson: "masking", text: "the cat", model: "gpt-tiny", checkin_phase: "" };

test("a move of the view alone is made in the browser", () => {
  assert.equal(viewOnly({ ...same, version: 4, layer: 2, head: 1, step: 0 }, same), true);
});

test("a new page, sentence, model or check-in needs the server", () => {
  for (const change of [{ lesson: "tokenizer" }, { text: "the dog" }, { model: "bert-tiny" },
                        { checkin_phase: "before" }]) {
    assert.equal(viewOnly({ ...same, ...change, version: 5, layer: 0 }, same), false);
  }
});

test("moveView sets the view keys as strings and adopts them", () => {
  let adopted = 0;
  const replaced = [];
  const w = {
    __tfvizViews: { view: { layer: "0", head: "0", step: "0", token: "3" }, adopt: () => { adopted += 1; } },
    history: { state: null, replaceState: (...args) => replaced.push(args) },
    location: { href: "http://x/masking?layer=0" },
  };
  assert.equal(moveView(w, { layer: 2, head: 1, step: 5, lesson: "masking" }), true);
  assert.deepEqual(w.__tfvizViews.view, { layer: "2", head: "1", step: "5", token: "3" });
  assert.equal(adopted, 1);
  assert.equal(w.__tfvizViewMoves, 1);
  assert.equal(replaced.length, 1);
});

test("moveView without the page's view script leaves it to a run", () => {
  assert.equal(moveView({}, { layer: 1, head: 1, step: 1 }), false);
});

test("a change of the question or its countdown is not a view move; the same question is", () => {
  const same = { lesson: "exercises", question: ["flying-arrows", "weights"], deadline: 0 };
  assert.equal(viewOnly({ ...same, question: ["flying-arrows", "weights"], layer: 2 }, same), true);
  assert.equal(viewOnly({ ...same, question: ["flying-arrows", "scores"] }, same), false);
  assert.equal(viewOnly({ ...same, deadline: 1765150000.5 }, same), false);
});
