//! Tables: one file per table kind, each turning its runs into the rows of its template,
//! `templates/tables/<kind>.html`. Nothing here writes HTML.
//!
//! To add a kind, write `spread.rs` with `pub struct Spec` (its own TOML fields)
//! implementing [`Table`], its template, and register it with one line in the list below.

use super::diag::Diagnostic;
use super::kinds::{kinds, RunData};
use minijinja::{Environment, Value};

kinds! {
    /// A table directive's `kind`, with that kind's own fields.
    pub enum TableKind: "table", dyn Table {
        AccuracyByLength(accuracy_by_length) = "accuracy-by-length",
        StrongestKeys(strongest_keys) = "strongest-keys",
        WorkedExample(worked_example) = "worked-example",
        SeedSpread(seed_spread) = "seed-spread",
    }
}

/// What a table kind does: give its template the rows.
pub trait Table {
    /// The template's context; a problem is reported at the directive's fence. `env`
    /// evaluates expressions (see `expr`).
    fn rows(&self, runs: &[RunData], env: &Environment<'static>) -> Result<Value, Diagnostic>;
}

/// A fraction as a percentage with one decimal: `94.6%`.
fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}
