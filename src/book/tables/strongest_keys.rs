//! `kind = "strongest-keys"`: for each query of the probe sequence, the key that gets the
//! most weight in each head of the last block, with that weight.

use super::Table;
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use minijinja::{context, Environment, Value};
use serde::Deserialize;

/// The fields of a strongest-keys table: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

impl Table for Spec {
    fn rows(&self, runs: &[RunData], _: &Environment<'static>) -> Result<Value, Diagnostic> {
        let run = single(runs, "strongest-keys")?;
        let last = run.train("this table")?.attention.strongest.last();
        let Some(last) = last.filter(|heads| !heads.is_empty()) else {
            return Err(Diagnostic::error(
                Code::Table,
                None,
                format!("run `{}` recorded no attention weights", run.id),
            ));
        };
        let rows: Vec<Value> = (0..last[0].len())
            .map(|row| {
                let q = &last[0][row];
                let keys: Vec<Value> = last
                    .iter()
                    .map(|head| {
                        let s = &head[row];
                        context! { token => &s.key_token, position => s.key, weight => format!("{:.2}", s.weight) }
                    })
                    .collect();
                context! { token => &q.query_token, position => q.query, keys }
            })
            .collect();
        Ok(context! { heads => (1..=last.len()).collect::<Vec<_>>(), rows })
    }
}
