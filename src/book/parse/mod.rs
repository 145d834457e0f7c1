//! Parse: `book/book.toml` and each chapter, read once into [`Node`]s with their typed
//! directives and inline constructs attached.
//!
//! Grammar of what the compiler reads beyond CommonMark (+ tables, `$math$`):
//!
//! ```text
//! directive   = fence info NEWLINE body fence
//! info        = "run" SP id            body: TOML run spec (base, seed|seeds, overrides)
//!             | "figure" SP id         body: TOML { kind, runs, caption, labels?, … }
//!             | "table" SP id          body: TOML { kind, runs, caption, labels?, … }
//!             | "include" SP path [":" anchor]     body: empty
//!             | "widget" SP id         body: TOML { models = [{ run, label? }, …] }
//! claim       = "[" quoted "]" "{=" expr [ "~" tolerance ] "}"   checked figure
//! insert      = "{=" expr "}"                                      inserted value, no claim
//! literal     = "[" quoted "]" "{!" reason "}"    shown as written, deliberately unchecked
//! assertion   = "[" text "]" "{?" expr "}"        text (markdown, may hold claims, inserts
//!             | "{?" expr "}"                     and references) true while expr is;
//!                                                 bare: asserts the sentence before it
//! label       = "{#eq-" id "}"       right after a `$$…$$` display equation
//!             | "{#tab-" id "}"      in a `Table: caption` paragraph right after a table
//! heading id  = "{#" id "}"          at the end of a `##` or `###` heading (pulldown-cmark)
//! reference   = "{@" id "}"          to a figure, table, equation or heading: "Figure 1.2",
//!                                    "(1.3)", "Section 1.4"
//! citation    = "[" "@" key ["," locator] *(";" "@" key ["," locator]) "]"   (Ba et al., 2016)
//!             | "@" key             narrative, where a word starts: Ba et al. (2016)
//! key         = a BibLaTeX key of `bibliography` (book.toml; `references.bib` by default)
//! locator     = label SP value | page   e.g. `sec. 3.2`, `pp. 4-5`, `12` (cite.rs: LABELS)
//! id          = [a-z0-9][a-z0-9_-]*
//! tolerance   = number [ "%" ]       absolute, or relative to the recomputed value
//! reason      = word                 e.g. `original`: quoted from the original chapter
//! ```
//!
//! The fields of each figure and table kind are those of its `Spec` (`figures/*.rs`,
//! `tables/*.rs`). Claims, inserts, literals, assertions, labels and references are read in
//! prose, tables, lists, headings and figure and table captions, but not in code, math or
//! HTML. Every other numeral in prose is an `unbound-number` warning (`numerals.rs`).

pub mod answers;
pub mod config;
pub mod directive;
pub mod events;
pub mod footnotes;
pub mod inline;
pub mod numerals;

pub use config::{book_file, AnswerPlace, BookConfig};
use config::{check_url, key_range, value_range};
pub use directive::{Block, Directive, Listing, Source, Twin};
pub use events::{Math, Node};
pub use inline::{CiteItem, Inline, Tolerance};

use super::diag::{Diagnostic, FileId, Sources, Span};
use crate::book::codes::Code;
use pulldown_cmark::{Event, HeadingLevel, Options, Tag, TagEnd};
use std::path::{Path, PathBuf};

/// Stand-ins for inline constructs while the markdown is parsed: `U+E000 n U+E001`.
pub const PLACEHOLDER_OPEN: char = '\u{E000}';
pub const PLACEHOLDER_CLOSE: char = '\u{E001}';

/// A value with where it came from.
#[derive(Clone, Debug)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

/// Where a file stands in the book, which decides its numbers and its page's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Front matter (`front` in book.toml): no section numbers; its figures, tables and
    /// equations are numbered 1, 2, … without a prefix.
    Front(usize),
    /// Chapter n (1-based): sections 1.1, Figure 1.2, (1.3).
    Chapter(usize),
    /// Appendix k (0-based; A is 0): sections A.1, Figure A.2, (A.3).
    Appendix(usize),
}

impl Place {
    /// The prefix of its numbers: `1`, `A`; none for front matter.
    pub fn prefix(self) -> Option<String> {
        match self {
            Place::Front(_) => None,
            Place::Chapter(n) => Some(n.to_string()),
            Place::Appendix(k) => Some(appendix_letter(k)),
        }
    }

    /// What it is called when it has no `#` title: "Chapter 1", "Appendix A", "Preface".
    fn default_title(self) -> String {
        match self {
            Place::Front(_) => "Preface".into(),
            Place::Chapter(n) => format!("Chapter {n}"),
            Place::Appendix(k) => format!("Appendix {}", appendix_letter(k)),
        }
    }

    /// Its page: `chapter-1.html`, `appendix-a.html`, `front-1.html`.
    fn slug(self) -> String {
        match self {
            Place::Front(k) => format!("front-{}.html", k + 1),
            Place::Chapter(n) => format!("chapter-{n}.html"),
            Place::Appendix(k) => format!("appendix-{}.html", appendix_letter(k).to_lowercase()),
        }
    }

    /// How a reference to the whole chapter reads: "Chapter 1", "Appendix A".
    pub fn name(self) -> String {
        self.default_title()
    }
}

/// A, B, …, Z, then AA, AB, …
fn appendix_letter(k: usize) -> String {
    let letter = |i: usize| char::from(b'A' + u8::try_from(i % 26).unwrap_or(0));
    if k < 26 {
        letter(k).to_string()
    } else {
        format!("{}{}", letter(k / 26 - 1), letter(k))
    }
}

/// One chapter (or a front-matter file, or an appendix), parsed.
pub struct Chapter {
    pub file: FileId,
    /// Where it stands in the book.
    pub place: Place,
    /// The text of its first `#` heading (without claims), or "Chapter N".
    pub title: String,
    /// Output file name, e.g. `chapter-1.html`.
    pub slug: String,
    /// The chapter in document order.
    pub nodes: Vec<Node>,
    /// Its inline constructs in source order; `Node::Inline(n)` is `inlines[n]`.
    pub inlines: Vec<Spanned<Inline>>,
    /// How many numerals of its prose are bound to nothing (each one warned about).
    pub unbound: usize,
}

impl Chapter {
    /// The id of the chapter's `#` title (`# Positions and length {#chap-positions}`), which
    /// references to the chapter link to.
    pub fn title_id(&self) -> Option<&str> {
        self.nodes.iter().find_map(|n| match n {
            Node::Md(Event::Start(Tag::Heading {
                level: HeadingLevel::H1,
                id,
                ..
            })) => Some(id.as_deref()),
            _ => None,
        })?
    }

    /// The chapter's directives, in document order.
    pub fn directives(&self) -> impl Iterator<Item = &Spanned<Directive>> {
        self.nodes.iter().filter_map(|n| match n {
            Node::Directive(d) => Some(d),
            _ => None,
        })
    }
}

pub struct Book {
    pub root: PathBuf,
    pub config: BookConfig,
    pub chapters: Vec<Chapter>,
    /// The works the chapters cite, if the book has a bibliography.
    pub bibliography: Option<crate::book::cite::Bibliography>,
    /// The results kept with the book (book.toml's `store`), and where book.toml names it.
    pub store: Option<(crate::book::store::Store, Span)>,
    /// Its earlier editions (book.toml's `[[editions]]`), each with its entry's place.
    pub editions: Vec<(config::EditionConfig, Span)>,
}

/// Reads `root/book/book.toml` and every chapter, collecting diagnostics.
pub fn load(root: &Path, sources: &mut Sources, diags: &mut Vec<Diagnostic>) -> Option<Book> {
    let toml_path = root.join("book").join("book.toml");
    let text = match std::fs::read_to_string(&toml_path) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    Code::Io,
                    None,
                    format!("cannot read {}: {e}", toml_path.display()),
                )
                .hint("a book needs book/book.toml with title, author and chapters"),
            );
            return None;
        }
    };
    let file = sources.add(toml_path, text.clone());
    let config: BookConfig = match toml::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            let range = e.span().map_or(0..1, |r| r.start..r.end.max(r.start + 1));
            diags.push(
                Diagnostic::error(Code::Toml, Some(Span { file, range }), "invalid book.toml")
                    .label(e.message()),
            );
            return None;
        }
    };
    if config.chapters.is_empty() {
        diags.push(
            Diagnostic::error(
                Code::NoChapters,
                Some(Span {
                    file,
                    range: key_range(&text, "chapters"),
                }),
                "this book has no chapters",
            )
            .hint("list the chapter files in order, e.g. `chapters = [\"chapter-1.md\"]`"),
        );
        return None;
    }
    if let Some(url) = &config.url {
        if let Err(why) = check_url(url) {
            diags.push(
                Diagnostic::error(
                    Code::Toml,
                    Some(Span {
                        file,
                        range: value_range(&text, "url"),
                    }),
                    format!("`url` must be the site's absolute address: {why}"),
                )
                .hint("write it with its scheme, e.g. `url = \"https://example.org/book/\"`"),
            );
        }
    }
    let chapters = load_chapters(root, &config, file, sources, diags);
    let reported = diags.len();
    let bibliography = crate::book::cite::load(root, &config, file, sources, diags);
    // A bibliography that is there and broken is reported once, where it is broken; its
    // citations are not then each an error of a book "with no bibliography".
    if bibliography.is_some() || diags.len() == reported {
        crate::book::cite::check(bibliography.as_ref(), &chapters, diags);
    }
    reserved_ids(&chapters, &config, sources, diags);
    named_once(&chapters, &config, file, diags);
    let store = store_of(root, &config, file, diags);
    let editions = editions_of(&config, file, diags);
    lint_keys(&config, file, diags);
    Some(Book {
        root: root.to_path_buf(),
        config,
        chapters,
        bibliography,
        store,
        editions,
    })
}

/// book.toml's `[[editions]]`: each names a git revision or a saved record, not both.
fn editions_of(
    config: &BookConfig,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(config::EditionConfig, Span)> {
    let mut out = Vec::new();
    for e in &config.editions {
        let at = Span {
            file,
            range: e.span(),
        };
        let v = e.get_ref();
        if v.rev.is_some() == v.claims.is_some() {
            diags.push(
                Diagnostic::error(
                    Code::Edition,
                    Some(at),
                    format!("the edition `{}` needs `rev` or `claims`, and only one", v.name),
                )
                .hint("`rev = \"v1.0\"` (a git revision of this repository) or `claims = \"editions/first.json\"` (what `revtx-book changes --save` wrote)"),
            );
            continue;
        }
        out.push((v.clone(), at));
    }
    out
}

/// The folder book.toml's `store` names: relative to `book/` and inside it, however it is
/// spelt (a link out of the book is refused, as for every file book.toml names).
fn store_of(
    root: &Path,
    config: &BookConfig,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> Option<(crate::book::store::Store, Span)> {
    let rel = config.store.as_ref()?;
    let at = Span {
        file,
        range: rel.span(),
    };
    let book_dir = root.join("book");
    let inside = config::book_file(&book_dir, rel.get_ref()).and_then(|(path, _)| {
        let empty = rel.get_ref().trim_matches(['.', '/']).is_empty();
        if empty || path.is_file() {
            return Err("it must name a folder of its own inside book/");
        }
        Ok(path)
    });
    match inside {
        Ok(path) => Some((crate::book::store::Store::new(path), at)),
        Err(why) => {
            diags.push(
                Diagnostic::error(
                    Code::FileOutside,
                    Some(at),
                    format!("refusing the store `{}`: {why}", rel.get_ref()),
                )
                .hint("name a folder inside book/, relative to it, e.g. `store = \"results\"`"),
            );
            None
        }
    }
}

/// Reads and parses the chapters `book.toml` (source `file`) lists, in order: each inside
/// `book/`, each once. An entry that breaks a rule is an error at it.
fn load_chapters(
    root: &Path,
    config: &BookConfig,
    file: FileId,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Chapter> {
    let book_dir = root.join("book");
    let mut chapters = Vec::new();
    let mut seen: Vec<(PathBuf, std::ops::Range<usize>)> = Vec::new();
    let listed = (config.front.iter().enumerate())
        .map(|(k, rel)| (rel, Place::Front(k)))
        .chain((config.chapters.iter().enumerate()).map(|(k, rel)| (rel, Place::Chapter(k + 1))))
        .chain((config.appendices.iter().enumerate()).map(|(k, rel)| (rel, Place::Appendix(k))));
    for (rel, place) in listed {
        let at = Span {
            file,
            range: rel.span(),
        };
        let (path, identity) = match chapter_path(&book_dir, rel.get_ref()) {
            Ok(p) => p,
            Err(d) => {
                diags.push(d.at(at));
                continue;
            }
        };
        if let Some((_, first)) = seen.iter().find(|(p, _)| *p == identity) {
            let (line, _) = sources.line_col(file, first.start);
            diags.push(
                Diagnostic::error(
                    Code::DuplicateChapter,
                    Some(at),
                    format!("chapter `{}` is listed twice", rel.get_ref()),
                )
                .label("listed again here")
                .note(format!("first listed on line {line}"))
                .hint(
                    "a chapter's runs, ids and anchors would collide with themselves: list it once",
                ),
            );
            continue;
        }
        seen.push((identity, rel.span()));
        match std::fs::read_to_string(&path) {
            Ok(src) => {
                let id = sources.add(path, src);
                chapters.push(parse_chapter(id, place, sources.text(id), diags));
            }
            Err(e) => {
                diags.push(
                    Diagnostic::error(
                        Code::Io,
                        Some(at),
                        format!("cannot read chapter `{}`: {e}", rel.get_ref()),
                    )
                    .label("listed here"),
                );
            }
        }
    }
    duplicate_ids(&chapters, sources, diags);
    chapters
}

/// A chapter's file: relative to `book/`, and inside it (see [`book_file`]). Gives the
/// path to read and the file's identity; `Err` says why not, to be placed at its entry.
fn chapter_path(book_dir: &Path, rel: &str) -> Result<(PathBuf, PathBuf), Diagnostic> {
    book_file(book_dir, rel).map_err(|why| {
        Diagnostic::error(
            Code::ChapterOutside,
            None,
            format!("refusing to read chapter `{rel}`: {why}"),
        )
        .hint("chapter files live in book/, named relative to it, e.g. `chapter-2.md`")
    })
}

/// The markdown extensions the book uses.
pub fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_MATH
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Parses one chapter's markdown.
pub fn parse_chapter(
    file: FileId,
    place: Place,
    src: &str,
    diags: &mut Vec<Diagnostic>,
) -> Chapter {
    let sub = inline::substitute(file, src);
    let parsed = events::parse(file, src, &sub, diags);
    let inlines: Vec<Spanned<Inline>> = sub
        .found
        .into_iter()
        .zip(&parsed.index)
        .filter(|(_, k)| k.is_some())
        .map(|(f, _)| f.inline)
        .collect();

    Chapter {
        file,
        place,
        title: title(&parsed.nodes).unwrap_or_else(|| place.default_title()),
        slug: place.slug(),
        nodes: parsed.nodes,
        inlines,
        unbound: parsed.unbound,
    }
}

/// The text of the first `#` heading.
fn title(nodes: &[Node]) -> Option<String> {
    let start = nodes.iter().position(|n| {
        matches!(
            n,
            Node::Md(Event::Start(Tag::Heading {
                level: HeadingLevel::H1,
                ..
            }))
        )
    })?;
    let mut t = String::new();
    for n in &nodes[start + 1..] {
        match n {
            Node::Md(Event::End(TagEnd::Heading(_))) => break,
            Node::Md(Event::Text(s)) => t.push_str(s),
            _ => {}
        }
    }
    Some(t.trim().to_string())
}

/// The ids a chapter defines, in source order: its directives' (runs, figures, tables,
/// widgets), its equation and table labels, and its headings'.
fn ids<'c>(ch: &'c Chapter, src: &str) -> Vec<(&'c str, Span)> {
    // A heading's id is found in the source as its `{#id`, in order.
    let mut from = 0;
    let headings: Vec<(&str, Span)> = ch
        .nodes
        .iter()
        .filter_map(|n| match n {
            Node::Md(Event::Start(Tag::Heading { id: Some(id), .. })) => Some(&**id),
            _ => None,
        })
        .map(|id| {
            let at = src[from..]
                .find(&format!("{{#{id}"))
                .map_or(0, |k| from + k);
            from = at;
            let span = Span {
                file: ch.file,
                range: at..at + id.len() + 3,
            };
            (id, span)
        })
        .collect();
    ch.directives()
        .filter_map(|d| d.node.id().map(|id| (id, d.span.clone())))
        .chain(ch.inlines.iter().filter_map(|s| match &s.node {
            Inline::Label { id } => Some((id.as_str(), s.span.clone())),
            _ => None,
        }))
        .chain(headings)
        .collect()
}

/// Ids are one namespace for the whole book: runs, figures, tables, widgets, equations
/// and sections. A second definition, in the same chapter or another, is an error there
/// that names the first.
fn duplicate_ids(chapters: &[Chapter], sources: &Sources, diags: &mut Vec<Diagnostic>) {
    let mut seen: Vec<(&str, Span)> = Vec::new();
    for ch in chapters {
        let mut here = ids(ch, sources.text(ch.file));
        // Directives, labels and headings each come in source order; the book's order is
        // the chapters', then the source's.
        here.sort_by_key(|(_, sp)| sp.range.start);
        for (id, sp) in here {
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
                let (line, col) = sources.line_col(first.file, first.range.start);
                let at = if first.file == sp.file {
                    format!("line {line}")
                } else {
                    format!("{}:{line}:{col}", sources.display_path(first.file))
                };
                diags.push(
                    Diagnostic::error(Code::DuplicateId, Some(sp), format!("duplicate id `{id}`"))
                        .label("defined again here")
                        .note(format!("first defined on {at}"))
                        .hint("ids are shared by every chapter of the book: give this one another"),
                );
            } else {
                seen.push((id, sp));
            }
        }
    }
}

/// Ids the compiler gives sections of its own: `references` in a chapter that cites, and
/// `answers` in one with answers when book.toml collects them at the end. An author's id
/// that takes one is an error at it.
/// Each named expression is named once, in book.toml or in one chapter, and never with a
/// helper's name (it would hide the helper from every chapter).
fn named_once(
    chapters: &[Chapter],
    config: &BookConfig,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) {
    let helper = |n: &str| {
        crate::book::expr::FUNCTIONS.contains(&n)
            || ["range", "dict", "namespace", "debug"].contains(&n)
    };
    let mut seen: Vec<String> = Vec::new();
    for (name, def) in &config.expressions {
        let at = Span {
            file,
            range: def.span(),
        };
        if helper(name) {
            diags.push(
                Diagnostic::error(
                    Code::DuplicateId,
                    Some(at),
                    format!("the expression `{name}` would hide the helper of that name"),
                )
                .hint("give it another name"),
            );
        }
        seen.push(name.clone());
    }
    for ch in chapters {
        for d in ch.directives() {
            let Directive::Expression { name, .. } = &d.node else {
                continue;
            };
            if helper(name) {
                diags.push(
                    Diagnostic::error(
                        Code::DuplicateId,
                        Some(d.span.clone()),
                        format!("the expression `{name}` would hide the helper of that name"),
                    )
                    .hint("give it another name"),
                );
            } else if seen.contains(name) {
                diags.push(
                    Diagnostic::error(
                        Code::DuplicateId,
                        Some(d.span.clone()),
                        format!("the expression `{name}` is named twice"),
                    )
                    .label("an expression is named once, in book.toml or in one chapter")
                    .hint("give this one another name, or remove one of the two"),
                );
            }
            seen.push(name.clone());
        }
    }
}

/// `[lints]` and every `[lints-for."FILE"]` of book.toml: each key a lint, each file one of
/// the book's (a front-matter file, a chapter or an appendix), else an error at the key.
fn lint_keys(config: &BookConfig, file: FileId, diags: &mut Vec<Diagnostic>) {
    // A key that is wrong: an error at the key, with the hint that names what is right.
    let wrong = |key: &toml::Spanned<String>, message: String, hint: String| {
        Diagnostic::error(
            Code::Toml,
            Some(Span {
                file,
                range: key.span(),
            }),
            message,
        )
        .hint(hint)
    };
    let lints: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| c.is_lint())
        .map(|c| c.name())
        .collect();
    let tables = std::iter::once(&config.lints).chain(config.lints_for.values());
    for key in tables.flat_map(|t| t.keys()) {
        if !Code::named(key.get_ref()).is_some_and(Code::is_lint) {
            diags.push(wrong(
                key,
                format!("`{}` is not a lint", key.get_ref()),
                format!("the lints a book can set: {}", lints.join(", ")),
            ));
        }
    }
    let files: Vec<&str> = config
        .front
        .iter()
        .chain(&config.chapters)
        .chain(&config.appendices)
        .map(|f| f.get_ref().as_str())
        .collect();
    for key in config.lints_for.keys() {
        if !files.contains(&key.get_ref().as_str()) {
            diags.push(wrong(
                key,
                format!("`{}` is not one of the book's files", key.get_ref()),
                format!(
                    "`[lints-for.\"FILE\"]` names a file of `front`, `chapters` or `appendices`: {}",
                    files.join(", ")
                ),
            ));
        }
    }
}

fn reserved_ids(
    chapters: &[Chapter],
    config: &BookConfig,
    sources: &Sources,
    diags: &mut Vec<Diagnostic>,
) {
    for ch in chapters {
        let cites = ch
            .inlines
            .iter()
            .any(|i| matches!(i.node, Inline::Cite { .. }));
        let answers = config.answers == AnswerPlace::End
            && ch.nodes.iter().any(|n| {
                matches!(n, Node::Md(Event::Start(Tag::Heading { classes, .. }))
                    if classes.iter().any(|c| &**c == "answer"))
            });
        for (id, sp) in ids(ch, sources.text(ch.file)) {
            let (taken, by) = match id {
                "references" if cites => (true, "the list of the works this chapter cites"),
                "answers" if answers => (true, "the answers collected at the chapter's end"),
                _ => (false, ""),
            };
            if taken {
                diags.push(
                    Diagnostic::error(Code::DuplicateId, Some(sp), format!("duplicate id `{id}`"))
                        .label(format!("`{id}` is the id of {by}"))
                        .hint("give this one another id"),
                );
            }
        }
    }
}

/// `[a-z0-9][a-z0-9_-]*`
pub fn valid_id(id: &str) -> bool {
    let mut cs = id.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && cs.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests;
