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
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("{} `{}` is not a number", x.kind(), super::as_short_text(x)),
                )
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

/// The total of a list of numbers (of an empty list, 0), in order.
pub fn sum(xs: Vec<Value>) -> Result<f64, Error> {
    Ok(numbers(&xs)?.into_iter().fold(0.0, |a, x| a + x))
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

/// A loss curve and the spike rule its helper was given (each argument left out is the
/// book's: see `crate::book::spikes::Rule`). The curve is read where it is (a list is a
/// shared `Vec<Value>`), not copied element by element into a new list first.
fn curve_and_rule(
    xs: &Value,
    factor: Option<f64>,
    floor: Option<f64>,
    window: Option<usize>,
) -> Result<(Vec<f64>, crate::book::spikes::Rule), Error> {
    let d = crate::book::spikes::Rule::default();
    let rule = crate::book::spikes::Rule {
        factor: factor.unwrap_or(d.factor),
        floor: floor.unwrap_or(d.floor),
        window: window.unwrap_or(d.window),
    };
    let curve = match xs.as_object().and_then(|o| o.downcast_ref::<Vec<Value>>()) {
        Some(list) => numbers(list)?,
        None => numbers(&xs.try_iter()?.collect::<Vec<_>>())?,
    };
    Ok((curve, rule))
}

/// `spikes(losses)`: the steps at which a spike of a loss curve begins, numbered from one
/// (see `crate::book::spikes`: ten times the median of the 25 steps before, and above
/// 0.01); `spikes(losses, factor, floor)` and `spikes(losses, factor, floor, window)` set
/// the rule. `| length` counts them.
pub fn spikes(
    xs: &Value,
    factor: Option<f64>,
    floor: Option<f64>,
    window: Option<usize>,
) -> Result<Vec<usize>, Error> {
    let (curve, rule) = curve_and_rule(xs, factor, floor, window)?;
    Ok(crate::book::spikes::starts_remembered(&curve, &rule))
}

/// `spike_spans(losses)` (and the rule's arguments of `spikes`): every spike as
/// `start` (its first step, from one), `steps` (how many consecutive steps the rule flags),
/// `peak` (the highest loss among them) and `peak_step`.
pub fn spike_spans(
    xs: &Value,
    factor: Option<f64>,
    floor: Option<f64>,
    window: Option<usize>,
) -> Result<Vec<Value>, Error> {
    let (curve, rule) = curve_and_rule(xs, factor, floor, window)?;
    Ok(crate::book::spikes::spans(&curve, &rule)
        .iter()
        .map(Value::from_serialize)
        .collect())
}

/// `at(xs, steps)`: the elements of a per-step list at the given steps, numbered from one
/// (`at(run.train.grad_norm, spikes(run.train.losses))`: the gradient norm where each
/// spike begins); `at(xs, steps, -1)` reads each step's predecessor. A step outside the
/// list is an error.
pub fn at(xs: Vec<Value>, steps: Vec<Value>, offset: Option<i64>) -> Result<Vec<Value>, Error> {
    steps
        .iter()
        .map(|s| {
            let k = i64::try_from(s.clone())? + offset.unwrap_or(0);
            let k = usize::try_from(k).unwrap_or(0);
            (k >= 1)
                .then(|| xs.get(k - 1).cloned())
                .flatten()
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        format!("at: step {k} is not one of the list's 1 to {}", xs.len()),
                    )
                })
        })
        .collect()
}

/// `median(xs)`: the middle value of a list of numbers (of an even count, the mean of the
/// two middle ones); an empty list is an error.
pub fn median(xs: Vec<Value>) -> Result<f64, Error> {
    let mut v = nonempty("median", &xs)?;
    v.sort_by(f64::total_cmp);
    Ok(crate::book::spikes::median_of_sorted(&v))
}

/// `xs | each("expr")`: `expr` evaluated once per element, with the element as `run`:
/// `reference_seeds.runs | each("median(run.train.grad_norm[run.train.first_below:])")`
/// gives every seed's median gradient norm after its crossing step. Only `run` and the
/// helpers are in scope.
pub fn each(state: &minijinja::State, xs: Vec<Value>, expr: String) -> Result<Vec<Value>, Error> {
    let compiled = state.env().compile_expression(&expr)?;
    xs.into_iter()
        .map(|run| {
            let v = compiled.eval(minijinja::context! { run })?;
            if v.is_undefined() {
                return Err(Error::new(
                    ErrorKind::UndefinedError,
                    format!("each: `{expr}` reads a path the element does not have"),
                ));
            }
            Ok(v)
        })
        .collect()
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

/// One recorded attention row's strongest key, per head: the query's position, the key's
/// position, and whether the key holds the letter the query's row writes next.
struct Strongest {
    query: usize,
    key: usize,
    reads: bool,
}

/// Every head's strongest keys in `block` (numbered from 0) of a run's recorded attention
/// (`train.attention`, teacher-forced on `eval.attention_input`), one row per answer row.
fn strongest(result: Value, block: usize, what: &str) -> Result<Vec<Vec<Strongest>>, Error> {
    let attention = pluck(vec![result], "train.attention".into())?
        .pop()
        .unwrap_or_default();
    let tokens: Vec<Value> = attention.get_attr("tokens")?.try_iter()?.collect();
    let heads = (attention.get_attr("strongest")?).get_item(&Value::from(block))?;
    if heads.is_undefined() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("{what}: the model has no block {block} (numbered from 0)"),
        ));
    }
    let mut out = Vec::new();
    for head in heads.try_iter()? {
        let mut rows = Vec::new();
        for row in head.try_iter()? {
            let query = usize::try_from(row.get_attr("query")?)?;
            rows.push(Strongest {
                query,
                key: usize::try_from(row.get_attr("key")?)?,
                reads: tokens.get(query + 1) == Some(&row.get_attr("key_token")?),
            });
        }
        out.push(rows);
    }
    Ok(out)
}

/// How many of the rows `from..to` (all when absent) some head satisfies `hit` in.
fn rows_where(
    heads: &[Vec<Strongest>],
    from: Option<usize>,
    to: Option<usize>,
    hit: impl Fn(&Strongest) -> bool,
) -> usize {
    let n = heads.first().map_or(0, Vec::len);
    (from.unwrap_or(0)..to.unwrap_or(n).min(n))
        .filter(|&i| heads.iter().any(|h| h.get(i).is_some_and(&hit)))
        .count()
}

/// `result | reads(block)`: in how many of a run's answer rows some head of `block`
/// (numbered from 0) puts its strongest weight on a key holding the letter the row must
/// write next, wherever that key is; `from` and `to` count only rows `from..to`. Over an
/// ensemble, `run.runs | map('reads', 1) | list` gives every seed's count.
pub fn reads(
    result: Value,
    block: usize,
    from: Option<usize>,
    to: Option<usize>,
) -> Result<usize, Error> {
    let heads = strongest(result, block, "reads")?;
    Ok(rows_where(&heads, from, to, |s| s.reads))
}

/// `result | looks(block, back)`: in how many answer rows some head of `block` puts its
/// strongest weight on the key exactly `back` positions before the query (`1`: the token
/// just before); `from` and `to` as for `reads`.
pub fn looks(
    result: Value,
    block: usize,
    back: usize,
    from: Option<usize>,
    to: Option<usize>,
) -> Result<usize, Error> {
    let heads = strongest(result, block, "looks")?;
    Ok(rows_where(&heads, from, to, |s| {
        s.query.checked_sub(back) == Some(s.key)
    }))
}

/// `result | prefix(len)`: how many leading letters of the answer a run's decodes got right,
/// on average over its test and longer strings of `len` letters (a string right to the end
/// counts all `len`): where the first wrong letter falls. For `reverse`, `copy` and `sort`.
#[allow(
    clippy::cast_precision_loss,
    reason = "counts of test strings and letters, exact in an f64"
)]
pub fn prefix(result: Value, len: usize) -> Result<f64, Error> {
    let v = remembered(&result, &format!("prefix {len}"), || {
        prefix_counted(&result, len).map(Value::from)
    })?;
    f64::try_from(v)
}

/// A helper's value for one result, computed once per process: a result is named by its
/// configuration and seed (a build holds one result per pair, and a rerun gives the same
/// bits), and its decodes are read again for every claim and every seed left out.
/// `what` names the helper and its arguments.
fn remembered(
    result: &Value,
    what: &str,
    count: impl FnOnce() -> Result<Value, Error>,
) -> Result<Value, Error> {
    thread_local! {
        static SEEN: std::cell::RefCell<std::collections::HashMap<String, Value>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    let named = match (result.get_attr("config"), result.get_attr("seed")) {
        (Ok(c), Ok(s)) if !c.is_undefined() && !s.is_undefined() => Some(format!("{c}|{s}|{what}")),
        _ => None,
    };
    if let Some(v) = named
        .as_ref()
        .and_then(|k| SEEN.with(|m| m.borrow().get(k).cloned()))
    {
        return Ok(v);
    }
    let v = count()?;
    if let Some(k) = named {
        SEEN.with(|m| m.borrow_mut().insert(k, v.clone()));
    }
    Ok(v)
}

/// [`prefix`], counted.
#[allow(
    clippy::cast_precision_loss,
    reason = "counts of test strings and letters, exact in an f64"
)]
fn prefix_counted(result: &Value, len: usize) -> Result<f64, Error> {
    use revtx_spec::task::Task;
    let fail = |m: String| Error::new(ErrorKind::InvalidOperation, format!("prefix: {m}"));
    let alphabet = alphabet_of(result, "prefix")?;
    let task = alphabet.task;
    if !matches!(task, Task::Reverse | Task::Copy | Task::Sort) {
        return Err(fail(format!(
            "counts letters of reverse, copy and sort, not {}",
            task.name()
        )));
    }
    let (mut strings, mut right) = (0usize, 0usize);
    for set in ["train.test", "train.long"] {
        let eval = pluck(vec![result.clone()], set.into())?
            .pop()
            .unwrap_or_default();
        let inputs: Vec<Value> = eval.get_attr("inputs")?.try_iter()?.collect();
        let outputs: Vec<Value> = eval.get_attr("outputs")?.try_iter()?.collect();
        for (input, output) in inputs.iter().zip(&outputs) {
            let (input, output) = (input.to_string(), output.to_string());
            if input.len() != len {
                continue;
            }
            let ids: Vec<u8> = input.bytes().map(|b| b.wrapping_sub(b'a')).collect();
            let want = alphabet.text(
                &alphabet
                    .answer(&ids)
                    .iter()
                    .map(|&t| i64::from(t))
                    .collect::<Vec<_>>(),
            );
            right += want
                .chars()
                .zip(output.chars())
                .take_while(|(a, b)| a == b)
                .count();
            strings += 1;
        }
    }
    if strings == 0 {
        return Err(fail(format!("the run decoded no string of {len} letters")));
    }
    Ok(right as f64 / strings as f64)
}

/// The task and alphabet a run was trained on, read from its configuration (a key left at
/// its default is left out of it).
fn alphabet_of(result: &Value, helper: &str) -> Result<revtx_spec::task::Alphabet, Error> {
    use revtx_spec::task::{Alphabet, Task};
    let data = pluck(vec![result.clone()], "config.data".into())?
        .pop()
        .unwrap_or_default();
    let task = match data.get_attr("task")? {
        t if t.is_undefined() => Task::default(),
        t => serde_json::from_value::<Task>(serde_json::json!(t.to_string()))
            .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("{helper}: {e}")))?,
    };
    let letters = match data.get_attr("letters")? {
        l if l.is_undefined() => 10,
        l => usize::try_from(l)?,
    };
    Ok(Alphabet::new(task, letters))
}

/// `result | wrong_at(len)`: where the answers of the run's test problems of size `len`
/// go wrong, one entry per answer position (as the answer is written: under `add`, least
/// significant digit first, the last position the final carry): `position` (from zero),
/// `total` problems, `wrong` (how many have that position wrong) and `first` (how many go
/// wrong there first). Under `add` also `carried` (how many receive a carry into that
/// position) and `carried_wrong` (how many of those have it wrong).
pub fn wrong_at(result: Value, len: usize) -> Result<Vec<Value>, Error> {
    let v = remembered(&result, &format!("wrong_at {len}"), || {
        wrong_at_counted(&result, len).map(Value::from)
    })?;
    Ok(v.try_iter()?.collect())
}

/// [`wrong_at`], counted.
fn wrong_at_counted(result: &Value, len: usize) -> Result<Vec<Value>, Error> {
    use revtx_spec::task::Task;
    #[derive(serde::Serialize, Default, Clone)]
    struct At {
        position: usize,
        total: usize,
        wrong: usize,
        first: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        carried: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        carried_wrong: Option<usize>,
    }
    let fail = |m: String| Error::new(ErrorKind::InvalidOperation, format!("wrong_at: {m}"));
    let alphabet = alphabet_of(result, "wrong_at")?;
    let add = alphabet.task == Task::Add;
    let eval = pluck(vec![result.clone()], "train.test".into())?
        .pop()
        .unwrap_or_default();
    let inputs: Vec<Value> = eval.get_attr("inputs")?.try_iter()?.collect();
    let outputs: Vec<Value> = eval.get_attr("outputs")?.try_iter()?.collect();
    let mut at: Vec<At> = Vec::new();
    for (input, output) in inputs.iter().zip(&outputs) {
        let s = alphabet.parse(&input.to_string()).map_err(fail)?;
        let size = if add { s.len() / 2 } else { s.len() };
        if size != len {
            continue;
        }
        let want = alphabet.answer(&s);
        let got: Vec<char> = output.to_string().chars().collect();
        if at.is_empty() {
            at = (0..want.len())
                .map(|position| At {
                    position,
                    carried: add.then_some(0),
                    carried_wrong: add.then_some(0),
                    ..At::default()
                })
                .collect();
        }
        // Under `add`, the carry into each position of the answer.
        let mut carry = vec![0u8; want.len()];
        if add {
            let (a, b) = s.split_at(size);
            let base = u8::try_from(alphabet.letters).unwrap_or(10);
            for i in 0..size {
                let d = a[size - 1 - i] + b[size - 1 - i] + carry[i];
                carry[i + 1] = d / base;
            }
        }
        let mut first = true;
        for (i, w) in want.iter().enumerate() {
            let right = got.get(i) == Some(&alphabet.char(i64::from(*w)));
            let a = &mut at[i];
            a.total += 1;
            if !right {
                a.wrong += 1;
                if first {
                    a.first += 1;
                    first = false;
                }
            }
            if add && carry[i] > 0 {
                *a.carried.get_or_insert(0) += 1;
                if !right {
                    *a.carried_wrong.get_or_insert(0) += 1;
                }
            }
        }
    }
    if at.is_empty() {
        return Err(fail(format!(
            "the run's test set has no problem of size {len}"
        )));
    }
    Ok(at.iter().map(Value::from_serialize).collect())
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
    // A value that rounds to zero is shown as zero, never "-0" (−0.0, or −0.001 at two
    // decimals): the sign would claim a direction the digits do not show.
    let sign = if body.bytes().all(|c| c == b'0' || c == b'.') {
        ""
    } else {
        sign
    };
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
