//! Parse: `book/book.toml` and the chapter markdown → [`Book`] with typed directives.
//!
//! Grammar of what the compiler reads beyond CommonMark (+ tables, `$math$`):
//!
//! ```text
//! directive   = fence info NEWLINE body fence
//! info        = "run" SP id            body: TOML run spec (base, seed|seeds, overrides)
//!             | "figure" SP id         body: TOML { kind, runs, caption, alt? }
//!             | "table" SP id          body: TOML { kind, runs, caption }
//!             | "include" SP path [":" anchor]     body: empty
//! claim       = "[" quoted "]" "{=" expr [ "~" tolerance ] "}"   checked figure
//! insert      = "{=" expr "}"                                      inserted value, no claim
//! label       = "{#eq-" id "}"       right after a `$$…$$` display equation
//!             | "{#tab-" id "}"      in a `Table: caption` paragraph right after a table
//! reference   = "{@" id "}"          to a figure, table or equation: "Figure 1.2", "(1.3)"
//! id          = [a-z0-9][a-z0-9_-]*
//! tolerance   = number [ "%" ]       absolute, or relative to the recomputed value
//! ```
//!
//! Claims, inserts, labels and references are found in prose, tables, lists, headings
//! and in the TOML of figure and table directives (captions), but not in code or math.
//! Each is replaced by a placeholder (`U+E000 index U+E001`) that survives markdown
//! rendering and is filled in once the runs are known.

use super::diag::{Diagnostic, FileId, Sources, Span};
use crate::experiments::RunSpec;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// `book/book.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BookConfig {
    /// Title of the book, shown on every page.
    pub title: String,
    /// Author line.
    pub author: String,
    /// One paragraph for the index page.
    #[serde(default)]
    pub description: String,
    /// Language of the text (`lang` attribute).
    #[serde(default = "default_language")]
    pub language: String,
    /// Chapter files, in order, relative to `book/`.
    pub chapters: Vec<String>,
}

fn default_language() -> String {
    "en".into()
}

pub const PLACEHOLDER_OPEN: char = '\u{E000}';
pub const PLACEHOLDER_CLOSE: char = '\u{E001}';

/// A value with where it came from.
#[derive(Clone, Debug)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

/// A figure directive's body.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// `loss`, `attention` or `faults`.
    pub kind: String,
    /// Runs it draws, by id.
    pub runs: Vec<String>,
    /// Caption; may contain claims.
    pub caption: String,
    /// Legend labels, one per run (default: the run ids).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Running-mean window for smoothed curves.
    #[serde(default)]
    pub smooth: Option<usize>,
}

/// A table directive's body.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// `accuracy-by-length`, `strongest-keys`, `worked-example`, `seed-spread`.
    pub kind: String,
    pub runs: Vec<String>,
    pub caption: String,
    #[serde(default)]
    pub labels: Vec<String>,
    /// For `seed-spread`: expressions over one run result, with their column labels.
    #[serde(default)]
    pub columns: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
pub enum Directive {
    Run {
        id: String,
        spec: RunSpec,
    },
    Figure {
        id: String,
        spec: FigureSpec,
    },
    Table {
        id: String,
        spec: TableSpec,
    },
    Include {
        path: String,
        anchor: Option<String>,
        code: String,
    },
}

impl Directive {
    pub fn id(&self) -> Option<&str> {
        match self {
            Directive::Run { id, .. }
            | Directive::Figure { id, .. }
            | Directive::Table { id, .. } => Some(id),
            Directive::Include { .. } => None,
        }
    }
}

/// Numeric tolerance of a claim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    Absolute(f64),
    /// Percent of the recomputed value.
    Relative(f64),
}

/// Inline constructs replaced by placeholders.
#[derive(Clone, Debug)]
pub enum Inline {
    /// `[quoted]{=expr}`: a checked figure.
    Claim {
        quoted: String,
        quoted_span: Span,
        expr: String,
        expr_span: Span,
        tolerance: Option<Tolerance>,
    },
    /// `{=expr}`: an inserted value.
    Insert { expr: String, expr_span: Span },
    /// `{#id}`: an equation label.
    Label { id: String },
    /// `{@id}`: a cross-reference.
    Ref { id: String },
}

/// One chapter, parsed.
pub struct Chapter {
    pub file: FileId,
    /// 1-based chapter number.
    pub number: usize,
    pub title: String,
    /// Output file name, e.g. `chapter-1.html`.
    pub slug: String,
    /// The markdown with inline constructs replaced by placeholders.
    pub text: String,
    /// Directives in document order (the order the renderer meets their fences).
    pub directives: Vec<Spanned<Directive>>,
    /// Offset in `text` of each directive's fence, parallel to `directives`.
    pub directive_offsets: Vec<usize>,
    /// Inline constructs, indexed by placeholder number.
    pub inlines: Vec<Spanned<Inline>>,
    /// Display-math spans in `text` (for KaTeX error positions): (offset in `text`, formula, span).
    pub math: Vec<(usize, Span)>,
}

pub struct Book {
    pub root: PathBuf,
    pub config: BookConfig,
    pub chapters: Vec<Chapter>,
}

/// Reads `root/book/book.toml` and every chapter, collecting diagnostics.
pub fn load(root: &Path, sources: &mut Sources, diags: &mut Vec<Diagnostic>) -> Option<Book> {
    let toml_path = root.join("book").join("book.toml");
    let text = match std::fs::read_to_string(&toml_path) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::error(None, format!("cannot read {}: {e}", toml_path.display()))
                    .hint("a book needs book/book.toml with title, author and chapters"),
            );
            return None;
        }
    };
    let file = sources.add(toml_path, text.clone());
    let config: BookConfig = match toml::from_str(&text) {
        Ok(c) => c,
        Err(e) => {
            diags.push(toml_error(file, 0, &e, "book.toml"));
            return None;
        }
    };
    let mut chapters = Vec::new();
    for (i, rel) in config.chapters.iter().enumerate() {
        let path = root.join("book").join(rel);
        match std::fs::read_to_string(&path) {
            Ok(src) => {
                let id = sources.add(path, src);
                chapters.push(parse_chapter(id, i + 1, sources.text(id), diags));
            }
            Err(e) => {
                let at = text
                    .find(rel.as_str())
                    .map(|o| o..o + rel.len())
                    .unwrap_or(0..0);
                diags.push(
                    Diagnostic::error(
                        Some(Span { file, range: at }),
                        format!("cannot read chapter `{rel}`: {e}"),
                    )
                    .label("listed here"),
                );
            }
        }
    }
    Some(Book {
        root: root.to_path_buf(),
        config,
        chapters,
    })
}

/// A TOML error as a diagnostic, placed at its span within a body starting at `base`.
pub fn toml_error(file: FileId, base: usize, e: &toml::de::Error, what: &str) -> Diagnostic {
    let range = e
        .span()
        .map(|r| base + r.start..base + r.end.max(r.start + 1))
        .unwrap_or(base..base + 1);
    Diagnostic::error(Some(Span { file, range }), format!("invalid {what}"))
        .label(e.message().to_string())
}

/// Regions of the source where inline constructs are not looked for: code and math.
/// Also returns the fenced blocks with their info strings.
/// Fenced blocks: (info string, byte range).
type Fences = Vec<(String, Range<usize>)>;

fn scan_blocks(src: &str) -> (Vec<Range<usize>>, Fences) {
    let mut skip = Vec::new();
    let mut fences = Vec::new();
    let mut in_fence: Option<(String, usize)> = None;
    for (ev, range) in Parser::new_ext(src, options()).into_offset_iter() {
        match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(i) => i.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                in_fence = Some((info, range.start));
                let _ = range;
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((info, start)) = in_fence.take() {
                    let word = info.split_whitespace().next().unwrap_or("");
                    if !matches!(word, "figure" | "table") {
                        skip.push(start..range.end);
                    }
                    fences.push((info, start..range.end));
                }
            }
            Event::Code(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_)
            | Event::Html(_)
            | Event::InlineHtml(_) => skip.push(range),
            _ => {}
        }
    }
    (skip, fences)
}

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
    number: usize,
    src: &str,
    diags: &mut Vec<Diagnostic>,
) -> Chapter {
    let (skip, _) = scan_blocks(src);
    let span = |r: Range<usize>| Span { file, range: r };
    let in_skip = |p: usize| skip.iter().any(|r| r.contains(&p));

    // Pass 1: inline constructs → placeholders, with a map from new offsets to old ones.
    let mut inlines: Vec<Spanned<Inline>> = Vec::new();
    let mut text = String::with_capacity(src.len());
    let mut map: Vec<(usize, usize)> = vec![(0, 0)]; // (offset in text, offset in src)
    let bytes = src.as_bytes();
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'{'
            && i + 1 < bytes.len()
            && matches!(bytes[i + 1], b'=' | b'#' | b'@')
            && !in_skip(i)
        {
            let Some(close) = matching_brace(src, i) else {
                diags.push(
                    Diagnostic::error(Some(span(i..i + 2)), "unclosed `{`")
                        .label("this is never closed")
                        .hint("close it with `}` on the same line"),
                );
                i += 2;
                continue;
            };
            let sigil = bytes[i + 1];
            if sigil == b'#'
                && !(src[i + 2..close].starts_with("eq-") || src[i + 2..close].starts_with("tab-"))
            {
                // Heading attributes like `{#sec-x}` belong to the markdown parser.
                i += 1;
                continue;
            }
            let body_start = i + 2;
            let body = &src[body_start..close];
            let mut start = i;
            let inline = match sigil {
                b'=' => {
                    let (expr, tol, tol_err) = split_tolerance(body);
                    if let Some(msg) = tol_err {
                        diags.push(
                            Diagnostic::error(Some(span(body_start..close)), "bad tolerance")
                                .label(msg)
                                .hint("write `~ 0.01` (absolute) or `~ 5%` (relative)"),
                        );
                    }
                    let expr_span = span(
                        body_start + (expr.as_ptr() as usize - body.as_ptr() as usize)
                            ..body_start
                                + (expr.as_ptr() as usize - body.as_ptr() as usize)
                                + expr.len(),
                    );
                    if expr.trim().is_empty() {
                        diags.push(
                            Diagnostic::error(Some(span(i..close + 1)), "empty expression")
                                .hint("write `[quoted]{=run.path}` or `{=run.path}`"),
                        );
                    }
                    match quoted_before(src, i, &skip) {
                        Some(open) if open >= copied => {
                            start = open;
                            let quoted = src[open + 1..i - 1].to_string();
                            if quoted.trim().is_empty() {
                                diags.push(Diagnostic::error(Some(span(open..i)), "a claim quotes nothing").hint("write the figure as it should read, e.g. `[94.6%]{=run.path}`"));
                            }
                            Inline::Claim {
                                quoted,
                                quoted_span: span(open + 1..i - 1),
                                expr: expr.trim().to_string(),
                                expr_span,
                                tolerance: tol,
                            }
                        }
                        _ => Inline::Insert {
                            expr: expr.trim().to_string(),
                            expr_span,
                        },
                    }
                }
                b'#' => Inline::Label {
                    id: body.trim().to_string(),
                },
                _ => {
                    let id = body.trim().to_string();
                    if !valid_id(&id) {
                        diags.push(
                            Diagnostic::error(
                                Some(span(i..close + 1)),
                                format!("`{id}` is not a valid reference"),
                            )
                            .hint("references look like `{@fig-loss}` or `{@eq-attention}`"),
                        );
                    }
                    Inline::Ref { id }
                }
            };
            text.push_str(&src[copied..start]);
            let n = inlines.len();
            inlines.push(Spanned {
                node: inline,
                span: span(start..close + 1),
            });
            text.push(PLACEHOLDER_OPEN);
            text.push_str(&n.to_string());
            text.push(PLACEHOLDER_CLOSE);
            copied = close + 1;
            map.push((text.len(), copied));
            i = close + 1;
        } else {
            i += 1;
        }
    }
    text.push_str(&src[copied..]);
    let to_src = |p: usize| {
        let (t, s) = map
            .iter()
            .rev()
            .find(|(t, _)| *t <= p)
            .copied()
            .unwrap_or((0, 0));
        s + (p - t)
    };

    // Pass 2: directives and math, from the placeholder text.
    let mut directives = Vec::new();
    let mut directive_offsets = Vec::new();
    let mut math = Vec::new();
    let mut title = None;
    let mut in_title = false;
    let mut fence: Option<(String, usize, String)> = None;
    for (ev, range) in Parser::new_ext(&text, options()).into_offset_iter() {
        match ev {
            Event::Start(Tag::Heading {
                level: pulldown_cmark::HeadingLevel::H1,
                ..
            }) if title.is_none() => {
                in_title = true;
                title = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => in_title = false,
            Event::Text(t) if in_title => title.as_mut().unwrap().push_str(&t),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                fence = Some((info.to_string(), range.start, String::new()))
            }
            Event::Text(t) if fence.is_some() => fence.as_mut().unwrap().2.push_str(&t),
            Event::End(TagEnd::CodeBlock) => {
                if let Some((info, start, body)) = fence.take() {
                    let body_start = text[start..]
                        .find('\n')
                        .map(|n| start + n + 1)
                        .unwrap_or(start);
                    let info_span =
                        span(to_src(start)..to_src(start) + text[start..].find('\n').unwrap_or(0));
                    if let Some(d) =
                        parse_directive(&info, &body, info_span, file, to_src(body_start), diags)
                    {
                        directives.push(d);
                        directive_offsets.push(start);
                    }
                }
            }
            Event::DisplayMath(_) | Event::InlineMath(_) => {
                math.push((range.start, span(to_src(range.start)..to_src(range.end))))
            }
            _ => {}
        }
    }

    // Duplicate ids, across directives and equation labels.
    let mut seen: Vec<(String, Span)> = Vec::new();
    let ids = directives
        .iter()
        .filter_map(|d| d.node.id().map(|id| (id.to_string(), d.span.clone())))
        .chain(inlines.iter().filter_map(|s| match &s.node {
            Inline::Label { id } => Some((id.clone(), s.span.clone())),
            _ => None,
        }));
    for (id, sp) in ids {
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
            diags.push(
                Diagnostic::error(Some(sp.clone()), format!("duplicate id `{id}`"))
                    .label("defined again here")
                    .note(format!(
                        "first defined on line {}",
                        line_of(src, first.range.start)
                    )),
            );
        } else {
            seen.push((id, sp));
        }
    }

    let title = title
        .map(|t| strip_placeholders(&t).trim().to_string())
        .unwrap_or_else(|| format!("Chapter {number}"));
    Chapter {
        file,
        number,
        title,
        slug: format!("chapter-{number}.html"),
        text,
        directives,
        directive_offsets,
        inlines,
        math,
    }
}

fn line_of(src: &str, offset: usize) -> usize {
    src[..offset.min(src.len())].matches('\n').count() + 1
}

pub fn strip_placeholders(s: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in s.chars() {
        match c {
            PLACEHOLDER_OPEN => inside = true,
            PLACEHOLDER_CLOSE => inside = false,
            _ if !inside => out.push(c),
            _ => {}
        }
    }
    out
}

fn valid_id(id: &str) -> bool {
    let mut cs = id.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && cs.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The `}` closing the `{` at `open`, on the same line, skipping quoted strings and nested braces.
fn matching_brace(src: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<u8> = None;
    for (k, &b) in src.as_bytes()[open..].iter().enumerate() {
        match (quote, b) {
            (_, b'\n') => return None,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'{') => depth += 1,
            (None, b'}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + k);
                }
            }
            _ => {}
        }
    }
    None
}

/// If `{=` at `at` directly follows `]`, the offset of the matching `[` on the same line.
fn quoted_before(src: &str, at: usize, skip: &[Range<usize>]) -> Option<usize> {
    if at == 0 || src.as_bytes()[at - 1] != b']' {
        return None;
    }
    let mut depth = 0;
    for k in (0..at - 1).rev() {
        match src.as_bytes()[k] {
            b'\n' => return None,
            b']' => depth += 1,
            b'[' if depth == 0 => return (!skip.iter().any(|r| r.contains(&k))).then_some(k),
            b'[' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Splits `expr ~ tol` at the last top-level `~`.
fn split_tolerance(body: &str) -> (&str, Option<Tolerance>, Option<String>) {
    match body.rfind('~') {
        None => (body, None, None),
        // A `~` followed by anything but a number is minijinja's string concatenation.
        Some(k)
            if !body[k + 1..]
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') =>
        {
            (body, None, None)
        }
        Some(k) => {
            let (expr, tol) = (&body[..k], body[k + 1..].trim());
            let (num, rel) = match tol.strip_suffix('%') {
                Some(n) => (n.trim(), true),
                None => (tol, false),
            };
            match num.parse::<f64>() {
                Ok(v) if v >= 0.0 => (
                    expr,
                    Some(if rel {
                        Tolerance::Relative(v)
                    } else {
                        Tolerance::Absolute(v)
                    }),
                    None,
                ),
                _ => (
                    expr,
                    None,
                    Some(format!("`{tol}` is not a non-negative number")),
                ),
            }
        }
    }
}

/// Parses a fenced block's info string and body into a directive, or `None` for an
/// ordinary code block.
fn parse_directive(
    info: &str,
    body: &str,
    info_span: Span,
    file: FileId,
    body_start: usize,
    diags: &mut Vec<Diagnostic>,
) -> Option<Spanned<Directive>> {
    let mut words = info.split_whitespace();
    let word = words.next()?;
    if !matches!(word, "run" | "figure" | "table" | "include") {
        return None;
    }
    let arg = words.next();
    let err = |msg: &str, hint: &str| {
        Diagnostic::error(Some(info_span.clone()), msg.to_string()).hint(hint.to_string())
    };
    let Some(arg) = arg else {
        diags.push(err(
            &format!("`{word}` needs an argument"),
            match word {
                "include" => "write ```include src/file.rs:anchor",
                _ => "write e.g. ```run reference",
            },
        ));
        return None;
    };
    if words.next().is_some() {
        diags.push(err(
            &format!("unexpected text after `{word} {arg}`"),
            "a directive takes one argument",
        ));
        return None;
    }
    if word != "include" && !valid_id(arg) {
        diags.push(err(
            &format!("`{arg}` is not a valid id"),
            "ids are lowercase letters, digits, `-` and `_`",
        ));
        return None;
    }
    let id = arg.to_string();
    let node = match word {
        "run" => match toml::from_str::<RunSpec>(body) {
            Ok(spec) => Directive::Run { id, spec },
            Err(e) => {
                diags.push(toml_error(file, body_start, &e, "run directive"));
                return None;
            }
        },
        "figure" => match toml::from_str::<FigureSpec>(body) {
            Ok(spec) => Directive::Figure { id, spec },
            Err(e) => {
                diags.push(toml_error(file, body_start, &e, "figure directive"));
                return None;
            }
        },
        "table" => match toml::from_str::<TableSpec>(body) {
            Ok(spec) => Directive::Table { id, spec },
            Err(e) => {
                diags.push(toml_error(file, body_start, &e, "table directive"));
                return None;
            }
        },
        _ => {
            let (path, anchor) = match arg.split_once(':') {
                Some((p, a)) => (p.to_string(), Some(a.to_string())),
                None => (arg.to_string(), None),
            };
            Directive::Include {
                path,
                anchor,
                code: String::new(),
            }
        }
    };
    Some(Spanned {
        node,
        span: info_span,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> (Chapter, Vec<Diagnostic>) {
        let mut d = Vec::new();
        let c = parse_chapter(0, 1, src, &mut d);
        (c, d)
    }

    #[test]
    fn claims_inserts_refs_and_labels() {
        let src = "# T\n\nIt scored [94.6%]{=noscale.train.test.accuracy} in {=noscale.env.train_seconds}s, see {@fig-loss}.\n\n$$x$$ {#eq-x}\n\n`[1]{=not.a.claim}`\n";
        let (c, d) = parse(src);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(c.inlines.len(), 4);
        match &c.inlines[0].node {
            Inline::Claim {
                quoted,
                expr,
                quoted_span,
                ..
            } => {
                assert_eq!(quoted, "94.6%");
                assert_eq!(expr, "noscale.train.test.accuracy");
                assert_eq!(&src[quoted_span.range.clone()], "94.6%");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&c.inlines[1].node, Inline::Insert { .. }));
        assert!(matches!(&c.inlines[2].node, Inline::Ref { id } if id == "fig-loss"));
        assert!(matches!(&c.inlines[3].node, Inline::Label { id } if id == "eq-x"));
        assert!(c.text.contains("`[1]{=not.a.claim}`"), "code is left alone");
        assert_eq!(c.title, "T");
    }

    #[test]
    fn tolerance_forms() {
        assert_eq!(
            split_tolerance("a.b ~ 0.5").1,
            Some(Tolerance::Absolute(0.5))
        );
        assert_eq!(
            split_tolerance("a.b ~ 5%").1,
            Some(Tolerance::Relative(5.0))
        );
        assert!(
            split_tolerance("a.b ~ -1").2.is_some(),
            "a negative tolerance is an error"
        );
        assert_eq!(
            split_tolerance("'a' ~ b.c"),
            ("'a' ~ b.c", None, None),
            "string concatenation is no tolerance"
        );
    }

    #[test]
    fn directives_are_typed() {
        let src = "```run short\nbase = \"reference\"\nseed = 3\n[train]\nsteps = 10\n```\n\n```figure fig-a\nkind = \"loss\"\nruns = [\"short\"]\ncaption = \"Loss [0.5]{=short.train.final_loss ~ 1}\"\n```\n\n```include src/model/attention.rs:attention\n```\n";
        let (c, d) = parse(src);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(c.directives.len(), 3);
        assert!(
            matches!(&c.directives[0].node, Directive::Run { id, spec } if id == "short" && spec.seed == Some(3))
        );
        match &c.directives[1].node {
            Directive::Figure { spec, .. } => assert!(spec.caption.contains(PLACEHOLDER_OPEN)),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&c.directives[2].node, Directive::Include { path, anchor: Some(a), .. } if path == "src/model/attention.rs" && a == "attention")
        );
    }

    #[test]
    fn toml_errors_point_into_the_body() {
        let src = "intro\n\n```run r\nseed = \"three\"\n```\n";
        let (_, d) = parse(src);
        assert_eq!(d.len(), 1);
        let r = d[0].span.as_ref().unwrap().range.clone();
        assert_eq!(line_of(src, r.start), 4);
    }
}
