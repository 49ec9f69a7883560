// eslint for the browser's own code (tfviz/ui/assets/*.js), the browser tests' own (tests/js/*.js)
// and the node tests (tests/js/*.mjs):
// tests/.npm/node_modules/.bin/eslint (scripts/test.sh installs it and runs it).
// eslint and its two helpers are dev-only npm packages installed into tests/.npm (not in git),
// so they are loaded from there rather than from a node_modules beside this file.
import { createRequire } from "node:module";

const require = createRequire(new URL("./tests/.npm/", import.meta.url));
const js = require("@eslint/js");
const globals = require("globals");

export default [
  { ignores: ["tests/.npm/", "bench/out/", "tests/screenshots/"] },
  js.configs.recommended,
  {
    files: ["tfviz/ui/assets/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser },
    },
  },
  {
    // test-only browser code: what the browser tests load into the page under test
    files: ["tests/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser },
    },
  },
  {
    files: ["tests/js/**/*.mjs", "eslint.config.mjs"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: { ...globals.node } },
  },
  {
    rules: {
      "no-undef": "error",
      "no-unused-vars": "error",
      eqeqeq: "error",
      "prefer-const": "error",
      "no-var": "error",
    },
  },
];
