//! The fixture textbook (`tests/fixtures/textbook/`): two chapters and an appendix that
//! share one run, with references across pages, citations, footnotes and an answer. Its
//! browser checks are `tests/browser/textbook.check.mjs`.

mod common;
use common::*;

fn page(p: &Project, name: &str) -> String {
    std::fs::read_to_string(p.root().join("site").join(name)).unwrap()
}

#[test]
fn the_textbook_builds_with_one_run_for_three_parts() {
    let p = Project::textbook();
    let t = std::time::Instant::now();
    let out = revtx_book::book::build(&p.options(true));
    println!(
        "fixture textbook: cold build (two tiny runs) in {:.2?}",
        t.elapsed()
    );
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert!(
        located(&out).is_empty(),
        "warnings are denied: {:?}",
        located(&out)
    );
    // The shared run trains once for three parts (and as the first seed of the appendix's
    // pair); the appendix's tall figure has its own run, and its length curve a second seed.
    let ran: Vec<_> = runs_of(&out)
        .into_iter()
        .filter(|l| l.contains("ran"))
        .collect();
    assert_eq!(
        ran.iter().filter(|l| l.starts_with("tiny ")).count(),
        1,
        "the shared run trains once: {:?}",
        runs_of(&out)
    );
    assert_eq!(ran.len(), 3, "{:?}", runs_of(&out));
    assert_eq!(out.chapters.len(), 3);
    comparisons_and_names(&p);

    let t = std::time::Instant::now();
    let again = revtx_book::book::build(&p.options(true));
    println!("fixture textbook: warm build in {:.2?}", t.elapsed());
    assert_eq!(again.errors(), 0);
    assert!(
        runs_of(&again).iter().all(|l| !l.contains("ran")),
        "{:?}",
        runs_of(&again)
    );

    let (one, two, a) = (
        page(&p, "chapter-1.html"),
        page(&p, "chapter-2.html"),
        page(&p, "appendix-a.html"),
    );
    // Numbers by place, references across pages, each with a preview of its target.
    assert!(
        one.contains("Figure 1.1"),
        "chapter 1 numbers its figure 1.1"
    );
    assert!(
        two.contains(r#"<a class="xref" href="chapter-1.html#fig-tiny-loss""#),
        "chapter 2 links to chapter 1's figure"
    );
    let preview = two
        .split(r#"href="chapter-1.html#fig-tiny-loss""#)
        .nth(1)
        .and_then(|s| s.split("</span></span>").next())
        .unwrap();
    assert!(
        preview.contains("Figure 1.1") && preview.contains("training loss"),
        "the preview holds the caption: {preview}"
    );
    assert!(a.contains(">Section 2.1</a>") && a.contains(r#"href="chapter-2.html#sec-again""#));
    // A chapter's `#` title with an id reads as the chapter.
    assert!(
        two.contains(r#"href="chapter-1.html#chap-counting""#) && two.contains(">Chapter 1</a>"),
        "chapter 2 refers to chapter 1 by its title's id"
    );
    assert!(
        one.contains(r#"<h1 class="page-title" id="chap-counting">"#),
        "the reference lands on chapter 1's title"
    );
    // The position table, read from the run's saved weights, for a figure and an insert.
    assert!(
        a.contains("Heatmaps side by side of the cosine similarity")
            && a.contains("learned (seed 0): 25 positions"),
        "the appendix draws the tiny run's position table"
    );
    assert!(
        a.contains(">(2.1)</a>"),
        "the appendix refers to chapter 2's equation"
    );
    assert!(a.contains("A.1"), "the appendix numbers its sections A.1");

    // Citations: narrative, with a locator, grouped; each chapter lists what it cites.
    assert!(
        one.contains("Writer &amp; Reader (2001)"),
        "narrative citation"
    );
    assert!(one.contains("Section 3.2"), "a locator");
    assert!(two.contains("Other, 2010, pp. 4–5"), "a page locator");
    let entries = |html: &str| html.matches(r#"<li id="ref-"#).count();
    assert_eq!(entries(&one), 1, "chapter 1 cites one work");
    assert_eq!(entries(&two), 2, "chapter 2 cites two");
    assert!(one.contains(r#"href="https://doi.org/10.5555/fixture.2001""#));

    // Footnotes at their references, numbered per page, with checked figures inside.
    for html in [&one, &two, &a] {
        assert_eq!(html.matches(r#"class="fn-note""#).count(), 1);
        assert!(html.contains(r#"aria-label="Note 1""#));
    }
    let note = one.split(r#"class="fn-note""#).nth(1).unwrap();
    let note = &note[..note.find("</span></span>").unwrap()];
    assert!(
        note.contains("claim claim-ok"),
        "a claim inside a footnote: {note}"
    );

    // The answer: shut, with a claim and a reference inside.
    let answer = one.split(r#"<details class="answer""#).nth(1).unwrap();
    let answer = &answer[..answer.find("</details>").unwrap()];
    assert!(answer.contains("claim-ok") && answer.contains("claim-assert"));
    assert!(answer.contains(r#"class="xref""#));
}

/// `plan` covers the whole book: the run two chapters and the appendix use is one job, and
/// once trained it is cached for all of them.
#[test]
fn the_plan_covers_every_part_of_the_book() {
    let p = Project::textbook();
    let plan = |p: &Project| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
            .args(["plan", "--root"])
            .arg(p.root())
            .arg("--cache")
            .arg(p.root().join(".revtx-cache"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let before = plan(&p);
    let rows: Vec<&str> = before.lines().filter(|l| l.starts_with("tiny ")).collect();
    assert_eq!(rows.len(), 1, "one job for the shared run:\n{before}");
    assert!(rows[0].contains(" no "), "not cached yet: {}", rows[0]);
    assert_eq!(revtx_book::book::build(&p.options(true)).errors(), 0);
    let after = plan(&p);
    let row = after.lines().find(|l| l.starts_with("tiny ")).unwrap();
    assert!(row.contains(" yes "), "cached for the whole book: {row}");
    assert!(
        after.contains("0 of 3 distinct runs to train: 0 s one after another"),
        "nothing left to train, and no \"-0 s\":\n{after}"
    );
}

/// The named expression, its two uses, the paired statement, and what the figures' runs
/// differ in, on the page and in the Runs appendix.
fn comparisons_and_names(p: &Project) {
    let details = page(p, "appendix-a.html");
    // fig-lengths sets two runs side by side; fig-similar draws one run twice, and says nothing.
    assert_eq!(
        details.matches("What its runs differ in").count(),
        1,
        "{details}"
    );
    assert!(details.contains("pair against tiny: the same configuration, other seeds"));
    assert!(
        details.contains("paired(pair, tiny"),
        "the paired statement's tooltip"
    );
    let runs = page(p, "runs.html");
    assert!(
        runs.contains("Named expressions") && runs.contains("<code>fall(run)</code>"),
        "{runs}"
    );
    assert!(runs.contains("What each comparison varies"));
    assert!(
        runs.contains("<code>start(run)</code>"),
        "a chapter's named expression: {runs}"
    );
    let details = page(p, "appendix-a.html");
    assert!(details.contains("from the same start (named in the first chapter)"));
}
