#!/usr/bin/env bash
# Installs poppler-utils (pdftotext, pdffonts, pdfinfo, pdftoppm) for tests/pdf/check.py,
# with apt-get as root, and nothing when they are already there. A check that cannot run
# is a failure, so this exits 1 when they cannot be installed.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
if command -v pdftotext >/dev/null && command -v pdffonts >/dev/null && command -v pdfinfo >/dev/null && command -v pdftoppm >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "tests/pdf/setup.sh: poppler-utils is missing, and installing it needs apt-get as root (sudo apt-get install poppler-utils)" >&2
  exit 1
fi
mkdir -p "$repo/tests/artifacts"
log="$repo/tests/artifacts/pdf-setup.log"
echo "tests/pdf/setup.sh: installing poppler-utils with apt-get (log: ${log#"$repo"/})" >&2
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
apt-get "${apt_opts[@]}" install -y --no-install-recommends poppler-utils >"$log" 2>&1 || {
  apt-get "${apt_opts[@]}" update >>"$log" 2>&1
  apt-get "${apt_opts[@]}" install -y --no-install-recommends poppler-utils >>"$log" 2>&1
} || { tail -n 5 "$log" >&2; echo "tests/pdf/setup.sh: apt-get install poppler-utils failed" >&2; exit 1; }
