//! Quoted figures: how the author wrote a number decides how the recomputed value is
//! formatted, the claim holds only if the two texts are equal, and every claim is recorded.
//!
//! | quoted      | reads the value as                | formats it as                 |
//! |-------------|-----------------------------------|-------------------------------|
//! | `103,244`   | a number                          | integer, thousands separators |
//! | `0.0135`    | a number                          | 4 decimals                    |
//! | `94.6%`     | a fraction (0.946)                | ×100, 1 decimal, `%`          |
//! | `1e-4`      | a number                          | scientific, 0 mantissa decimals |
//! | `fedabadbad`| a string                          | as is                         |
//!
//! A minus sign may be `-` or `−`. A tolerance (`~ 0.01`, `~ 5%`) compares numerically
//! instead, in the quoted units.

use super::diag::Span;
use super::expr::{as_f64, as_text};
use super::parse::Tolerance;
use minijinja::Value;
use serde::{Deserialize, Serialize};

/// One claim, as listed in `claims.json`: a checked figure, an inserted value, a literal
/// or an asserted statement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClaimRecord {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub kind: ClaimKind,
    /// The expression (the condition, for an assertion); empty for a literal.
    pub expr: String,
    /// The author's text: the figure (checked, literal) or the statement (asserted; none
    /// for a bare `{? …}`), as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quoted: Option<String>,
    /// What the expression gives, at full precision (an assertion: `true` or `false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recomputed: Option<serde_json::Value>,
    /// The recomputed value written the way the quote is (checked figures), or as shown
    /// (inserts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub formatted: Option<String>,
    /// A checked figure's tolerance, as written (`0.01`, `5%`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<String>,
    /// Recomputed minus quoted, in the quote's units (points for a percentage), when the
    /// formatted value is not the quote: a drift, or a move within the tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<f64>,
    pub verdict: Verdict,
    /// Why a literal is not checked (`original`, `citation`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// An assertion's operands: each run path in its condition (with its filters) and
    /// its value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<Operand>,
    /// Where the quote is, for `--bless` to rewrite it.
    #[serde(skip)]
    pub quoted_span: Option<Span>,
}

/// A run path of an assertion's condition and what it evaluates to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Operand {
    pub expr: String,
    pub value: String,
}

/// What kind of claim a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimKind {
    /// `[94.6%]{=…}`: quoted and checked.
    Checked,
    /// `{=…}`: inserted, not checked.
    Inserted,
    /// `[362]{! original}`: shown as written, deliberately not checked.
    Literal,
    /// `[text]{? cond}` or `{? cond}`: true while its condition is.
    Asserted,
}

/// What a claim record says about its claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It holds (an insert: it was evaluated; a literal: always).
    Ok,
    /// The quote no longer matches its run; `--bless` rewrites it.
    Drift,
    /// An assertion whose condition is false; only the author can rewrite it.
    False,
    /// Its expression failed, or its value cannot be compared with the quote.
    Error,
}

/// A tolerance as written.
pub fn tolerance_text(t: Tolerance) -> String {
    match t {
        Tolerance::Absolute(a) => format!("{a}"),
        Tolerance::Relative(p) => format!("{p}%"),
    }
}

/// A value as JSON, at full precision.
pub fn to_json(v: &Value) -> Option<serde_json::Value> {
    serde_json::to_value(v).ok()
}

/// Recomputed minus quoted, in the quote's units, for a numeric quote and value.
pub fn difference(quoted: &str, value: &Value) -> Option<f64> {
    match (parse_quote(quoted), as_f64(value)) {
        (Quote::Number { value: q, format }, Some(v)) => {
            Some(if format.percent { v * 100.0 } else { v } - q)
        }
        _ => None,
    }
}

/// How a number was written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NumFormat {
    pub decimals: usize,
    pub thousands: bool,
    pub percent: bool,
    /// Scientific notation with this many mantissa decimals.
    pub sci: Option<usize>,
    /// The minus sign used, if the quote is negative.
    pub minus: Option<char>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Quote {
    Number { value: f64, format: NumFormat },
    Text(String),
}

/// Reads the author's quoted text.
pub fn parse_quote(q: &str) -> Quote {
    let (minus, body) = match q.chars().next() {
        Some(c @ ('-' | '−')) => (Some(c), &q[c.len_utf8()..]),
        _ => (None, q),
    };
    let (body, percent) = match body.strip_suffix('%') {
        Some(b) => (b, true),
        None => (body, false),
    };
    let (mantissa, exp) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (body, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let thousands = int.contains(',');
    let int_ok = if thousands {
        let groups: Vec<&str> = int.split(',').collect();
        !groups[0].is_empty()
            && groups[0].len() <= 3
            && groups[1..].iter().all(|g| g.len() == 3)
            && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()))
    } else {
        !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit())
    };
    let frac_ok = frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    if !(int_ok && frac_ok && exp_ok) || (percent && exp.is_some()) {
        return Quote::Text(q.to_string());
    }
    let decimals = frac.map_or(0, str::len);
    let plain = format!(
        "{}{}{}",
        int.replace(',', ""),
        frac.map(|f| format!(".{f}")).unwrap_or_default(),
        exp.map(|e| format!("e{e}")).unwrap_or_default()
    );
    let mut value: f64 = plain.parse().unwrap_or(f64::NAN);
    if minus.is_some() {
        value = -value;
    }
    let format = NumFormat {
        decimals,
        thousands,
        percent,
        sci: exp.map(|_| decimals),
        minus,
    };
    Quote::Number { value, format }
}

/// Formats `v` the way `f` was written. Percent formats read `v` as a fraction.
pub fn format_number(v: f64, f: &NumFormat) -> String {
    let x = if f.percent { v * 100.0 } else { v };
    let mut s = if let Some(d) = f.sci {
        format!("{:.*e}", d, x.abs())
    } else {
        let s = format!("{:.*}", f.decimals, x.abs());
        if f.thousands {
            group_thousands(&s)
        } else {
            s
        }
    };
    // A value that rounds to zero is written without a sign.
    let zero = s
        .bytes()
        .all(|b| matches!(b, b'0' | b'.' | b',' | b'e' | b'-'));
    if x < 0.0 && !zero {
        s.insert(0, f.minus.unwrap_or('-'));
    }
    if f.percent {
        s.push('%');
    }
    s
}

/// `1234567.5` → `1,234,567.5` (digits only: the caller keeps the sign).
pub(crate) fn group_thousands(s: &str) -> String {
    let (int, frac) = s.split_once('.').map_or((s, None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (k, c) in int.chars().enumerate() {
        if k > 0 && (int.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// The outcome of checking one quoted figure.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// The recomputed value, written like the quote, equals it (or is within the
    /// tolerance): what it reads as.
    Holds { formatted: String },
    /// It does not: what it should read now.
    Drift { recomputed: String },
    /// The expression's value cannot be compared with the quote.
    Mismatch { reason: String },
}

/// Checks a quoted figure against the recomputed value.
pub fn check(quoted: &str, value: &Value, tolerance: Option<Tolerance>) -> Check {
    if quoted == PLACEHOLDER {
        return Check::Drift {
            recomputed: placeholder_text(value),
        };
    }
    let q = parse_quote(quoted);
    let num = as_f64(value);
    match (&q, num) {
        (Quote::Number { value: qv, format }, Some(v)) => {
            let mut recomputed = format_number(v, format);
            if recomputed != quoted && tolerance.is_none() {
                recomputed = drifted_text(quoted, v, format, recomputed);
            }
            let ok = match tolerance {
                None => recomputed == quoted,
                Some(t) => {
                    let vq = if format.percent { v * 100.0 } else { v };
                    let allowed = match t {
                        Tolerance::Absolute(a) => a,
                        Tolerance::Relative(p) => vq.abs() * p / 100.0,
                    };
                    (vq - qv).abs() <= allowed + 1e-12
                }
            };
            if ok {
                Check::Holds {
                    formatted: recomputed,
                }
            } else {
                Check::Drift { recomputed }
            }
        }
        // A string value is compared as text, even when the quote looks like a number.
        (Quote::Number { .. }, None) if value.as_str().is_some() && tolerance.is_none() => {
            let s = value.as_str().unwrap_or_default().to_string();
            if s == quoted {
                Check::Holds { formatted: s }
            } else {
                Check::Drift { recomputed: s }
            }
        }
        (Quote::Number { .. }, None) => Check::Mismatch {
            reason: format!(
                "the quote is a number but the expression gives {}",
                describe(value)
            ),
        },
        (Quote::Text(t), _) => {
            let s = as_text(value);
            if tolerance.is_some() {
                return Check::Mismatch {
                    reason: "a tolerance needs a numeric quote".into(),
                };
            }
            if &s == t {
                Check::Holds { formatted: s }
            } else {
                Check::Drift { recomputed: s }
            }
        }
    }
}

/// A quote that asks `--bless` to fill it in: `[?]{=expr}`.
pub const PLACEHOLDER: &str = "?";

/// The text for a value whose quote shows no format (`[?]`): a whole number with
/// thousands separators, as the book writes them (`53,260`), another to four significant
/// digits (`0.002131`), text as it is.
pub fn placeholder_text(value: &Value) -> String {
    match as_f64(value) {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => {
            let f = NumFormat {
                decimals: 0,
                thousands: v.abs() >= 1000.0,
                ..NumFormat::default()
            };
            format_number(v, &f)
        }
        Some(v) => crate::book::expr::trim_float(v),
        None => crate::book::expr::as_text(value),
    }
}

/// What a drifted number reads as, for the message and for `--bless`: in the quote's
/// format, except where the quote cannot show the format the value needs. A quote of
/// zeros only (`[0]`, `[0.000]`, a placeholder in all but name) shows no significant
/// digit, so the value gets the placeholder's text; a quote of three digits or fewer
/// cannot show whether thousands are separated, so a value of four digits or more is
/// written the book's way, with separators.
fn drifted_text(quoted: &str, v: f64, format: &NumFormat, in_format: String) -> String {
    let zeros_only = quoted.bytes().all(|b| matches!(b, b'0' | b'.'));
    if zeros_only && format.sci.is_none() && !format.percent {
        return placeholder_text(&Value::from(v));
    }
    let int_digits = quoted
        .split(['.', 'e', 'E', '%'])
        .next()
        .unwrap_or_default()
        .bytes()
        .filter(u8::is_ascii_digit)
        .count();
    if !format.thousands && format.sci.is_none() && int_digits <= 3 && v.abs() >= 1000.0 {
        let f = NumFormat {
            thousands: true,
            ..format.clone()
        };
        return format_number(v, &f);
    }
    in_format
}

/// A value's kind and its first characters, for messages.
fn describe(v: &Value) -> String {
    let s = v.to_string();
    let short: String = s.chars().take(60).collect();
    format!(
        "{} `{}{}`",
        v.kind(),
        short,
        if s.len() > 60 { "…" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt_like(quote: &str, v: f64) -> String {
        match parse_quote(quote) {
            Quote::Number { format, .. } => format_number(v, &format),
            Quote::Text(_) => panic!("{quote} should be a number"),
        }
    }

    #[test]
    fn formats_follow_the_quote() {
        assert_eq!(fmt_like("103,244", 103_244.0), "103,244");
        assert_eq!(fmt_like("94.6%", 0.946), "94.6%");
        assert_eq!(fmt_like("100%", 1.0), "100%");
        assert_eq!(fmt_like("0.0135", 0.013_49), "0.0135");
        assert_eq!(fmt_like("0.0090", 0.009_03), "0.0090");
        assert_eq!(fmt_like("1.11", 1.1149), "1.11");
        assert_eq!(fmt_like("1e-4", 0.000_12), "1e-4");
        assert_eq!(fmt_like("2.5e-3", 0.002_5), "2.5e-3");
        assert_eq!(fmt_like("362", 362.0), "362");
        assert_eq!(fmt_like("−0.5", -0.5), "−0.5");
        assert_eq!(fmt_like("100,000,000", 1e8), "100,000,000");
        assert_eq!(fmt_like("0.0", -0.01), "0.0");
    }

    /// What a drift reads as (and what `--bless` writes): the quote's format where it can
    /// show the value, the book's where it cannot; a placeholder filled in.
    #[test]
    fn drifts_are_written_in_a_format_that_shows_the_value() {
        let drift = |q: &str, v: Value| match check(q, &v, None) {
            Check::Drift { recomputed } => recomputed,
            other => panic!("{q}: {other:?}"),
        };
        assert_eq!(drift("?", Value::from(53_260)), "53,260");
        assert_eq!(drift("?", Value::from(0.002_131_7)), "0.002132");
        assert_eq!(drift("?", Value::from(7)), "7");
        assert_eq!(drift("?", Value::from("abc")), "abc");
        assert_eq!(drift("0", Value::from(53_260)), "53,260");
        assert_eq!(drift("0.000", Value::from(0.002_131_7)), "0.002132");
        assert_eq!(drift("12", Value::from(4160)), "4,160");
        assert_eq!(
            drift("1500", Value::from(1600)),
            "1600",
            "the quote's own style"
        );
        assert_eq!(drift("1.5", Value::from(1234.56)), "1,234.6");
        assert_eq!(
            drift("0.5", Value::from(0.25)),
            "0.2",
            "the quote's decimals"
        );
        // Each text written holds when checked again.
        for (q, v) in [("?", 53_260.0), ("?", 0.002_131_7), ("0.000", 0.002_131_7)] {
            let text = drift(q, Value::from(v));
            assert!(
                matches!(check(&text, &Value::from(v), None), Check::Holds { .. }),
                "{text}"
            );
        }
        // A quote that holds is never reformatted.
        assert!(matches!(
            check("0", &Value::from(0.4), None),
            Check::Holds { .. }
        ));
    }

    #[test]
    fn non_numbers_are_text() {
        assert_eq!(parse_quote("fedabadbad"), Quote::Text("fedabadbad".into()));
        assert_eq!(parse_quote("1,00"), Quote::Text("1,00".into()));
        assert_eq!(parse_quote("12a"), Quote::Text("12a".into()));
    }

    #[test]
    fn verdicts() {
        let holds = |f: &str| Check::Holds {
            formatted: f.into(),
        };
        assert_eq!(check("94.6%", &Value::from(0.9461), None), holds("94.6%"));
        assert_eq!(
            check("94.6%", &Value::from(0.95), None),
            Check::Drift {
                recomputed: "95.0%".into()
            }
        );
        assert_eq!(
            check("41", &Value::from(43.2), Some(Tolerance::Absolute(5.0))),
            holds("43")
        );
        assert!(
            (difference("41", &Value::from(43.2)).unwrap() - 2.2).abs() < 1e-9,
            "a move within the tolerance is recorded"
        );
        assert!((difference("94.6%", &Value::from(0.95)).unwrap() - 0.4).abs() < 1e-9);
        assert_eq!(
            check("41", &Value::from(50.0), Some(Tolerance::Relative(10.0))),
            Check::Drift {
                recomputed: "50".into()
            }
        );
        assert_eq!(check("abc", &Value::from("abc"), None), holds("abc"));
        assert_eq!(
            check("12", &Value::from("x"), None),
            Check::Drift {
                recomputed: "x".into()
            }
        );
        assert_eq!(
            check("8", &Value::from("8"), None),
            holds("8"),
            "a string value is compared as text"
        );
        assert!(matches!(
            check("12", &Value::from(()), None),
            Check::Mismatch { .. }
        ));
    }
}
