#!/usr/bin/env bash
# Compares the working tree's fused attention kernel (the "Fused attention" section of
# src/engine/model/kernels.cpp) with another version of it, the two taking turns in one
# process: scripts/ab-attention.sh [git revision] (default HEAD). Prints, for each set of
# switches the chapter trains, the median new / old time ratio of a forward and backward
# at the chapter's shape (below 1, the working tree is faster) and whether the two compute
# the same bits. Writes only to a temporary directory.
set -euo pipefail
rev=${1:-HEAD}
cxx=${CXX:-c++}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
section() { awk '/^\/\/ ---- Fused attention/{p=1} /^struct Attention/{p=0} p'; }
git -C "$root" show "$rev:src/engine/model/kernels.cpp" | section > "$tmp/old.inc"
section < "$root/src/engine/model/kernels.cpp" > "$tmp/new.inc"
for f in old new; do
  [ -s "$tmp/$f.inc" ] || { echo "ab-attention: no \"Fused attention\" section in the $f kernels.cpp" >&2; exit 1; }
done
# The flags build.rs gives kernels.cpp; the section picks its vector width per function.
"$cxx" -O3 -std=c++17 -ffp-contract=off -march=x86-64 -I "$tmp" \
  "$root/scripts/ab-attention.cpp" -o "$tmp/ab"
echo "== fused attention, 64 x 17 tokens, d_model 64, two heads: working tree against $rev"
"$tmp/ab"
