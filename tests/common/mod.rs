//! Shared helpers for the integration tests: fixture projects in temp dirs.
#![allow(dead_code)]

pub mod producers;

use revtx_book::book::diag::Severity;
use revtx_book::book::{self, runs::RunOptions, BuildOptions, Outcome};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Whether the tests run under CI: `CI` set to anything but `0` or `false` (GitHub Actions
/// sets `true`, other systems `1`).
pub fn under_ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A tiny training run: enough to exercise the pipeline in well under a second.
pub const TINY_RUN: &str = "```run tiny\nbase = \"reference\"\n[train]\nsteps = 30\nblock = 10\n[eval]\ntest_size = 24\nlong_size = 8\n```";

/// A throwaway project: book/, templates/, static/ and the model source the book includes.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new(chapter: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("book")).unwrap();
        std::fs::write(
            root.join("book/book.toml"),
            "title = \"Fixture\"\nauthor = \"Tests\"\nchapters = [\"chapter.md\"]\n",
        )
        .unwrap();
        std::fs::write(root.join("book/chapter.md"), chapter).unwrap();
        // The real book's numerics fingerprint: a fixture trains with the same engine, so
        // its runs pass the same gate the book's do.
        std::fs::copy(
            repo().join("book/numerics.json"),
            root.join("book/numerics.json"),
        )
        .unwrap();
        for d in ["templates", "static"] {
            copy_dir(&repo().join(d), &root.join(d));
        }
        std::fs::create_dir_all(root.join("crates/revtx-engine/src/model")).unwrap();
        std::fs::copy(
            repo().join("crates/revtx-engine/src/model/attention.rs"),
            root.join("crates/revtx-engine/src/model/attention.rs"),
        )
        .unwrap();
        Project { dir }
    }

    /// A project of several files in `book/`: `files` are (name, text) and `lists` the
    /// book.toml lines that place them, e.g. `chapters = ["a.md", "b.md"]`.
    pub fn book(files: &[(&str, &str)], lists: &str) -> Self {
        let p = Project::new("# unused\n");
        let book = p.root().join("book");
        std::fs::remove_file(book.join("chapter.md")).unwrap();
        for (name, text) in files {
            std::fs::write(book.join(name), text).unwrap();
        }
        std::fs::write(
            book.join("book.toml"),
            format!("title = \"Book\"\nauthor = \"Tests\"\n{lists}\n"),
        )
        .unwrap();
        p
    }

    /// The fixture textbook (`tests/fixtures/textbook/book/`) over a fresh fixture project.
    pub fn textbook() -> Self {
        let p = Project::new("# unused\n");
        let book = p.root().join("book");
        std::fs::remove_file(book.join("chapter.md")).unwrap();
        for e in std::fs::read_dir(repo().join("tests/fixtures/textbook/book")).unwrap() {
            let path = e.unwrap().path();
            std::fs::copy(&path, book.join(path.file_name().unwrap())).unwrap();
        }
        p
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn options(&self, out: bool) -> BuildOptions {
        BuildOptions {
            root: self.root().to_path_buf(),
            out: out.then(|| self.root().join("site")),
            runs: RunOptions {
                cache_dir: self.root().join(".revtx-cache"),
                extra_caches: Vec::new(),
                offline: false,
                rerun: std::collections::BTreeSet::new(),
                rerun_all: false,
                jobs: 1,
                timeout: Duration::from_mins(5),
                engine: engine_exe(),
                quiet: true,
                profile: revtx_spec::profile::Profile::Portable,
                remember_verified: false,
                store: None,
                store_write: false,
                ignore_store: false,
            },
            bless: false,
            live_reload: false,
            ignore_numerics: false,
            deny_warnings: false,
            pdf: false,
            seed_shift: 0,
            seed_shift_runs: Vec::new(),
        }
    }

    pub fn check(&self) -> Outcome {
        book::build(&self.options(false))
    }

    pub fn build(&self) -> Outcome {
        book::build(&self.options(true))
    }

    /// Builds the site, requires no errors, and returns the outcome with the chapter's page.
    #[allow(dead_code)] // not every test binary builds pages
    pub fn built_page(&self) -> (Outcome, String) {
        let out = self.build();
        assert_eq!(out.errors(), 0, "{:?}", located(&out));
        let html = std::fs::read_to_string(self.root().join("site/chapter-1.html")).unwrap();
        (out, html)
    }

    pub fn chapter(&self) -> String {
        std::fs::read_to_string(self.root().join("book/chapter.md")).unwrap()
    }
}

// Every file of a directory with its bytes (not every test binary uses it).
#[allow(unused_imports)]
pub use revtx_book::book::sitefiles::files_under;

pub fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Diagnostics as `(line, col, [code] message label)`, without the numerics gate's
/// warnings (a fixture project records no numerics fingerprint).
pub fn located(o: &Outcome) -> Vec<(usize, usize, String)> {
    o.diags
        .iter()
        .filter(|d| !(d.severity == Severity::Warning && d.code.is_environmental()))
        .map(|d| {
            let (l, c) = d
                .span
                .as_ref()
                .map_or((0, 0), |s| o.sources.line_col(s.file, s.range.start));
            (
                l,
                c,
                format!(
                    "[{}] {} {}",
                    d.code,
                    d.message,
                    d.label.clone().unwrap_or_default()
                ),
            )
        })
        .collect()
}

/// The build report's lines about runs (not the numerics gate's).
pub fn runs_of(o: &Outcome) -> Vec<&str> {
    o.run_report
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("numerics:"))
        .collect()
}

/// The `revtx-engine` binary beside `revtx-book`: another package of the workspace, so
/// Cargo gives its tests no `CARGO_BIN_EXE_` for it. `cargo build --release` (`make build`)
/// builds both.
pub fn engine_exe() -> PathBuf {
    let engine =
        std::path::Path::new(env!("CARGO_BIN_EXE_revtx-book")).with_file_name("revtx-engine");
    assert!(
        engine.is_file(),
        "{} is missing: build the workspace first (`cargo build --release`, or `make build`)",
        engine.display()
    );
    engine
}

/// Whether `html` holds a cross-reference to `href` that reads `label`
/// (`<a class="xref" href="…" aria-describedby="…">label</a>`, from partials/xref.html).
pub fn has_xref(html: &str, href: &str, label: &str) -> bool {
    let open = format!("<a class=\"xref\" href=\"{href}\" aria-describedby=\"");
    html.match_indices(&open).any(|(k, _)| {
        let rest = &html[k + open.len()..];
        rest.find("\">")
            .is_some_and(|e| rest[e + 2..].starts_with(&format!("{label}</a>")))
    })
}

/// The first element starting with `start` and its matching close tag `end_tag`.
pub fn fragment<'a>(html: &'a str, start: &str, end_tag: &str) -> &'a str {
    let s = html
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in the page"));
    let e = s + html[s..].find(end_tag).unwrap() + end_tag.len();
    &html[s..e]
}
