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

impl Table for Spec {
    fn rows(&self, runs: &[RunData], env: &Environment<'static>) -> Result<Value, crate::book::diag::Diagnostic> {
        // Each run as expressions see it (`RunData::value`): shared, never converted again.
        let all: std::collections::BTreeMap<String, Value> = runs
            .iter()
            .map(|r| (r.id.to_string(), r.value.clone()))
            .collect();
        let mut rows = Vec::new();
        for r in runs {
            let mut scope = all.clone();
            scope.insert("run".into(), r.value.clone());
            let scope = Value::from(scope);
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
