//! What an expression that fails tells its author: where, what went wrong, and what to
//! write instead (an ensemble read as one run, a filter or helper that does not exist, a
//! name that is not a run). Chapters and `revtx-book eval` report through here.

use super::{evaluate, operands, Value};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Span};
use crate::book::runs::Results;
use minijinja::{Environment, ErrorKind};

/// The helpers `environment()` registers as functions, by name (a test holds the list to
/// the environment).
pub const FUNCTIONS: &[&str] = &[
    "abs",
    "at",
    "count",
    "differs",
    "exp",
    "failing",
    "ln",
    "max",
    "mean",
    "median",
    "min",
    "num",
    "of",
    "paired",
    "passing",
    "pct",
    "plural",
    "pow",
    "rises",
    "sd",
    "series",
    "spike_spans",
    "spikes",
    "sqrt",
    "sum",
    "word",
    "zip",
];

/// The filters `environment()` adds, by name.
pub const FILTERS: &[&str] = &[
    "covers", "each", "looks", "pluck", "prefix", "reads", "spikes", "wrong_at",
];

/// minijinja's own filters an expression is most likely to want.
pub const BUILTIN_FILTERS: &[&str] = &[
    "abs",
    "capitalize",
    "first",
    "join",
    "last",
    "length",
    "list",
    "map",
    "max",
    "min",
    "reject",
    "rejectattr",
    "reverse",
    "round",
    "select",
    "selectattr",
    "sort",
    "sum",
    "unique",
];

/// Evaluates `expr` against `ctx`, or the diagnostic a chapter gets at `span`. `Ok(None)`:
/// it names a declared run that has no result, which its own error reports already.
pub fn evaluate_or_report(
    env: &Environment<'static>,
    ctx: &Value,
    results: &Results,
    expr: &str,
    span: &Span,
) -> Result<Value, Option<Diagnostic>> {
    if let Err(e) = env.compile_expression(expr) {
        return Err(Some(
            Diagnostic::error(
                Code::Expression,
                Some(span.clone()),
                "cannot parse this expression",
            )
            .label(e.to_string())
            .hint("expressions look like `reference.train.test.accuracy`"),
        ));
    }
    let err = match evaluate(env, expr, ctx) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let is_run = |w: &str| results.by_run.contains_key(w);
    if words(expr).any(|w| !is_run(w) && results.plans.iter().any(|p| p.id == w)) {
        return Err(None);
    }
    let d = Diagnostic::error(
        Code::Expression,
        Some(span.clone()),
        format!("cannot evaluate `{expr}`"),
    );
    Err(Some(explain(env, ctx, results, expr, &err, d)))
}

/// The label, notes and hint of a failed evaluation.
fn explain(
    env: &Environment<'static>,
    ctx: &Value,
    results: &Results,
    expr: &str,
    err: &str,
    d: Diagnostic,
) -> Diagnostic {
    let is_run = |w: &str| results.by_run.contains_key(w);
    // A filter or function that does not exist: which one, and what there is.
    if let Some(name) = unknown(env, expr, "filter") {
        let mut all: Vec<&str> = FILTERS.iter().chain(BUILTIN_FILTERS).copied().collect();
        all.sort_unstable();
        all.dedup();
        return d
            .label(format!("there is no filter `{name}`"))
            .hint(suggest(&name, &all, "filters"));
    }
    if let Some(name) = unknown(env, expr, "function") {
        return d
            .label(format!("there is no helper `{name}`"))
            .hint(suggest(&name, FUNCTIONS, "helpers"));
    }
    // An ensemble read as if it were one run: `copy.train…`.
    for op in operands(expr, &is_run) {
        let id: String = op
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let Some(rest) = op[id.len()..].strip_prefix('.') else {
            continue;
        };
        let field: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let seeds = results.by_run.get(&id).map_or(0, Vec::len);
        let ensemble = results
            .plans
            .iter()
            .any(|p| p.id == id && p.seeds.len() > 1);
        if ensemble && !matches!(field.as_str(), "seeds" | "runs" | "config") {
            let path = rest.split(['|', ' ']).next().unwrap_or(rest).trim();
            return d
                .label(format!("`{id}` is an ensemble of {seeds} seeds: it has no `{field}` of its own"))
                .note(format!("an ensemble has `{id}.seeds`, `{id}.runs` (one result per seed) and `{id}.config`"))
                .hint(format!(
                    "read one seed as `{id}.runs[0].{path}`, or every seed as `{id}.runs | pluck('{path}')`"
                ));
        }
        // A path that stops short: say what the last existing value holds.
        if let Some(missing) = missing_step(env, ctx, &op) {
            return d
                .label(err.to_string())
                .note(missing)
                .hint(format!("`revtx-book show {id}` lists every path a run has"));
        }
    }
    let first = words(expr).find(|w| !w.is_empty()).unwrap_or("");
    if is_run(first) || !operands(expr, &is_run).is_empty() {
        d.label(err.to_string())
            .hint("`revtx-book show RUN` lists every path a run has (and the Runs appendix links its result.json)")
    } else {
        d.label(err.to_string()).hint(format!(
            "`{first}` is not a run; declared runs: {}",
            results.declared().join(", ")
        ))
    }
}

/// The name of a filter (`kind = "filter"`) or function the expression uses and the
/// environment lacks.
fn unknown(env: &Environment<'static>, expr: &str, kind: &str) -> Option<String> {
    let b = expr.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' || b[i] == b'"' {
            let q = b[i];
            i += 1;
            while i < b.len() && b[i] != q {
                i += 1;
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && ident(b[i]) {
            i += 1;
        }
        if i > start {
            let name = &expr[start..i];
            let before = expr[..start].trim_end();
            let is_filter = before.ends_with('|');
            let is_call = b.get(i) == Some(&b'(') && !before.ends_with('.');
            let probe = match (kind, is_filter, is_call) {
                ("filter", true, _) => format!("[1] | {name}"),
                ("function", false, true) => format!("{name}()"),
                _ => continue,
            };
            let missing = match env.compile_expression(&probe).map(|c| c.eval(())) {
                Ok(Err(e)) => matches!(
                    e.kind(),
                    ErrorKind::UnknownFilter | ErrorKind::UnknownFunction
                ),
                _ => false,
            };
            if missing {
                return Some(name.to_string());
            }
        } else {
            i += 1;
        }
    }
    None
}

/// "did you mean `pluck`?" and the list.
fn suggest(name: &str, known: &[&str], what: &str) -> String {
    let close = known
        .iter()
        .map(|k| (distance(name, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min();
    let list = known.join(", ");
    match close {
        Some((_, k)) => format!("did you mean `{k}`? {what}: {list}"),
        None => format!("{what}: {list}"),
    }
}

/// Levenshtein distance, for a suggestion.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// For a path that does not exist (`r.train.tset.accuracy`): the step that is missing and
/// the keys the value before it has.
fn missing_step(env: &Environment<'static>, ctx: &Value, op: &str) -> Option<String> {
    let path = op.split('|').next()?.trim();
    if path.contains('[') {
        return None;
    }
    let steps: Vec<&str> = path.split('.').collect();
    for k in 1..steps.len() {
        let prefix = steps[..=k].join(".");
        if evaluate(env, &prefix, ctx).is_err() {
            let parent = steps[..k].join(".");
            let v = evaluate(env, &parent, ctx).ok()?;
            let keys: Vec<String> = v
                .try_iter()
                .ok()?
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect();
            if keys.is_empty() {
                return None;
            }
            return Some(format!(
                "`{parent}` has no `{}`; it has: {}",
                steps[k],
                keys.join(", ")
            ));
        }
    }
    None
}

/// The words of an expression that could name runs: runs of letters, digits, `_` and `-`.
pub fn words(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists the hints give are the environment's: every name in them is registered.
    #[test]
    fn the_named_helpers_exist() {
        let env = super::super::environment();
        let globals: Vec<&str> = env.globals().map(|(n, _)| n).collect();
        for f in FUNCTIONS {
            assert!(
                globals.contains(f),
                "`{f}` is not a function of the environment"
            );
        }
        for f in FILTERS.iter().chain(BUILTIN_FILTERS) {
            assert_eq!(unknown(&env, &format!("x | {f}"), "filter"), None, "{f}");
        }
        assert_eq!(
            unknown(&env, "x | pluk('a')", "filter").as_deref(),
            Some("pluk")
        );
        assert_eq!(
            unknown(&env, "meen(x)", "function").as_deref(),
            Some("meen")
        );
        assert_eq!(
            unknown(&env, "x.items()", "function"),
            None,
            "a method is not a helper"
        );
        assert!(suggest("pluk", FILTERS, "filters").starts_with("did you mean `pluck`?"));
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
