#!/usr/bin/env bash
# The PyTorch twin's tests (tests/python/test_*.py), with what tests/python/setup.sh
# installed: the twin against every model the site exports, one training step against the
# engine's for every option, every ablation of a fixture book against the twin with the
# same components' activations zeroed, its patching map against the twin's hooks, and every chapter's notebook executed headless.
#   SITE        the built site (default: site); REVTX_ENGINE: the engine binary;
#   REVTX_BOOK  the compiler that builds the ablation fixture (default: target/release).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
if [ ! -f .twin/site/.complete ]; then
  echo "tests/python: run tests/python/setup.sh first (no .twin/site)" >&2
  exit 1
fi
export PYTHONPATH="$ROOT/.twin/site:$ROOT/python"
exec python3 -m unittest -v tests/python/test_exported.py tests/python/test_step.py tests/python/test_ablation.py tests/python/test_notebooks.py
