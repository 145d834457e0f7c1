//! The render memo: a chapter whose inputs are unchanged comes from the cache as rendering
//! it gives it; an edited chapter, a changed included file and a chapter with a diagnostic
//! are rendered again, and references into an edited chapter preview its new text.

mod common;
use common::*;
use revtx_book::book::Outcome;

/// The build's line on the memo, if it took any chapter from it.
fn memo_line(o: &Outcome) -> Option<&str> {
    runs_of(o).into_iter().find(|l| l.starts_with("render:"))
}

fn html(o: &Outcome, i: usize) -> &str {
    &o.chapters[i].html
}

const SAMPLE: &str = "// ANCHOR: demo\nfn demo() -> u32 {\n    41\n}\n// ANCHOR_END: demo\n";

#[test]
fn an_unchanged_chapter_comes_from_the_memo_and_an_edited_one_is_rendered() {
    let a = "# One\n\nSee {@sec-two} and {@eq-e}.\n\n$$ e = mc^2 $$ {#eq-e}\n\n```include src/sample.rs:demo\n```\n";
    let b = "# Two\n\n## Part {#sec-two}\n\nThe second chapter, as first written.\n";
    let p = Project::book(
        &[("a.md", a), ("b.md", b)],
        "chapters = [\"a.md\", \"b.md\"]",
    );
    std::fs::create_dir_all(p.root().join("src")).unwrap();
    std::fs::write(p.root().join("src/sample.rs"), SAMPLE).unwrap();

    let first = p.build();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    assert_eq!(
        memo_line(&first),
        None,
        "nothing was kept before the first build"
    );
    assert_eq!(first.chapters.len(), 2);

    // Nothing changed: both chapters from the memo, exactly as rendered.
    let second = p.build();
    assert_eq!(second.errors(), 0, "{:?}", located(&second));
    assert_eq!(
        memo_line(&second),
        Some("render: 2 of 2 chapters unchanged, from the render memo")
    );
    for i in 0..2 {
        assert_eq!(html(&second, i), html(&first, i), "chapter {i}");
        assert_eq!(
            second.chapters[i].inline_text,
            first.chapters[i].inline_text
        );
        assert_eq!(
            second.chapters[i].search.len(),
            first.chapters[i].search.len()
        );
    }
    assert_eq!(
        serde_json::to_string(&second.claims).unwrap(),
        serde_json::to_string(&first.claims).unwrap()
    );

    // The second chapter edited: it alone is rendered, and the first chapter's reference
    // to it previews its new words.
    std::fs::write(
        p.root().join("book/b.md"),
        b.replace("as first written", "edited since"),
    )
    .unwrap();
    let third = p.build();
    assert_eq!(third.errors(), 0, "{:?}", located(&third));
    assert_eq!(
        memo_line(&third),
        Some("render: 1 of 2 chapters unchanged, from the render memo")
    );
    assert!(html(&third, 1).contains("edited since"));
    assert!(
        html(&third, 0).contains("edited since"),
        "the preview of the section"
    );
    assert!(!html(&third, 0).contains("as first written"));

    // The file the first chapter includes changed: that chapter is rendered again.
    std::fs::write(p.root().join("src/sample.rs"), SAMPLE.replace("41", "42")).unwrap();
    let fourth = p.build();
    assert_eq!(fourth.errors(), 0, "{:?}", located(&fourth));
    assert_eq!(
        memo_line(&fourth),
        Some("render: 1 of 2 chapters unchanged, from the render memo")
    );
    assert!(html(&fourth, 0).contains("42"), "the new listing");
    assert!(html(&third, 0).contains("41"));
}

/// A chapter with a diagnostic is never kept: its problem is reported at every build.
#[test]
fn a_chapter_with_a_diagnostic_is_rendered_at_every_build() {
    let p = Project::new("# T\n\nThe answer is {=nosuch.value}.\n");
    for build in 0..2 {
        let out = p.check();
        assert_eq!(out.errors(), 1, "build {build}: {:?}", located(&out));
        assert_eq!(memo_line(&out), None, "build {build}");
    }
    // Put right, it is kept.
    std::fs::write(p.root().join("book/chapter.md"), "# T\n\nNo runs read.\n").unwrap();
    assert_eq!(p.check().errors(), 0);
    let out = p.check();
    assert_eq!(
        memo_line(&out),
        Some("render: 1 of 1 chapters unchanged, from the render memo")
    );
}
