//! Fixture books with inline expected diagnostics.
//!
//! Each `tests/fixtures/bad/*.md` is a chapter. A comment `<!-- error @+N[:COL]: text -->`
//! says that an error whose `[code] message label` contains `text` must be reported N lines
//! below the comment (negative N: above), at column COL if given; `<!-- warning @… -->`
//! says the same of a warning. The line `TINYRUN` is replaced by a tiny run declaration
//! first, and `<!-- fixture: deny-warnings -->` builds with `--deny-warnings`. Each
//! `tests/fixtures/bad/*.book.toml` is a `book.toml` (beside a one-line chapter), with the
//! same expectations as TOML comments, `# error @+N[:COL]: text`, placed in that file.
//! Every expected diagnostic must appear, and no other may; a book with an expected error
//! must not write a site or touch the run cache.

mod common;
use common::*;
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
        .filter(|d| !(d.severity == Severity::Warning && d.code.starts_with("numerics-")))
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

/// Builds one fixture book (a chapter, or a `book.toml` beside a one-line chapter): what it
/// reported, whether it wrote a site, and whether it left anything in the run cache.
fn build_fixture(src: &str, book_toml: bool) -> (Outcome, bool, bool) {
    let p = if book_toml {
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
    opts.deny_warnings = src.contains("<!-- fixture: deny-warnings -->");
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
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md" || e == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        cases += 1;
        let src = std::fs::read_to_string(&path)
            .unwrap()
            .replace("TINYRUN", TINY_RUN);
        let want = expectations(&src);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(!want.is_empty(), "{name} has no expected diagnostic");
        let book_toml = name.ends_with(".book.toml");
        let (out, site, cached) = build_fixture(&src, book_toml);
        let got = diagnostics(&out, if book_toml { "book.toml" } else { "chapter.md" });
        for w in &want {
            let hit = got.iter().any(|(s, l, c, m)| {
                *s == w.severity
                    && *l == w.line
                    && w.col.is_none_or(|wc| wc == *c)
                    && m.contains(&w.text)
            });
            if !hit {
                failures.push(format!(
                    "{name}: expected {:?} `{}` at {}:{:?}, got {got:?}",
                    w.severity, w.text, w.line, w.col
                ));
            }
        }
        for (s, l, c, m) in &got {
            if !want.iter().any(|w| w.severity == *s && m.contains(&w.text)) {
                failures.push(format!("{name}: unexpected {s:?} at {l}:{c}: {m}"));
            }
        }
        let errors = want.iter().any(|w| w.severity == Severity::Error);
        if errors && site {
            failures.push(format!("{name}: a failed build must not write a site"));
        }
        if errors && !src.contains("TINYRUN") && !src.contains("```run") && cached {
            failures.push(format!(
                "{name}: a book without runs left entries in the run cache"
            ));
        }
    }
    assert!(cases >= 24, "only {cases} fixtures found");
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
    assert!(stderr.contains("error[drift]"), "{stderr}");
    assert!(
        !stderr.contains('\x1b'),
        "no colour codes in a pipe: {stderr}"
    );
    assert!(
        stdout.contains(&format!(
            "::error file=book/chapter.md,line={line},col=13::quoted figure does not match its run"
        )),
        "{stdout}"
    );
}

/// A false assertion names the values of the run paths its condition reads.
#[test]
fn a_false_assertion_names_its_values() {
    let src = format!("# A\n\n{TINY_RUN}\n\nThe model [gets every one right]{{? tiny.train.test.correct > tiny.train.test.total}}.\n");
    let p = Project::new(&src);
    let out = p.check();
    let d = out
        .diags
        .iter()
        .find(|d| d.code == "assertion-false")
        .expect("an assertion-false error");
    let line = 4 + TINY_RUN.lines().count();
    let at = out.sources.line_col(
        d.span.as_ref().unwrap().file,
        d.span.as_ref().unwrap().range.start,
    );
    assert_eq!(at, (line, 12));
    assert!(
        d.notes
            .iter()
            .any(|n| n.starts_with("tiny.train.test.correct = ")),
        "{:?}",
        d.notes
    );
    assert!(
        d.notes.contains(&"tiny.train.test.total = 24".to_string()),
        "{:?}",
        d.notes
    );
}

/// `--bless` rewrites a drifted figure but never an assertion: it lists the false ones, and
/// the build still fails.
#[test]
fn bless_lists_false_assertions_and_rewrites_none() {
    let sentence = "[It gets every one right]{? tiny.train.test.correct > tiny.train.test.total}";
    let src = format!("# B\n\n{TINY_RUN}\n\n{sentence}, of [25]{{=tiny.train.test.total}}.\n");
    let p = Project::new(&src);
    let mut opts = p.options(false);
    opts.bless = true;
    let out = revtx_book::book::build(&opts);
    assert_eq!(out.blessed.len(), 1, "the drifted figure is rewritten");
    assert!(p.chapter().contains("[24]{=tiny.train.test.total}"));
    assert!(
        p.chapter().contains(sentence),
        "the assertion is left as written"
    );
    let codes: Vec<&str> = out.diags.iter().map(|d| d.code).collect();
    assert!(codes.contains(&"assertion-false"), "{codes:?}");
    let list = out
        .diags
        .iter()
        .find(|d| d.code == "assertions-to-rewrite")
        .expect("the false assertions are listed");
    assert!(
        list.message.contains("1 assertion to rewrite by hand"),
        "{}",
        list.message
    );
    assert!(
        list.notes[0].contains("It gets every one right"),
        "{:?}",
        list.notes
    );
    assert!(out.errors() > 0, "the build still fails");
}

/// The issue's test: one cached result corrupted on purpose (its accuracy edited, its
/// checksum made to match) turns an asserted sentence false, and `check --offline` fails
/// at that sentence's line.
#[test]
fn a_corrupted_cached_result_falsifies_its_asserted_sentence() {
    let src = format!(
        "# C\n\n{TINY_RUN}\n\nThirty steps are too few: [most test strings come out wrong]{{? tiny.train.test.accuracy < 0.5}}.\n"
    );
    let p = Project::new(&src);
    let first = p.check();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    let runs = p.root().join(".revtx-cache/runs");
    let entry = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    let json = entry.join("result.json");
    let mut result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    result["train"]["test"]["accuracy"] = serde_json::json!(0.95);
    std::fs::write(&json, serde_json::to_string_pretty(&result).unwrap()).unwrap();
    let sum = revtx_book::engine::entry::checksum(&entry).unwrap();
    std::fs::write(entry.join("checksum"), sum).unwrap();

    let mut opts = p.options(false);
    opts.runs.offline = true;
    let out = revtx_book::book::build(&opts);
    let got = located(&out);
    let line = 4 + TINY_RUN.lines().count();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (line, 28), "{got:?}");
    assert!(got[0].2.starts_with("[assertion-false]"), "{got:?}");
    assert!(
        out.diags[0]
            .notes
            .contains(&"tiny.train.test.accuracy = 0.95".to_string()),
        "{:?}",
        out.diags[0].notes
    );
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
        .find(|d| d.code == "unknown-run")
        .expect("an unknown-run error");
    assert!(d.message.contains("`--rerun tinny`"), "{}", d.message);
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
    assert_eq!(out.diags[0].code, "unbound-number");
}

/// `claims.json` records every kind of claim: the recomputed value at full precision, the
/// formatted value, the tolerance, the verdict, and the difference when the two differ.
#[test]
fn claims_json_records_values_tolerances_and_differences() {
    let src = format!(
        "# J\n\n{TINY_RUN}\n\nExact [24]{{=tiny.train.test.total}}, near [20]{{=tiny.train.test.total ~ 5}}, first loss [2.5]{{=tiny.train.first_loss ~ 50%}}, inserted {{=tiny.train.long.total}}, quoted [362]{{! original}}, and [a true statement]{{? tiny.train.test.total == 24}}.\n"
    );
    let p = Project::new(&src);
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert_eq!(
        (
            out.counts.checked,
            out.counts.inserted,
            out.counts.literal,
            out.counts.asserted,
            out.counts.unbound
        ),
        (3, 1, 1, 1, 0)
    );
    let claims: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(p.root().join("book/claims.json")).unwrap())
            .unwrap();
    assert_eq!(claims.len(), 6, "{claims:#?}");
    let exact = &claims[0];
    assert_eq!(exact["kind"], "checked");
    assert_eq!(exact["recomputed"], 24);
    assert_eq!(exact["formatted"], "24");
    assert_eq!(exact["verdict"], "ok");
    assert!(exact.get("difference").is_none() && exact.get("tolerance").is_none());
    let near = &claims[1];
    assert_eq!(near["tolerance"], "5");
    assert_eq!(near["formatted"], "24");
    assert_eq!(near["difference"], 4.0, "a move within the tolerance shows");
    assert_eq!(near["verdict"], "ok");
    let loss = &claims[2];
    assert_eq!(loss["tolerance"], "50%");
    assert!(
        loss["recomputed"].as_f64().unwrap() > 1.0,
        "full precision: {loss}"
    );
    assert_eq!(claims[3]["kind"], "inserted");
    assert_eq!(claims[3]["recomputed"], 8);
    assert_eq!(claims[4]["kind"], "literal");
    assert_eq!(claims[4]["reason"], "original");
    assert_eq!(claims[4]["quoted"], "362");
    let asserted = &claims[5];
    assert_eq!(asserted["kind"], "asserted");
    assert_eq!(asserted["expr"], "tiny.train.test.total == 24");
    assert_eq!(asserted["quoted"], "a true statement");
    assert_eq!(asserted["recomputed"], true);
    assert_eq!(asserted["values"][0]["expr"], "tiny.train.test.total");
    assert_eq!(asserted["values"][0]["value"], "24");
    let html = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    assert!(
        html.contains(r#"<span class="claim claim-assert claim-ok" tabindex="0""#),
        "the assertion is marked"
    );
    assert!(
        html.contains("a true statement</span><span class=\"claim-tip\""),
        "{html}"
    );
    assert!(html.contains("literal, not checked: quoted from the original chapter"));
}

/// `##` headings are numbered, `###` are not, and `{@sec-…}` reads "Section 1.2".
#[test]
fn sections_are_numbered_and_referenced() {
    let src = "# S\n\nSee {@sec-b}, {@sec-b-sub} and {@sec-refs}.\n\n## Alpha {#sec-a}\n\nText.\n\n## Beta {#sec-b}\n\n### Sub {#sec-b-sub}\n\n## Sources {#sec-refs .unnumbered}\n";
    let p = Project::new(src);
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let html = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    for want in [
        r#"<h2 id="sec-a"><span class="sec-num">1.1</span> Alpha"#,
        r#"<h2 id="sec-b"><span class="sec-num">1.2</span> Beta"#,
        r#"<h3 id="sec-b-sub">Sub"#,
        r#"<h2 id="sec-refs">Sources"#,
        r##"<a class="xref" href="#sec-b">Section 1.2</a>"##,
        r##"<a class="xref" href="#sec-b-sub">Section 1.2</a>"##,
        r##"<a class="xref" href="#sec-refs">“Sources”</a>"##,
    ] {
        assert!(html.contains(want), "{want} not in\n{html}");
    }
    let toc: Vec<&str> = out.chapters[0]
        .toc
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    assert_eq!(toc, ["1.1 Alpha", "1.2 Beta", "Sub", "Sources"]);
}

/// A diagnostic in the middle of a 1,500-character paragraph prints a window of the line,
/// at most 120 columns wide, with its exact location; output that is not a terminal has no
/// colour codes.
#[test]
fn a_long_line_prints_a_window_without_colour() {
    let src = std::fs::read_to_string(repo().join("tests/fixtures/bad/long-line.md"))
        .unwrap()
        .replace("TINYRUN", TINY_RUN);
    let p = Project::new(&src);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["check", "-q", "--root"])
        .arg(p.root())
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\x1b'),
        "no ANSI codes in a pipe:\n{stderr}"
    );
    let (line_no, line) = src
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("[9.99]"))
        .unwrap();
    assert!(line.len() > 1500);
    let col = line.find("9.99").unwrap() + 1;
    assert!(
        stderr.contains(&format!("book/chapter.md:{}:{col}", line_no + 1)),
        "{stderr}"
    );
    for l in stderr.lines().filter(|l| !l.starts_with("check:")) {
        assert!(
            l.chars().count() <= 120,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    let shown = stderr
        .lines()
        .find(|l| l.contains("[9.99]{=tiny.train.first_loss}"))
        .expect("the source line around the span");
    assert!(shown.contains('…'), "{shown}");
    let caret = stderr.lines().find(|l| l.contains("^^^^")).unwrap();
    let k = caret.find('^').unwrap();
    assert_eq!(
        shown
            .chars()
            .skip(caret[..k].chars().count())
            .take(4)
            .collect::<String>(),
        "9.99",
        "the caret is under the span"
    );
}

/// Runs that share a cache key (here `tiny` and seed 0 of the ensemble `ens`) train once,
/// and both read the one result.
#[test]
fn runs_sharing_a_key_train_once() {
    let src = format!(
        "# Shared\n\n{TINY_RUN}\n\n```run ens\nbase = \"tiny\"\nseeds = [0, 1]\n```\n\n\
         [103,244]{{=tiny.params}}.\n"
    );
    let p = Project::new(&src);
    let out = p.check();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let lines = runs_of(&out);
    let ran: Vec<_> = lines.iter().filter(|l| l.contains("ran")).collect();
    let shared: Vec<_> = lines.iter().filter(|l| l.contains("same run as")).collect();
    assert_eq!(ran.len(), 2, "two distinct keys train: {lines:?}");
    assert_eq!(shared.len(), 1, "one job reads another's result: {lines:?}");
    let entries = std::fs::read_dir(p.root().join(".revtx-cache/runs"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(entries, 2, "two cache entries");
}

/// `--jobs 0` is refused with a message, not silently replaced.
#[test]
fn zero_jobs_is_refused() {
    let p = Project::new("# C\n\nText.\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["check", "-q", "--jobs", "0", "--root"])
        .arg(p.root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--jobs") && stderr.contains("at least 1"),
        "{stderr}"
    );
}

/// A chapter that is a symlink to a file outside book/ is refused at its entry, as
/// `include` refuses one; the file is not read.
#[test]
fn a_chapter_linked_from_outside_the_book_is_refused() {
    let p = Project::new("# C\n\nText.\n");
    let outside = p.root().join("outside.md");
    std::fs::write(&outside, "# Outside\n\nSECRET 12345\n").unwrap();
    std::os::unix::fs::symlink(&outside, p.root().join("book/linked.md")).unwrap();
    std::fs::write(
        p.root().join("book/book.toml"),
        "title = \"T\"\nauthor = \"A\"\nchapters = [\"chapter.md\", \"linked.md\"]\n",
    )
    .unwrap();
    let out = p.build();
    let got = located(&out);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (3, 27), "{got:?}");
    assert!(
        got[0].2.contains("[chapter-outside]") && got[0].2.contains("link to a file outside"),
        "{got:?}"
    );
    assert!(
        !p.root().join("site").exists(),
        "no site for a failed build"
    );
}
