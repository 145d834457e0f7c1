//! The print edition: the PDF typeset with the site, from the same parsed chapters and
//! runs, byte-identical from build to build, cached, and never written for a book that
//! fails its checks. What the PDF holds (every checked figure, every figure and table
//! number, embedded fonts, tags) is checked with poppler by `tests/pdf/check.py`, which
//! `make test` runs on the real book and on the fixture textbook.

mod common;
use common::*;
use revtx_book::book::codes::Code;

fn build_with_pdf(p: &Project) -> revtx_book::book::Outcome {
    let mut opts = p.options(true);
    opts.pdf = true;
    revtx_book::book::build(&opts)
}

const PDF: &str = "site/a-fixture-textbook.pdf";

#[test]
fn the_print_edition_is_written_with_the_site_and_is_the_same_every_time() {
    let p = Project::textbook();
    let t = std::time::Instant::now();
    let out = build_with_pdf(&p);
    println!(
        "fixture textbook with its PDF: cold build in {:.2?}",
        t.elapsed()
    );
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let first = std::fs::read(p.root().join(PDF)).expect("the PDF is in the site");
    assert!(first.starts_with(b"%PDF-"), "a PDF");
    assert!(
        runs_of(&out)
            .iter()
            .any(|l| l.starts_with("print:") && l.ends_with("typeset)")),
        "{:?}",
        runs_of(&out)
    );
    let index = std::fs::read_to_string(p.root().join("site/index.html")).unwrap();
    assert!(
        index.contains("href=\"a-fixture-textbook.pdf\""),
        "the index links it"
    );
    let page = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    assert!(
        page.contains("class=\"pdf-link\" href=\"a-fixture-textbook.pdf\""),
        "every page's header links it"
    );

    // A warm build with nothing changed takes the PDF from the cache.
    let t = std::time::Instant::now();
    let again = build_with_pdf(&p);
    println!(
        "fixture textbook with its PDF: warm build in {:.2?}",
        t.elapsed()
    );
    assert!(
        runs_of(&again)
            .iter()
            .any(|l| l.starts_with("print:") && l.contains("from the cache")),
        "{:?}",
        runs_of(&again)
    );
    assert_eq!(std::fs::read(p.root().join(PDF)).unwrap(), first);

    // Typeset again from nothing, in a later second: the same bytes (no clock, no random
    // ids).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::remove_dir_all(p.root().join(".revtx-cache/print")).unwrap();
    let third = build_with_pdf(&p);
    assert!(
        runs_of(&third)
            .iter()
            .any(|l| l.starts_with("print:") && l.ends_with("typeset)")),
        "{:?}",
        runs_of(&third)
    );
    assert_eq!(
        std::fs::read(p.root().join(PDF)).unwrap(),
        first,
        "two typesettings of one book give one PDF"
    );

    // An edit of a chapter's prose is typeset again, though every other input is the
    // same (the print edition's memo is keyed on the rendered chapters).
    let file = p.root().join("book/again.md");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}\nA sentence added after the first edition.\n"),
    )
    .unwrap();
    let edited = build_with_pdf(&p);
    assert_eq!(edited.errors(), 0, "{:?}", located(&edited));
    assert!(
        runs_of(&edited)
            .iter()
            .any(|l| l.starts_with("print:") && l.ends_with("typeset)")),
        "{:?}",
        runs_of(&edited)
    );
    assert_ne!(std::fs::read(p.root().join(PDF)).unwrap(), first);

    // --no-pdf (the library's `pdf: false`) leaves it out of the site.
    let out = revtx_book::book::build(&p.options(true));
    assert_eq!(out.errors(), 0);
    assert!(!p.root().join(PDF).exists(), "a draft build writes no PDF");
}

#[test]
fn a_book_that_fails_its_checks_writes_no_pdf() {
    let good =
        format!("# Print\n\n{TINY_RUN}\n\nThe model has [103,244]{{=tiny.params}} parameters.\n");
    let p = Project::new(&good);
    let out = build_with_pdf(&p);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let pdf = p.root().join("site/fixture.pdf");
    let cached = || {
        std::fs::read_dir(p.root().join(".revtx-cache/print"))
            .unwrap()
            .count()
    };
    // An edit typesets the book again and the cache keeps only the new PDF.
    std::fs::write(
        p.root().join("book/chapter.md"),
        good.clone() + "\nOne more sentence.\n",
    )
    .unwrap();
    assert_eq!(build_with_pdf(&p).errors(), 0);
    assert_eq!(cached(), 1, "one PDF per book in the cache");
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
    assert_eq!(cached(), 1, "and only that one is cached");
}

/// The site's math renderer takes `\verb`, mitex does not: an error at the formula, and no site.
#[test]
fn a_formula_print_cannot_take_is_an_error_at_the_formula() {
    let p = Project::new("# Print\n\nA formula: $\\verb|x|$ and more.\n");
    let out = build_with_pdf(&p);
    let print: Vec<_> = out.diags.iter().filter(|d| d.code == Code::Print).collect();
    assert_eq!(print.len(), 1, "{:?}", located(&out));
    let got = located(&out);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (3, 12), "at the formula: {got:?}");
    assert!(got[0].2.contains("cannot be typeset for print"), "{got:?}");
    assert!(!p.root().join("site").exists(), "no site, no PDF");
    // A draft without the print edition builds.
    assert_eq!(revtx_book::book::build(&p.options(true)).errors(), 0);
}

/// Every LaTeX command the book's formulas use, and the common ones mitex maps to helpers
/// of its own, typeset (each formula alone, so a failure names it).
#[test]
fn formulas_typeset_one_by_one() {
    let formulas = [
        r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^{\top}}{\sqrt{d_k}}\right) V",
        r"w_{ij} = \frac{\exp(s_{ij})}{\sum_{j'} \exp(s_{ij'})}, \qquad s_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}}",
        r"\mathrm{Var}(q \cdot k) = \sum_{m=1}^{d_k} \mathrm{Var}(q_m k_m) = d_k .",
        r"\partial w_{i} / \partial s_{j} = w_{i}(\delta_{ij} - w_{j})",
        r"x \leftarrow x + \mathrm{Attn}(\mathrm{LN}_1(x)), \qquad x \leftarrow x + \mathrm{MLP}(\mathrm{LN}_2(x))",
        r"\frac{(\bar{L} - 1)\ln 10 + \ln n}{2\bar{L}} ,",
        r"\pm 1/\sqrt{d}",
        r"d \cdot \frac{1}{3d} = \frac{1}{3}",
        r"e^{-\infty} = 0",
        r"\ln 12 \approx",
        r"\overset{a}{b} \underset{c}{d}",
        r"\bigl( x \bigr) \Big[ y \Big]",
        r"\xrightarrow{f} \boxed{x} \operatorname*{argmax}_x \sqrt[3]{x}",
        r"\begin{cases} a & b \\ c & d \end{cases} \mathbb{R} \mathcal{L} \vec{x} \binom{n}{k}",
        r"\text{if } x \ne y \dots",
    ];
    for tex in formulas {
        let math = revtx_pdf::latex_to_typst(tex).unwrap_or_else(|e| panic!("{tex}: {e}"));
        let doc = revtx_pdf::Document {
            main: format!(
                "#set document(title: [f])\n#math.equation(block: true, alt: \"f\", $ {math} $.body)\n"
            ),
            files: std::collections::HashMap::new(),
            epoch: None,
            ident: "formula".into(),
        };
        if let Err(problems) = revtx_pdf::typeset(&doc) {
            panic!("{tex} → {math}: {problems:?}");
        }
    }
}

/// The LaTeX a textbook writes, which `KaTeX` shows on the site, typesets in the PDF too:
/// `align`, `align*`, `aligned`, `cases`, `pmatrix`, `bmatrix`, `\operatorname`, `\text`,
/// `\mathrm`, `\boldsymbol` (issue 42, item 10), each in a book of its own chapter, and the
/// PDF's text holds what each wrote.
#[test]
fn the_math_a_textbook_writes_typesets_in_print() {
    let chapter = r"# Math

$$
\begin{align} \mathrm{zqxloss} &= -\log p \\ \boldsymbol{w} &= w - \eta \nabla \end{align}
$$

$$
\begin{align*} a &= 1 \\ b &= 2 \end{align*}
$$

$$
\begin{aligned} c &= \operatorname{zqxsoftmax}(z) \\ d &= \dfrac{1}{2} \end{aligned}
$$

The sign is $f(x) = \begin{cases} 1 & x > 0 \\ 0 & \text{zqxotherwise} \end{cases}$ inline.

$$
\begin{pmatrix} 11 & 12 \\ 13 & 14 \end{pmatrix} \begin{bmatrix} 21 & 22 \\ 23 & 24 \end{bmatrix} \langle q, k \rangle
$$
";
    let p = Project::new(chapter);
    let out = build_with_pdf(&p);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let pdf = p.root().join("site/fixture.pdf");
    assert!(pdf.exists(), "the PDF");
    match std::process::Command::new("pdftotext")
        .arg(&pdf)
        .arg("-")
        .output()
    {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let flat: String = text.split_whitespace().collect();
            for t in [
                "zqxloss",
                "zqxsoftmax",
                "zqxotherwise",
                "1112",
                "1314",
                "2122",
                "2324",
            ] {
                assert!(flat.contains(t), "{t} in the PDF: {text}");
            }
        }
        // A check that cannot run is a failure, not a pass: `make test` installs it first.
        _ => panic!("pdftotext is missing (tests/pdf/setup.sh installs it)"),
    }
}

/// What typst still refuses is reported in the chapter, never at a line of typst: a formula
/// at the formula, a character no bundled font has (an emoji) at each place it is written.
#[test]
fn typst_problems_are_reported_in_the_chapter() {
    let p = Project::new(
        "# Print\n\nFine $x^2$ here.\n\nA length $a \\hspace{1em} b$ and a rocket 🚀 and 🚀.\n",
    );
    let out = build_with_pdf(&p);
    let got = located(&out);
    assert!(
        got.iter().all(|(_, _, m)| !m.contains("typst line")),
        "{got:?}"
    );
    assert_eq!(
        got.len(),
        1,
        "the formula first (typst stops there): {got:?}"
    );
    assert_eq!((got[0].0, got[0].1), (5, 10), "{got:?}");
    assert!(got[0].2.contains("unknown variable: hspace"), "{got:?}");

    std::fs::write(
        p.root().join("book/chapter.md"),
        "# Print\n\nFine $x^2$ here.\n\nA rocket 🚀 and 🚀.\n",
    )
    .unwrap();
    let out = build_with_pdf(&p);
    let got = located(&out);
    assert_eq!(got.len(), 2, "each rocket: {got:?}");
    assert_eq!((got[0].0, got[0].1), (5, 10), "{got:?}");
    assert_eq!((got[1].0, got[1].1), (5, 16), "{got:?}");
    assert!(got[0].2.contains("U+1F680"), "{got:?}");
    assert!(!p.root().join("site").exists(), "no site, no PDF");
}
