//! `kind = "accuracy-by-length"`: exact matches per string length of the test set, one
//! row per run, with the overall accuracy.

use super::{percent, Table};
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use minijinja::{context, Environment, Value};
use serde::Deserialize;

/// The fields of an accuracy table: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

impl Table for Spec {
    fn rows(&self, runs: &[RunData], _: &Environment<'static>) -> Result<Value, Diagnostic> {
        let mut tests = Vec::new();
        let mut lengths: Vec<usize> = Vec::new();
        for run in runs {
            let t = run.train("this table")?;
            for b in &t.test.by_length {
                if !lengths.contains(&b.len) {
                    lengths.push(b.len);
                }
            }
            tests.push((run.label, &t.test));
        }
        lengths.sort_unstable();
        let rows: Vec<Value> = tests
            .iter()
            .map(|(label, test)| {
                let cells: Vec<String> = lengths
                    .iter()
                    .map(|n| {
                        test.by_length
                            .iter()
                            .find(|b| b.len == *n)
                            .map(|b| format!("{}/{}", b.correct, b.total))
                            .unwrap_or_default()
                    })
                    .collect();
                context! { label, cells, all => percent(test.accuracy) }
            })
            .collect();
        Ok(context! { lengths, rows })
    }
}
