//! Claims against their runs: drift located and blessed, false assertions named,
//! `claims.json`, numbered sections, and the printed diagnostics.

mod common;
use common::*;
use revtx_book::book::codes::Code;

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

/// `[?]` asks `--bless` for the value; a quote of zeros is filled the same way; each is
/// written in a format that shows the value (the book's thousands separators).
#[test]
fn placeholders_are_filled_by_bless() {
    let src = format!(
        "# Fill

{TINY_RUN}

Parameters: [?]{{=tiny.params}}, [0]{{=tiny.params}}; rows [?]{{=tiny.config.model.positions}}.\n"
    );
    let p = Project::new(&src);
    let out = p.check();
    let got = located(&out);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        got[0].2.contains("quoted `?`, recomputed `103,244`"),
        "{got:?}"
    );
    let mut opts = p.options(false);
    opts.bless = true;
    let blessed = revtx_book::book::build(&opts);
    assert_eq!(blessed.errors(), 0, "{:?}", located(&blessed));
    assert!(
        p.chapter()
            .contains("Parameters: [103,244]{=tiny.params}, [103,244]{=tiny.params}; rows [25]"),
        "{}",
        p.chapter()
    );
    assert_eq!(p.check().errors(), 0, "after --bless the book checks clean");
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
        .find(|d| d.code == Code::AssertionFalse)
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
    let codes: Vec<&str> = out.diags.iter().map(|d| d.code.name()).collect();
    assert!(codes.contains(&"assertion-false"), "{codes:?}");
    let list = out
        .diags
        .iter()
        .find(|d| d.code == Code::AssertionsToRewrite)
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
    let (out, html) = p.built_page();
    for want in [
        r#"<h2 id="sec-a"><span class="sec-num">1.1</span> Alpha"#,
        r#"<h2 id="sec-b"><span class="sec-num">1.2</span> Beta"#,
        r#"<h3 id="sec-b-sub">Sub"#,
        r#"<h2 id="sec-refs">Sources"#,
        r##"<a class="xref" href="#sec-b" aria-describedby="xref-1-tip">Section 1.2</a>"##,
        r##"<a class="xref" href="#sec-b-sub" aria-describedby="xref-2-tip">Section 1.2</a>"##,
        r##"<a class="xref" href="#sec-refs" aria-describedby="xref-3-tip">“Sources”</a>"##,
        // Each reference previews its target: the label, the heading, its first words.
        r#"id="xref-1-tip"><span class="xref-tip-label">Section 1.2</span> Beta. </span>"#,
        r#"id="xref-2-tip"><span class="xref-tip-label">Section 1.2</span> Sub. </span>"#,
        r#"id="xref-3-tip"><span class="xref-tip-label">“Sources”</span> Sources. </span>"#,
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

/// Exercises are numbered per chapter (the print edition takes the same numbers), and a reference to one
/// reads "Exercise 1.2", however deep its heading; sections keep their numbers.
#[test]
fn exercises_are_numbered_and_referenced() {
    let src = "# E

Try {@ex-one} and {@ex-two}.

## Exercises {#sec-ex}

### Scale {.exercise #ex-one}

Do it.

#### Answer {.answer #ans-one}

Done.

### Mask {.exercise #ex-two}

Again.

## After {#sec-after}
";
    let p = Project::new(src);
    let (_, html) = p.built_page();
    for want in [
        r#"<h3 id="ex-one"><span class="sec-num">Exercise 1.1</span> Scale"#,
        r#"<h3 id="ex-two"><span class="sec-num">Exercise 1.2</span> Mask"#,
        r##"<a class="xref" href="#ex-one" aria-describedby="xref-1-tip">Exercise 1.1</a>"##,
        r##"<a class="xref" href="#ex-two" aria-describedby="xref-2-tip">Exercise 1.2</a>"##,
        r#"<h2 id="sec-after"><span class="sec-num">1.2</span> After"#,
    ] {
        assert!(html.contains(want), "{want} not in\n{html}");
    }
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

/// `--bless` under the native profile is refused: the book records portable bits only.
#[test]
fn bless_under_another_profile_is_refused() {
    let p = Project::new(&format!(
        "# T\n\n{TINY_RUN}\n\nIt has [1]{{=tiny.params}} parameters.\n"
    ));
    let mut opts = p.options(false);
    opts.bless = true;
    opts.runs.profile = revtx_spec::profile::Profile::Native;
    let out = revtx_book::book::build(&opts);
    assert!(
        out.diags.iter().any(|d| d.code == Code::Bless),
        "{:?}",
        located(&out)
    );
    let text = std::fs::read_to_string(p.root().join("book/chapter.md")).unwrap();
    assert!(
        text.contains("[1]{=tiny.params}"),
        "the chapter was rewritten"
    );
}

/// Under the native profile a drifted figure is a warning that says why, not an error.
#[test]
fn drift_under_the_native_profile_is_not_comparable() {
    let p = Project::new(&format!(
        "# T\n\n{TINY_RUN}\n\nIt has [1]{{=tiny.params}} parameters.\n"
    ));
    let mut opts = p.options(false);
    opts.runs.profile = revtx_spec::profile::Profile::Native;
    let out = revtx_book::book::build(&opts);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let w: Vec<_> = out
        .diags
        .iter()
        .filter(|d| d.code == Code::NotComparable)
        .collect();
    assert_eq!(w.len(), 1, "{:?}", located(&out));
    assert!(w[0].message.contains("not comparable"), "{}", w[0].message);
}
