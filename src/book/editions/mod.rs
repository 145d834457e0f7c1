//! Editions: what a book's `[[editions]]` name (a git revision, or a record `changes
//! --save` wrote), and what changed in this one since the last of them, with why; the
//! "Changes in this edition" page of the site (the PDF's appendix is `print`'s).
//!
//! - `record`: an edition as compared (claims, places, sentences, runs, engine, profile);
//! - `diff`: two records compared, every change with its causes;
//! - `text`: a claim's section and sentence in its source.

pub mod diff;
pub mod record;
pub mod text;

pub use diff::{compare, Cause, Change, Changes};
pub use record::Record;

use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Span};
use crate::book::parse::config::EditionConfig;
use crate::book::render::html::escape_text;
use std::fmt::Write as _;
use std::path::Path;

/// The record of the edition book.toml lists last (the one this edition follows), or an
/// error at its entry.
pub fn previous(
    root: &Path,
    editions: &[(EditionConfig, Span)],
) -> Option<Result<Record, Diagnostic>> {
    let (e, span) = editions.last()?;
    Some(of(root, e).map_err(|why| {
        Diagnostic::error(
            Code::Edition,
            Some(span.clone()),
            format!("cannot read the edition `{}`", e.name),
        )
        .label(why)
        .hint("an edition is a git revision of this repository (`rev = \"v1.0\"`) or a record `revtx-book changes --save` wrote (`claims = \"editions/first.json\"`, inside book/)")
    }))
}

/// The record of one listed edition.
pub fn of(root: &Path, e: &EditionConfig) -> Result<Record, String> {
    match (&e.rev, &e.claims) {
        (Some(rev), None) => record::at_revision(root, rev, &e.name),
        (None, Some(file)) => {
            let (path, _) = crate::book::parse::config::book_file(&root.join("book"), file)
                .map_err(|why| format!("refusing `{file}`: {why}"))?;
            let mut r = record::from_file(&path)?;
            r.name.clone_from(&e.name);
            Ok(r)
        }
        _ => Err("give it either `rev` (a git revision) or `claims` (a saved record), not both or neither".into()),
    }
}

/// The site's page: every change with its place, its sentence, both values and its
/// causes; then what appeared and what disappeared. HTML inside `page.html`'s frame. With
/// the print edition (its file name, and the page of each claim label), each change links
/// its page of the PDF.
pub fn page_html(
    c: &Changes,
    pdf: Option<(&str, &std::collections::BTreeMap<String, usize>)>,
) -> String {
    let mut h = String::new();
    let e = escape_text;
    let _ = write!(h, "<p class=\"changes-summary\">{}", e(&c.summary()));
    if pdf.is_some() {
        h.push_str(" The print edition lists the same changes in its last appendix.");
    }
    h.push_str("</p>\n");
    h.push_str("<h2 id=\"changed\">Changed</h2>\n");
    if c.changed.is_empty() {
        h.push_str("<p>No value and no truth changed.</p>\n");
    }
    for ch in &c.changed {
        h.push_str("<section class=\"change\">\n");
        place(&mut h, &ch.new, pdf);
        let _ = writeln!(
            h,
            "<p class=\"change-values\"><code>{}</code>: was <strong>{}</strong>, now <strong>{}</strong></p>",
            e(&ch.new.expr),
            e(&ch.old.value),
            e(&ch.new.value)
        );
        h.push_str("<ul class=\"change-causes\">\n");
        for cause in &ch.causes {
            let _ = write!(h, "<li>{}", e(&cause.describe()));
            if let Cause::Sentence { old, .. } = cause {
                let _ = write!(h, "; it read: “{}”", e(&text::clean(old)));
            }
            h.push_str("</li>\n");
        }
        h.push_str("</ul>\n</section>\n");
    }
    for (id, title, list) in [
        ("appeared", "New in this edition", &c.appeared),
        ("disappeared", "No longer in the book", &c.disappeared),
    ] {
        let _ = writeln!(h, "<h2 id=\"{id}\">{title}</h2>");
        if list.is_empty() {
            h.push_str("<p>None.</p>\n");
            continue;
        }
        h.push_str("<ul class=\"change-list\">\n");
        for claim in list {
            let _ = writeln!(
                h,
                "<li>{}{}: “{}” (<code>{}</code> = {})</li>",
                e(&claim.chapter),
                claim
                    .section
                    .as_ref()
                    .map(|(s, _)| format!(", {}", e(s)))
                    .unwrap_or_default(),
                e(&text::clean(&claim.sentence)),
                e(&claim.expr),
                e(&claim.value)
            );
        }
        h.push_str("</ul>\n");
    }
    h
}

/// A change's chapter and section (linked on the site) and its sentence.
fn place(
    h: &mut String,
    c: &record::Claim,
    pdf: Option<(&str, &std::collections::BTreeMap<String, usize>)>,
) {
    let e = escape_text;
    let section = match &c.section {
        Some((title, Some(id))) if !c.page.is_empty() => {
            format!(", <a href=\"{}#{}\">{}</a>", e(&c.page), e(id), e(title))
        }
        Some((title, _)) => format!(", {}", e(title)),
        None => String::new(),
    };
    let page = pdf
        .and_then(|(file, pages)| pages.get(&c.label()).map(|p| (file, p)))
        .map(|(file, p)| format!(", <a href=\"{}#page={p}\">page {p} of the PDF</a>", e(file)))
        .unwrap_or_default();
    let _ = writeln!(
        h,
        "<h3>{}{section} <span class=\"change-at\">({}:{}{page})</span></h3>",
        e(&c.chapter),
        e(&c.file),
        c.line
    );
    let sentence = text::clean_with(&c.sentence, &c.expr, &c.value);
    let _ = writeln!(
        h,
        "<blockquote class=\"change-sentence\">{}</blockquote>",
        e(&sentence)
    );
}

/// The key of what a comparison with the last listed edition is made from, beside `inputs`
/// (the rendered book's key, the engine and the profile): that edition's record file, or
/// the commit its revision names. None where the revision cannot be resolved.
pub fn memo_key(root: &Path, editions: &[(EditionConfig, Span)], inputs: &str) -> Option<String> {
    let (e, _) = editions.last()?;
    let mut h = blake3::Hasher::new();
    h.update(b"changes memo 1\0");
    h.update(inputs.as_bytes());
    h.update(format!("{:?}\0{:?}\0{:?}", e.name, e.rev, e.claims).as_bytes());
    if let Some(file) = &e.claims {
        let (path, _) = crate::book::parse::config::book_file(&root.join("book"), file).ok()?;
        h.update(&std::fs::read(path).ok()?);
    }
    if let Some(rev) = e.rev.as_ref().filter(|r| !r.starts_with('-')) {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["rev-parse", "--verify", "--quiet"])
            .arg(format!("{rev}^{{commit}}"))
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        h.update(&out.stdout);
    }
    Some(h.finalize().to_hex().to_string())
}

/// What a build found changed before, under `key` (see [`memo_key`]).
pub fn remembered(cache: &Path, key: &str) -> Option<Changes> {
    let bytes = std::fs::read(cache.join("render").join("changes.cbor")).ok()?;
    let (seen, changes): (String, Changes) = ciborium::from_reader(bytes.as_slice()).ok()?;
    (seen == key).then_some(changes)
}

/// Keeps `changes` under `key` (a failure only costs the next build the comparison).
pub fn remember(cache: &Path, key: &str, changes: &Changes) {
    let mut bytes = Vec::new();
    if ciborium::into_writer(&(key, changes), &mut bytes).is_ok() {
        let _ = crate::book::site::write_atomic(&cache.join("render").join("changes.cbor"), &bytes);
    }
}
