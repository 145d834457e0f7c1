//! The helpers expressions can call: statistics over lists, a few numeric functions, the
//! `pluck` filter, and wording (`word`, `num`, `plural`, `series`, `of`, `pct`) with the
//! lengths an evaluation fails or passes. Each is registered by one line in `expr/mod.rs`.

#![allow(
    clippy::needless_pass_by_value,
    reason = "minijinja hands a helper its arguments by value"
)]

use minijinja::value::Kwargs;
use minijinja::{Error, ErrorKind, Value};

fn numbers(xs: &[Value]) -> Result<Vec<f64>, Error> {
    xs.iter()
        .map(|x| {
            super::as_f64(x).ok_or_else(|| {
                Error::new(ErrorKind::InvalidOperation, format!("{x} is not a number"))
            })
        })
        .collect()
}

/// The numbers of a list that must not be empty (a statistic of nothing is an error, not
/// NaN or infinity).
fn nonempty(what: &str, xs: &[Value]) -> Result<Vec<f64>, Error> {
    if xs.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{what} of an empty list"),
        ));
    }
    numbers(xs)
}

/// The mean of a list of numbers.
pub fn mean(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(revtx_spec::result::mean_std(&nonempty("mean", &xs)?).0)
}

/// The sample standard deviation of a list of numbers (0 for one number).
pub fn sd(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(revtx_spec::result::mean_std(&nonempty("sd", &xs)?).1)
}

/// The smallest of a list of numbers.
pub fn min(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(nonempty("min", &xs)?
        .into_iter()
        .fold(f64::INFINITY, f64::min))
}

/// The largest of a list of numbers.
pub fn max(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(nonempty("max", &xs)?
        .into_iter()
        .fold(f64::NEG_INFINITY, f64::max))
}

/// `rises(xs)`: how many times a list of numbers goes up from one element to the next;
/// `rises(xs, 2)`: how many times it more than doubles. A loss that "does not fall
/// steadily" rises more than once; one step up could be noise.
pub fn rises(xs: Vec<Value>, factor: Option<f64>) -> Result<usize, Error> {
    let v = numbers(&xs)?;
    let f = factor.unwrap_or(1.0);
    Ok(v.windows(2).filter(|w| w[1] > f * w[0]).count())
}

/// How many elements of `xs` equal `v`.
pub fn count(xs: Vec<Value>, v: Value) -> usize {
    xs.iter().filter(|x| **x == v).count()
}

/// `zip(xs, ys)`: the pairs `[x, y]` of two lists of one length, so that a condition can
/// look at each seed's two values together (e.g. both heads of one run).
pub fn zip(xs: Vec<Value>, ys: Vec<Value>) -> Result<Vec<Value>, Error> {
    if xs.len() != ys.len() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("zip: lists of {} and {} items", xs.len(), ys.len()),
        ));
    }
    Ok(xs
        .into_iter()
        .zip(ys)
        .map(|(x, y)| Value::from(vec![x, y]))
        .collect())
}

/// `lists | covers(target)`: whether, at every position of `target`, at least one of
/// `lists` holds the target's value there (e.g. one seed's two heads, which between them
/// attend to every key of a diagonal). Each list must be as long as `target`.
pub fn covers(lists: Vec<Value>, target: Vec<Value>) -> Result<bool, Error> {
    let mut rows = Vec::with_capacity(lists.len());
    for list in &lists {
        let row: Vec<Value> = list.try_iter()?.collect();
        if row.len() != target.len() {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "covers: a list of {} items against {}",
                    row.len(),
                    target.len()
                ),
            ));
        }
        rows.push(row);
    }
    Ok((0..target.len()).all(|i| rows.iter().any(|row| row[i] == target[i])))
}

pub fn ln(x: f64) -> f64 {
    x.ln()
}

pub fn sqrt(x: f64) -> f64 {
    x.sqrt()
}

pub fn exp(x: f64) -> f64 {
    x.exp()
}

pub fn abs(x: f64) -> f64 {
    x.abs()
}

pub fn pow(x: f64, y: f64) -> f64 {
    x.powf(y)
}

/// `xs | pluck("a.b")`: the value at a dotted path in each element.
pub fn pluck(xs: Vec<Value>, path: String) -> Result<Vec<Value>, Error> {
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
}

fn number(what: &str, x: &Value) -> Result<f64, Error> {
    super::as_f64(x).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("{what} needs a number, not {} `{x}`", x.kind()),
        )
    })
}

/// `decimals` given by position or as `decimals=`.
fn decimals(pos: Option<usize>, kwargs: &Kwargs) -> Result<Option<usize>, Error> {
    let kw: Option<usize> = kwargs.get("decimals")?;
    kwargs.assert_all_used()?;
    Ok(pos.or(kw))
}

/// `x` with thousands separators: integers as they are, other numbers with up to four
/// significant decimals (as inserts show them), or with `decimals` decimals.
pub(super) fn grouped(x: f64, decimals: Option<usize>) -> String {
    let s = match decimals {
        Some(d) => format!("{x:.d$}"),
        None if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
        None => super::trim_float(x),
    };
    let (sign, body) = s.strip_prefix('-').map_or(("", s.as_str()), |b| ("-", b));
    format!("{sign}{}", crate::book::claims::group_thousands(body))
}

/// A value as wording shows it: numbers grouped, anything else as text.
fn shown(x: &Value) -> String {
    match super::as_f64(x) {
        Some(f) => grouped(f, None),
        None => super::as_text(x),
    }
}

/// `num(x)`, `num(x, 2)` or `num(x, decimals=2)`: "1,063", "0.25", "1,234.50".
pub fn num(x: Value, d: Option<usize>, kwargs: Kwargs) -> Result<String, Error> {
    Ok(grouped(number("num", &x)?, decimals(d, &kwargs)?))
}

/// `word(n)`: 0 to 12 as English words ("seven"), other numbers as `num` writes them.
pub fn word(n: Value) -> Result<String, Error> {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let x = number("word", &n)?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(if x.fract() == 0.0 && (0.0..=12.0).contains(&x) {
        WORDS[x as usize].to_string()
    } else {
        grouped(x, None)
    })
}

/// `plural(n, "string")` → "1 string", "1,063 strings"; `plural(n, "child", "children")`.
pub fn plural(n: Value, singular: String, plural: Option<String>) -> Result<String, Error> {
    let x = number("plural", &n)?;
    #[allow(clippy::float_cmp, reason = "a count: exactly one or not")]
    let noun = if x == 1.0 {
        singular
    } else {
        plural.unwrap_or_else(|| format!("{singular}s"))
    };
    Ok(format!("{} {noun}", grouped(x, None)))
}

/// `series(xs)`: "6", "6 and 7", "6, 7 and 8"; an empty list is "none".
pub fn series(xs: Vec<Value>) -> String {
    let items: Vec<String> = xs.iter().map(shown).collect();
    match items.as_slice() {
        [] => "none".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `of(n, m)`: "all 500", "none of the 500", "63 of 500".
pub fn of(n: Value, m: Value) -> Result<String, Error> {
    let (a, b) = (number("of", &n)?, number("of", &m)?);
    #[allow(
        clippy::float_cmp,
        reason = "counts, whole numbers that are equal or not"
    )]
    Ok(if a == b {
        format!("all {}", grouped(b, None))
    } else if a == 0.0 {
        format!("none of the {}", grouped(b, None))
    } else {
        format!("{} of {}", grouped(a, None), grouped(b, None))
    })
}

/// `pct(x)`: a fraction as a percentage, "94.6%"; `pct(x, 2)` or `pct(x, decimals=2)`.
pub fn pct(x: Value, d: Option<usize>, kwargs: Kwargs) -> Result<String, Error> {
    let f = number("pct", &x)? * 100.0;
    Ok(format!(
        "{}%",
        grouped(f, Some(decimals(d, &kwargs)?.unwrap_or(1)))
    ))
}

/// The string lengths of an evaluation (`run.train.test`) with `pass` as whether every
/// string of that length was right.
fn lengths(eval: &Value, pass: bool, what: &str) -> Result<Vec<Value>, Error> {
    let by_length = eval.get_attr("by_length")?;
    if by_length.is_undefined() || by_length.is_none() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{what} needs an evaluation such as `run.train.test`, with `by_length`"),
        ));
    }
    let mut out = Vec::new();
    for row in by_length.try_iter()? {
        let acc = number(what, &row.get_attr("accuracy")?)?;
        if (acc >= 1.0) == pass {
            out.push(row.get_attr("len")?);
        }
    }
    Ok(out)
}

/// `failing(run.train.test)`: the lengths at which some string was wrong.
pub fn failing(eval: Value) -> Result<Vec<Value>, Error> {
    lengths(&eval, false, "failing")
}

/// `passing(run.train.test)`: the lengths at which every string was right.
pub fn passing(eval: Value) -> Result<Vec<Value>, Error> {
    lengths(&eval, true, "passing")
}
