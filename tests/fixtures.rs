//! Fixture books with inline expected diagnostics.
//!
//! Each `tests/fixtures/bad/*.md` is a chapter. A comment `<!-- error @+N[:COL]: text -->`
//! says that an error whose `[code] message label` contains `text` must be reported N lines
//! below the comment (negative N: above), at column COL if given; `<!-- warning @… -->`
//! says the same of a warning. The line `TINYRUN` is replaced by a tiny run declaration
//! first, `<!-- fixture: deny-warnings -->` builds with `--deny-warnings`, and
//! `<!-- fixture: pdf -->` typesets the print edition as well. Each
//! `tests/fixtures/bad/*.book.toml` is a `book.toml` (beside a one-line chapter), with the
//! same expectations as TOML comments, `# error @+N[:COL]: text`, placed in that file.
//! Each directory `tests/fixtures/bad/<name>/` is a whole `book/` (its `book.toml`,
//! chapters, `references.bib`), with expectations in any of its files; a `.bib` file writes
//! them as `% error @+N[:COL]: text`.
//! Every expected diagnostic must appear, and no other may; a book with an expected error
//! must not write a site or touch the run cache.

#[path = "common/appendix.rs"]
mod appendix;
mod common;
use appendix::{diagnostics_appendix, every_code_is_produced, example};
use common::*;
use revtx_book::book::codes::Code;
use revtx_book::book::diag::Severity;
use revtx_book::book::Outcome;

struct Expected {
    severity: Severity,
    line: usize,
    col: Option<usize>,
    text: String,
}

fn expectations(src: &str) -> Vec<Expected> {
    let mut out = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let l = line.trim();
        let (severity, rest) = if let Some(r) = l.strip_prefix("<!-- error @") {
            (Severity::Error, r.strip_suffix("-->").unwrap())
        } else if let Some(r) = l.strip_prefix("<!-- warning @") {
            (Severity::Warning, r.strip_suffix("-->").unwrap())
        } else if let Some(r) = l.strip_prefix("# error @") {
            (Severity::Error, r)
        } else if let Some(r) = l.strip_prefix("# warning @") {
            (Severity::Warning, r)
        } else if let Some(r) = l.strip_prefix("% error @") {
            (Severity::Error, r)
        } else if let Some(r) = l.strip_prefix("% warning @") {
            (Severity::Warning, r)
        } else {
            continue;
        };
        let rest = rest.trim();
        let (pos, text) = rest.split_once(": ").unwrap();
        let (off, col) = match pos.split_once(':') {
            Some((o, c)) => (o, Some(c.parse().unwrap())),
            None => (pos, None),
        };
        let off: isize = off.parse().unwrap();
        out.push(Expected {
            severity,
            line: (i + 1).checked_add_signed(off).unwrap(),
            col,
            text: text.to_string(),
        });
    }
    out
}

/// Every diagnostic but the numerics gate's warnings: (severity, line, col, `[code] message
/// label`), the line and column in `file` (a diagnostic in another file is at line 0).
fn diagnostics(o: &Outcome, file: &str) -> Vec<(Severity, usize, usize, String)> {
    let located = located(o);
    o.diags
        .iter()
        .filter(|d| !(d.severity == Severity::Warning && d.code.is_environmental()))
        .zip(located)
        .map(|(d, (l, c, m))| {
            let here = d
                .span
                .as_ref()
                .is_some_and(|s| o.sources.path(s.file).ends_with(file));
            if here {
                (d.severity, l, c, m)
            } else {
                (d.severity, 0, 0, m)
            }
        })
        .collect()
}

/// A fixture: its files' (name in `book/`, text with `TINYRUN` replaced).
fn fixture_files(path: &std::path::Path) -> Vec<(String, String)> {
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .unwrap()
            .replace("TINYRUN", TINY_RUN)
    };
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    if !path.is_dir() {
        return vec![(name, read(path))];
    }
    let mut files: Vec<(String, String)> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                read(&p),
            )
        })
        .collect();
    files.sort();
    files
}

/// Builds one fixture book (a chapter, a `book.toml` beside a one-line chapter, or a
/// directory of book files): what it reported, whether it wrote a site, and whether it left
/// anything in the run cache.
fn build_fixture(files: &[(String, String)], dir: bool) -> (Outcome, bool, bool) {
    let src = &files[0].1;
    let book_toml = !dir && files[0].0.ends_with(".book.toml");
    let p = if dir {
        let p = Project::new("# unused\n");
        std::fs::remove_file(p.root().join("book/chapter.md")).unwrap();
        for (name, text) in files {
            std::fs::write(p.root().join("book").join(name), text).unwrap();
        }
        p
    } else if book_toml {
        let p = Project::new("# Chapter\n\nText.\n");
        std::fs::write(p.root().join("book/book.toml"), src).unwrap();
        p
    } else {
        Project::new(src)
    };
    std::fs::write(
        p.root().parent().unwrap().join("outside.rs"),
        "fn secret() {}\n",
    )
    .ok();
    let mut opts = p.options(true);
    opts.deny_warnings = files
        .iter()
        .any(|(_, t)| t.contains("<!-- fixture: deny-warnings -->"));
    // `<!-- fixture: pdf -->` typesets the print edition too, for what only typst finds.
    opts.pdf = files
        .iter()
        .any(|(_, t)| t.contains("<!-- fixture: pdf -->"));
    let out = revtx_book::book::build(&opts);
    let site = p.root().join("site").exists();
    let cached =
        std::fs::read_dir(p.root().join(".revtx-cache/runs")).is_ok_and(|mut d| d.next().is_some());
    (out, site, cached)
}

#[test]
fn every_bad_input_gets_its_diagnostic() {
    let dir = repo().join("tests/fixtures/bad");
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut produced = std::collections::BTreeSet::new();
    let mut examples = std::collections::BTreeMap::new();
    let mut erroring_with_runs = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "md" || e == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        cases += 1;
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let files = fixture_files(&path);
        let (out, site, cached) = build_fixture(&files, path.is_dir());
        produced.extend(out.diags.iter().map(|d| d.code));
        for d in &out.diags {
            examples
                .entry(d.code)
                .or_insert_with(|| example(&name, &files, &out, d));
        }
        // Each file's expectations against the diagnostics located in it, both ways: every
        // expected diagnostic is produced, and every diagnostic produced is expected at its
        // own line (a message expected on another line does not excuse it).
        let mut all_want = Vec::new();
        for (file, src) in &files {
            let want = expectations(src);
            let in_book = if path.is_dir() {
                file.as_str()
            } else if file.ends_with(".book.toml") {
                "book.toml"
            } else {
                "chapter.md"
            };
            let got = diagnostics(&out, in_book);
            let matches = |w: &Expected, (s, l, c, m): &(Severity, usize, usize, String)| {
                *s == w.severity
                    && *l == w.line
                    && w.col.is_none_or(|wc| wc == *c)
                    && m.contains(&w.text)
            };
            for w in &want {
                if !got.iter().any(|g| matches(w, g)) {
                    failures.push(format!(
                        "{name}/{file}: expected {:?} `{}` at {}:{:?}, got {got:?}",
                        w.severity, w.text, w.line, w.col
                    ));
                }
            }
            // Line 0: located in another file, or nowhere (checked below).
            for g in got.iter().filter(|g| g.1 > 0) {
                if !want.iter().any(|w| matches(w, g)) {
                    let (s, l, c, m) = g;
                    failures.push(format!("{name}/{file}: unexpected {s:?} at {l}:{c}: {m}"));
                }
            }
            all_want.extend(want);
        }
        // Every diagnostic, wherever it is, is expected somewhere (its own line was checked
        // above when it has one).
        for (s, l, c, m) in &diagnostics(&out, "\0") {
            if !all_want
                .iter()
                .any(|w| w.severity == *s && m.contains(&w.text))
            {
                failures.push(format!("{name}: unexpected {s:?} at {l}:{c}: {m}"));
            }
        }
        let errors = all_want.iter().any(|w| w.severity == Severity::Error);
        if errors && site {
            failures.push(format!("{name}: a failed build must not write a site"));
        }
        let runs = files.iter().any(|(_, t)| t.contains("```run"));
        let trains_first = TRAINS_BEFORE_ITS_ERROR.contains(&name.as_str());
        if errors && cached && !trains_first {
            failures.push(format!(
                "{name}: a failing book left entries in the run cache"
            ));
        }
        if trains_first && !(errors && cached) {
            failures.push(format!(
                "{name}: listed in TRAINS_BEFORE_ITS_ERROR, but it left no run in the cache: take it off the list"
            ));
        }
        // The rule can only fail for a book that declares runs: count them.
        erroring_with_runs += usize::from(errors && runs && !trains_first);
    }
    assert!(cases >= 24, "only {cases} fixtures found");
    assert!(
        erroring_with_runs > 0,
        "no erroring fixture declares a run: \"no run left in the cache\" tests nothing"
    );
    println!(
        "{erroring_with_runs} erroring fixtures that declare runs must leave none in the cache"
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    every_code_is_produced(&produced);
    diagnostics_appendix(&examples);
}

/// Fixtures whose error is found in the runs' results (an expression, a figure's or
/// table's run, a drift, an assertion), so that their runs train, and stay cached, before
/// it is reported. Every other erroring fixture must leave the run cache untouched.
const TRAINS_BEFORE_ITS_ERROR: &[&str] = &[
    "expression-hints.md",
    "lint-levels",
    "assertion-false.md",
    "attention-options.md",
    "assertion-nested.md",
    "assertion-not-boolean.md",
    "bad-expression.md",
    "empty-mean.md",
    "figure-wrong-run.md",
    "long-line.md",
    "one-run-kind.md",
    "results-cell.md",
    "steady-figures.md",
    "probe-run.md",
    "table-wrong-run.md",
    "unknown-path.md",
    "unknown-run.md",
    "unparsable-quote.md",
    "widget-budget.md",
    "widget-model.md",
];

#[test]
fn unknown_book_toml_key_is_an_error() {
    let p = Project::new("# C\n");
    std::fs::write(
        p.root().join("book/book.toml"),
        "title = \"T\"\nauthor = \"A\"\nchapters = [\"chapter.md\"]\ncolour = \"red\"\n",
    )
    .unwrap();
    let got = located(&p.check());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, 4);
    assert!(got[0].2.contains("unknown field `colour`"), "{got:?}");
}

/// `--rerun` with an id the book does not declare is an error, before anything trains.
#[test]
fn an_unknown_rerun_id_is_an_error() {
    let p = Project::new(&format!("# R\n\n{TINY_RUN}\n"));
    let mut opts = p.options(false);
    opts.runs.rerun.insert("tinny".into());
    let out = revtx_book::book::build(&opts);
    let d = out
        .diags
        .iter()
        .find(|d| d.code == Code::UnknownRun)
        .expect("an unknown-run error");
    assert!(
        d.message.contains("`--rerun`") && d.message.contains("`tinny`"),
        "{}",
        d.message
    );
    assert!(d.hints[0].contains("tiny"), "{:?}", d.hints);
    assert!(
        !p.root().join(".revtx-cache/runs").exists(),
        "nothing trained"
    );
}

/// `deny_warnings = true` in book.toml makes an unbound number an error.
#[test]
fn book_toml_can_deny_warnings() {
    let p = Project::new("# D\n\nThat floor is 1.10 nats.\n");
    assert_eq!(
        p.check().errors(),
        0,
        "a warning alone does not fail the build"
    );
    std::fs::write(
        p.root().join("book/book.toml"),
        "title = \"T\"\nauthor = \"A\"\nchapters = [\"chapter.md\"]\ndeny_warnings = true\n",
    )
    .unwrap();
    let out = p.check();
    assert_eq!(out.errors(), 1, "{:?}", located(&out));
    assert_eq!(out.diags[0].code, Code::UnboundNumber);
}

/// Two chapters share one namespace: a run and a section id declared in both are errors
/// at the second chapter's declarations, each naming the first, and chapter a's quoted
/// figure is checked against its own run, never against b's.
#[test]
fn ids_collide_across_chapters() {
    let a = format!(
        "# A\n\n## Intro {{#sec-intro}}\n\n{TINY_RUN}\n\nIt took [30]{{=tiny.config.train.steps}} steps.\n"
    );
    let b = "# B\n\n## Intro {#sec-intro}\n\n```run tiny\nbase = \"reference\"\n[train]\nsteps = 50\nblock = 10\n[eval]\ntest_size = 24\nlong_size = 8\n```\n";
    let p = Project::book(
        &[("chapter.md", &a), ("b.md", b)],
        "chapters = [\"chapter.md\", \"b.md\"]",
    );
    let out = p.build();
    let dups: Vec<_> = out
        .diags
        .iter()
        .filter(|d| d.code == Code::DuplicateId)
        .collect();
    assert_eq!(dups.len(), 2, "{:?}", located(&out));
    for (d, id, line) in [(dups[0], "sec-intro", 3), (dups[1], "tiny", 5)] {
        let (l, _) = out.sources.line_col(
            d.span.as_ref().unwrap().file,
            d.span.as_ref().unwrap().range.start,
        );
        assert_eq!(
            (out.sources.display_path(d.span.as_ref().unwrap().file), l),
            ("book/b.md".to_string(), line),
            "{d:?}"
        );
        assert!(d.message.contains(&format!("`{id}`")), "{d:?}");
        assert!(
            d.notes[0].contains("book/chapter.md:"),
            "the first place: {:?}",
            d.notes
        );
    }
    assert!(
        !out.diags.iter().any(|d| d.code == Code::Drift),
        "a's figure was checked against b's run: {:?}",
        located(&out)
    );
}

/// Across chapters: a claim may name a run declared in a later chapter (runs are one
/// namespace, used anywhere; a `base` must come earlier), and `{@…}` to a section of
/// another chapter reads its number and links to its page.
#[test]
fn runs_and_references_work_across_chapters() {
    let a = "# A\n\n## Setup {#sec-setup}\n\nIt took [30]{=tiny.config.train.steps} steps, as {@sec-results} shows.\n";
    let b =
        format!("# B\n\n## Results {{#sec-results}}\n\n{TINY_RUN}\n\nBack to {{@sec-setup}}.\n");
    let p = Project::book(
        &[("chapter.md", a), ("b.md", &b)],
        "chapters = [\"chapter.md\", \"b.md\"]",
    );
    let mut opts = p.options(true);
    opts.runs.jobs = 1;
    let out = revtx_book::book::build(&opts);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert_eq!(
        out.counts.checked, 1,
        "the claim in chapter 1 on chapter 2's run"
    );
    let one = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    let two = std::fs::read_to_string(p.root().join("site/chapter-2.html")).unwrap();
    assert!(
        one.contains("href=\"chapter-2.html#sec-results\""),
        "chapter 1 → 2.1"
    );
    assert!(
        one.contains("Section 2.1"),
        "the number of chapter 2's section"
    );
    assert!(
        two.contains("href=\"chapter-1.html#sec-setup\""),
        "chapter 2 → 1.1"
    );
    assert!(
        two.contains("Section 1.1"),
        "the number of chapter 1's section"
    );
    // Each page's sidebar lists the other chapter's sections too.
    assert!(
        one.contains("<a href=\"chapter-2.html#sec-results\">2.1 Results</a>"),
        "sidebar of chapter 1"
    );
    assert!(
        two.contains("<a href=\"chapter-1.html#sec-setup\">1.1 Setup</a>"),
        "sidebar of chapter 2"
    );
}

/// Front matter and appendices, declared in book.toml: the preface has no section numbers
/// and numbers its equation (1); appendix A numbers A.1 and (A.1); references across all
/// three read those numbers and link to each page.
#[test]
fn front_matter_and_appendices_are_numbered_by_their_place() {
    let p = Project::book(
        &[
            ("chapter.md", "# One\n\n## Start {#sec-start}\n\nSee {@sec-more}, {@eq-a} and {@sec-why}.\n"),
            ("preface.md", "# Preface\n\n## Why {#sec-why}\n\n$$a$$ {#eq-p}\n\nSee {@eq-p} and {@sec-start}.\n"),
            ("extra.md", "# More\n\n## More {#sec-more}\n\n$$b$$ {#eq-a}\n"),
        ],
        "front = [\"preface.md\"]\nchapters = [\"chapter.md\"]\nappendices = [\"extra.md\"]",
    );
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let page = |f: &str| std::fs::read_to_string(p.root().join("site").join(f)).unwrap();
    let (front, one, app) = (
        page("front-1.html"),
        page("chapter-1.html"),
        page("appendix-a.html"),
    );
    assert!(
        has_xref(&one, "appendix-a.html#sec-more", "Section A.1"),
        "{one}"
    );
    assert!(has_xref(&one, "appendix-a.html#eq-a", "(A.1)"));
    assert!(has_xref(&one, "front-1.html#sec-why", "“Why”"));
    assert!(app.contains("sec-num\">A.1</span> More"));
    assert!(has_xref(&front, "#eq-p", "(1)"));
    assert!(has_xref(&front, "chapter-1.html#sec-start", "Section 1.1"));
    assert!(
        !front.contains("sec-num"),
        "the preface's sections are unnumbered"
    );
    // Prev/next follow the book's order: preface, chapter 1, appendix A.
    assert!(
        one.contains("rel=\"prev\" href=\"front-1.html\""),
        "prev of chapter 1"
    );
    assert!(
        one.contains("rel=\"next\" href=\"appendix-a.html\""),
        "next of chapter 1"
    );
}
