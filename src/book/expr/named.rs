//! Expressions a book names once and uses anywhere (`[expressions.NAME]` in book.toml):
//! each is a function of the environment, its parameters bound to the arguments and every
//! other name it reads looked up where it is called (so a claim evaluated with a seed left
//! out sees that seed left out inside it too).

use crate::book::parse::config::NamedExpr;
use minijinja::value::Rest;
use minijinja::{Environment, Error, ErrorKind, State, Value};
use std::cell::Cell;

thread_local! {
    /// How deep named expressions are calling one another here (a cycle ends in an error).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Deeper than this, a named expression is calling itself.
const MAX_DEPTH: usize = 32;

/// Registers each named expression as a function of `env`.
pub fn register(env: &mut Environment<'static>, named: &[(String, NamedExpr)]) {
    let all: std::sync::Arc<Vec<(String, NamedExpr)>> = std::sync::Arc::new(named.to_vec());
    for (name, n) in named {
        let (name, n, all) = (name.clone(), n.clone(), all.clone());
        let fname = name.clone();
        env.add_function(fname, move |state: &State, args: Rest<Value>| {
            call(state, &name, &n, &all, &args)
        });
    }
}

/// The names `expr` reads, and those the named expressions it calls read, at any depth:
/// a name one of them reads from the caller (a run) must be in the scope it is called in.
fn reads<'a>(expr: &'a str, all: &'a [(String, NamedExpr)], out: &mut Vec<&'a str>) {
    for w in super::words(expr) {
        if w.is_empty() || out.contains(&w) {
            continue;
        }
        out.push(w);
        if let Some((_, inner)) = all.iter().find(|(name, _)| name == w) {
            reads(&inner.expr, all, out);
        }
    }
}

fn call(
    state: &State,
    name: &str,
    n: &NamedExpr,
    all: &[(String, NamedExpr)],
    args: &[Value],
) -> Result<Value, Error> {
    if args.len() != n.params.len() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "`{name}` takes {} argument{} ({}), not {}",
                n.params.len(),
                if n.params.len() == 1 { "" } else { "s" },
                n.params.join(", "),
                args.len()
            ),
        ));
    }
    let depth = DEPTH.with(|d| {
        d.set(d.get() + 1);
        d.get()
    });
    let _back = Back;
    if depth > MAX_DEPTH {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("`{name}` calls itself, through the named expressions it uses"),
        ));
    }
    let mut scope = std::collections::BTreeMap::new();
    // Every other name the body reads, as the caller sees it (a run, another name), and
    // every name the named expressions it calls read.
    let mut words = Vec::new();
    reads(&n.expr, all, &mut words);
    for w in words {
        if !n.params.iter().any(|p| p == w) {
            if let Some(v) = state.lookup(w) {
                scope.insert(w.to_string(), v);
            }
        }
    }
    for (p, a) in n.params.iter().zip(args) {
        scope.insert(p.clone(), a.clone());
    }
    let compiled = state.env().compile_expression(&n.expr)?;
    let v = compiled.eval(Value::from(scope)).map_err(|e| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("in `{name}` (`{}`): {e}", n.expr),
        )
    })?;
    if v.is_undefined() {
        return Err(Error::new(
            ErrorKind::UndefinedError,
            format!("in `{name}` (`{}`): a path that does not exist", n.expr),
        ));
    }
    Ok(v)
}

/// Restores the depth when a call returns, however it returns.
struct Back;

impl Drop for Back {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(list: &[(&str, &[&str], &str)]) -> Vec<(String, NamedExpr)> {
        list.iter()
            .map(|(n, p, e)| {
                (
                    (*n).to_string(),
                    NamedExpr {
                        params: p.iter().map(|s| (*s).to_string()).collect(),
                        expr: (*e).to_string(),
                        about: String::new(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_named_expression_is_a_function_of_its_arguments_and_the_runs() {
        let mut env = super::super::environment();
        register(
            &mut env,
            &named(&[
                ("share", &["run"], "run.correct / run.total"),
                ("lift", &["a"], "share(a) - share(base)"),
                ("circle", &[], "circle()"),
                ("over_base", &["a"], "share(a) / share(base)"),
                ("doubled", &["a"], "2 * over_base(a)"),
            ]),
        );
        let ctx = Value::from_serialize(serde_json::json!({
            "x": {"correct": 3, "total": 4}, "base": {"correct": 1, "total": 4}
        }));
        let eval = |e: &str| super::super::evaluate(&env, e, &ctx);
        assert_eq!(eval("share(x)").unwrap().to_string(), "0.75");
        assert_eq!(eval("lift(x)").unwrap().to_string(), "0.5");
        assert!(eval("share(x, x)")
            .unwrap_err()
            .contains("takes 1 argument (run), not 2"));
        assert!(eval("share(base.correct)")
            .unwrap_err()
            .contains("in `share`"));
        assert!(eval("circle()").unwrap_err().contains("calls itself"));
        // A run read two names down (`base`, by `over_base` inside `doubled`) is still seen.
        assert_eq!(eval("doubled(x)").unwrap().to_string(), "6.0");
        assert_eq!(
            eval("share(x)").unwrap().to_string(),
            "0.75",
            "the depth is restored"
        );
    }
}
