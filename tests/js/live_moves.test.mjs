// node --test tests/js: the teacher's cookie (teacher_cookie.js) and a student's view move
// after a run of the follower (view_move.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { cookieText, start as setCookie } from "../../tfviz/ui/assets/teacher_cookie.js";
import { moveView } from "../../tfviz/ui/assets/view_move.js";

test("the teacher's cookie names the class for six hours, and clears it with 0", () => {
  assert.equal(cookieText("tfviz_teacher", "K7QM4XPD.s3cr3t", 21600),
               "tfviz_teacher=K7QM4XPD.s3cr3t; Path=/; Max-Age=21600; SameSite=Strict");
  const w = { document: { cookie: "" } };
  setCookie(w, { name: "tfviz_teacher", value: "", maxAge: 0 });
  assert.equal(w.document.cookie, "tfviz_teacher=; Path=/; Max-Age=0; SameSite=Strict");
});

test("a student's page takes the teacher's view through its view script", () => {
  let adopted = 0;
  const replaced = [];
  const w = {
    __tfvizViews: { view: { layer: "0", head: "0", query: "3" }, adopt: () => { adopted += 1; } },
    history: { state: { s: 1 }, replaceState: (...args) => replaced.push(args) },
    location: { href: "http://x/masking?layer=0" },
  };
  assert.equal(moveView(w, { layer: "2", head: "1", step: "0" }), true);
  assert.deepEqual(w.__tfvizViews.view, { layer: "2", head: "1", step: "0", query: "3" });
  assert.equal(adopted, 1);
  assert.equal(w.__tfvizViewMoves, 1);
  assert.deepEqual(replaced, [[{ s: 1 }, "", "http://x/masking?layer=0"]]);
});

test("before the page's view script is drawn, the move waits", () => {
  const w = {};
  assert.equal(moveView(w, { layer: "1" }), false);
  assert.equal(w.__tfvizViewMoves, undefined);
});
