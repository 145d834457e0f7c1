//! Quoted figures: how the author wrote a number decides how the recomputed value is
//! formatted, and the claim holds only if the two texts are equal.
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

use super::parse::Tolerance;
use minijinja::{Environment, Value};

/// How a number was written.
#[derive(Clone, Debug, PartialEq)]
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
    let mut s = match f.sci {
        Some(d) => {
            let s = format!("{:.*e}", d, x.abs());
            s
        }
        None => {
            let s = format!("{:.*}", f.decimals, x.abs());
            if f.thousands {
                group_thousands(&s)
            } else {
                s
            }
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

fn group_thousands(s: &str) -> String {
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

/// The outcome of checking one claim.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The recomputed value, written like the quote, equals it.
    Ok,
    /// It does not: what it should read now.
    Drift { recomputed: String },
    /// The expression's value cannot be compared with the quote.
    Mismatch { reason: String },
}

/// Checks a quoted figure against the recomputed value.
pub fn check(quoted: &str, value: &Value, tolerance: Option<Tolerance>) -> Verdict {
    let q = parse_quote(quoted);
    let num = value_as_f64(value);
    match (&q, num) {
        (Quote::Number { value: qv, format }, Some(v)) => {
            let recomputed = format_number(v, format);
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
                Verdict::Ok
            } else {
                Verdict::Drift { recomputed }
            }
        }
        // A string value is compared as text, even when the quote looks like a number.
        (Quote::Number { .. }, None) if value.as_str().is_some() && tolerance.is_none() => {
            let s = value.as_str().unwrap_or_default().to_string();
            if s == quoted {
                Verdict::Ok
            } else {
                Verdict::Drift { recomputed: s }
            }
        }
        (Quote::Number { .. }, None) => Verdict::Mismatch {
            reason: format!(
                "the quote is a number but the expression gives {}",
                describe(value)
            ),
        },
        (Quote::Text(t), _) => {
            let s = value_as_text(value);
            if tolerance.is_some() {
                return Verdict::Mismatch {
                    reason: "a tolerance needs a numeric quote".into(),
                };
            }
            if &s == t {
                Verdict::Ok
            } else {
                Verdict::Drift { recomputed: s }
            }
        }
    }
}

pub fn value_as_f64(v: &Value) -> Option<f64> {
    if v.is_number() {
        f64::try_from(v.clone()).ok()
    } else {
        None
    }
}

/// How an inserted value is shown: strings as they are, integers plainly, floats with
/// up to four significant decimals.
pub fn value_as_text(v: &Value) -> String {
    if let Some(s) = v.as_str() {
        return s.to_string();
    }
    if v.is_number() && !v.is_integer() {
        if let Some(f) = value_as_f64(v) {
            return trim_float(f);
        }
    }
    v.to_string()
}

fn trim_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    let mag = f.abs().log10().floor() as i32;
    let decimals = (3 - mag).clamp(0, 12) as usize;
    let s = format!("{f:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

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

/// Evaluates an expression; an undefined result (a missing field) is an error too.
pub fn evaluate(env: &Environment<'static>, expr: &str, ctx: &Value) -> Result<Value, String> {
    let compiled = env.compile_expression(expr).map_err(|e| e.to_string())?;
    match compiled.eval(ctx) {
        Ok(v) if v.is_undefined() => Err("this path does not exist in the run's result".into()),
        Ok(v) => Ok(v),
        Err(e) => Err(e.to_string()),
    }
}

/// The expression environment: strict about undefined names, with a few numeric helpers.
///
/// - `mean(xs)`, `sd(xs)` (sample), `min(xs)`, `max(xs)` of a list of numbers
/// - `xs | pluck("a.b")`: the value at a dotted path in each element
/// - `ln(x)`, `sqrt(x)`, `exp(x)`, `abs(x)`, `pow(x, y)`
/// - `count(xs, v)`: how many elements equal `v`
pub fn environment() -> Environment<'static> {
    use minijinja::{Error, ErrorKind};
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let nums = |xs: &[Value]| -> Result<Vec<f64>, Error> {
        xs.iter()
            .map(|x| {
                value_as_f64(x).ok_or_else(|| {
                    Error::new(ErrorKind::InvalidOperation, format!("{x} is not a number"))
                })
            })
            .collect()
    };
    env.add_function("mean", move |xs: Vec<Value>| -> Result<f64, Error> {
        let v = nums(&xs)?;
        Ok(crate::result::mean_std(&v).0)
    });
    env.add_function("sd", move |xs: Vec<Value>| -> Result<f64, Error> {
        let v = nums(&xs)?;
        Ok(crate::result::mean_std(&v).1)
    });
    env.add_function("min", move |xs: Vec<Value>| -> Result<f64, Error> {
        Ok(nums(&xs)?.into_iter().fold(f64::INFINITY, f64::min))
    });
    env.add_function("max", move |xs: Vec<Value>| -> Result<f64, Error> {
        Ok(nums(&xs)?.into_iter().fold(f64::NEG_INFINITY, f64::max))
    });
    env.add_function("count", |xs: Vec<Value>, v: Value| {
        xs.iter().filter(|x| **x == v).count()
    });
    env.add_function("ln", |x: f64| x.ln());
    env.add_function("sqrt", |x: f64| x.sqrt());
    env.add_function("exp", |x: f64| x.exp());
    env.add_function("abs", |x: f64| x.abs());
    env.add_function("pow", |x: f64, y: f64| x.powf(y));
    env.add_filter(
        "pluck",
        |xs: Vec<Value>, path: String| -> Result<Vec<Value>, Error> {
            xs.into_iter()
                .map(|mut x| {
                    for part in path.split('.') {
                        x = match part.parse::<usize>() {
                            Ok(i) => x.get_item(&Value::from(i))?,
                            Err(_) => x.get_attr(part)?,
                        };
                        if x.is_undefined() {
                            return Err(Error::new(
                                ErrorKind::UndefinedError,
                                format!("no `{part}` in `{path}`"),
                            ));
                        }
                    }
                    Ok(x)
                })
                .collect()
        },
    );
    env
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
        assert_eq!(fmt_like("103,244", 103244.0), "103,244");
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

    #[test]
    fn non_numbers_are_text() {
        assert_eq!(parse_quote("fedabadbad"), Quote::Text("fedabadbad".into()));
        assert_eq!(parse_quote("1,00"), Quote::Text("1,00".into()));
        assert_eq!(parse_quote("12a"), Quote::Text("12a".into()));
    }

    #[test]
    fn verdicts() {
        assert_eq!(check("94.6%", &Value::from(0.9461), None), Verdict::Ok);
        assert_eq!(
            check("94.6%", &Value::from(0.95), None),
            Verdict::Drift {
                recomputed: "95.0%".into()
            }
        );
        assert_eq!(
            check("41", &Value::from(43.2), Some(Tolerance::Absolute(5.0))),
            Verdict::Ok
        );
        assert_eq!(
            check("41", &Value::from(50.0), Some(Tolerance::Relative(10.0))),
            Verdict::Drift {
                recomputed: "50".into()
            }
        );
        assert_eq!(check("abc", &Value::from("abc"), None), Verdict::Ok);
        assert_eq!(
            check("12", &Value::from("x"), None),
            Verdict::Drift {
                recomputed: "x".into()
            }
        );
        assert_eq!(
            check("8", &Value::from("8"), None),
            Verdict::Ok,
            "a string value is compared as text"
        );
        assert!(matches!(
            check("12", &Value::from(()), None),
            Verdict::Mismatch { .. }
        ));
    }

    #[test]
    fn expressions_see_runs_and_helpers() {
        let env = environment();
        let ctx = Value::from_serialize(serde_json::json!({
            "r": {"runs": [{"a": {"b": 1.0}}, {"a": {"b": 3.0}}], "x": 0.25}
        }));
        let eval = |e: &str| evaluate(&env, e, &ctx);
        assert_eq!(
            value_as_f64(&eval("mean(r.runs | pluck('a.b'))").unwrap()),
            Some(2.0)
        );
        assert_eq!(value_as_f64(&eval("r.x * 2").unwrap()), Some(0.5));
        assert!(eval("r.nope").is_err(), "undefined paths are errors");
    }
}
