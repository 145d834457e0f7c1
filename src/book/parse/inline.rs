//! Inline constructs (claims, inserts, literals, assertions, labels, references, citations):
//! found in
//! the raw markdown and replaced by placeholders that survive the markdown parse, before it
//! runs.
//!
//! Constructs are replaced everywhere; the markdown parse then tells which placeholders
//! sit in prose and which in code, math or HTML, where they are put back as written.
//!
//! An assertion's text stays markdown: its `[` becomes an [`Inline::AssertStart`]
//! placeholder and its `]{? cond}` an [`Inline::Assert`], so the text between, with the
//! claims, inserts and references nested in it, is parsed like any other prose.

use super::{Spanned, PLACEHOLDER_CLOSE, PLACEHOLDER_OPEN};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};

/// Numeric tolerance of a claim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    Absolute(f64),
    /// Percent of the recomputed value.
    Relative(f64),
}

/// An inline construct.
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
    /// `[quoted]{! reason}`: a number shown as written and deliberately not checked, e.g.
    /// `original` for a figure quoted from the original chapter.
    Literal {
        quoted: String,
        quoted_span: Span,
        reason: String,
    },
    /// The `[` opening an asserted statement; its [`Inline::Assert`] is the next one that
    /// has text and is not closed yet.
    AssertStart,
    /// `[text]{? cond}` (the `]{? cond}` part) or a bare `{? cond}`: a statement that holds
    /// only while `cond` is true.
    Assert {
        expr: String,
        expr_span: Span,
        /// The statement's text between its brackets, as written; `None` for a bare `{? …}`.
        text: Option<Span>,
    },
    /// `{#eq-…}` or `{#tab-…}`: the label of an equation or a markdown table.
    Label { id: String },
    /// `{@id}`: a cross-reference.
    Ref { id: String },
    /// `[@key]`, `[@a; @b, sec. 3.2]`: a citation in parentheses; `@key` alone: a
    /// narrative citation ("Vaswani et al. (2017)").
    Cite {
        items: Vec<CiteItem>,
        narrative: bool,
    },
}

/// One work a citation cites.
#[derive(Clone, Debug)]
pub struct CiteItem {
    /// The bibliography key, without its `@`.
    pub key: String,
    pub key_span: Span,
    /// What follows the key's comma, as written (`sec. 3.2`, `p. 4`), and where.
    pub locator: Option<(String, Span)>,
}

/// A construct found in the source, with the problems it has if it turns out to be prose.
pub struct Found {
    pub inline: Spanned<Inline>,
    pub diags: Vec<Diagnostic>,
}

/// The source with every construct replaced by `U+E000 n U+E001`, `n` indexing `found`.
pub struct Substituted {
    pub text: String,
    pub found: Vec<Found>,
    /// `{=`, `{#`, `{@`, `{?` or `{!` never closed on its line: (source offset, diagnostic).
    pub unclosed: Vec<(usize, Diagnostic)>,
    /// (offset in `text`, offset in the source) at the end of each placeholder.
    map: Vec<(usize, usize)>,
}

impl Substituted {
    /// The source offset of an offset in `text` (a placeholder maps to its construct's start).
    pub fn to_src(&self, p: usize) -> usize {
        let k = self.map.partition_point(|(t, _)| *t <= p);
        let (t, s) = self.map[k.saturating_sub(1)];
        s + (p - t)
    }

    /// `s` with every placeholder put back as the source text it replaced.
    pub fn restore(&self, s: &str, src: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for piece in pieces(s) {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Placeholder(n) => {
                    if let Some(f) = self.found.get(n) {
                        out.push_str(&src[f.inline.span.range.clone()]);
                    }
                }
            }
        }
        out
    }
}

/// A stretch of text, or a placeholder's number.
pub enum Piece<'a> {
    Text(&'a str),
    Placeholder(usize),
}

/// Splits text at its placeholders.
pub fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(k) = rest.find(PLACEHOLDER_OPEN) {
        let after = &rest[k + PLACEHOLDER_OPEN.len_utf8()..];
        let Some(e) = after.find(PLACEHOLDER_CLOSE) else {
            break;
        };
        if k > 0 {
            out.push(Piece::Text(&rest[..k]));
        }
        out.push(Piece::Placeholder(after[..e].parse().unwrap_or(usize::MAX)));
        rest = &after[e + PLACEHOLDER_CLOSE.len_utf8()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Finds every inline construct of `src` and replaces it with a placeholder.
pub fn substitute(file: FileId, src: &str) -> Substituted {
    let span = |r: std::ops::Range<usize>| Span { file, range: r };
    let mut out = Substituted {
        text: String::with_capacity(src.len()),
        found: Vec::new(),
        unclosed: Vec::new(),
        map: vec![(0, 0)],
    };
    let bytes = src.as_bytes();
    let mut i = 0;
    let mut copied = 0;
    // The assertions whose `[` is replaced and whose `]{?` is still ahead: ([, ]).
    let mut open: Vec<(usize, usize)> = Vec::new();
    while i < bytes.len() {
        if let Some((at, cite)) = citation(src, file, i) {
            let end = at.end;
            out.replace(src, copied, at, cite, Vec::new(), file);
            copied = end;
            i = end;
            continue;
        }
        if bytes[i] == b'[' {
            if let Some(close) = assertion_close(src, i) {
                out.replace(src, copied, i..i + 1, Inline::AssertStart, Vec::new(), file);
                open.push((i, close));
                copied = i + 1;
            }
            i += 1;
            continue;
        }
        if !(bytes[i] == b'{' && matches!(bytes.get(i + 1), Some(b'=' | b'#' | b'@' | b'?' | b'!')))
        {
            i += 1;
            continue;
        }
        let Some(close) = matching_brace(src, i) else {
            let d = Diagnostic::error(Code::UnclosedBrace, Some(span(i..i + 2)), "unclosed `{`")
                .label("this is never closed")
                .hint("close it with `}` on the same line");
            out.unclosed.push((i, d));
            i += 2;
            continue;
        };
        let sigil = bytes[i + 1];
        let body = &src[i + 2..close];
        if sigil == b'#' && !(body.starts_with("eq-") || body.starts_with("tab-")) {
            // Heading attributes like `{#sec-x}` belong to the markdown parser.
            i += 1;
            continue;
        }
        let mut diags = Vec::new();
        let (inline, start) = match sigil {
            b'=' => value(src, file, i, close, copied, &mut diags),
            b'?' => {
                let text = match open.last() {
                    Some(&(o, c)) if c + 1 == i => {
                        open.pop();
                        Some(span(o + 1..c))
                    }
                    _ => None,
                };
                let start = if text.is_some() { i - 1 } else { i };
                (assertion(file, src, i, close, text, &mut diags), start)
            }
            b'!' => literal(src, file, i, close, copied, &mut diags),
            b'#' => (
                Inline::Label {
                    id: body.trim().to_string(),
                },
                i,
            ),
            _ => {
                let id = body.trim().to_string();
                if !super::valid_id(&id) {
                    diags.push(
                        Diagnostic::error(
                            Code::BadReference,
                            Some(span(i..close + 1)),
                            format!("`{id}` is not a valid reference"),
                        )
                        .hint("references look like `{@fig-loss}`, `{@eq-attention}` or `{@sec-scale}`"),
                    );
                }
                (Inline::Ref { id }, i)
            }
        };
        out.replace(src, copied, start..close + 1, inline, diags, file);
        copied = close + 1;
        i = close + 1;
    }
    out.text.push_str(&src[copied..]);
    out
}

impl Substituted {
    /// Copies the source up to `at.start` (from `copied`) and puts a placeholder for `at`.
    fn replace(
        &mut self,
        src: &str,
        copied: usize,
        at: std::ops::Range<usize>,
        inline: Inline,
        diags: Vec<Diagnostic>,
        file: FileId,
    ) {
        self.text.push_str(&src[copied..at.start]);
        let n = self.found.len();
        self.map.push((self.text.len(), at.start));
        self.text.push(PLACEHOLDER_OPEN);
        self.text.push_str(&n.to_string());
        self.text.push(PLACEHOLDER_CLOSE);
        self.map.push((self.text.len(), at.end));
        self.found.push(Found {
            inline: Spanned {
                node: inline,
                span: Span { file, range: at },
            },
            diags,
        });
    }
}

/// A citation starting at `at` (its `[` or its `@`): where it ends, and what it cites.
fn citation(src: &str, file: FileId, at: usize) -> Option<(std::ops::Range<usize>, Inline)> {
    match src.as_bytes()[at] {
        b'[' => {
            let (close, items) = bracketed_citation(src, file, at)?;
            let cite = Inline::Cite {
                items,
                narrative: false,
            };
            Some((at..close + 1, cite))
        }
        b'@' => {
            let item = narrative_citation(src, file, at)?;
            let end = item.key_span.range.end;
            let cite = Inline::Cite {
                items: vec![item],
                narrative: true,
            };
            Some((at..end, cite))
        }
        _ => None,
    }
}

/// A citation key's characters (Pandoc's): letters, digits and `_`, with `:.#$%&-+?<>~/`
/// inside; a key ends at the last letter, digit or `_`, so `@ba2016.` cites `ba2016`.
fn key_len(s: &str) -> usize {
    let inner = |c: char| c.is_alphanumeric() || "_:.#$%&-+?<>~/".contains(c);
    let end = s.find(|c: char| !inner(c)).unwrap_or(s.len());
    s[..end]
        .trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
        .len()
}

/// `@key` at `at`, cited narratively: the `@` starts a word (not `a@b`, not `{@ref}`) and a
/// letter follows it.
fn narrative_citation(src: &str, file: FileId, at: usize) -> Option<CiteItem> {
    let before = src[..at].chars().next_back();
    if before.is_some_and(|c| c.is_alphanumeric() || "{[@_\\/.:-`".contains(c)) {
        return None;
    }
    let rest = &src[at + 1..];
    if !rest.starts_with(|c: char| c.is_alphabetic()) {
        return None;
    }
    let n = key_len(rest);
    Some(CiteItem {
        key: rest[..n].to_string(),
        key_span: Span {
            file,
            range: at + 1..at + 1 + n,
        },
        locator: None,
    })
}

/// If the `[` at `open` starts a bracketed citation `[@a; @b, locator]` (closed on its
/// line, and not a link or an assertion's text), its `]` and its items.
fn bracketed_citation(src: &str, file: FileId, open: usize) -> Option<(usize, Vec<CiteItem>)> {
    if !src[open + 1..].trim_start_matches(' ').starts_with('@') {
        return None;
    }
    let line_end = src[open..].find('\n').map_or(src.len(), |k| open + k);
    let close = open + src[open..line_end].find(']')?;
    if src[close + 1..].starts_with(['(', '[', '{']) {
        return None;
    }
    let mut items = Vec::new();
    let mut start = open + 1;
    for part in src[open + 1..close].split(';') {
        let lead = part.len() - part.trim_start().len();
        let item = part.trim();
        let at = start + lead;
        start += part.len() + 1;
        let rest = item.strip_prefix('@')?;
        let n = key_len(rest);
        if n == 0 {
            return None;
        }
        let after = rest[n..].trim_start();
        let locator = match after.strip_prefix(',') {
            Some(l) if !l.trim().is_empty() => {
                let l0 = at + 1 + n + (rest[n..].len() - after.len()) + 1;
                let lead = l.len() - l.trim_start().len();
                let text = l.trim().to_string();
                let span = Span {
                    file,
                    range: l0 + lead..l0 + lead + text.len(),
                };
                Some((text, span))
            }
            None if after.is_empty() => None,
            _ => return None,
        };
        items.push(CiteItem {
            key: rest[..n].to_string(),
            key_span: Span {
                file,
                range: at + 1..at + 1 + n,
            },
            locator,
        });
    }
    Some((close, items))
}

/// If the `[` at `open` starts an asserted statement `[text]{? cond}`, the offset of its `]`:
/// the first unmatched `]` on the line, skipping constructs and nested brackets.
fn assertion_close(src: &str, open: usize) -> Option<usize> {
    let bytes = src.as_bytes();
    let mut depth = 0usize;
    let mut k = open + 1;
    while k < bytes.len() {
        match bytes[k] {
            b'\n' => return None,
            b'{' if matches!(bytes.get(k + 1), Some(b'=' | b'@' | b'?' | b'!' | b'#')) => {
                k = matching_brace(src, k)?;
            }
            b'[' => depth += 1,
            b']' if depth == 0 => return src[k + 1..].starts_with("{?").then_some(k),
            b']' => depth -= 1,
            _ => {}
        }
        k += 1;
    }
    None
}

/// `{? cond}` at `open`..=`close`, asserting `text` (or the sentence it follows).
fn assertion(
    file: FileId,
    src: &str,
    open: usize,
    close: usize,
    text: Option<Span>,
    diags: &mut Vec<Diagnostic>,
) -> Inline {
    let body = &src[open + 2..close];
    let lead = body.len() - body.trim_start().len();
    let expr = body.trim();
    let at = open + 2 + lead;
    if expr.is_empty() {
        diags.push(
            Diagnostic::error(
                Code::EmptyExpression,
                Some(Span {
                    file,
                    range: open..close + 1,
                }),
                "an assertion without a condition",
            )
            .hint("write `[statement]{? run.path == 500}` or `{? condition}`"),
        );
    }
    if let Some(t) = &text {
        if src[t.range.clone()].trim().is_empty() {
            diags.push(
                Diagnostic::error(
                    Code::EmptyQuote,
                    Some(t.clone()),
                    "an assertion asserts no text",
                )
                .hint("write the statement in the brackets, or a bare `{? condition}`"),
            );
        }
    }
    Inline::Assert {
        expr: expr.to_string(),
        expr_span: Span {
            file,
            range: at..at + expr.len(),
        },
        text,
    }
}

/// `[quoted]{! reason}` with its braces at `open` and `close`, and where it starts.
fn literal(
    src: &str,
    file: FileId,
    open: usize,
    close: usize,
    copied: usize,
    diags: &mut Vec<Diagnostic>,
) -> (Inline, usize) {
    let span = |r: std::ops::Range<usize>| Span { file, range: r };
    let reason = src[open + 2..close].trim().to_string();
    if reason.is_empty() {
        diags.push(
            Diagnostic::error(
                Code::LiteralNoReason,
                Some(span(open..close + 1)),
                "a literal needs a reason",
            )
            .hint("write e.g. `[362]{! original}` for a figure quoted from the original chapter"),
        );
    }
    match quoted_before(src, open) {
        Some(q) if q >= copied => {
            let quoted = src[q + 1..open - 1].to_string();
            if quoted.trim().is_empty() {
                diags.push(
                    Diagnostic::error(
                        Code::EmptyQuote,
                        Some(span(q..open)),
                        "a literal quotes nothing",
                    )
                    .hint("write the number as it should read, e.g. `[362]{! original}`"),
                );
            }
            let lit = Inline::Literal {
                quoted,
                quoted_span: span(q + 1..open - 1),
                reason,
            };
            (lit, q)
        }
        _ => {
            diags.push(
                Diagnostic::error(
                    Code::LiteralUnbracketed,
                    Some(span(open..close + 1)),
                    "`{! …}` marks the number in brackets before it",
                )
                .hint("write e.g. `[362]{! original}`"),
            );
            let lit = Inline::Literal {
                quoted: String::new(),
                quoted_span: span(open..open),
                reason,
            };
            (lit, open)
        }
    }
}

/// A claim `[quoted]{=expr}` or an insert `{=expr}` whose braces are at `open` and `close`;
/// returns it and where it starts (its `[` for a claim). `copied` is where the text
/// before it was last cut, which a claim's quote may not reach back across.
fn value(
    src: &str,
    file: FileId,
    open: usize,
    close: usize,
    copied: usize,
    diags: &mut Vec<Diagnostic>,
) -> (Inline, usize) {
    let span = |r: std::ops::Range<usize>| Span { file, range: r };
    let (i, body_start) = (open, open + 2);
    let body = &src[body_start..close];
    let (expr, tol, tol_err) = split_tolerance(body);
    if let Some(msg) = tol_err {
        diags.push(
            Diagnostic::error(
                Code::BadTolerance,
                Some(span(body_start..close)),
                "bad tolerance",
            )
            .label(msg)
            .hint("write `~ 0.01` (absolute) or `~ 5%` (relative)"),
        );
    }
    let at = body_start + (expr.as_ptr() as usize - body.as_ptr() as usize);
    let expr_span = span(at..at + expr.len());
    if expr.trim().is_empty() {
        diags.push(
            Diagnostic::error(
                Code::EmptyExpression,
                Some(span(i..close + 1)),
                "empty expression",
            )
            .hint("write `[quoted]{=run.path}` or `{=run.path}`"),
        );
    }
    let expr = expr.trim().to_string();
    match quoted_before(src, i) {
        Some(q) if q >= copied => {
            let quoted = src[q + 1..i - 1].to_string();
            if quoted.trim().is_empty() {
                diags.push(
                    Diagnostic::error(Code::EmptyQuote, Some(span(q..i)), "a claim quotes nothing")
                        .hint("write the figure as it should read, e.g. `[94.6%]{=run.path}`"),
                );
            }
            let claim = Inline::Claim {
                quoted,
                quoted_span: span(q + 1..i - 1),
                expr,
                expr_span,
                tolerance: tol,
            };
            (claim, q)
        }
        _ => (Inline::Insert { expr, expr_span }, i),
    }
}

/// The `}` closing the `{` at `open`, on the same line, skipping nested braces and, in an
/// expression, quoted strings. A literal's reason, a label or a reference is plain words,
/// where an apostrophe is just an apostrophe (`{! the goal}`).
fn matching_brace(src: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<u8> = None;
    let strings = !matches!(src.as_bytes().get(open + 1), Some(b'!' | b'#' | b'@'));
    for (k, &b) in src.as_bytes()[open..].iter().enumerate() {
        match (quote, b) {
            (_, b'\n') => return None,
            (Some(q), c) if c == q => quote = None,
            (None, b'"' | b'\'') if strings => quote = Some(b),
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
fn quoted_before(src: &str, at: usize) -> Option<usize> {
    if at == 0 || src.as_bytes()[at - 1] != b']' {
        return None;
    }
    let mut depth = 0;
    for k in (0..at - 1).rev() {
        match src.as_bytes()[k] {
            b'\n' => return None,
            b']' => depth += 1,
            b'[' if depth == 0 => return Some(k),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn placeholders_map_back_to_the_source() {
        let src = "ab [1]{=x} cd {@y} e";
        let s = substitute(0, src);
        assert_eq!(s.found.len(), 2);
        let at = s.text.find(PLACEHOLDER_OPEN).unwrap();
        assert_eq!(
            s.to_src(at),
            3,
            "a placeholder maps to its construct's start"
        );
        let cd = s.text.find("cd").unwrap();
        assert_eq!(s.to_src(cd), src.find("cd").unwrap());
        assert_eq!(s.restore(&s.text, src), src);
    }

    /// (narrative, [(key, locator)], the citation's source).
    type Cites = Vec<(bool, Vec<(String, Option<String>)>, String)>;

    fn cites(src: &str) -> Cites {
        let s = substitute(0, src);
        s.found
            .iter()
            .filter_map(|f| match &f.inline.node {
                Inline::Cite { items, narrative } => Some((
                    *narrative,
                    items
                        .iter()
                        .map(|i| {
                            assert_eq!(&src[i.key_span.range.clone()], i.key);
                            if let Some((l, sp)) = &i.locator {
                                assert_eq!(&src[sp.range.clone()], l);
                            }
                            (i.key.clone(), i.locator.as_ref().map(|l| l.0.clone()))
                        })
                        .collect(),
                    src[f.inline.span.range.clone()].to_string(),
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn citation_forms() {
        let got = cites("As @vaswani2017 showed [@ba2016; @xiong2020, sec. 3.2].");
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].0 && got[0].1 == [("vaswani2017".into(), None)]);
        assert_eq!(got[0].2, "@vaswani2017");
        assert!(!got[1].0);
        assert_eq!(
            got[1].1,
            [
                ("ba2016".into(), None),
                ("xiong2020".into(), Some("sec. 3.2".into()))
            ]
        );
        assert_eq!(got[1].2, "[@ba2016; @xiong2020, sec. 3.2]");
        // A sentence's full stop is not part of the key.
        assert_eq!(cites("see @ba2016.")[0].1[0].0, "ba2016");
        // Text before the key makes the brackets plain text around a narrative citation.
        let got = cites("[see @x]");
        assert!(got.len() == 1 && got[0].0 && got[0].2 == "@x", "{got:?}");
        // Not citations: an address, a reference, a link, a bare `@`, an empty locator.
        for src in [
            "mail a@b.org",
            "{@fig-loss}",
            "[@x](https://x.org)",
            "@ alone",
            "[@x, ]",
        ] {
            assert!(cites(src).is_empty(), "{src}");
        }
    }
}
