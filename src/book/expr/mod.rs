//! The expression language of claims, inserts and table columns: minijinja expressions over
//! the run results, strict about undefined names, with the helpers registered here.
//!
//! To add a helper, write it in `helpers.rs` and register it with one line below.

mod helpers;

use super::runs::Results;
use minijinja::{Environment, Value};

/// The expression environment.
///
/// - `mean(xs)`, `sd(xs)` (sample), `min(xs)`, `max(xs)` of a list of numbers
/// - `xs | pluck("a.b")`: the value at a dotted path in each element
/// - `ln(x)`, `sqrt(x)`, `exp(x)`, `abs(x)`, `pow(x, y)`
/// - `count(xs, v)`: how many elements equal `v`
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_function("mean", helpers::mean);
    env.add_function("sd", helpers::sd);
    env.add_function("min", helpers::min);
    env.add_function("max", helpers::max);
    env.add_function("count", helpers::count);
    env.add_function("ln", helpers::ln);
    env.add_function("sqrt", helpers::sqrt);
    env.add_function("exp", helpers::exp);
    env.add_function("abs", helpers::abs);
    env.add_function("pow", helpers::pow);
    env.add_filter("pluck", helpers::pluck);
    env
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

/// The context claims are evaluated in: each run id → its result (single seed) or
/// `{seeds, runs, config}` (several seeds); `machine` → facts about where the runs ran.
pub fn context(results: &Results) -> Value {
    let mut map = serde_json::Map::new();
    for (id, produced) in &results.by_run {
        let plan = results.plans.iter().find(|p| &p.id == id);
        let multi = plan.is_some_and(|p| p.seeds.len() > 1);
        let v = if multi {
            serde_json::json!({
                "seeds": produced.iter().map(|p| p.result.seed).collect::<Vec<_>>(),
                "runs": produced.iter().map(|p| &p.result).collect::<Vec<_>>(),
                "config": produced[0].result.config,
            })
        } else {
            serde_json::to_value(&produced[0].result).unwrap_or_default()
        };
        map.insert(id.clone(), v);
    }
    let reference = results
        .by_run
        .values()
        .flatten()
        .find(|p| p.result.train.is_some())
        .map(|p| &p.result.env);
    map.insert(
        "machine".into(),
        serde_json::json!({
            "cpu": reference.map_or_else(|| crate::engine::profile::Platform::this().cpu, |e| e.cpu.clone()),
            "threads": reference.map_or(1, |e| e.threads),
            "libtorch": crate::engine::LIBTORCH_VERSION,
            "cores": std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        }),
    );
    Value::from_serialize(serde_json::Value::Object(map))
}

/// The value as a number, if it is one.
pub fn as_f64(v: &Value) -> Option<f64> {
    if v.is_number() {
        f64::try_from(v.clone()).ok()
    } else {
        None
    }
}

/// How an inserted value is shown: strings as they are, integers plainly, floats with
/// up to four significant decimals.
pub fn as_text(v: &Value) -> String {
    if let Some(s) = v.as_str() {
        return s.to_string();
    }
    if v.is_number() && !v.is_integer() {
        if let Some(f) = as_f64(v) {
            return trim_float(f);
        }
    }
    v.to_string()
}

/// A value with full precision, for tooltips.
pub fn as_full_text(v: &Value) -> String {
    match as_f64(v) {
        Some(f) if !v.is_integer() => format!("{f:.6}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
        _ => as_text(v),
    }
}

fn trim_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    #[allow(clippy::cast_possible_truncation)] // a float's decimal exponent fits an i32
    let mag = f.abs().log10().floor() as i32;
    let decimals = usize::try_from((3 - mag).clamp(0, 12)).unwrap_or(0);
    let s = format!("{f:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_see_runs_and_helpers() {
        let env = environment();
        let ctx = Value::from_serialize(serde_json::json!({
            "r": {"runs": [{"a": {"b": 1.0}}, {"a": {"b": 3.0}}], "x": 0.25}
        }));
        let eval = |e: &str| evaluate(&env, e, &ctx);
        assert_eq!(
            as_f64(&eval("mean(r.runs | pluck('a.b'))").unwrap()),
            Some(2.0)
        );
        assert_eq!(as_f64(&eval("r.x * 2").unwrap()), Some(0.5));
        assert!(eval("r.nope").is_err(), "undefined paths are errors");
    }

    #[test]
    fn inserted_values_read_well() {
        assert_eq!(as_text(&Value::from(0.013_456_7)), "0.01346");
        assert_eq!(as_text(&Value::from(12_345)), "12345");
        assert_eq!(as_full_text(&Value::from(0.827_731_2)), "0.827731");
    }
}
