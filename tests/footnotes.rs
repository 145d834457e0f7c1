//! Footnotes in both editions: a note that holds a list and code, a note that refers to
//! another, labels that slug alike, and a reference whose label differs from its note's in
//! case. The site's HTML must be valid where it matters (no block inside a paragraph, every
//! note's link and button pointing at an id the page has, no id twice), and the print
//! edition must hold the same content as the same blocks. The mistakes a writer can make
//! with footnotes are fixtures (`tests/fixtures/bad/footnote-*`).

mod common;
use common::*;
use revtx_book::book;

const CHAPTER: &str = "# Notes

The steps are listed.[^steps] A note refers to another.[^outer] Labels that slug alike
differ.[^a.b] [^a-b] A label in capitals finds its note.[^Source]

- An item that refers to a note with blocks.[^item]

The note with blocks again.[^steps]

[^steps]: The steps:

    - zqxitemone
    - zqxitemtwo

    ```
    zqxcode()
    ```

[^outer]: The outer note, which refers to the inner one.[^inner]

[^inner]: The zqxinner note.

[^a.b]: The zqxdot note.

[^a-b]: The zqxdash note.

[^source]: The zqxsource note.

[^item]: Inside a list item:

    > zqxquote
";

fn build_with_pdf(p: &Project) -> book::Outcome {
    let mut opts = p.options(true);
    opts.pdf = true;
    book::build(&opts)
}

/// The tags that open a block, found inside a `<p>` of `html`.
fn blocks_in_paragraphs(html: &str) -> Vec<String> {
    const BLOCKS: &[&str] = &[
        "<p>",
        "<p ",
        "<ul",
        "<ol",
        "<li",
        "<pre",
        "<div",
        "<blockquote",
        "<table",
        "<aside",
        "<figure",
        "<h1",
        "<h2",
        "<h3",
        "<h4",
    ];
    let mut bad = Vec::new();
    let mut rest = html;
    while let Some(k) = rest.find("<p>").or_else(|| rest.find("<p ")) {
        let inner = &rest[k + 3..];
        let end = inner.find("</p>").unwrap_or(inner.len());
        let para = &inner[..end];
        for b in BLOCKS {
            if let Some(at) = para.find(b) {
                bad.push(para[at..].chars().take(60).collect());
            }
        }
        rest = &inner[end..];
    }
    bad
}

/// The values of `attr="…"` in `html`.
fn values<'h>(html: &'h str, attr: &str) -> Vec<&'h str> {
    let pat = format!(" {attr}=\"");
    html.match_indices(&pat)
        .map(|(k, _)| {
            let v = &html[k + pat.len()..];
            &v[..v.find('"').unwrap()]
        })
        .collect()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one book built once, then its site and its print edition read in turn"
)]
fn notes_with_blocks_and_notes_in_notes_render_in_both_editions() {
    let p = Project::new(CHAPTER);
    let out = build_with_pdf(&p);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert!(located(&out).is_empty(), "{:?}", located(&out));
    let html = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    let main = &html[html.find("<main").expect("a <main>")..];

    // Valid: no block inside a paragraph, every link to a note and every note's button
    // pointing at an id of the page, no id twice.
    assert_eq!(blocks_in_paragraphs(main), Vec::<String>::new(), "{main}");
    let ids = values(&html, "id");
    let mut seen = std::collections::HashSet::new();
    for id in &ids {
        assert!(seen.insert(id), "id `{id}` twice on the page");
    }
    let targets: Vec<&str> = values(main, "href")
        .into_iter()
        .filter_map(|h| h.strip_prefix('#'))
        .chain(values(main, "aria-controls"))
        .collect();
    assert_eq!(targets.len(), 8, "seven buttons and a link: {targets:?}");
    for t in &targets {
        assert!(ids.contains(t), "`#{t}` points at no id of the page");
    }
    assert!(
        !main.contains("footnote-reference"),
        "pulldown-cmark's own footnotes"
    );

    // Every note, once, numbered in order of first reference; the inner note after the
    // outer one.
    for text in [
        "zqxinner",
        "zqxdot",
        "zqxdash",
        "zqxsource",
        "zqxcode",
        "zqxquote",
    ] {
        assert_eq!(main.matches(text).count(), 1, "{text} once: {main}");
    }
    assert_eq!(main.matches(r#"class="fn-note"#).count(), 7, "{main}");
    let outer = main.find("The outer note").unwrap();
    let inner = main.find("zqxinner").unwrap();
    assert!(outer < inner);
    assert!(
        main.contains(r#"aria-label="Note 7""#),
        "seven notes numbered"
    );
    assert!(
        !main.contains(r#"aria-label="Note 8""#),
        "seven notes numbered"
    );
    // The blocks as blocks.
    let steps = &main[main.find(r#"id="fn-steps""#).expect("the note with blocks")..];
    let steps = &steps[..steps.find("</div>").unwrap()];
    assert!(steps.contains("<li>zqxitemone</li>"), "{steps}");
    assert!(
        steps.contains("<pre") && steps.contains("zqxcode"),
        "{steps}"
    );
    // It follows the paragraph that refers to it; the later reference links to it.
    let para_end = main.find("</p>").unwrap();
    assert!(main.find(r#"id="fn-steps""#).unwrap() > para_end);
    assert!(main.contains(r##"class="fn-again" href="#fnref-steps""##));
    // In a list item, the note stays inside the item.
    let item = &main[main.find("<li>An item").unwrap()..];
    let item = &item[..item.find("</li>").unwrap()];
    assert!(item.contains("zqxquote"), "{item}");

    // Print: the same blocks in the footnote, the inner note inside the outer one.
    let mut sources = book::diag::Sources {
        root: p.root().to_path_buf(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let parsed = book::parse::load(p.root(), &mut sources, &mut diags).unwrap();
    let results = book::runs::Results::default();
    let mut katex = book::render::KatexCache::default();
    let rendered = book::render::render(&parsed, &results, &sources, &mut katex, None, &mut diags);
    let edition = book::print::edition(&parsed, &results, &rendered.chapters, &mut diags)
        .expect("a print edition");
    assert!(diags.is_empty(), "{diags:?}");
    let typ = &edition.document.main;
    let steps = &typ[typ
        .find("#footnote[The steps:")
        .expect("the note with blocks")..];
    assert!(
        steps.contains("#list([zqxitemone], [zqxitemtwo])"),
        "a list in the note: {steps}"
    );
    assert!(
        steps[..steps.find("<fn-chapter-1-steps>").unwrap()].contains("#raw(block: true"),
        "code in the note: {steps}"
    );
    let outer = &typ[typ.find("#footnote[The outer note").unwrap()..];
    assert!(outer.contains("#footnote[The zqxinner note.]"), "{outer}");
    for text in ["zqxdot", "zqxdash", "zqxsource", "zqxquote"] {
        assert_eq!(typ.matches(text).count(), 1, "{text} once in print");
    }
    assert!(typ.contains("<fn-chapter-1-a-b>") && typ.contains("<fn-chapter-1-a-b-2>"));

    // And in the PDF's text, read by poppler (`tests/pdf/setup.sh` installs it).
    let pdf = p.root().join("site/fixture.pdf");
    assert!(pdf.exists(), "the PDF");
    match std::process::Command::new("pdftotext")
        .args(["-layout"])
        .arg(&pdf)
        .arg("-")
        .output()
    {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            for t in [
                "zqxitemone",
                "zqxitemtwo",
                "zqxcode()",
                "zqxinner",
                "zqxdot",
                "zqxdash",
                "zqxsource",
                "zqxquote",
            ] {
                assert!(text.contains(t), "{t} in the PDF: {text}");
            }
            let one = text.lines().position(|l| l.contains("zqxitemone"));
            let two = text.lines().position(|l| l.contains("zqxitemtwo"));
            assert!(one < two, "the list's items on lines of their own: {text}");
        }
        // A check that cannot run is a failure, not a pass: `make test` installs it first.
        _ => panic!("pdftotext is missing (tests/pdf/setup.sh installs it)"),
    }
}
