//! `kind = "seed-spread"`: one row per seed of a multi-seed run, one column per
//! expression over that seed's result (`columns = [[label, expr], …]`, e.g. `run.params`).

use super::{cell, Table};
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use minijinja::{context, Environment, Value};
use serde::Deserialize;

/// The fields of a seed-spread table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// `[label, expression]` pairs; the expression sees one seed's result as `run`.
    pub columns: Vec<(String, String)>,
}

impl Table for Spec {
    fn rows(&self, runs: &[RunData], env: &Environment<'static>) -> Result<Value, Diagnostic> {
        let run = single(runs, "seed-spread")?;
        let mut rows = Vec::new();
        for result in &run.seeds {
            let v = Value::from_serialize(result);
            let scope = context! { run => v };
            let cells = self
                .columns
                .iter()
                .map(|(label, expr)| {
                    cell(env, expr, &scope, &format!("seed {}, column `{label}`", result.seed))
                })
                .collect::<Result<Vec<String>, _>>()?;
            rows.push(context! { seed => result.seed, cells });
        }
        let labels: Vec<&str> = self.columns.iter().map(|(l, _)| l.as_str()).collect();
        Ok(context! { labels, rows })
    }
}
