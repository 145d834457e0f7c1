#!/usr/bin/env bash
# Retrains the book under other seeds and reports which asserted statements no longer hold,
# so that a sentence that only held for the seeds drawn shows up before a reader finds it.
#
#   scripts/seed-shift.sh K [revtx-book options…]
#
# Copies the project to target/seed-shift-K/ with every five-seed ensemble moved from
# seeds 0-4 to 5K..5K+4 and every single run to seed 5K, then runs
# `revtx-book check --bless` there with its own run cache (target/seed-shift-K/.revtx-cache:
# the first call trains everything, later calls with an edited chapter reuse it). Quoted
# figures are rewritten in the copy; the false assertions are listed, and the blessed copy
# (book/chapter-*.md there) is what to read for sentences that went false with no check
# failing. Exit status: that of the check (1 when an assertion is false). Extra options go
# to the check: `--cache DIR` adds a cache to read (e.g. one trained elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
k=${1:?usage: scripts/seed-shift.sh K [options]}
shift
dir=target/seed-shift-$k
mkdir -p "$dir"
rm -rf "$dir/book"
cp -r book "$dir/book"
for d in templates static; do ln -sfn "$PWD/$d" "$dir/$d"; done
# Included listings must lie inside the project, so the engine's sources are copied.
rm -rf "$dir/crates"
mkdir -p "$dir/crates/revtx-engine"
cp -r crates/revtx-engine/src "$dir/crates/revtx-engine/src"
python3 - "$dir/book" "$k" <<'PY'
import pathlib, re, sys
book, k = pathlib.Path(sys.argv[1]), int(sys.argv[2])
def shift(m):
    body = m.group(2)
    body = re.sub(r"seeds = \[0, 1, 2, 3, 4\]",
                  "seeds = [%s]" % ", ".join(str(5 * k + i) for i in range(5)), body)
    if "seeds =" not in body and "seed =" not in body:
        body = body.replace("\n", "\nseed = %d\n" % (5 * k), 1)
    return m.group(1) + body + "```"
for md in book.glob("*.md"):
    md.write_text(re.sub(r"(```run [a-z0-9_-]+\n)(.*?)```", shift, md.read_text(), flags=re.S))
PY
set +e
target/release/revtx-book check --bless --root "$dir" --cache "$dir/.revtx-cache" "$@" > "$dir/check.log" 2>&1
rc=$?
set -e
grep -A6 '^error\[assertion-false\]' "$dir/check.log" | grep -E '^ *[0-9]+ \||= note' || true
echo "seed shift $k: $(grep -c '^error\[assertion-false\]' "$dir/check.log" || true) assertions false; log $dir/check.log; blessed copy $dir/book"
exit $rc
