//! The helpers expressions can call: statistics over lists, a few numeric functions and
//! the `pluck` filter. Each is registered by one line in `expr/mod.rs`.

#![allow(
    clippy::needless_pass_by_value,
    reason = "minijinja hands a helper its arguments by value"
)]

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

/// The mean of a list of numbers.
pub fn mean(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(crate::engine::result::mean_std(&numbers(&xs)?).0)
}

/// The sample standard deviation of a list of numbers.
pub fn sd(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(crate::engine::result::mean_std(&numbers(&xs)?).1)
}

/// The smallest of a list of numbers.
pub fn min(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(numbers(&xs)?.into_iter().fold(f64::INFINITY, f64::min))
}

/// The largest of a list of numbers.
pub fn max(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(numbers(&xs)?.into_iter().fold(f64::NEG_INFINITY, f64::max))
}

/// How many elements of `xs` equal `v`.
pub fn count(xs: Vec<Value>, v: Value) -> usize {
    xs.iter().filter(|x| **x == v).count()
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
