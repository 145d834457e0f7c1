#!/usr/bin/env bash
# What a training step costs when there is almost nothing to compute: the reference model
# (d_model 64, d_mlp 256, 64 strings a step) against the same model at d_model 8, d_mlp 8
# and one string a step. Both run the same operations in the same order, so the second's
# time per step is the fixed cost of a step: dispatch, autograd, allocation, the optimizer
# call. scripts/step-overhead.sh [rounds, default 3]; needs target/release/revtx-engine
# (make build). Each round runs the two in turn, 600 steps each, under the book's portable
# profile. Writes only to a temporary directory.
set -euo pipefail
rounds=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
engine=$root/target/release/revtx-engine
[ -x "$engine" ] || { echo "step-overhead: $engine is missing; run make build" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
request() {  # name d_model d_mlp batch
  cat > "$tmp/$1.json" <<JSON
{"config": {"kind": "train",
  "model": {"vocab": 12, "positions": 25, "d_model": $2, "n_heads": 2, "n_layers": 2,
            "d_mlp": $3, "attn": {"scale": true, "softmax": "keys", "causal": true},
            "position_encoding": "learned", "norm": "pre", "norm_kind": "layer",
            "activation": "gelu"},
  "data": {"task": "reverse", "letters": 10, "min_len": 3, "max_len": 8,
           "targets": "all-positions", "random_offset": false},
  "train": {"steps": 600, "batch_size": $4, "lr": 0.003, "warmup": 0, "decay": "none",
            "min_lr": 0.0, "weight_decay": 0.01, "optimizer": "adamw",
            "betas": [0.9, 0.999], "eps": 1e-8, "momentum": 0.0, "clip": 0.0, "threads": 1,
            "block": 250, "window": 25, "threshold": 0.01},
  "eval": {"test_seed": 1000003, "test_size": 10, "test_min_len": 3, "test_max_len": 8,
           "long_size": 10, "long_min_len": 9, "long_max_len": 12, "decode": ["abcdefghij"],
           "attention_input": "fgcabe", "variance_dims": [8], "variance_samples": 100}},
 "seed": 0, "profile": "portable", "label": "$1"}
JSON
}
request reference 64 256 64
request tiny 8 8 1
steps_per_second() {
  rm -rf "$tmp/out"
  "$engine" exec --request "$tmp/$1.json" --out "$tmp/out" > "$tmp/log" 2>&1 ||
    { cat "$tmp/log" >&2; echo "step-overhead: the $1 run failed" >&2; return 1; }
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["env"]["steps_per_second"])' \
    "$tmp/out/result.json"
}
printf '%-6s %18s %14s %10s\n' round 'reference ms/step' 'tiny ms/step' share
for r in $(seq "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then ref=$(steps_per_second reference); tiny=$(steps_per_second tiny)
  else tiny=$(steps_per_second tiny); ref=$(steps_per_second reference); fi
  python3 -c '
import sys
r, t = 1e3 / float(sys.argv[2]), 1e3 / float(sys.argv[3])  # ms a step
print(f"{sys.argv[1]:<6} {r:18.2f} {t:14.3f} {t / r:10.1%}")' "$r" "$ref" "$tiny"
done
