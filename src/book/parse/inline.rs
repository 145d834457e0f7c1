//! Inline constructs (claims, inserts, labels, references): found in the raw markdown and
//! replaced by placeholders that survive the markdown parse, before it runs.
//!
//! Constructs are replaced everywhere; the markdown parse then tells which placeholders
//! sit in prose and which in code, math or HTML, where they are put back as written.

use super::{Spanned, PLACEHOLDER_CLOSE, PLACEHOLDER_OPEN};
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
    /// `{#eq-…}` or `{#tab-…}`: the label of an equation or a markdown table.
    Label { id: String },
    /// `{@id}`: a cross-reference.
    Ref { id: String },
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
    /// `{=`, `{#` or `{@` never closed on its line: (source offset, diagnostic).
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
    while i < bytes.len() {
        if !(bytes[i] == b'{' && matches!(bytes.get(i + 1), Some(b'=' | b'#' | b'@'))) {
            i += 1;
            continue;
        }
        let Some(close) = matching_brace(src, i) else {
            let d = Diagnostic::error("unclosed-brace", Some(span(i..i + 2)), "unclosed `{`")
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
                            "bad-reference",
                            Some(span(i..close + 1)),
                            format!("`{id}` is not a valid reference"),
                        )
                        .hint("references look like `{@fig-loss}` or `{@eq-attention}`"),
                    );
                }
                (Inline::Ref { id }, i)
            }
        };
        out.text.push_str(&src[copied..start]);
        let n = out.found.len();
        out.found.push(Found {
            inline: Spanned {
                node: inline,
                span: span(start..close + 1),
            },
            diags,
        });
        out.map.push((out.text.len(), start));
        out.text.push(PLACEHOLDER_OPEN);
        out.text.push_str(&n.to_string());
        out.text.push(PLACEHOLDER_CLOSE);
        copied = close + 1;
        out.map.push((out.text.len(), copied));
        i = close + 1;
    }
    out.text.push_str(&src[copied..]);
    out
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
                "bad-tolerance",
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
                "empty-expression",
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
                    Diagnostic::error("empty-quote", Some(span(q..i)), "a claim quotes nothing")
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

/// The `}` closing the `{` at `open`, on the same line, skipping quoted strings and nested braces.
fn matching_brace(src: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<u8> = None;
    for (k, &b) in src.as_bytes()[open..].iter().enumerate() {
        match (quote, b) {
            (_, b'\n') => return None,
            (Some(q), c) if c == q => quote = None,
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
}
