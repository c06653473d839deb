#!/usr/bin/env bash
# The whole check, README command 2 and CI: lint, frontend type check and unit tests, the check that the
# committed bundle in tb_plugin/profscope/static matches frontend/src, then the Python tests: all of them
# (browser tests included) in .venv with the newest TensorBoard/protobuf, and again those that face
# TensorBoard (but the views' browser tests) in .venv-pb4 with TensorBoard 2.20 on protobuf 4.25, each
# pass spread over pytest-xdist workers. Needs python3 >= 3.10, Node.js >= 20.19 with npm, git, and
# Debian's chromium for the browser tests (which fail rather than skip here; firefox-esr for Firefox's).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
export PROFSCOPE_REQUIRE_BROWSER=1
# pytest-xdist workers per pass (PROFSCOPE_TEST_WORKERS; 0 runs the tests in pytest's own process): by
# default one per core this process may use (its CPU affinity and its cgroup's quota, which a container's
# core count does not show), at least 2 (most tests wait on other processes) and at most 4 (each worker
# may run a TensorBoard, a browser and an ingest child at once).
usable_cores() {
  local n quota period
  n="$(nproc)"
  if [ -r /sys/fs/cgroup/cpu.max ] && read -r quota period < /sys/fs/cgroup/cpu.max && [ "$quota" != max ]; then
    quota=$(( (quota + period - 1) / period ))
    [ "$quota" -ge "$n" ] || n="$quota"
  fi
  [ "$n" -ge 2 ] || n=2
  [ "$n" -le 4 ] || n=4
  echo "$n"
}
WORKERS="${PROFSCOPE_TEST_WORKERS:-$(usable_cores)}"
# A module's tests stay on one worker, so what a module starts once (a server, an ingest) is not
# started again per worker.
PARALLEL=(-n "$WORKERS" --dist loadfile)

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

# Two parts run in the background while the Python tests run, each into a log printed when it is
# joined: the frontend's checks (they need no Python) and the older stack's environment (pip's
# downloads and bytecode compiling overlap the tests' waits on servers and browsers).
background=()
logs="$(mktemp -d)"
trap 'for pid in "${background[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$logs"' EXIT
join() {  # join PID NAME: print the part's log; stop here if it failed
  local status=0
  wait "$1" || status=$?
  step "$2 (ran in the background)"
  cat "$logs/$2.log"
  if [ "$status" -ne 0 ]; then
    echo "$2 failed (exit status $status)" >&2
    exit "$status"
  fi
}

frontend_checks() {
  set -euo pipefail
  step "frontend: npm ci, type check, unit tests"
  npm --prefix frontend ci --no-audit --no-fund
  npm --prefix frontend run typecheck
  npm --prefix frontend test
  step "frontend: committed bundle matches the sources"
  npm --prefix frontend run build
  if ! git diff --exit-code --stat -- tb_plugin/profscope/static; then
    echo "tb_plugin/profscope/static is stale: commit the output of 'npm --prefix frontend run build'" >&2
    return 1
  fi
  local untracked
  untracked="$(git ls-files --others --exclude-standard -- tb_plugin/profscope/static)"
  if [ -n "$untracked" ]; then
    printf 'build outputs not committed:\n%s\n' "$untracked" >&2
    return 1
  fi
}

# The older stack differs from .venv in exactly the two pins of constraints-protobuf4.txt, so .venv-pb4
# holds only those two packages and reads every other one from .venv's site-packages (a .pth file
# adds it behind its own): seconds instead of a second install of the whole test stack, whose CPU
# the first passes would share. `pip check` then confirms that TensorBoard 2.20's requirements are
# met by .venv's packages.
older_stack_environment() {
  set -euo pipefail
  step "Python environment .venv-pb4: constraints-protobuf4.txt's pins over .venv's packages"
  # Made by .venv's interpreter, so both are the same Python whatever $PYTHON is now.
  .venv/bin/python -m venv --clear .venv-pb4
  local own shared
  own="$(.venv-pb4/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  shared="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  .venv-pb4/bin/python -c 'import sys; open(sys.argv[1], "w").write(f"import site; site.addsitedir({sys.argv[2]!r})\n")' \
    "$own/profscope_shares_venv.pth" "$shared"
  .venv-pb4/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r constraints-protobuf4.txt
  .venv-pb4/bin/python -m pip check --disable-pip-version-check
  .venv-pb4/bin/python -c 'import google.protobuf as p; assert p.__version__.startswith("4."), p.__version__'
}

"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10), "profscope needs Python >= 3.10"'
frontend_checks >"$logs/frontend.log" 2>&1 &
frontend_pid=$!
background+=("$frontend_pid")

step "Python environment .venv (newest TensorBoard and protobuf)"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# --no-compile: of the packages' modules, the tests import a fraction, compiled on first import;
# compiling all of them took 40 % of the install's CPU.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile -e ".[test]"
older_stack_environment

step "ruff"
.venv/bin/ruff check .
# Python sources only: ruff also reformats code blocks inside Markdown, which is prose, not code we run.
.venv/bin/ruff format --check --extend-exclude '*.md' .

join "$frontend_pid" frontend

echo "pytest-xdist workers per pass: $WORKERS"
step "Python tests marked stack_independent (checked at run time to load neither TensorBoard nor protobuf)"
# Only the marked modules are collected: collecting the others would import TensorBoard before the
# watch could see a marked test do it.
mapfile -t stack_free < <(grep -rlE '^pytestmark = .*stack_independent' tests --include='test_*.py' | sort)
PROFSCOPE_STACK_FREE=1 .venv/bin/python -m pytest -n "$WORKERS" --dist load "${stack_free[@]}" -m stack_independent

# On the older stack only the tests that face TensorBoard run again (PROFSCOPE_TENSORBOARD_FACING=1,
# tests/support/stack_facing.py): those that serve the plugin (TensorBoard's WSGI app or server) or
# whose own code uses TensorBoard; werkzeug and every other package are the same files in both
# environments. The product never imports protobuf and touches TensorBoard only at that edge, so the
# other tests would run the same code on the same libraries again; so would the tests marked
# stack_independent (tests/test_stack_independent.py checks their imports; PROFSCOPE_STACK_FREE=1 above
# makes tests/conftest.py fail the run if any loads either). The
# views' browser tests run once, in .venv: what they test is the bundle in the browser, the same on
# both stacks, and they are half of a pass's time. The shell test stays here: it drives TensorBoard's
# own frontend, which differs between TensorBoard versions.
VIEW_BROWSER_TESTS=(capture_dialog compare_view critical_path export_dialog firefox hlo_graph memory_view
  overview_view ranks_view roofline_view trace_interactions trace_looks trace_navigation trace_search_list
  trace_selection trace_tracks trace_view xla_view)
ignored=()
for name in "${VIEW_BROWSER_TESTS[@]}"; do ignored+=("--ignore=tests/e2e/test_${name}.py"); done
# It runs in the background beside the pass on .venv, on half as many workers: that pass's browser
# tests wait on TensorBoard and the browser for much of their time, and this one fills the cores they
# leave. Its browser tests' screenshots and logs go to a folder of their own.
older_stack_tests() {
  set -euo pipefail
  step "Python tests facing TensorBoard on $(.venv-pb4/bin/python -c 'import tensorboard, google.protobuf as p; print(f"TensorBoard {tensorboard.__version__}, protobuf {p.__version__}")') (views' browser tests ran in .venv)"
  # exec: the background job's pid is pytest's, which the EXIT trap stops if the other pass fails.
  PROFSCOPE_TEST_OUTPUT=test-output/older-stack \
  PROFSCOPE_TENSORBOARD_FACING=1 exec .venv-pb4/bin/python -m pytest tests "${ignored[@]}" -m "not stack_independent" \
    -n "$(( (WORKERS + 1) / 2 ))" --dist loadfile
}
older_stack_tests >"$logs/older-stack-tests.log" 2>&1 &
older_pid=$!
background+=("$older_pid")

step "Python tests on $(.venv/bin/python -c 'import tensorboard, google.protobuf as p; print(f"TensorBoard {tensorboard.__version__}, protobuf {p.__version__}")')"
.venv/bin/python -m pytest "${PARALLEL[@]}" tests -m "not stack_independent"

join "$older_pid" older-stack-tests
