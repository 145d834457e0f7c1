//! `kind = "seed-spread"`: one row per seed of a multi-seed run, one column per
//! expression over that seed's result (`columns = [[label, expr], …]`, e.g. `run.params`).

use super::Table;
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::expr::as_text;
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
            let mut cells = Vec::new();
            for (_, expr) in &self.columns {
                let value = env
                    .compile_expression(expr)
                    .and_then(|c| c.eval(context! { run => v.clone() }));
                cells.push(match value {
                    Ok(x) if x.is_none() => "—".to_string(),
                    Ok(x) if !x.is_undefined() => as_text(&x),
                    Ok(_) | Err(_) => {
                        return Err(Diagnostic::error(
                            Code::Expression,
                            None,
                            format!("cannot evaluate column `{expr}`"),
                        )
                        .hint("columns are expressions over `run`, e.g. run.train.first_below"));
                    }
                });
            }
            rows.push(context! { seed => result.seed, cells });
        }
        let labels: Vec<&str> = self.columns.iter().map(|(l, _)| l.as_str()).collect();
        Ok(context! { labels, rows })
    }
}
