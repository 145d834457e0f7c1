#!/usr/bin/env bash
# Which edits retrain the book's runs: makes three edits one at a time (a doc comment in
# revtx-spec, an engine test, a comment in a C++ kernel), rebuilds after each, and prints
# the engine fingerprint and how many runs `check --offline` finds missing from the cache.
# Every edit is reverted. Needs a warm cache (`make check` first); about 3 minutes.
set -u
cd "$(dirname "$0")/.."
probe() {
  local what=$1
  cargo build --release --workspace --quiet 2>/dev/null
  local fp; fp=$(./target/release/revtx-engine numerics 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["engine"])')
  local out; out=$(./target/release/revtx-book check --offline 2>&1 | tail -1)
  local missing; missing=$(./target/release/revtx-book check --offline 2>&1 | grep -c "error\[offline\]")
  echo "$what | engine $fp | offline errors: $missing | $out"
}
probe "baseline"
sed -i 's|/// Hide later keys from each query.|/// Hide later keys from each query (the mask).|' crates/revtx-spec/src/config.rs
probe "doc comment in revtx-spec (config.rs)"
git checkout -q crates/revtx-spec/src/config.rs
sed -i 's|^//! Tests of `src/model/mod.rs`.|//! Tests of `src/model/mod.rs` (the model).|' crates/revtx-engine/tests/model.rs
probe "engine test file (tests/model.rs)"
git checkout -q crates/revtx-engine/tests/model.rs
sed -i 's|^// The fused attention kernel: scaled|// The fused attention kernel (one pass): scaled|' crates/revtx-engine/src/model/kernels/attention.h
probe "comment in a kernel (attention.h)"
git checkout -q crates/revtx-engine/src/model/kernels/attention.h
probe "reverted"
