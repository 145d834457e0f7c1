# The two commands of README.md: `make site` builds the site, `make test` runs the tests.
# Both install what they need (libtorch 2.13.0 from PyPI into .libtorch/) on first use.

CARGO ?= cargo
BIN := target/release/revtx-book

.PHONY: site test check setup build bench clean-site

setup:
	@scripts/setup-libtorch.sh

build: setup
	$(CARGO) build --release --locked

# Build the site into site/ (trains what the run cache lacks).
site: build
	$(BIN) build

# Check every quoted figure against its run, without writing the site.
check: build
	$(BIN) check

# Unit and integration tests, a check of the real chapter (trains what the run cache
# lacks), then the site built from those runs, tested in headless Chromium.
test: build
	$(CARGO) test --release --locked
	$(BIN) check
	$(BIN) build --offline --quiet
	tests/browser/setup.sh && node tests/browser/e2e.mjs site --figures 3

bench: build
	scripts/setup-peer.sh
	$(BIN) bench --suite

clean-site:
	rm -rf site

# Browser test of the built site (run `make site` first): headless Chromium against
# site/ served under a sub-path; screenshots go to tests/artifacts/.
.PHONY: browser
browser:
	tests/browser/setup.sh && node tests/browser/e2e.mjs site --figures 3
