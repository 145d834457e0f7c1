//! Helpers that compare two runs: `differs(a, b)` (the configuration keys they differ in)
//! and `paired(a, b, "expr")` (two ensembles seed by seed, over the seeds both have).

#![allow(
    clippy::needless_pass_by_value,
    reason = "minijinja hands a helper its arguments by value"
)]

use crate::book::contrast::{self, Difference};
use minijinja::value::{Enumerator, Object, ObjectRepr};
use minijinja::{Error, ErrorKind, State, Value};
use std::sync::Arc;

/// The keys two runs' configurations differ in: a list of `{key, a, b}`, written as prose
/// when inserted ("train.lr 0.1 (not 0.003)"; "nothing").
#[derive(Debug)]
pub struct Differences(pub Vec<Difference>);

impl Object for Differences {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let d = self.0.get(key.as_usize()?)?;
        Some(minijinja::context! {
            key => d.key,
            a => Value::from_serialize(&d.a),
            b => Value::from_serialize(&d.b),
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.0.len())
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&contrast::prose(&self.0))
    }
}

/// A run's configuration as JSON: a single run's `config`, or an ensemble's.
fn config_of(run: &Value, which: &str) -> Result<serde_json::Value, Error> {
    let c = run.get_attr("config").ok().filter(|c| !c.is_undefined());
    let Some(c) = c else {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("differs: the {which} argument is not a run (it has no `config`): pass a run by its id, e.g. `differs(sgd, reference)`"),
        ));
    };
    serde_json::to_value(&c).map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))
}

/// `differs(a, b)`: the keys in which run `a`'s resolved configuration differs from `b`'s,
/// seeds aside, each with both values.
pub fn differs(a: Value, b: Value) -> Result<Value, Error> {
    let ds = contrast::differences(&config_of(&a, "first")?, &config_of(&b, "second")?);
    Ok(Value::from_object(Differences(ds)))
}

/// A run's seeds and their results: an ensemble's `seeds` and `runs`, or a single run.
fn seeds_of(run: &Value) -> Result<Vec<(u64, Value)>, Error> {
    let not_run = || {
        Error::new(
            ErrorKind::InvalidOperation,
            "paired: an argument is not a run: pass two runs by their ids, e.g. `paired(clip, reference, 'run.train.test.accuracy')`",
        )
    };
    let seed_of = |v: &Value| v.as_i64().and_then(|s| u64::try_from(s).ok());
    if let (Ok(seeds), Ok(runs)) = (run.get_attr("seeds"), run.get_attr("runs")) {
        if !seeds.is_undefined() && !runs.is_undefined() {
            let seeds: Vec<Value> = seeds.try_iter()?.collect();
            let runs: Vec<Value> = runs.try_iter()?.collect();
            return seeds
                .iter()
                .zip(runs)
                .map(|(s, r)| seed_of(s).map(|s| (s, r)).ok_or_else(not_run))
                .collect();
        }
    }
    let seed = run.get_attr("seed").ok().as_ref().and_then(seed_of);
    seed.map(|s| vec![(s, run.clone())]).ok_or_else(not_run)
}

/// `paired(a, b, "expr")`: `expr` evaluated with `run` as each seed of `a` and of `b`, over
/// the seeds both have (in `a`'s order), compared seed by seed:
///
/// - `seeds`, `a`, `b`: the shared seeds and each side's values;
/// - `diffs`: `a − b` per seed; `mean`: their mean; `se`: its standard error (the sample
///   standard deviation over √n; none with one seed);
/// - `n`; `above`, `below`, `equal`: in how many seeds `a`'s value is greater, smaller, the same.
pub fn paired(state: &State, a: Value, b: Value, expr: String) -> Result<Value, Error> {
    let (sa, sb) = (seeds_of(&a)?, seeds_of(&b)?);
    let shared: Vec<(u64, Value, Value)> = sa
        .into_iter()
        .filter_map(|(s, ra)| {
            sb.iter()
                .find(|(t, _)| *t == s)
                .map(|(_, rb)| (s, ra, rb.clone()))
        })
        .collect();
    if shared.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "paired: the two runs share no seed, so there are no pairs: give them the same `seeds`",
        ));
    }
    let compiled = state.env().compile_expression(&expr)?;
    let value = |run: &Value, seed: u64| -> Result<f64, Error> {
        let v = compiled.eval(minijinja::context! { run => run.clone() })?;
        super::as_f64(&v).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "paired: `{expr}` gives {} for seed {seed}, not a number",
                    super::as_short_text(&v)
                ),
            )
        })
    };
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for (s, ra, rb) in &shared {
        xs.push(value(ra, *s)?);
        ys.push(value(rb, *s)?);
    }
    let diffs: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| x - y).collect();
    #[allow(clippy::cast_precision_loss, reason = "a handful of seeds")]
    let n = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / n;
    let se = (diffs.len() > 1).then(|| {
        let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (var / n).sqrt()
    });
    let count =
        |f: &dyn Fn(f64, f64) -> bool| xs.iter().zip(&ys).filter(|(x, y)| f(**x, **y)).count();
    Ok(minijinja::context! {
        seeds => shared.iter().map(|(s, _, _)| *s).collect::<Vec<_>>(),
        a => xs.clone(),
        b => ys.clone(),
        diffs => diffs,
        n => shared.len(),
        mean => mean,
        se => se,
        above => count(&|x, y| x > y),
        below => count(&|x, y| x < y),
        equal => count(&|x, y| x.total_cmp(&y).is_eq()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{environment, evaluate};
    use minijinja::Value;

    fn ctx() -> Value {
        let run = |seed: u64, spikes: u64, lr: f64| serde_json::json!({"seed": seed, "config": {"train": {"lr": lr, "optimizer": "adamw"}}, "spikes": spikes});
        let ens = |runs: Vec<serde_json::Value>, lr: f64| {
            let seeds: Vec<u64> = runs.iter().map(|r| r["seed"].as_u64().unwrap()).collect();
            serde_json::json!({"seeds": seeds, "runs": runs, "config": {"train": {"lr": lr, "optimizer": "adamw"}}})
        };
        Value::from_serialize(serde_json::json!({
            "clip": ens(vec![run(0, 48, 0.01), run(1, 1, 0.01), run(2, 11, 0.01)], 0.01),
            "reference": ens(vec![run(0, 32, 0.003), run(1, 5, 0.003), run(2, 6, 0.003), run(3, 9, 0.003)], 0.003),
            "other": ens(vec![run(7, 1, 0.003)], 0.003),
            "single": run(1, 4, 0.003),
        }))
    }

    #[test]
    fn differs_names_keys_and_values() {
        let env = environment();
        let c = ctx();
        let text = |e: &str| evaluate(&env, e, &c).map(|v| v.to_string());
        assert_eq!(
            text("differs(clip, reference)").unwrap(),
            "train.lr 0.01 (not 0.003)"
        );
        assert_eq!(text("differs(reference, single)").unwrap(), "nothing");
        assert_eq!(text("differs(clip, reference) | length").unwrap(), "1");
        assert_eq!(
            text("(differs(clip, reference) | first).key").unwrap(),
            "train.lr"
        );
        assert!(text("differs(clip.runs, reference)")
            .unwrap_err()
            .contains("not a run"));
    }

    #[test]
    fn paired_compares_seed_by_seed() {
        let env = environment();
        let c = ctx();
        let p = |e: &str| evaluate(&env, e, &c).map(|v| v.to_string());
        // Seeds 0, 1, 2 are shared (reference's seed 3 has no pair): 48 vs 32, 1 vs 5, 11 vs 6.
        let base = "paired(clip, reference, 'run.spikes')";
        assert_eq!(p(&format!("{base}.seeds")).unwrap(), "[0, 1, 2]");
        assert_eq!(p(&format!("{base}.diffs")).unwrap(), "[16.0, -4.0, 5.0]");
        assert_eq!(p(&format!("{base}.above")).unwrap(), "2");
        assert_eq!(p(&format!("{base}.below")).unwrap(), "1");
        assert_eq!(p(&format!("{base}.n")).unwrap(), "3");
        assert_eq!(p(&format!("{base}.mean")).unwrap(), "5.666666666666667");
        // sd of (16, -4, 5) is 10.0167; over √3: 5.7831.
        let se: f64 = p(&format!("{base}.se")).unwrap().parse().unwrap();
        assert!((se - 5.783_117).abs() < 1e-5, "{se}");
        assert_eq!(
            p("paired(single, reference, 'run.spikes').diffs").unwrap(),
            "[-1.0]"
        );
        assert_eq!(
            p("paired(single, reference, 'run.spikes').se is none").unwrap(),
            "True"
        );
        assert!(p("paired(clip, other, 'run.spikes')")
            .unwrap_err()
            .contains("share no seed"));
        assert!(p("paired(clip, reference, 'run.config')")
            .unwrap_err()
            .contains("not a number"));
    }
}
