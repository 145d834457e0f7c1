#!/usr/bin/env bash
# Installs the CPU part of libtorch 2.13.0 (the version tch 0.26 expects) into .libtorch/
# from PyPI wheels, without the 4.5 GB of CUDA libraries that `pip install torch` pulls.
#
#   .libtorch/torch/include           headers, for compiling torch-sys
#   .libtorch/torch/lib/libtorch_cpu.so, libc10.so, libgomp.so.1, libtorch.so
#   .libtorch/wheels/torch-2.13.0-*.whl  the wheel itself, for tests/python/setup.sh
#   .libtorch/nvidia/cu13/lib/libcudart.so.13, libcupti.so.13
#                                     libtorch_cpu.so links these; its own rpath
#                                     ($ORIGIN/../../nvidia/cu13/lib) finds them here.
#
# Idempotent: a stamp file marks a complete install, and a second run does nothing.
# The install is built in a temporary directory and renamed into place, so an
# interrupted run never leaves a half-installed .libtorch behind.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${REVTX_LIBTORCH_DIR:-$ROOT/.libtorch}"
VERSION=2.13.0
STAMP="$DEST/.installed-$VERSION"

if [ -f "$STAMP" ]; then
  exit 0
fi

PY="${PYTHON:-python3}"
WORK="$(mktemp -d "${DEST%/*}/.libtorch-tmp.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "setup: downloading torch==$VERSION and two CUDA runtime wheels from PyPI (~540 MB)..." >&2
start=$(date +%s)
# The torch wheel is tagged per CPython version; the libraries we take from it are the same in all.
"$PY" -m pip download --quiet --no-deps --only-binary=:all: -d "$WORK/wheels" \
  "torch==$VERSION" "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-cupti==13.0.85"

echo "setup: extracting headers and CPU libraries..." >&2
"$PY" - "$WORK" <<'PY'
import glob, os, sys, zipfile
work = sys.argv[1]
out = os.path.join(work, "libtorch")
keep_lib = {"libtorch_cpu.so", "libc10.so", "libgomp.so.1", "libtorch.so"}
keep_nv = {"libcudart.so.13", "libcupti.so.13"}
found = set()
for whl in glob.glob(os.path.join(work, "wheels", "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            base = os.path.basename(name)
            take = (
                name.startswith("torch/include/")
                or (name.startswith("torch/lib/") and base in keep_lib)
                or (name.startswith("nvidia/cu13/lib/") and base in keep_nv)
                or name == "torch/version.py"
            )
            if take and not name.endswith("/"):
                z.extract(info, out)
                if base in keep_lib | keep_nv:
                    found.add(base)
                    os.chmod(os.path.join(out, name), 0o755)
missing = (keep_lib | keep_nv) - found
if missing:
    sys.exit(f"setup: wheels lacked {sorted(missing)}")
# torch-sys reads the version from build-version when LIBTORCH is set.
with open(os.path.join(out, "torch", "build-version"), "w") as f:
    f.write("2.13.0\n")
PY

# The torch wheel stays, for the PyTorch twin's tests (tests/python/setup.sh), so that
# they do not download it a second time.
mkdir -p "$WORK/libtorch/wheels"
mv "$WORK"/wheels/torch-"$VERSION"-*.whl "$WORK/libtorch/wheels/"
rm -rf "$DEST"
mv "$WORK/libtorch" "$DEST"
touch "$STAMP"
du_mb=$(du -sm "$DEST" | cut -f1)
echo "setup: libtorch $VERSION installed in $DEST (${du_mb} MB on disk, $(( $(date +%s) - start )) s)" >&2
