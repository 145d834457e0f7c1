#!/usr/bin/env bash
# Compares the working tree's matrix product (crates/revtx-engine/src/model/kernels/gemm.cpp) with another
# version of it, the two taking turns in one process: scripts/ab-gemm.sh [git revision]
# (default HEAD). Each kernel width this CPU has is compiled as build.rs compiles it and
# compared on its own. Prints new / old time ratios: below 1, the working tree is faster.
# Writes only to a temporary directory.
set -euo pipefail
rev=${1:-HEAD}
cxx=${CXX:-c++}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Where the revision keeps it: crates/revtx-engine since the workspace, src/engine before.
git -C "$root" show "$rev:crates/revtx-engine/src/model/kernels/gemm.cpp" > "$tmp/old.cpp" 2>/dev/null ||
  git -C "$root" show "$rev:src/engine/model/gemm.cpp" > "$tmp/old.cpp"
flags=(-O3 -std=c++17 -ffp-contract=off)
widths=(avx2)
grep -qw avx512f /proc/cpuinfo && widths+=(avx512)
for width in "${widths[@]}"; do
  if [ "$width" = avx2 ]; then isa=(-mavx2 -mfma -DREVTX_GEMM_AVX2); else
    isa=(-mavx512f -mavx2 -mfma -DREVTX_GEMM_AVX512); fi
  "$cxx" "${flags[@]}" "${isa[@]}" -DREVTX_GEMM_NAME=revtx_gemm_old -c "$tmp/old.cpp" -o "$tmp/old.o"
  "$cxx" "${flags[@]}" "${isa[@]}" -DREVTX_GEMM_NAME=revtx_gemm_new \
    -c "$root/crates/revtx-engine/src/model/kernels/gemm.cpp" -o "$tmp/new.o"
  "$cxx" -O2 -std=c++17 "$root/scripts/ab-gemm.cpp" "$tmp/old.o" "$tmp/new.o" -o "$tmp/ab"
  echo "== $width kernel: working tree against $rev"
  "$tmp/ab"
done
