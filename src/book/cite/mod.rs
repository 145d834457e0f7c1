//! Citations: the book's bibliography (`book/references.bib`, BibLaTeX or BibTeX), read once
//! with hayagriva, and each chapter's citations and reference list in the book's CSL style.
//!
//! Parse reads the bibliography and checks every citation against it ([`check`]), before
//! anything trains; render asks [`Bibliography::chapter`] for one chapter's HTML.

use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Sources, Span};
use crate::book::parse::{BookConfig, Chapter, CiteItem, Inline};
use crate::book::render::escape_text;
use hayagriva::archive::{locales, ArchivedStyle};
use hayagriva::citationberg::taxonomy::Locator;
use hayagriva::citationberg::{FontStyle, FontVariant, FontWeight, IndependentStyle, Locale};
use hayagriva::citationberg::{Style, VerticalAlign};
use hayagriva::{
    BibliographyDriver, BibliographyRequest, CitationItem, CitationRequest, CitePurpose, Elem,
    ElemChild, ElemChildren, ElemMeta, Library, LocatorPayload, SpecificLocator,
};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// The CSL project's American English locale (the terms "et al.", "pp.", "Section", the
/// month names), CC BY-SA 3.0, as hayagriva 0.10.1 ships it in its test data. Parsing it
/// takes about 1 ms; hayagriva's `archive::locales()` decodes all 63 locales, about 48 ms
/// on the Xeon the warm build is measured on, so only a book in another language pays that.
const EN_US: &str = include_str!("locales-en-US.xml");

/// The locales a book in `language` needs: American English for English, else every
/// locale hayagriva has.
fn locales_for(language: &str) -> Vec<Locale> {
    let english = language.eq_ignore_ascii_case("en") || language.eq_ignore_ascii_case("en-US");
    match hayagriva::citationberg::LocaleFile::from_xml(EN_US) {
        Ok(file) if english => vec![file.into()],
        _ => locales(),
    }
}

/// The bibliography read when book.toml names none.
pub const DEFAULT_FILE: &str = "references.bib";
/// The style used when book.toml names none: APA's author–year style.
pub const DEFAULT_STYLE: &str = "apa";

/// The book's bibliography and its style.
pub struct Bibliography {
    library: Library,
    style: IndependentStyle,
    locales: Vec<Locale>,
    /// Each entry's key and where it is declared, in file order.
    entries: Vec<(String, Span)>,
}

/// One chapter's citations and reference list, as HTML.
pub struct ChapterCitations {
    /// By inline index: the citation's HTML and its plain text (for search).
    pub cites: Vec<Option<(String, String)>>,
    /// The works the chapter cites, in the style's order.
    pub list: Vec<Work>,
}

/// One entry of a chapter's reference list.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Work {
    pub key: String,
    /// The entry formatted as HTML (links for its DOI or URL).
    pub html: String,
    /// The same as plain text, for the search index.
    pub text: String,
}

/// Reads the bibliography book.toml names (`bibliography`), or `book/references.bib` if
/// there is one, and the style it names (`csl`). `None` if there is none, or it is broken
/// (reported).
pub fn load(
    root: &Path,
    config: &BookConfig,
    toml_file: FileId,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<Bibliography> {
    let book_dir = root.join("book");
    let at = |s: &toml::Spanned<String>| Span {
        file: toml_file,
        range: s.span(),
    };
    let (path, named) = match &config.bibliography {
        Some(b) => match crate::book::parse::book_file(&book_dir, b.get_ref()) {
            Ok((path, _)) => (path, Some(at(b))),
            Err(why) => {
                diags.push(outside("the bibliography", b.get_ref(), why, at(b)));
                return None;
            }
        },
        None => (book_dir.join(DEFAULT_FILE), None),
    };
    // A style book.toml names is checked even in a book with no bibliography yet.
    let csl = config.csl.as_ref().map(|s| (s, at(s)));
    let named_style = csl.is_some().then(|| style(&book_dir, csl.clone(), diags));
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) if named.is_none() && !path.exists() => return None,
        Err(e) => {
            diags.push(Diagnostic::error(
                Code::Bibliography,
                named,
                format!("cannot read the bibliography {}: {e}", path.display()),
            ));
            return None;
        }
    };
    let style = named_style.unwrap_or_else(|| style(&book_dir, None, diags))?;
    let file = sources.add(path, text.clone());
    let library = match hayagriva::io::from_biblatex_str(&text) {
        Ok(l) => l,
        Err(errors) => {
            // An entry whose `{` is never closed swallows the entries after it, and the
            // parser reports the next one: report the entry itself, and only that.
            let open = unclosed_entries(&text);
            for range in &open {
                diags.push(
                    Diagnostic::error(
                        Code::Bibliography,
                        Some(Span {
                            file,
                            range: range.clone(),
                        }),
                        "the bibliography does not parse",
                    )
                    .label("this entry's `{` is never closed")
                    .hint("close the entry with `}` before the next `@` entry starts"),
                );
            }
            for e in errors.iter().filter(|_| open.is_empty()) {
                let (range, what) = match e {
                    hayagriva::io::BibLaTeXError::Parse(p) => (p.span.clone(), p.kind.to_string()),
                    hayagriva::io::BibLaTeXError::Type(t) => (t.span.clone(), t.kind.to_string()),
                };
                let range = range.start..range.end.max(range.start + 1);
                diags.push(
                    Diagnostic::error(
                        Code::Bibliography,
                        Some(Span { file, range }),
                        "the bibliography does not parse",
                    )
                    .label(what),
                );
            }
            return None;
        }
    };
    let entries = library
        .keys()
        .map(|k| {
            (
                k.to_string(),
                Span {
                    file,
                    range: key_range(&text, k),
                },
            )
        })
        .collect();
    Some(Bibliography {
        library,
        style,
        locales: locales_for(&config.language),
        entries,
    })
}

/// The style `csl` names: one of hayagriva's archive by name, or a `.csl` file in `book/`.
fn style(
    book_dir: &Path,
    csl: Option<(&toml::Spanned<String>, Span)>,
    diags: &mut Vec<Diagnostic>,
) -> Option<IndependentStyle> {
    let Some((name, at)) = csl else {
        return independent(ArchivedStyle::by_name(DEFAULT_STYLE)?.get());
    };
    let name = name.get_ref();
    let style = if Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csl"))
    {
        let path = match crate::book::parse::book_file(book_dir, name) {
            Ok((path, _)) => path,
            Err(why) => {
                diags.push(outside("the citation style", name, why, at));
                return None;
            }
        };
        let xml = std::fs::read_to_string(path).map_err(|e| e.to_string());
        xml.and_then(|x| Style::from_xml(&x).map_err(|e| e.to_string()))
    } else {
        ArchivedStyle::by_name(name)
            .map(ArchivedStyle::get)
            .ok_or_else(|| format!("no style is called `{name}`"))
    };
    match style.map(independent) {
        Ok(Some(s)) => Some(s),
        Ok(None) => {
            diags.push(
                Diagnostic::error(Code::Bibliography, Some(at), "a dependent CSL style")
                    .hint("name the independent style it depends on"),
            );
            None
        }
        Err(e) => {
            diags.push(
                Diagnostic::error(Code::Bibliography, Some(at), "cannot use this citation style")
                    .label(e)
                    .hint("name a style such as `apa`, `chicago-author-date`, `ieee`, or a `.csl` file in book/"),
            );
            None
        }
    }
}

/// A file book.toml names that lies outside `book/`: refused, never read.
fn outside(what: &str, rel: &str, why: &str, at: Span) -> Diagnostic {
    Diagnostic::error(
        Code::FileOutside,
        Some(at),
        format!("refusing to read {what} `{rel}`: {why}"),
    )
    .hint("the book's files live in book/, named relative to it, e.g. `references.bib`")
}

fn independent(s: Style) -> Option<IndependentStyle> {
    match s {
        Style::Independent(s) => Some(s),
        Style::Dependent(_) => None,
    }
}

/// Where entry `key` is declared: its key in `@type{key,`; the file's start if not found.
fn key_range(text: &str, key: &str) -> std::ops::Range<usize> {
    let mut from = 0;
    while let Some(k) = text[from..].find(key).map(|k| from + k) {
        let before = text[..k].trim_end();
        let after = text[k + key.len()..].trim_start();
        if before.ends_with('{') && after.starts_with(',') {
            return k..k + key.len();
        }
        from = k + key.len();
    }
    0..1
}

/// The entries of a BibLaTeX text (from an `@` that starts a line to the next) whose
/// braces do not balance before the next starts: the first line of each (`@book{key,`).
/// Escaped braces (`\{`) and comment lines (`%`) do not count.
fn unclosed_entries(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut starts = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('@') {
            starts.push(offset + line.len() - line.trim_start().len());
        }
        offset += line.len();
    }
    let mut open = Vec::new();
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(text.len());
        let entry = &text[start..end];
        let mut depth = 0i64;
        let mut opened = false;
        for line in entry.lines().filter(|l| !l.trim_start().starts_with('%')) {
            let mut escaped = false;
            for c in line.chars() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        }
        if opened && depth > 0 {
            let first = entry.find('\n').unwrap_or(entry.len());
            open.push(start..start + entry[..first].trim_end().len().max(1));
        }
    }
    open
}

/// Pandoc's locator labels, singular and abbreviated, and what each locates.
const LABELS: &[(&[&str], Locator)] = &[
    (&["book", "bk."], Locator::Book),
    (&["chapter", "chap.", "ch."], Locator::Chapter),
    (&["column", "col."], Locator::Column),
    (&["equation", "eq."], Locator::Equation),
    (&["figure", "fig."], Locator::Figure),
    (&["folio", "fol."], Locator::Folio),
    (&["number", "no."], Locator::Issue),
    (&["line", "l."], Locator::Line),
    (&["note", "n."], Locator::Note),
    (&["opus", "op."], Locator::Opus),
    (&["page", "p.", "pp."], Locator::Page),
    (&["paragraph", "para.", "¶"], Locator::Paragraph),
    (&["part", "pt."], Locator::Part),
    (&["section", "sec.", "§"], Locator::Section),
    (&["table", "tab."], Locator::Table),
    (&["verse", "v."], Locator::Verse),
    (&["volume", "vol."], Locator::Volume),
];

/// A locator as written (`sec. 3.2`, `pp. 4-5`, `12`): what it locates and its value. A
/// bare number is a page, as in Pandoc.
fn locator(text: &str) -> Option<(Locator, &str)> {
    if text.starts_with(|c: char| c.is_ascii_digit()) {
        return Some((Locator::Page, text));
    }
    let (label, value) = text.split_once(char::is_whitespace)?;
    let plural = label.strip_suffix('s').unwrap_or(label);
    LABELS.iter().find_map(|(names, loc)| {
        (names.contains(&label) || names.contains(&plural)).then(|| (*loc, value.trim()))
    })
}

/// Each citation of the book: (chapter, the item).
fn citations(chapters: &[Chapter]) -> impl Iterator<Item = &CiteItem> {
    chapters.iter().flat_map(|ch| {
        ch.inlines.iter().flat_map(|i| match &i.node {
            Inline::Cite { items, .. } => items.as_slice(),
            _ => &[],
        })
    })
}

/// Checks every citation against the bibliography: an unknown key or an unknown locator is
/// an error at it, an entry no chapter cites a warning at the entry, and a citation in a
/// book without a bibliography an error.
pub fn check(bib: Option<&Bibliography>, chapters: &[Chapter], diags: &mut Vec<Diagnostic>) {
    let mut cited = BTreeSet::new();
    for item in citations(chapters) {
        let Some(bib) = bib else {
            diags.push(
                Diagnostic::error(
                    Code::Bibliography,
                    Some(item.key_span.clone()),
                    format!("`@{}` cites a work, and the book has no bibliography", item.key),
                )
                .hint(format!(
                    "put the works in book/{DEFAULT_FILE} (BibLaTeX), or name the file with `bibliography = \"…\"` in book.toml; \
                     write `\\@` for an `@` that cites nothing"
                )),
            );
            continue;
        };
        if bib.library.get(&item.key).is_none() {
            let keys: Vec<&str> = bib.entries.iter().map(|(k, _)| k.as_str()).collect();
            diags.push(
                Diagnostic::error(
                    Code::UnknownCitation,
                    Some(item.key_span.clone()),
                    format!("`@{}` is not in the bibliography", item.key),
                )
                .hint(format!("its keys: {}", keys.join(", "))),
            );
        }
        cited.insert(item.key.as_str());
        if let Some((text, span)) = &item.locator {
            if locator(text).is_none() {
                let names: Vec<&str> = LABELS.iter().map(|(n, _)| n[n.len() - 1]).collect();
                diags.push(
                    Diagnostic::error(
                        Code::BadLocator,
                        Some(span.clone()),
                        format!("`{text}` is not a locator"),
                    )
                    .hint(format!(
                        "start it with a label ({}) or a page number",
                        names.join(", ")
                    )),
                );
            }
        }
    }
    for (key, span) in bib.map_or(&[][..], |b| b.entries.as_slice()) {
        if !cited.contains(key.as_str()) {
            diags.push(
                Diagnostic::warning(
                    Code::UncitedEntry,
                    Some(span.clone()),
                    format!("no chapter cites `{key}`"),
                )
                .hint("cite it (`[@key]` or `@key`), or remove it from the bibliography"),
            );
        }
    }
}

impl Bibliography {
    /// One chapter's citations, each linking to its entry in the chapter's reference list
    /// (`#ref-key`), and that list: only the works the chapter cites. Keys were checked at
    /// parse; an unknown one renders as `??`.
    pub fn chapter(&self, ch: &Chapter) -> ChapterCitations {
        let mut driver = BibliographyDriver::new();
        let mut order = Vec::new();
        let mut cites: Vec<Option<(String, String)>> = vec![None; ch.inlines.len()];
        for (n, inl) in ch.inlines.iter().enumerate() {
            let Inline::Cite { items, narrative } = &inl.node else {
                continue;
            };
            let mut request = Vec::new();
            let mut keys = Vec::new();
            for item in items {
                let Some(entry) = self.library.get(&item.key) else {
                    continue;
                };
                let loc = item.locator.as_ref().and_then(|(t, _)| locator(t));
                let loc = loc.map(|(l, v)| SpecificLocator(l, LocatorPayload::Str(v)));
                let mut c = CitationItem::with_locator(entry, loc);
                if *narrative {
                    c = c.kind(CitePurpose::Prose);
                }
                request.push(c);
                keys.push(item.key.clone());
            }
            if request.is_empty() {
                cites[n] = Some(("??".into(), "??".into()));
                continue;
            }
            driver.citation(CitationRequest::from_items(
                request,
                &self.style,
                &self.locales,
            ));
            order.push((n, keys));
        }
        if order.is_empty() {
            return ChapterCitations {
                cites,
                list: Vec::new(),
            };
        }
        let rendered = driver.finish(BibliographyRequest::new(&self.style, None, &self.locales));
        for ((n, keys), c) in order.into_iter().zip(rendered.citations) {
            let mut html = String::new();
            write_html(&c.citation, &keys, &mut html);
            cites[n] = Some((html, plain(&c.citation)));
        }
        let list = rendered.bibliography.map_or_else(Vec::new, |b| {
            (b.items.into_iter())
                .map(|i| {
                    let mut html = String::new();
                    write_html(&i.content, &[], &mut html);
                    let text = plain(&i.content);
                    Work {
                        key: i.key,
                        html,
                        text,
                    }
                })
                .collect()
        });
        ChapterCitations { cites, list }
    }
}

/// The plain text of formatted output.
fn plain(children: &ElemChildren) -> String {
    let mut s = String::new();
    let _ = children.write_buf(&mut s, hayagriva::BufWriteFormat::Plain);
    s
}

/// Formatted output as escaped HTML (hayagriva's own HTML does not escape text). A part
/// that belongs to citation item k links to `#ref-keys[k]`; URLs and DOIs are links.
fn write_html(children: &ElemChildren, keys: &[String], out: &mut String) {
    for child in &children.0 {
        match child {
            ElemChild::Text(t) => formatted(&t.text, t.formatting, out),
            ElemChild::Markup(m) => out.push_str(&escape_text(m)),
            ElemChild::Link { text, url } => {
                let _ = write!(out, "<a href=\"{}\">", escape_text(url));
                formatted(&text.text, text.formatting, out);
                out.push_str("</a>");
            }
            ElemChild::Elem(e) => elem(e, keys, out),
            ElemChild::Transparent { .. } => {}
        }
    }
}

fn elem(e: &Elem, keys: &[String], out: &mut String) {
    match e.meta {
        Some(ElemMeta::Entry(k)) if k < keys.len() => {
            let _ = write!(
                out,
                "<a class=\"citation\" href=\"#ref-{}\">",
                escape_text(&keys[k])
            );
            write_html(&e.children, keys, out);
            out.push_str("</a>");
        }
        _ => write_html(&e.children, keys, out),
    }
}

/// Text with its CSL formatting as HTML elements.
fn formatted(text: &str, f: hayagriva::Formatting, out: &mut String) {
    let mut tags: Vec<&str> = Vec::new();
    if f.font_style == FontStyle::Italic {
        tags.push("i");
    }
    if f.font_weight == FontWeight::Bold {
        tags.push("b");
    }
    if f.font_variant == FontVariant::SmallCaps {
        tags.push("span class=\"small-caps\"");
    }
    match f.vertical_align {
        VerticalAlign::Sup => tags.push("sup"),
        VerticalAlign::Sub => tags.push("sub"),
        _ => {}
    }
    for t in &tags {
        let _ = write!(out, "<{t}>");
    }
    out.push_str(&escape_text(text));
    for t in tags.iter().rev() {
        let name = t.split(' ').next().unwrap_or(t);
        let _ = write!(out, "</{name}>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locators_read_like_pandocs() {
        assert_eq!(locator("sec. 3.2"), Some((Locator::Section, "3.2")));
        assert_eq!(locator("pp. 4-5"), Some((Locator::Page, "4-5")));
        assert_eq!(locator("12"), Some((Locator::Page, "12")));
        assert_eq!(locator("chapters 2-3"), Some((Locator::Chapter, "2-3")));
        assert_eq!(locator("around 3"), None);
        assert_eq!(locator("sec."), None);
    }

    #[test]
    fn an_unclosed_entry_is_found_at_its_first_line() {
        let bib = "@book{first,\n  title = {One},\n}\n\n@book{second,\n  title = {Two \\{ brace},\n  note = {open,\n\n% a comment }\n@book{third,\n  title = {Three}\n}\n";
        let open = unclosed_entries(bib);
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!(&bib[open[0].clone()], "@book{second,");
        assert!(unclosed_entries("@book{a,\n title = {A}\n}\n").is_empty());
    }

    #[test]
    fn entries_are_found_at_their_keys() {
        let bib = "@article{ab,\n title={ab}}\n@book{ a ,\n}";
        assert_eq!(&bib[key_range(bib, "ab")], "ab");
        assert_eq!(key_range(bib, "ab").start, 9);
        assert_eq!(&bib[key_range(bib, "a")], "a");
    }
}
