//! `kind = "worked-example"`: the attention of one query over four two-dimensional keys,
//! from a run with `base = "worked-example"`: keys, values, scores and weights.

use super::Table;
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use minijinja::{context, Environment, Value};
use serde::Deserialize;

/// The fields of a worked-example table: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

/// The tokens of the chapter's worked example, in key order.
const TOKENS: [&str; 4] = ["the", "cat", "sat", "on"];

impl Table for Spec {
    fn rows(&self, runs: &[RunData], _: &Environment<'static>) -> Result<Value, Diagnostic> {
        let run = single(runs, "worked-example")?;
        let Some(w) = run.first().worked() else {
            return Err(Diagnostic::error(
                Code::Table,
                None,
                format!("`{}` is not a worked-example run", run.id),
            )
            .hint("use a run with base = \"worked-example\""));
        };
        let pair = |v: &[f64]| format!("({}, {})", v[0], v[1]);
        let rows: Vec<Value> = (0..w.keys.len())
            .map(|k| {
                context! {
                    token => TOKENS.get(k).unwrap_or(&"?"),
                    key => pair(&w.keys[k]),
                    value => pair(&w.values[k]),
                    score => format!("{:.2}", w.scores[k]),
                    weight => format!("{:.2}", w.weights[k]),
                }
            })
            .collect();
        Ok(context! { rows })
    }
}
