//! The print edition: the PDF typeset with the site, from the same parsed chapters and
//! runs, byte-identical from build to build, cached, and never written for a book that
//! fails its checks. What the PDF holds (every checked figure, every figure and table
//! number, embedded fonts, tags) is checked with poppler by `tests/pdf/check.py`, which
//! `make test` runs on the real book and on the fixture textbook.

mod common;
use common::*;
use revtx_book::book::codes::Code;

fn textbook() -> Project {
    let p = Project::new("# unused\n");
    let book = p.root().join("book");
    std::fs::remove_file(book.join("chapter.md")).unwrap();
    for e in std::fs::read_dir(repo().join("tests/fixtures/textbook/book")).unwrap() {
        let path = e.unwrap().path();
        std::fs::copy(&path, book.join(path.file_name().unwrap())).unwrap();
    }
    p
}

fn build_with_pdf(p: &Project) -> revtx_book::book::Outcome {
    let mut opts = p.options(true);
    opts.pdf = true;
    revtx_book::book::build(&opts)
}

const PDF: &str = "site/a-fixture-textbook.pdf";

#[test]
fn the_print_edition_is_written_with_the_site_and_is_the_same_every_time() {
    let p = textbook();
    let t = std::time::Instant::now();
    let out = build_with_pdf(&p);
    println!("fixture textbook with its PDF: cold build in {:.2?}", t.elapsed());
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let first = std::fs::read(p.root().join(PDF)).expect("the PDF is in the site");
    assert!(first.starts_with(b"%PDF-"), "a PDF");
    assert!(
        runs_of(&out).iter().any(|l| l.starts_with("print:") && l.ends_with("typeset)")),
        "{:?}",
        runs_of(&out)
    );
    let index = std::fs::read_to_string(p.root().join("site/index.html")).unwrap();
    assert!(index.contains("href=\"a-fixture-textbook.pdf\""), "the index links it");
    let page = std::fs::read_to_string(p.root().join("site/counting.html")).unwrap();
    assert!(
        page.contains("class=\"pdf-link\" href=\"a-fixture-textbook.pdf\""),
        "every page's header links it"
    );

    // A warm build with nothing changed takes the PDF from the cache.
    let t = std::time::Instant::now();
    let again = build_with_pdf(&p);
    println!("fixture textbook with its PDF: warm build in {:.2?}", t.elapsed());
    assert!(
        runs_of(&again).iter().any(|l| l.starts_with("print:") && l.contains("from the cache")),
        "{:?}",
        runs_of(&again)
    );
    assert_eq!(std::fs::read(p.root().join(PDF)).unwrap(), first);

    // Typeset again from nothing: the same bytes (no clock, no random ids).
    std::fs::remove_dir_all(p.root().join(".revtx-cache/print")).unwrap();
    let third = build_with_pdf(&p);
    assert!(
        runs_of(&third).iter().any(|l| l.starts_with("print:") && l.ends_with("typeset)")),
        "{:?}",
        runs_of(&third)
    );
    assert_eq!(
        std::fs::read(p.root().join(PDF)).unwrap(),
        first,
        "two typesettings of one book give one PDF"
    );

    // --no-pdf (the library's `pdf: false`) leaves it out of the site.
    let out = revtx_book::book::build(&p.options(true));
    assert_eq!(out.errors(), 0);
    assert!(!p.root().join(PDF).exists(), "a draft build writes no PDF");
}

#[test]
fn a_book_that_fails_its_checks_writes_no_pdf() {
    let good = format!("# Print\n\n{TINY_RUN}\n\nThe model has [103,244]{{=tiny.params}} parameters.\n");
    let p = Project::new(&good);
    let out = build_with_pdf(&p);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let pdf = p.root().join("site/fixture.pdf");
    let before = std::fs::read(&pdf).unwrap();

    std::fs::write(
        p.root().join("book/chapter.md"),
        good.replace("103,244", "103,245") + "\nA new paragraph.\n",
    )
    .unwrap();
    let out = build_with_pdf(&p);
    assert!(out.errors() > 0, "a drifted figure fails the build");
    assert!(
        !runs_of(&out).iter().any(|l| l.starts_with("print:")),
        "nothing was typeset: {:?}",
        runs_of(&out)
    );
    assert_eq!(
        std::fs::read(&pdf).unwrap(),
        before,
        "the PDF is the last good one"
    );
    assert_eq!(
        std::fs::read_dir(p.root().join(".revtx-cache/print"))
            .unwrap()
            .count(),
        1,
        "and only that one is cached"
    );
}

#[test]
fn a_formula_print_cannot_take_is_an_error_at_the_formula() {
    let p = Project::new("# Print\n\nA formula: $\\frac{1}{$ and more.\n");
    let out = build_with_pdf(&p);
    let print: Vec<_> = out.diags.iter().filter(|d| d.code == Code::Print).collect();
    assert_eq!(print.len(), 1, "{:?}", located(&out));
    assert!(!p.root().join("site/fixture.pdf").exists());
}
