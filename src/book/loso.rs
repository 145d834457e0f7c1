//! Leave one seed out: a claim that reads an ensemble as a whole, evaluated again with each
//! of its seeds left out in turn (no retraining: the results are there), and what that says
//! of the claim: an assertion one seed decides (`fragile`), a figure quoted to more digits
//! than the seeds earn (`precision`, from the jackknife's standard error).

use super::claims::{parse_quote, Quote};
use super::expr;
use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::{Environment, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One re-evaluation: the claim without `seed` of ensemble `run`.
#[derive(Clone, Debug)]
pub struct LeftOut {
    pub run: String,
    pub seed: u64,
    /// What the expression gives then (an error when it cannot be evaluated: a statistic of
    /// too few seeds, say).
    pub value: Result<Value, String>,
}

/// The ensembles (runs of two or more seeds) an expression reads as a whole: named, and not
/// only through one indexed seed (`copy.runs[0]…` reads seed 0's result, whatever the
/// ensemble; leaving another seed out would only shift the index).
pub fn ensembles_read(expr: &str, values: &BTreeMap<String, Value>) -> Vec<String> {
    let is_ensemble = |id: &str| {
        values
            .get(id)
            .and_then(|v| v.get_attr("seeds").ok())
            .and_then(|s| s.len())
            .is_some_and(|n| n >= 2)
    };
    let mut out: Vec<String> = Vec::new();
    for op in expr::operands(expr, &|n| values.contains_key(n)) {
        let id: String = op
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let rest = op[id.len()..].trim_start();
        let indexed = rest.starts_with(".runs[") || rest.starts_with(".seeds[");
        if is_ensemble(&id) && !indexed && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The runs by id, with one ensemble seen without one of its seeds.
#[derive(Debug)]
struct Overlay {
    base: Arc<BTreeMap<String, Value>>,
    id: String,
    value: Value,
}

impl Object for Overlay {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let k = key.as_str()?;
        if k == self.id {
            Some(self.value.clone())
        } else {
            self.base.get(k).cloned()
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.base.keys().map(|k| Value::from(k.as_str())).collect())
    }
}

/// An ensemble's value with only the seeds `keep` accepts, by index (`seeds`, `runs` and
/// `config`, as `expr::run_value` makes it).
fn keeping(ensemble: &Value, keep: &dyn Fn(usize) -> bool) -> Option<Value> {
    let kept = |name: &str| -> Option<Vec<Value>> {
        let all: Vec<Value> = ensemble.get_attr(name).ok()?.try_iter().ok()?.collect();
        Some(
            all.into_iter()
                .enumerate()
                .filter(|(k, _)| keep(*k))
                .map(|(_, v)| v)
                .collect(),
        )
    };
    Some(minijinja::context! {
        seeds => kept("seeds")?,
        runs => kept("runs")?,
        config => ensemble.get_attr("config").ok()?,
    })
}

/// `expr` evaluated once per (ensemble it reads, seed of it), that seed left out.
pub fn evaluations(
    env: &Environment<'static>,
    values: &Arc<BTreeMap<String, Value>>,
    expr: &str,
) -> Vec<LeftOut> {
    each_seed(env, values, expr, false)
}

/// `expr` evaluated once per (ensemble it reads, seed of it), with that seed alone: how
/// each seed, by itself, decides a statement.
pub fn alone(
    env: &Environment<'static>,
    values: &Arc<BTreeMap<String, Value>>,
    expr: &str,
) -> Vec<LeftOut> {
    each_seed(env, values, expr, true)
}

fn each_seed(
    env: &Environment<'static>,
    values: &Arc<BTreeMap<String, Value>>,
    expr: &str,
    only: bool,
) -> Vec<LeftOut> {
    let mut out = Vec::new();
    let Ok(compiled) = env.compile_expression(expr) else {
        return out;
    };
    for id in ensembles_read(expr, values) {
        let ensemble = &values[&id];
        let seeds: Vec<u64> = ensemble
            .get_attr("seeds")
            .ok()
            .and_then(|s| s.try_iter().ok().map(Iterator::collect::<Vec<_>>))
            .unwrap_or_default()
            .iter()
            .filter_map(|s| s.as_i64().and_then(|s| u64::try_from(s).ok()))
            .collect();
        for (i, seed) in seeds.iter().enumerate() {
            let Some(value) = keeping(ensemble, &|k| (k == i) == only) else {
                continue;
            };
            let ctx = Value::from_object(Overlay {
                base: values.clone(),
                id: id.clone(),
                value,
            });
            let value = match compiled.eval(ctx) {
                Ok(v) if v.is_undefined() => Err("undefined".to_string()),
                Ok(v) => Ok(v),
                Err(e) => Err(e.to_string()),
            };
            out.push(LeftOut {
                run: id.clone(),
                seed: *seed,
                value,
            });
        }
    }
    out
}

/// Whether an expression averages something over seeds (`mean(…)`, or a named expression
/// in `averaging` that does): the figures whose digits the seeds must earn. An extreme, a
/// count or one seed's value is a fact about the draw, and its jackknife says nothing about
/// its digits.
pub fn averages(expr: &str, averaging: &[String]) -> bool {
    calls(expr, "mean") || averaging.iter().any(|name| calls(expr, name))
}

/// The named expressions that average seeds, directly or through another named one: a
/// figure that quotes one is an estimate too, and hiding a `mean(` behind a name must not
/// take it out of the precision lint.
pub fn averaging(named: &[(String, crate::book::parse::config::NamedExpr)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    loop {
        let found: Vec<String> = named
            .iter()
            .filter(|(name, n)| !out.contains(name) && averages(&n.expr, &out))
            .map(|(name, _)| name.clone())
            .collect();
        if found.is_empty() {
            return out;
        }
        out.extend(found);
    }
}

/// Whether `expr` calls the function `name` (`name(` not preceded by part of a longer name).
fn calls(expr: &str, name: &str) -> bool {
    let b = expr.as_bytes();
    expr.match_indices(&format!("{name}("))
        .any(|(i, _)| i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
}

/// The seeds whose absence turns a true assertion false: `(run, seed)`.
pub fn fragile(left: &[LeftOut]) -> Vec<(String, u64)> {
    left.iter()
        .filter(|l| {
            l.value
                .as_ref()
                .is_ok_and(|v| v.kind() == minijinja::value::ValueKind::Bool && !v.is_true())
        })
        .map(|l| (l.run.clone(), l.seed))
        .collect()
}

/// The jackknife standard error of a numeric claim, in the quote's units (percentage
/// points for a percentage): per ensemble, `sqrt((n−1)/n · Σ(θ₍ᵢ₎ − θ̄)²)` over its
/// leave-one-out values, the ensembles combined as independent. `None` when a
/// re-evaluation is not a number.
pub fn jackknife_se(left: &[LeftOut], percent: bool) -> Option<f64> {
    let mut by_run: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for l in left {
        let v = l.value.as_ref().ok().and_then(expr::as_f64)?;
        by_run
            .entry(&l.run)
            .or_default()
            .push(if percent { v * 100.0 } else { v });
    }
    if by_run.is_empty() {
        return None;
    }
    let mut var = 0.0;
    for xs in by_run.values() {
        #[allow(clippy::cast_precision_loss, reason = "a handful of seeds")]
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        var += (n - 1.0) / n * xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
    }
    Some(var.sqrt())
}

/// How finely a quote is written, in its own units (`59.7%` → 0.1 points; `1.5e-3` →
/// 0.0001), and how many decimals it shows; `None` for text.
pub fn resolution(quoted: &str) -> Option<(f64, i32, bool)> {
    let Quote::Number { value, format } = parse_quote(quoted) else {
        return None;
    };
    let decimals = i32::try_from(format.decimals).ok()?;
    let unit = match format.sci {
        Some(_) => {
            let exp = if value == 0.0 {
                0
            } else {
                #[allow(clippy::cast_possible_truncation, reason = "a decimal exponent")]
                let e = value.abs().log10().floor() as i32;
                e
            };
            10f64.powi(exp - decimals)
        }
        None => 10f64.powi(-decimals),
    };
    Some((unit, decimals, format.percent))
}

/// The decimals a standard error earns: down to its first significant digit (4.2 → 0;
/// 0.042 → 2; 42 → −1, the tens).
pub fn earned_decimals(se: f64) -> i32 {
    #[allow(clippy::cast_possible_truncation, reason = "a decimal exponent")]
    let e = se.log10().floor() as i32;
    -e
}

/// A quoted figure finer than its seeds allow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverPrecise {
    /// The decimals the quote shows, and those its standard error earns (negative: tens…).
    pub decimals: i32,
    pub earned: i32,
    /// The jackknife standard error, in the quote's units.
    pub se: f64,
    pub percent: bool,
    pub sci: bool,
}

/// Whether `quoted` (with its tolerance, `value` its figure) is finer than the resolution
/// its seeds allow, the first significant digit of its jackknife standard error. A plain
/// quote without a tolerance can be written no coarser than whole units, so that is all it
/// is held to; a tolerance, or a quote in scientific notation, is held to the full
/// resolution.
pub fn over_precise(
    quoted: &str,
    left: &[LeftOut],
    tolerance: Option<crate::book::parse::Tolerance>,
    value: Option<f64>,
) -> Option<OverPrecise> {
    use crate::book::parse::Tolerance;
    let Quote::Number { format, .. } = parse_quote(quoted) else {
        return None;
    };
    let (unit, decimals, percent) = resolution(quoted)?;
    let sci = format.sci.is_some();
    let se = jackknife_se(left, percent).filter(|se| *se > 0.0 && se.is_finite())?;
    let earned = earned_decimals(se);
    let needed = 10f64.powi(-earned);
    let (resolution, allowed) = match tolerance {
        Some(Tolerance::Absolute(a)) => (a, needed),
        Some(Tolerance::Relative(p)) => {
            let v = value.unwrap_or(0.0) * if percent { 100.0 } else { 1.0 };
            (v.abs() * p / 100.0, needed)
        }
        None if sci => (unit, needed),
        None => (unit, needed.min(1.0)),
    };
    (resolution < allowed * (1.0 - 1e-9)).then_some(OverPrecise {
        decimals,
        earned,
        se,
        percent,
        sci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Arc<BTreeMap<String, Value>> {
        let ens = |accs: &[f64]| {
            let runs: Vec<serde_json::Value> = accs
                .iter()
                .enumerate()
                .map(|(i, a)| serde_json::json!({"seed": i, "acc": a}))
                .collect();
            Value::from_serialize(serde_json::json!({
                "seeds": (0..accs.len()).collect::<Vec<_>>(), "runs": runs, "config": {}
            }))
        };
        let mut m = BTreeMap::new();
        m.insert("copy".to_string(), ens(&[0.2, 0.9, 0.95]));
        m.insert("rev".to_string(), ens(&[0.5, 0.6, 0.55]));
        m.insert(
            "one".to_string(),
            Value::from_serialize(serde_json::json!({"seed": 0, "acc": 0.3})),
        );
        Arc::new(m)
    }

    #[test]
    fn an_assertion_one_seed_decides_is_fragile() {
        let env = crate::book::expr::environment();
        let v = values();
        // copy's mean (0.683) beats rev's (0.55); without copy's seed 2 it is 0.55, a tie,
        // and the statement is false. No other seed left out changes the verdict.
        let e = "mean(copy.runs | pluck('acc')) > mean(rev.runs | pluck('acc'))";
        let left = evaluations(&env, &v, e);
        assert_eq!(left.len(), 6, "three seeds of each ensemble");
        assert_eq!(fragile(&left), [("copy".to_string(), 2)]);
        // An indexed seed and a single run are not read as ensembles.
        assert!(ensembles_read("copy.runs[0].acc > one.acc", &v).is_empty());
        assert_eq!(ensembles_read("copy.runs | length", &v), ["copy"]);
    }

    #[test]
    fn a_figure_earns_the_digits_its_seeds_allow() {
        let env = crate::book::expr::environment();
        let v = values();
        let left = evaluations(&env, &v, "mean(copy.runs | pluck('acc'))");
        // Leave-one-out means 0.925, 0.575, 0.55: jackknife se 0.2421 (for a mean, the
        // standard error sd/√n) → 24.2 points, which earns not even the units.
        let se = jackknife_se(&left, true).unwrap();
        assert!((se - 24.21).abs() < 0.01, "{se}");
        let strict = Some(crate::book::parse::Tolerance::Absolute(1.0));
        let p = over_precise("68.3%", &left, None, None).unwrap();
        assert_eq!((p.decimals, p.earned, p.se, p.percent), (1, -1, se, true));
        // A whole percentage is as coarse as a plain quote gets; held to ±1 point it is
        // still finer than the 24-point spread.
        assert_eq!(over_precise("70%", &left, None, None), None);
        assert_eq!(
            over_precise("70%", &left, strict, Some(0.7)).map(|p| p.earned),
            Some(-1)
        );
        assert_eq!(earned_decimals(4.2), 0);
        assert_eq!(earned_decimals(0.042), 2);
        assert_eq!(earned_decimals(1.0), 0);
        // rev's spread is small: 0.55 has earned its two decimals.
        let left = evaluations(&env, &v, "mean(rev.runs | pluck('acc'))");
        assert_eq!(over_precise("0.55", &left, None, None), None);
        assert!(over_precise("0.550", &left, None, None).is_some());
        assert_eq!(resolution("1.5e-3").map(|r| r.0), Some(1e-4));
        assert!(averages("100 * mean(a.runs | pluck('x'))", &[]));
        assert!(!averages("max(a.runs | pluck('x'))", &[]) && !averages("geomean(x)", &[]));
        // A mean behind a name, or behind a name that calls it, is still a mean.
        let define = |expr: &str| crate::book::parse::config::NamedExpr {
            params: vec!["r".into()],
            expr: expr.into(),
            about: String::new(),
        };
        let names = averaging(&[
            ("outer".into(), define("2 * inner(r)")),
            ("inner".into(), define("mean(r.runs | pluck('x'))")),
            ("top".into(), define("max(r.runs | pluck('x'))")),
        ]);
        assert_eq!(names, ["inner", "outer"]);
        assert!(averages("outer(a) / 3", &names) && !averages("top(a)", &names));
    }
}
