#!/usr/bin/env bash
# Install everything the tests need on a fresh machine, then run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages: chromium for the browser tests, nginx for tests/test_serve_class.py,
# redis-server for the live-class store's Redis backend (the tests start their own, on free
# loopback ports; never the machine's).
MISSING=()
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then MISSING+=(chromium); fi
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then MISSING+=(nginx); fi
if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then MISSING+=(redis-server); fi
# node and npm: the browser code's unit tests and axe-core (Debian's npm brings nodejs).
if ! command -v npm >/dev/null 2>&1; then MISSING+=(npm); fi
if [ "${#MISSING[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${MISSING[@]}" >/dev/null
fi
# pip byte-compiles all it installs, 13,000 files in one process (torch is most of it, about
# 35 s here); the suite imports under a third of them. So pip installs without compiling, and the
# suite's own interpreters write the bytecode of what they import, once (our machines set
# PYTHONDONTWRITEBYTECODE=1, which would have every test server and worker compile torch,
# streamlit and tfviz again on each start; writing is atomic, so two at once is safe).
python3 -m pip install -q --no-compile -r requirements-dev.txt
unset PYTHONDONTWRITEBYTECODE
# Dev-only npm packages, installed beside the tests (tests/.npm, not in git), never part of the
# app: axe-core for the accessibility checks (tests/browser/test_every_page.py), and eslint
# (with its recommended rules and the browser's globals) for the browser's own code. Versions
# are pinned so that a new rule cannot turn the suite red on its own.
NPM_OK=0
if command -v npm >/dev/null 2>&1; then
  npm install --no-save --no-audit --no-fund --silent --prefix tests/.npm axe-core@4.14.1 \
    eslint@10.15.0 @eslint/js@10.0.1 globals@17.14.0 && NPM_OK=1 \
    || echo "npm could not install axe-core and eslint (no registry?): eslint is skipped, the accessibility test says so"
else echo "npm missing: eslint and the accessibility test are skipped (the latter fails under CI=true)"; fi
# The browser's own code (tfviz/ui/assets, eslint.config.mjs): eslint, then node's test runner
# on its pure functions (tests/js).
if [ "$NPM_OK" = 1 ]; then tests/.npm/node_modules/.bin/eslint tfviz/ui/assets tests/js eslint.config.mjs
elif [ "${CI:-}" = true ]; then echo "eslint could not be installed, and CI=true needs it"; exit 1; fi
if command -v node >/dev/null 2>&1; then node --test tests/js/; else echo "node missing: tests/js skipped"; fi
# Two workers (pytest-xdist), one per core: through the suite both cores are about 95% busy,
# two thirds of it chromium drawing pages (a third worker made it no faster); work-stealing
# keeps both busy to the end. Each worker starts its own servers for the browser tests (free
# ports, nothing shared on disk). The 30 slowest tests are listed at the end: the suite's time
# budget is 12 minutes, and this says where it goes.
python3 -m pytest -n 2 --dist worksteal --durations=30 tests tfviz "$@"
# Once more, on another thread count, the tests whose numbers are computed twice, in two places
# (78 tests, 20 s of CPU). The suite runs every torch op on one thread, as the server runs a
# page; with TFVIZ_TEST_THREADS=2 a test's own ops get two (tests/conftest.py) while the pages
# it runs keep one, and here two threads against one already move the last bits of gpt-tiny's
# logits (1.4e-6), as another CPU would: a tolerance that only held because both sides ran the
# same kernels fails.
# Chosen for that: app tests comparing a page's float32 numbers with the test's own trace, the
# stored tour numbers against a live one, two threads tracing one model, generation's KV cache
# against a re-run, and float32 model numbers against float64 recomputations. Not the browser
# tests (pages round to 4 decimals) nor GPT-2-small's pages (minutes). set -e: a failure here
# fails the script; no cache provider, so --lf still means the main run's failures.
TFVIZ_TEST_THREADS=2 python3 -m pytest -p no:cacheprovider \
  tests/test_tour_numbers.py \
  tests/app/test_foundations.py::test_tour_widgets_and_live_numbers \
  tests/app/test_chart_numbers_pages.py::test_the_forward_walk_numbers_are_the_models \
  tests/app/test_speed_helpers.py::test_multihead_page_draws_exactly_what_the_trace_holds \
  tests/app/test_attention_pages.py::test_scaling_every_widget \
  tests/app/test_first_tokens.py::test_a_gpt_prefix_sees_what_the_whole_text_saw_up_to_its_end \
  tests/app/test_long_sequences_page.py::test_linformer_line_is_mean_pooling_against_numpy \
  tests/app/test_embeddings_trained_page.py::test_rope_numbers_are_the_trained_models \
  tests/test_trace.py \
  tests/unit/decoding/test_generate.py::test_steps_hold_the_filtered_distribution \
  tests/unit/decoding/test_reference.py::test_each_step_keeps_the_models_own_probabilities_and_the_kept_mass \
  tests/test_coref_encoder.py::test_statement_items_find_it_and_both_nouns \
  tests/unit/analysis/test_attention.py
