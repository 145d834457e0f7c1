#!/usr/bin/env bash
# Compares the working tree's fused attention kernel (crates/revtx-engine/src/model/kernels/attention.h)
# with another version of it, the two taking turns in one
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
# Since the workspace the kernel is a file of its own; before, a section of kernels.cpp.
section() { awk '/^\/\/ ---- Fused attention/{p=1} /^struct Attention/{p=0} p'; }
git -C "$root" show "$rev:crates/revtx-engine/src/model/kernels/attention.h" > "$tmp/old.inc" 2>/dev/null ||
  git -C "$root" show "$rev:src/engine/model/kernels.cpp" | section > "$tmp/old.inc"
[ -s "$tmp/old.inc" ] || { echo "ab-attention: no attention kernel at $rev" >&2; exit 1; }
cp "$root/crates/revtx-engine/src/model/kernels/attention.h" "$tmp/new.inc"
# The flags build.rs gives kernels.cpp; the section picks its vector width per function.
"$cxx" -O3 -std=c++17 -ffp-contract=off -march=x86-64 -I "$tmp" -I "$root/crates/revtx-engine/src/model/kernels" \
  "$root/scripts/ab-attention.cpp" -o "$tmp/ab"
echo "== fused attention, 64 x 17 tokens, d_model 64, two heads: working tree against $rev"
"$tmp/ab"
