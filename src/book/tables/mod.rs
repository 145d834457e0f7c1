//! Tables: one file per table kind, each turning its runs into the rows of its template,
//! `templates/tables/<kind>.html`. Nothing here writes HTML.
//!
//! To add a kind, write `spread.rs` with `pub struct Spec` (its own TOML fields)
//! implementing [`Table`], its template, and register it with one line in the list below.

use super::diag::Diagnostic;
use super::kinds::{kinds, Kinds, RunData};
use minijinja::{Environment, Value};

kinds! {
    /// A table directive's `kind`, with that kind's own fields.
    pub enum TableKind: "table", dyn Table {
        AccuracyByLength(accuracy_by_length) = "accuracy-by-length",
        StrongestKeys(strongest_keys) = "strongest-keys",
        WorkedExample(worked_example) = "worked-example",
        SeedSpread(seed_spread) = "seed-spread",
        Results(results) = "results",
    }
}

impl TableKind {
    /// Its template, under the project's `templates/`.
    pub fn template(&self) -> String {
        template(self.name())
    }
}

/// The template of the table kind called `name`.
fn template(name: &str) -> String {
    format!("tables/{name}.html")
}

/// What a table kind does: give its template the rows.
pub trait Table {
    /// The template's context; a problem is reported at the directive's fence. `env`
    /// evaluates expressions (see `expr`).
    fn rows(&self, runs: &[RunData], env: &Environment<'static>) -> Result<Value, Diagnostic>;
}

/// One cell: `expr` evaluated in `scope`, as text (`—` for none); `at` names the cell in
/// the error, which says why it cannot be evaluated.
pub(crate) fn cell(
    env: &Environment<'static>,
    expr: &str,
    scope: &Value,
    at: &str,
) -> Result<String, crate::book::diag::Diagnostic> {
    use crate::book::codes::Code;
    use crate::book::diag::Diagnostic;
    let fail = |why: String| {
        Diagnostic::error(
            Code::Expression,
            None,
            format!("cannot evaluate {at}: `{expr}` {why}"),
        )
        .hint("`revtx-book show RUN` lists every path an expression can read on a run")
    };
    let compiled = env.compile_expression(expr).map_err(|e| {
        fail(format!(
            "does not parse: {}",
            e.detail().unwrap_or(&e.to_string())
        ))
    })?;
    match compiled.eval(scope) {
        Ok(x) if x.is_none() => Ok("\u{2014}".to_string()),
        Ok(x) if x.is_undefined() => Err(fail("reads a path the run does not have".into())),
        // A division by zero or an overflow: no number a table may print.
        Ok(x) if f64::try_from(x.clone()).is_ok_and(|f| !f.is_finite()) => Err(fail(format!(
            "gives {x}, which is not a number a cell can show (a division by zero?)"
        ))),
        Ok(x) => Ok(crate::book::expr::as_text(&x)),
        Err(e) if e.kind() == minijinja::ErrorKind::UndefinedError => {
            Err(fail("reads a path the run does not have".into()))
        }
        Err(e) => Err(fail(format!(
            "fails: {}",
            e.detail()
                .map_or_else(|| e.to_string(), ToString::to_string)
        ))),
    }
}

/// A fraction as a percentage with one decimal: `94.6%`.
fn percent(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::kinds::Kinds;

    /// Every kind has its template, and minijinja compiles it.
    #[test]
    fn every_table_kind_has_its_template() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
        assert_eq!(TableKind::NAMES.len(), 5, "the kinds! list above");
        for name in TableKind::NAMES {
            let path = root.join(template(name));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut env = Environment::new();
            env.add_template_owned(template(name), text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}
