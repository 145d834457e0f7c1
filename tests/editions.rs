//! Editions: the fixture textbook in two editions, the second with one run's `train.steps`
//! changed and one sentence edited; the site's "Changes in this edition" page and the PDF's
//! appendix name both causes. An edition read from git, and entries that cannot be read.

mod common;
use common::*;
use revtx_book::book::codes::Code;
use std::process::Command;

fn cli(p: &Project, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(args)
        .arg("--root")
        .arg(p.root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn edit(p: &Project, file: &str, from: &str, to: &str) {
    let path = p.root().join("book").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} has no `{from}`");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

fn add_toml(p: &Project, lines: &str) {
    let path = p.root().join("book/book.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n{lines}\n")).unwrap();
}

/// Tags and entities out, spaces collapsed: the page's text as a reader reads it.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut tag = false;
    for c in html.chars() {
        match c {
            '<' => tag = true,
            '>' => {
                tag = false;
                out.push(' ');
            }
            c if !tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_changes_page_names_a_changed_key_and_an_edited_sentence() {
    let p = Project::textbook();
    let first = p.check();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    std::fs::create_dir_all(p.root().join("book/editions")).unwrap();
    let (ok, out, err) = cli(&p, &["changes", "--save", "book/editions/first.json.gz"]);
    assert!(ok, "{out}{err}");

    // The second edition: the run trains longer (its figures blessed), and the exercise's
    // sentence is reworded, its figure written with one more digit.
    edit(&p, "counting.md", "steps = 30", "steps = 40");
    edit(
        &p,
        "counting.md",
        "How many steps would the run need to cross a loss of [0.01]",
        "How many more steps would the tiny run need to get below a loss of [0.010]",
    );
    let (ok, out, err) = cli(&p, &["check", "--bless", "--quiet"]);
    assert!(ok, "bless: {out}{err}");
    add_toml(
        &p,
        "[[editions]]\nname = \"First edition\"\nclaims = \"editions/first.json.gz\"",
    );
    let mut opts = p.options(true);
    opts.pdf = true;
    let built = revtx_book::book::build(&opts);
    assert_eq!(built.errors(), 0, "{:?}", located(&built));

    let html = std::fs::read_to_string(p.root().join("site/changes.html")).unwrap();
    let page = text_of(&html);
    assert!(
        page.contains("This edition against First edition"),
        "{page}"
    );
    let steps = "run `tiny`: `train.steps` changed from 30 to 40";
    assert!(page.contains(steps), "no config cause in: {page}");
    assert!(page.contains("its sentence was edited; it read: “How many steps would the run need to cross a loss of 0.01?”"), "no sentence cause in: {page}");
    assert!(
        page.contains("the figure is written another way (`0.01` became `0.010`)"),
        "{page}"
    );
    // Every changed steps figure is listed with its place: chapter, section (linked), file.
    let sections = html.matches("<section class=\"change\">").count();
    let steps_changes = html
        .matches("tiny.config.train.steps</code>: was <strong>30</strong>, now <strong>40</strong>")
        .count();
    assert!(
        steps_changes >= 4,
        "{steps_changes} steps figures changed:\n{page}"
    );
    assert!(
        sections > steps_changes,
        "the threshold's change is listed too"
    );
    assert!(html.contains("href=\"chapter-1.html#sec-tiny\""), "{html}");
    // Each change links its page of the PDF (the typesetter's page of the claim's label).
    let linked = html.matches(" of the PDF</a>").count();
    assert_eq!(linked, sections, "a PDF page for every change:\n{html}");
    // The site's navigation leads to it.
    let index = std::fs::read_to_string(p.root().join("site/index.html")).unwrap();
    assert!(
        index.contains("href=\"changes.html\""),
        "no link to the changes page"
    );

    // The PDF's appendix says the same, with pages.
    let pdf = std::fs::read_dir(p.root().join("site"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|f| f.extension().is_some_and(|e| e == "pdf"))
        .expect("the print edition");
    let text = Command::new("pdftotext")
        .arg(&pdf)
        .arg("-")
        .output()
        .expect("pdftotext (poppler-utils; tests/pdf/setup.sh installs it)");
    let text = String::from_utf8_lossy(&text.stdout);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let appendix = &text[text
        .rfind("Changes in this edition This edition against")
        .expect("the appendix")..];
    assert!(appendix.contains(steps), "{appendix}");
    assert!(appendix.contains("its sentence was edited"), "{appendix}");
    assert!(appendix.contains("A tiny run, page "), "{appendix}");
}

#[test]
fn an_edition_read_from_git_names_its_changed_key() {
    let p = Project::new(&format!(
        "# T\n\n{TINY_RUN}\n\n## Steps {{#sec-steps}}\n\nIt trains for [30]{{=tiny.config.train.steps}} steps.\n"
    ));
    assert_eq!(p.check().errors(), 0);
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(p.root())
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    git(&["add", "book"]);
    git(&["commit", "-q", "-m", "first edition"]);
    let chapter = p.root().join("book/chapter.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    std::fs::write(
        &chapter,
        text.replace("steps = 30", "steps = 31")
            .replace("[30]", "[31]"),
    )
    .unwrap();
    assert_eq!(p.check().errors(), 0);
    let (ok, out, err) = cli(&p, &["changes", "--from", "HEAD"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("1 changed, 0 appeared, 0 disappeared"),
        "{out}"
    );
    assert!(
        out.contains("because run `tiny`: `train.steps` changed from 30 to 31"),
        "{out}"
    );
    assert!(out.contains("Steps"), "the section: {out}");
    assert!(
        !out.contains("sentence was edited"),
        "a re-quoted figure is no edit: {out}"
    );
}

#[test]
fn edition() {
    for (entry, why) in [
        ("[[editions]]\nname = \"x\"", "needs `rev` or `claims`"),
        (
            "[[editions]]\nname = \"x\"\nrev = \"a\"\nclaims = \"b\"",
            "needs `rev` or `claims`",
        ),
    ] {
        let p = Project::new(&format!("# T\n\n{TINY_RUN}\n"));
        add_toml(&p, entry);
        let o = p.check();
        let d: Vec<_> = o.diags.iter().filter(|d| d.code == Code::Edition).collect();
        assert_eq!(d.len(), 1, "{entry}: {:?}", located(&o));
        assert!(d[0].message.contains(why), "{}", d[0].message);
    }
    // A revision git does not know: an error at the entry when a site is built.
    let p = Project::new(&format!("# T\n\n{TINY_RUN}\n"));
    add_toml(
        &p,
        "[[editions]]\nname = \"gone\"\nrev = \"no-such-revision\"",
    );
    let o = p.build();
    assert_eq!(
        o.diags.iter().filter(|d| d.code == Code::Edition).count(),
        1,
        "{:?}",
        located(&o)
    );
}
