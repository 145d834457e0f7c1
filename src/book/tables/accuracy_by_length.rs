//! `kind = "accuracy-by-length"`: exact matches per string length of the test set (or,
//! with `set = "long"`, of the longer strings), one row per run, with the overall accuracy.

use super::{percent, Table};
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use minijinja::{context, Environment, Value};
use serde::Deserialize;

/// The fields of an accuracy table beyond the common ones: which evaluation it counts.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// `"test"` (the default): the test strings, of the training lengths; `"long"`: the
    /// longer strings (`run.train.long`).
    #[serde(default)]
    set: Set,
}

/// Which of a run's evaluations a table counts.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Set {
    #[default]
    Test,
    Long,
}

impl Table for Spec {
    fn rows(&self, runs: &[RunData], _: &Environment<'static>) -> Result<Value, Diagnostic> {
        let mut tests = Vec::new();
        let mut lengths: Vec<usize> = Vec::new();
        for run in runs {
            let t = run.train("this table")?;
            let eval = match self.set {
                Set::Test => &t.test,
                Set::Long => &t.long,
            };
            for b in &eval.by_length {
                if !lengths.contains(&b.len) {
                    lengths.push(b.len);
                }
            }
            tests.push((run.label, eval));
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
