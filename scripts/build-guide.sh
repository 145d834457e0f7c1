#!/usr/bin/env bash
# Builds the user guide (guide/book/, a revtx-book book) into target/guide/site, with
# warnings denied: `make test` runs it, and the Pages workflow publishes the result at
# /guide/. The project around the guide is the repository's own templates and static
# files; its one tiny run goes into the same run cache as the book's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=target/guide
mkdir -p "$root"
rm -rf "$root/book"
cp -r guide/book "$root/book"
cp book/numerics.json "$root/book/numerics.json"
ln -sfn ../../templates "$root/templates"
ln -sfn ../../static "$root/static"
exec target/release/revtx-book build --root "$root" --cache "$PWD/.revtx-cache" --deny-warnings --quiet "$@"
