#!/usr/bin/env bash
# Installs what the PyTorch twin's tests need into .twin/site (PYTHONPATH=.twin/site):
# torch 2.13.0 with the CUDA libraries it loads on import (the PyPI wheel is built for
# CUDA; the CPU is all the tests use), nbformat and nbclient with a kernel, matplotlib.
#
# The torch wheel is the one scripts/setup-libtorch.sh downloaded and kept in
# .libtorch/wheels/, so it is not fetched twice; triton and cuda-bindings (GPU compilers
# and bindings that nothing here imports) are left out. Idempotent: a stamp marks a
# complete install, which is built in a temporary folder and renamed into place.
#
#   tests/python/setup.sh --background   starts the install and returns at once (its log:
#                                        tests/artifacts/twin-setup.log); `make test` does
#                                        this before compiling, so the download overlaps it
#   tests/python/setup.sh                installs, or waits for a background install and
#                                        checks it; a failed one is tried again here
# One install runs at a time (a lock on .twin.lock).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DEST="$ROOT/.twin"
VERSION=2.13.0
STAMP="$DEST/.installed-$VERSION-1"
PY="${PYTHON:-python3}"

if [ -f "$STAMP" ]; then
  exit 0
fi

if [ "${1:-}" = "--background" ]; then
  mkdir -p "$ROOT/tests/artifacts"
  setsid nohup "$0" > "$ROOT/tests/artifacts/twin-setup.log" 2>&1 < /dev/null &
  echo "setup: installing the PyTorch twin's tests' packages in the background (tests/artifacts/twin-setup.log)" >&2
  exit 0
fi

# Wait for an install under way (the background one), then see whether it finished.
exec 9> "$ROOT/.twin.lock"
flock 9
if [ -f "$STAMP" ]; then
  exit 0
fi

WORK="$(mktemp -d "$ROOT/.twin-tmp.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)

WHEEL="$(ls "$ROOT"/.libtorch/wheels/torch-$VERSION-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$WHEEL" ]; then
  echo "setup: no kept torch wheel in .libtorch/wheels; downloading torch==$VERSION..." >&2
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: -d "$WORK/wheels" "torch==$VERSION"
  WHEEL="$(ls "$WORK"/wheels/torch-$VERSION-*.whl | head -n 1)"
fi

# torch's own requirements for this platform, less the two it never imports on a CPU.
REQS="$("$PY" - "$WHEEL" <<'PY'
import sys, zipfile
from pip._vendor.packaging.requirements import Requirement
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    lines = z.read(meta).decode().splitlines()
skip = {"triton", "cuda-bindings"}
for line in lines:
    if not line.startswith("Requires-Dist:"):
        continue
    req = Requirement(line.split(":", 1)[1].strip())
    if req.name in skip or (req.marker and not req.marker.evaluate({"extra": ""})):
        continue
    req.marker = None
    print(str(req))
PY
)"

echo "setup: installing $(basename "$WHEEL"), its CUDA libraries and the notebook tools from PyPI..." >&2
# shellcheck disable=SC2086
"$PY" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --target "$WORK/site" \
  $REQS nbformat==5.11.1 nbclient==0.11.0 ipykernel==7.4.0 matplotlib==3.11.2 numpy==2.4.6
"$PY" -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --no-deps --target "$WORK/torch" "$WHEEL"
cp -a "$WORK/torch/." "$WORK/site/"
PYTHONPATH="$WORK/site" "$PY" -c 'import torch, nbclient, nbformat, matplotlib; assert torch.__version__.startswith("2.13.0")'
touch "$WORK/site/.complete"
rm -rf "$DEST"
mkdir -p "$WORK/twin"
mv "$WORK/site" "$WORK/twin/site"
mv "$WORK/twin" "$DEST"
touch "$STAMP"
echo "setup: .twin ready in $(( $(date +%s) - start )) s" >&2
