//! Inline constructs (claims, inserts, literals, assertions, labels, references, citations):
//! found in the raw markdown and replaced by placeholders that survive the markdown parse,
//! before it runs. This file scans and substitutes; `claims.rs` reads the constructs in
//! braces, `citation.rs` the citations.
//!
//! Constructs are replaced everywhere; the markdown parse then tells which placeholders
//! sit in prose and which in code, math or HTML, where they are put back as written.
//!
//! An assertion's text stays markdown: its `[` becomes an [`Inline::AssertStart`]
//! placeholder and its `]{? cond}` an [`Inline::Assert`], so the text between, with the
//! claims, inserts and references nested in it, is parsed like any other prose.

mod citation;
mod claims;
#[cfg(test)]
mod tests;

use super::{Spanned, PLACEHOLDER_CLOSE, PLACEHOLDER_OPEN};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};
use citation::citation;
use claims::{assertion, assertion_close, literal, matching_brace, value};

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
        if let Some((at, cite, diags)) = citation(src, file, i) {
            let end = at.end;
            out.replace(src, copied, at, cite, diags, file);
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
            b'=' => {
                out.construct_in_quote(src, i, copied, &mut diags);
                value(src, file, i, close, copied, &mut diags)
            }
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
    /// `[… @key …]{=expr}`: a checked figure's quote holding a construct already replaced
    /// (a citation, a reference, another claim) would silently become an unchecked insert.
    /// An error at that construct.
    fn construct_in_quote(
        &self,
        src: &str,
        open: usize,
        copied: usize,
        diags: &mut Vec<Diagnostic>,
    ) {
        let Some(q) = claims::quoted_before(src, open).filter(|&q| q < copied) else {
            return;
        };
        let Some(inner) = self.found.iter().find(|f| f.inline.span.range.start > q) else {
            return;
        };
        let what = match inner.inline.node {
            Inline::Cite { .. } => "a citation",
            Inline::Ref { .. } => "a cross-reference",
            _ => "another construct",
        };
        diags.push(
            Diagnostic::error(
                Code::Directive,
                Some(inner.inline.span.clone()),
                format!("{what} inside a checked figure's brackets"),
            )
            .label("the brackets before `{=` hold the figure alone")
            .hint("put it after the figure: `[103,244]{=run.params} [@key]`"),
        );
    }

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
