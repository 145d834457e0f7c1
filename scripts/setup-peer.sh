#!/usr/bin/env bash
# Installs the full PyTorch 2.13.0 wheel (with its CUDA dependencies: ~4.5 GB, ~90 s here)
# into .bench/torch, for running the PyTorch peer in `revtx-book bench`. Not needed to
# build the site or run the tests. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.bench/torch"
if PYTHONPATH="$DEST" python3 -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  exit 0
fi
rm -rf "$DEST.tmp"
python3 -m pip install --quiet --target "$DEST.tmp" torch==2.13.0
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
