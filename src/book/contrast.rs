//! What two runs differ in: their resolved configurations compared key by key (seeds
//! aside), the contrasts a run block declares (`contrast = { with, varies }`), checked here.

use super::codes::Code;
use super::diag::{Diagnostic, Span};
use super::runs::RunPlan;
use revtx_spec::experiments::RunConfig;
use serde_json::Value;

/// One key in which two configurations differ, with both values.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// The dotted key, e.g. `train.weight_decay`.
    pub key: String,
    pub a: Value,
    pub b: Value,
}

/// A contrast a run block declares: the run it compares with, and the keys it varies.
#[derive(Clone, Debug, PartialEq)]
pub struct Contrast {
    pub with: String,
    pub varies: Vec<String>,
    /// Where the block writes `contrast`, `with` and `varies`.
    pub span: Span,
    pub with_span: Span,
    pub varies_span: Span,
}

/// The keys in which two configurations (as JSON) differ, in key order: nested tables are
/// walked, anything else (a number, a string, a list) is compared whole.
pub fn differences(a: &Value, b: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out);
    out
}

fn walk(a: &Value, b: &Value, at: String, out: &mut Vec<Difference>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let key = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                walk(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    key,
                    out,
                );
            }
        }
        _ if a == b => {}
        _ => out.push(Difference {
            key: at,
            a: a.clone(),
            b: b.clone(),
        }),
    }
}

/// The keys in which two runs' configurations differ.
pub fn between(a: &RunConfig, b: &RunConfig) -> Vec<Difference> {
    let json = |c: &RunConfig| serde_json::to_value(c).unwrap_or_default();
    differences(&json(a), &json(b))
}

/// Every key a configuration has, dotted (the leaves `differences` compares).
fn keys(v: &Value, at: &str, out: &mut Vec<String>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            let key = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if x.is_object() {
                keys(x, &key, out);
            }
            out.push(key);
        }
    }
}

/// A value as a sentence shows it: strings bare, numbers as JSON writes them.
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

/// The differences as prose: "`train.lr` 0.1 (not 0.003), `train.optimizer` sgd (not
/// adamw)"; "nothing" when there are none.
pub fn prose(ds: &[Difference]) -> String {
    if ds.is_empty() {
        return "nothing".into();
    }
    let parts: Vec<String> = ds
        .iter()
        .map(|d| format!("{} {} (not {})", d.key, show(&d.a), show(&d.b)))
        .collect();
    parts.join(", ")
}

/// Checks each declared contrast against the resolved plans: the run it names must exist,
/// each key it varies must be a key of the configuration and must differ, and nothing else
/// may differ (`confounded`).
pub fn check(contrasts: &[(String, Contrast)], plans: &[RunPlan], diags: &mut Vec<Diagnostic>) {
    for (id, c) in contrasts {
        let (Some(this), Some(that)) = (
            plans.iter().find(|p| &p.id == id),
            plans.iter().find(|p| p.id == c.with),
        ) else {
            if plans.iter().any(|p| &p.id == id) {
                let known: Vec<&str> = plans.iter().map(|p| p.id.as_str()).collect();
                diags.push(Diagnostic::unknown_run(
                    "contrast",
                    &c.with,
                    Some(c.with_span.clone()),
                    &known,
                ));
            }
            continue;
        };
        if this.id == that.id {
            diags.push(Diagnostic::error(
                Code::Confounded,
                Some(c.with_span.clone()),
                format!("run `{id}` declares a contrast with itself"),
            ));
            continue;
        }
        let mut all = Vec::new();
        keys(
            &serde_json::to_value(&this.config).unwrap_or_default(),
            "",
            &mut all,
        );
        let ds = between(&this.config, &that.config);
        for v in &c.varies {
            if !all.contains(v) {
                diags.push(
                    Diagnostic::error(
                        Code::Confounded,
                        Some(c.varies_span.clone()),
                        format!("`{v}` is not a key of a run's configuration"),
                    )
                    .hint("write a dotted key as `show` prints it, e.g. `train.warmup`"),
                );
            } else if !ds
                .iter()
                .any(|d| d.key == *v || d.key.starts_with(&format!("{v}.")))
            {
                diags.push(
                    Diagnostic::error(
                        Code::Confounded,
                        Some(c.varies_span.clone()),
                        format!(
                            "run `{id}` declares that it varies `{v}` against `{}`, but both have {}",
                            c.with,
                            show(&lookup(&this.config, v))
                        ),
                    )
                    .hint("drop the key from `varies`, or set it in the run block"),
                );
            }
        }
        let declared = |k: &str| {
            c.varies
                .iter()
                .any(|v| k == v || k.starts_with(&format!("{v}.")))
        };
        let extra: Vec<&Difference> = ds.iter().filter(|d| !declared(&d.key)).collect();
        if !extra.is_empty() {
            let shown: Vec<Difference> = extra.iter().map(|d| (*d).clone()).collect();
            diags.push(
                Diagnostic::error(
                    Code::Confounded,
                    Some(c.span.clone()),
                    format!(
                        "run `{id}` is declared to vary {} against `{}`, but also differs in {}",
                        series(&c.varies),
                        c.with,
                        prose(&shown)
                    ),
                )
                .note(format!(
                    "a comparison of `{id}` with `{}` would credit {} with what these do too",
                    c.with,
                    series(&c.varies)
                ))
                .hint(format!(
                    "set {} as `{}` has {} in the run block, or declare {} among `varies`",
                    if extra.len() == 1 { "it" } else { "them" },
                    c.with,
                    if extra.len() == 1 { "it" } else { "them" },
                    if extra.len() == 1 { "it" } else { "them" },
                )),
            );
        }
    }
}

/// The parts of a condition joined by `and` or `or` at its top level (outside brackets and
/// strings): `a.x < a.y and b.x < b.y` is two statements about one run each, not a
/// comparison of `a` with `b`.
pub fn atoms(expr: &str) -> Vec<&str> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ if depth == 0 => {
                    let rest = &expr[i..];
                    let word_start =
                        i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'_';
                    for op in ["and", "or"] {
                        let end = i + op.len();
                        let word_end =
                            end >= b.len() || !b[end].is_ascii_alphanumeric() && b[end] != b'_';
                        if word_start && word_end && rest.starts_with(op) {
                            out.push(expr[start..i].trim());
                            start = end;
                            i = end - 1;
                            break;
                        }
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    out.push(expr[start..].trim());
    out.retain(|a| !a.is_empty());
    out
}

/// Whether either run declares a contrast with the other.
pub fn declared(plans: &[RunPlan], a: &str, b: &str) -> bool {
    let says = |x: &str, y: &str| {
        plans
            .iter()
            .any(|p| p.id == x && p.contrast.as_ref().is_some_and(|c| c.with == y))
    };
    says(a, b) || says(b, a)
}

/// A claim that compares runs differing in more than one key with no contrast declared
/// between them: the first such pair (in the order the expression names them) and its
/// differences.
pub fn undeclared<'p>(
    runs: &[String],
    plans: &'p [RunPlan],
) -> Option<(&'p str, &'p str, Vec<Difference>)> {
    let plan = |id: &str| plans.iter().find(|p| p.id == id);
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            let (Some(pa), Some(pb)) = (plan(a), plan(b)) else {
                continue;
            };
            let ds = between(&pa.config, &pb.config);
            if ds.len() > 1 && !declared(plans, a, b) {
                return Some((pa.id.as_str(), pb.id.as_str(), ds));
            }
        }
    }
    None
}

/// How each run a figure or table sets side by side differs from its baseline: the run its
/// contrast names, when that run is among `ids`, else the first. `(run, baseline,
/// differences)` for every run but the first.
pub fn side_by_side(ids: &[String], plans: &[RunPlan]) -> Vec<(String, String, Vec<Difference>)> {
    let plan = |id: &str| plans.iter().find(|p| p.id == id);
    let Some(first) = ids.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for id in &ids[1..] {
        let Some(p) = plan(id) else { continue };
        let base = p
            .contrast
            .as_ref()
            .map(|c| c.with.as_str())
            .filter(|w| ids.iter().any(|i| i == w) && *w != id.as_str())
            .unwrap_or(first.as_str());
        let Some(b) = plan(base) else { continue };
        if b.id == p.id {
            continue;
        }
        out.push((p.id.clone(), b.id.clone(), between(&p.config, &b.config)));
    }
    out
}

/// [`side_by_side`] as the lines a page shows: "`wide` against `reference`: model.d_model
/// 128 (not 64)".
pub fn side_by_side_lines(ids: &[String], plans: &[RunPlan]) -> Vec<String> {
    side_by_side(ids, plans)
        .into_iter()
        .map(|(a, b, ds)| {
            if ds.is_empty() {
                format!("{a} against {b}: the same configuration, other seeds")
            } else {
                format!("{a} against {b}: {}", prose(&ds))
            }
        })
        .collect()
}

/// The value at a dotted key of a configuration (`null` when it has none).
fn lookup(c: &RunConfig, key: &str) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or_default();
    for part in key.split('.') {
        v = v.get(part).cloned().unwrap_or(Value::Null);
    }
    v
}

/// `a`, `a and b`, `a, b and c`, each in backticks.
fn series(keys: &[String]) -> String {
    let ticked: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match ticked.as_slice() {
        [] => "nothing".into(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_splits_into_its_statements() {
        assert_eq!(
            atoms("a.x < a.y and b.x < b.y or (c.x and d.y)"),
            ["a.x < a.y", "b.x < b.y", "(c.x and d.y)"]
        );
        assert_eq!(atoms("'x and y' == a.band"), ["'x and y' == a.band"]);
        assert_eq!(
            atoms("mean(a.runs) > mean(b.runs)"),
            ["mean(a.runs) > mean(b.runs)"]
        );
    }

    #[test]
    fn differences_are_leaves_in_key_order() {
        let a = serde_json::json!({"train": {"lr": 0.1, "optimizer": "sgd", "steps": 5}, "model": {"d": 8}});
        let b = serde_json::json!({"train": {"lr": 0.003, "optimizer": "adamw", "steps": 5}, "model": {"d": 8}});
        let ds = differences(&a, &b);
        let keys: Vec<&str> = ds.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["train.lr", "train.optimizer"]);
        assert_eq!(
            prose(&ds),
            "train.lr 0.1 (not 0.003), train.optimizer sgd (not adamw)"
        );
        assert_eq!(prose(&differences(&a, &a)), "nothing");
        // A key one side lacks differs from none.
        let c = serde_json::json!({"train": {"lr": 0.1, "optimizer": "sgd", "steps": 5, "clip": 1.0}, "model": {"d": 8}});
        assert_eq!(prose(&differences(&c, &a)), "train.clip 1.0 (not none)");
    }
}
