//! Fixture books with inline expected errors.
//!
//! Each `tests/fixtures/bad/*.md` is a chapter. A comment `<!-- error @+N[:COL]: text -->`
//! says that a diagnostic containing `text` must be reported N lines below the comment
//! (negative N: above), at column COL if given. The line `TINYRUN` is replaced by a tiny
//! run declaration first. Every expected error must appear, and no other error may.

mod common;
use common::*;

struct Expected {
    line: usize,
    col: Option<usize>,
    text: String,
}

fn expectations(src: &str) -> Vec<Expected> {
    let mut out = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("<!-- error @") else {
            continue;
        };
        let rest = rest.strip_suffix("-->").unwrap().trim();
        let (pos, text) = rest.split_once(": ").unwrap();
        let (off, col) = match pos.split_once(':') {
            Some((o, c)) => (o, Some(c.parse().unwrap())),
            None => (pos, None),
        };
        let off: isize = off.parse().unwrap();
        out.push(Expected {
            line: (i + 1).checked_add_signed(off).unwrap(),
            col,
            text: text.to_string(),
        });
    }
    out
}

#[test]
fn every_bad_input_gets_its_diagnostic() {
    let dir = repo().join("tests/fixtures/bad");
    let mut failures = Vec::new();
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        cases += 1;
        let src = std::fs::read_to_string(&path)
            .unwrap()
            .replace("TINYRUN", TINY_RUN);
        let want = expectations(&src);
        assert!(!want.is_empty(), "{} has no expected error", path.display());
        let p = Project::new(&src);
        std::fs::write(
            p.root().parent().unwrap().join("outside.rs"),
            "fn secret() {}\n",
        )
        .ok();
        let out = p.build();
        let got = located(&out);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for w in &want {
            let hit = got.iter().any(|(l, c, m)| {
                *l == w.line && w.col.is_none_or(|wc| wc == *c) && m.contains(&w.text)
            });
            if !hit {
                failures.push(format!(
                    "{name}: expected `{}` at {}:{:?}, got {got:?}",
                    w.text, w.line, w.col
                ));
            }
        }
        for (l, c, m) in &got {
            if !want.iter().any(|w| m.contains(&w.text)) {
                failures.push(format!("{name}: unexpected diagnostic at {l}:{c}: {m}"));
            }
        }
        assert!(
            !p.root().join("site").exists(),
            "{name}: a failed build must not write a site"
        );
    }
    assert!(cases >= 14, "only {cases} fixtures found");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

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

/// A quoted figure that drifts fails `check` at its line and column; `--bless` fixes it.
#[test]
fn drift_is_located_and_blessed() {
    let src = format!("# Drift\n\n{TINY_RUN}\n\nParameters: [103,244]{{=tiny.params}}; first loss [9.99]{{=tiny.train.first_loss}}.\n");
    let p = Project::new(&src);
    let out = p.check();
    let got = located(&out);
    assert_eq!(got.len(), 1, "{got:?}");
    let line = 4 + TINY_RUN.lines().count();
    assert_eq!((got[0].0, got[0].1), (line, 50), "{got:?}");
    assert!(got[0].2.contains("quoted `9.99`"), "{got:?}");

    let mut opts = p.options(false);
    opts.bless = true;
    let blessed = revtx_book::book::build(&opts);
    assert_eq!(blessed.errors(), 0);
    assert_eq!(blessed.blessed.len(), 1);
    let text = p.chapter();
    assert!(!text.contains("[9.99]"), "{text}");
    assert_eq!(p.check().errors(), 0, "after --bless the book checks clean");
}

/// Changing a run's config re-runs that run alone; editing prose re-runs nothing.
#[test]
fn cache_reruns_only_what_changed() {
    let two = format!("# C\n\n{TINY_RUN}\n\n```run other\nbase = \"tiny\"\nseed = 1\n```\n\nText [103,244]{{=tiny.params}}.\n");
    let p = Project::new(&two);
    let first = p.check();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    assert!(
        runs_of(&first).iter().all(|l| l.contains("ran")),
        "{:?}",
        first.run_report
    );
    std::fs::write(
        p.root().join("book/chapter.md"),
        two.replace("Text", "Edited prose"),
    )
    .unwrap();
    let second = p.check();
    assert!(
        runs_of(&second).iter().all(|l| l.ends_with("cached")),
        "{:?}",
        second.run_report
    );
    std::fs::write(
        p.root().join("book/chapter.md"),
        two.replace("seed = 1", "seed = 2"),
    )
    .unwrap();
    let third = p.check();
    let ran: Vec<_> = runs_of(&third)
        .into_iter()
        .filter(|l| l.contains("ran"))
        .collect();
    assert_eq!(ran.len(), 1, "{:?}", third.run_report);
    assert!(ran[0].starts_with("other"), "{ran:?}");
}

/// A corrupt cache entry is detected and re-run, never trusted.
#[test]
fn corrupt_cache_entry_is_rerun() {
    let src = format!("# C\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}}\n");
    let p = Project::new(&src);
    assert_eq!(p.check().errors(), 0);
    let runs = p.root().join(".revtx-cache/runs");
    let entry = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    let json = entry.join("result.json");
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::write(&json, &text[..text.len() / 2]).unwrap();
    let again = p.check();
    assert_eq!(again.errors(), 0);
    assert!(
        runs_of(&again)[0].contains("corrupt"),
        "{:?}",
        again.run_report
    );
    // --offline refuses to train instead.
    std::fs::write(&json, "{}").unwrap();
    let mut opts = p.options(false);
    opts.runs.offline = true;
    let off = revtx_book::book::build(&opts);
    assert!(
        located(&off)
            .iter()
            .any(|(_, _, m)| m.contains("--offline")),
        "{:?}",
        located(&off)
    );
}

/// A failed build leaves the previous site intact.
#[test]
fn failed_build_keeps_previous_site() {
    let good = format!("# C\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}}\n");
    let p = Project::new(&good);
    assert_eq!(p.build().errors(), 0);
    let index = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    std::fs::write(
        p.root().join("book/chapter.md"),
        good.replace("103,244", "5"),
    )
    .unwrap();
    assert!(p.build().errors() > 0);
    assert_eq!(
        std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap(),
        index
    );
}

/// The command line prints rustc-style diagnostics and, under GitHub Actions, annotations.
#[test]
fn check_command_prints_located_diagnostics_and_annotations() {
    let src = format!("# Drift\n\n{TINY_RUN}\n\nFirst loss [9.99]{{=tiny.train.first_loss}}.\n");
    let p = Project::new(&src);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["check", "-q", "--root"])
        .arg(p.root())
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = 4 + TINY_RUN.lines().count();
    assert!(
        stderr.contains(&format!("book/chapter.md:{line}:13")),
        "{stderr}"
    );
    assert!(stderr.contains("quoted `9.99`, recomputed"), "{stderr}");
    assert!(stderr.contains("^^^^"), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "::error file=book/chapter.md,line={line},col=13::quoted figure does not match its run"
        )),
        "{stdout}"
    );
}
