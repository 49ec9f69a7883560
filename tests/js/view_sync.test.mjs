// node --test tests/js: the pure parts of tfviz/ui/assets/view_sync.js (the page's view keys).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  absolute, canTake, merged, pngName, relinked, shownQuery, startView,
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

test("the query slider shows the learner's token kept below the length, else the default", () => {
  assert.equal(shownQuery("3", 8, 7), 3);
  assert.equal(shownQuery("12", 8, 7), 7); // past the end of an 8-token sentence: its last
  assert.equal(shownQuery(undefined, 8, 5), 5);
  assert.equal(shownQuery("", 8, 5), 5);
  assert.equal(shownQuery("12345", 8, 5), 5); // five digits: not a link's token
  assert.equal(shownQuery("-1", 8, 5), 5);
  assert.equal(shownQuery("2a", 8, 5), 5);
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
