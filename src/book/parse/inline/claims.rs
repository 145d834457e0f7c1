//! The constructs in braces: claims `[quoted]{=expr}`, inserts `{=expr}`, literals
//! `[quoted]{! reason}` and assertions `[text]{? cond}`, with their quotes and tolerances.

use super::{Inline, Tolerance};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};

/// If the `[` at `open` starts an asserted statement `[text]{? cond}`, the offset of its `]`:
/// the first unmatched `]` on the line, skipping constructs and nested brackets.
pub(super) fn assertion_close(src: &str, open: usize) -> Option<usize> {
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
pub(super) fn assertion(
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
pub(super) fn literal(
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
pub(super) fn value(
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
pub(super) fn matching_brace(src: &str, open: usize) -> Option<usize> {
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
pub(super) fn quoted_before(src: &str, at: usize) -> Option<usize> {
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
pub(super) fn split_tolerance(body: &str) -> (&str, Option<Tolerance>, Option<String>) {
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
