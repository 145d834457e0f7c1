#!/usr/bin/env bash
# Builds the fixture textbook (tests/fixtures/textbook/: two chapters and an appendix that
# share one tiny run) into target/textbook/site, for its browser test
# (tests/browser/textbook.check.mjs). The project around it is the repository's own
# templates and static files; its run goes into the same run cache as the real book's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=target/textbook
mkdir -p "$root"
rm -rf "$root/book"
cp -r tests/fixtures/textbook/book "$root/book"
cp book/numerics.json "$root/book/numerics.json"
ln -sfn ../../templates "$root/templates"
ln -sfn ../../static "$root/static"
exec target/release/revtx-book build --root "$root" --cache "$PWD/.revtx-cache" --deny-warnings --quiet "$@"
