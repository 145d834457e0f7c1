#!/usr/bin/env bash
# Times the engine's matrix product alone (src/engine/model/gemm.cpp), compiled as build.rs
# compiles it, at the model's shapes: scripts/bench-gemm.sh [c++ compiler]. Writes only to a
# temporary directory.
set -euo pipefail
cxx=${1:-c++}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -std=c++17 -ffp-contract=off)
"$cxx" "${flags[@]}" -mavx2 -mfma -DREVTX_GEMM_AVX2 -DREVTX_GEMM_NAME=revtx_gemm_avx2 \
  -c "$root/src/engine/model/gemm.cpp" -o "$tmp/avx2.o"
"$cxx" "${flags[@]}" -mavx512f -mavx2 -mfma -DREVTX_GEMM_AVX512 -DREVTX_GEMM_NAME=revtx_gemm_avx512 \
  -c "$root/src/engine/model/gemm.cpp" -o "$tmp/avx512.o"
"$cxx" -O2 -std=c++17 "$root/scripts/bench-gemm.cpp" "$tmp/avx2.o" "$tmp/avx512.o" -o "$tmp/bench"
"$tmp/bench"
