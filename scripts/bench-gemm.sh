#!/usr/bin/env bash
# Times the engine's matrix product (crates/revtx-engine/src/model/kernels/gemm.cpp), compiled as build.rs
# compiles it (compiler: $CXX, default c++). Writes only to a temporary directory.
#   scripts/bench-gemm.sh              each product of the model's layers alone, GFLOP/s,
#                                      best of five, in every width the CPU has
#                                      (bench-gemm.cpp)
#   scripts/bench-gemm.sh step [avx2]  the products of one reference training step in step
#                                      order with the step's own buffers, against each alone
#                                      with its data in the cache: the widest kernel, or the
#                                      AVX2 one (step-gemm.cpp)
set -euo pipefail
program=bench-gemm
if [ "${1:-}" = step ]; then program=step-gemm; shift; fi
cxx=${CXX:-c++}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -std=c++17 -ffp-contract=off)
"$cxx" "${flags[@]}" -mavx2 -mfma -DREVTX_GEMM_AVX2 -DREVTX_GEMM_NAME=revtx_gemm_avx2 \
  -c "$root/crates/revtx-engine/src/model/kernels/gemm.cpp" -o "$tmp/avx2.o"
"$cxx" "${flags[@]}" -mavx512f -mavx2 -mfma -DREVTX_GEMM_AVX512 -DREVTX_GEMM_NAME=revtx_gemm_avx512 \
  -c "$root/crates/revtx-engine/src/model/kernels/gemm.cpp" -o "$tmp/avx512.o"
"$cxx" -O2 -std=c++17 -I "$root/crates/revtx-engine/src/model/kernels" "$root/scripts/$program.cpp" "$tmp/avx2.o" "$tmp/avx512.o" -o "$tmp/bench"
"$tmp/bench" "$@"
