//! `kind = "results"`: one row per run the table lists (labelled by `labels`), one column
//! per expression (`columns = [[label, expr], …]`). In a column's expression `run` is the
//! row's run as every expression sees it (a result, or `runs` and `seeds` for an
//! ensemble), and every run the table lists is there by its id too: results compared
//! across runs and ensembles, computed, never typed by hand.

use super::{cell, Table};
use crate::book::kinds::RunData;
use minijinja::{context, Environment, Value};
use serde::Deserialize;

/// The fields of a results table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// `[label, expression]` pairs, evaluated once per row; at least one.
    #[serde(deserialize_with = "at_least_one")]
    pub columns: Vec<(String, String)>,
}

/// `columns = []` would make a table of run names only: refused at the key, as a table of
/// no runs is.
fn at_least_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    let columns = Vec::<(String, String)>::deserialize(d)?;
    if columns.is_empty() {
        return Err(serde::de::Error::custom(
            "a results table has no columns: give at least one, e.g. `columns = [[\"accuracy\", \"run.train.test.accuracy\"]]`",
        ));
    }
    Ok(columns)
}

/// A run as expressions see it (`expr::run_value`): an ensemble is a run of several seeds.
fn as_expression(run: &RunData) -> serde_json::Value {
    crate::book::expr::run_value(&run.seeds, run.seeds.len() > 1)
}

impl Table for Spec {
    fn rows(&self, runs: &[RunData], env: &Environment<'static>) -> Result<Value, crate::book::diag::Diagnostic> {
        let all: serde_json::Map<String, serde_json::Value> = runs
            .iter()
            .map(|r| (r.id.to_string(), as_expression(r)))
            .collect();
        let mut rows = Vec::new();
        for r in runs {
            let mut scope = all.clone();
            scope.insert("run".into(), as_expression(r));
            let scope = Value::from_serialize(serde_json::Value::Object(scope));
            let cells = self
                .columns
                .iter()
                .map(|(label, expr)| cell(env, expr, &scope, &format!("row `{}`, column `{label}`", r.id)))
                .collect::<Result<Vec<String>, _>>()?;
            rows.push(context! { label => r.label, cells });
        }
        let labels: Vec<&str> = self.columns.iter().map(|(l, _)| l.as_str()).collect();
        Ok(context! { labels, rows })
    }
}
