// node --test tests/js: the pure part of tfviz/ui/assets/backend_base.js (where the app lives).
import assert from "node:assert/strict";
import { test } from "node:test";

import { backendBase, start } from "../../tfviz/ui/assets/backend_base.js";

const pages = ["tour", "self-attention", "home"];

test("a page's URL name is dropped, leaving the app's base", () => {
  assert.equal(backendBase("/tour", pages), "/");
  assert.equal(backendBase("/self-attention/", pages), "/");
  assert.equal(backendBase("/class/tour", pages), "/class/");
});

test("the home page's URL is the base itself", () => {
  assert.equal(backendBase("/", pages), "/");
  assert.equal(backendBase("", pages), "/");
  assert.equal(backendBase("/class/", pages), "/class/");
  assert.equal(backendBase("/class", pages), "/class/"); // not a page name: a prefix
});

test("only the last part can be a page name", () => {
  assert.equal(backendBase("/tour/class", pages), "/tour/class/");
  assert.equal(backendBase("/tours", pages), "/tours/");
});

function fakeWindow(href, before) {
  const url = new URL(href);
  return { location: { origin: url.origin, pathname: url.pathname }, __streamlit: before };
}

test("start hands Streamlit the base as an absolute URL, keeping what a host set", () => {
  const w = fakeWindow("http://localhost:8501/tour?present=1");
  start(w, { pages });
  assert.deepEqual(w.__streamlit, { BACKEND_BASE_URL: "http://localhost:8501/" });
  const hosted = fakeWindow("http://h:1/class/tour", { LIGHT_THEME: { base: "light" } });
  start(hosted, { pages });
  assert.deepEqual(hosted.__streamlit,
    { LIGHT_THEME: { base: "light" }, BACKEND_BASE_URL: "http://h:1/class/" });
});

test("a base a host has set already stands", () => {
  const w = fakeWindow("http://localhost:8501/tour", { BACKEND_BASE_URL: "http://elsewhere/" });
  start(w, { pages });
  assert.equal(w.__streamlit.BACKEND_BASE_URL, "http://elsewhere/");
});
