//! The expression language of claims, inserts and table columns: minijinja expressions over
//! the run results, strict about undefined names, with the helpers registered here.
//!
//! To add a helper, write it in `helpers.rs` and register it with one line below.

mod compare;
mod diagnose;
mod helpers;
mod named;

pub use diagnose::{evaluate_or_report, words, FUNCTIONS};

use super::runs::Results;
use minijinja::{Environment, Value};
use revtx_spec::result::RunResult;

/// The expression environment.
///
/// - `mean(xs)`, `sd(xs)` (sample), `min(xs)`, `max(xs)` of a list of numbers
/// - `xs | pluck("a.b")`: the value at a dotted path in each element
/// - `ln(x)`, `sqrt(x)`, `exp(x)`, `abs(x)`, `pow(x, y)`
/// - `count(xs, v)`: how many elements equal `v`; `zip(xs, ys)`: the pairs `[x, y]`
/// - `rises(xs[, factor])`: how many times a list goes up (by more than `factor`) from one
///   element to the next
/// - `spikes(losses[, factor, floor, window])`: the steps at which spikes begin
///   (`crate::book::spikes`), also a filter (`| map('spikes')`); `at(xs, steps[, offset])`:
///   a per-step list's values at those steps; `median(xs)`; `xs | each("expr")`: `expr` per
///   element, the element as `run`
/// - `lists | covers(target)`: whether each position of `target` is held by one of `lists`
/// - wording: `word(n)` ("seven"), `num(x[, decimals])` ("1,063"), `plural(n, "string"[,
///   "strings"])`, `series(xs)` ("6, 7 and 8"), `of(n, m)` ("all 500", "63 of 500"),
///   `pct(x[, decimals])` ("94.6%")
/// - `failing(eval)`, `passing(eval)`: the lengths an evaluation (`run.train.test`) gets
///   partly wrong, or all right
/// - comparisons of two runs: `differs(a, b)`, the configuration keys they differ in with
///   both values (prose when inserted); `paired(a, b, "expr")`, `expr` per seed over the
///   seeds both have: `seeds`, `a`, `b`, `diffs`, `mean`, `se`, `n`, `above`, `below`, `equal`
///
/// and minijinja's built-in filters and tests (`capitalize`, `sum`, `sort(attribute=…)`,
/// `first`, `reverse`, `map('round', 2)`, `select('none')`, `selectattr`, `join`, `length`…).
/// A statistic of an empty list is an error.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_function("mean", helpers::mean);
    env.add_function("sd", helpers::sd);
    env.add_function("sum", helpers::sum);
    env.add_function("min", helpers::min);
    env.add_function("max", helpers::max);
    env.add_function("count", helpers::count);
    env.add_function("rises", helpers::rises);
    env.add_function("spikes", helpers::spikes);
    env.add_function("at", helpers::at);
    env.add_function("median", helpers::median);
    env.add_filter("spikes", helpers::spikes);
    env.add_filter("each", helpers::each);
    env.add_function("zip", helpers::zip);
    env.add_function("ln", helpers::ln);
    env.add_function("sqrt", helpers::sqrt);
    env.add_function("exp", helpers::exp);
    env.add_function("abs", helpers::abs);
    env.add_function("pow", helpers::pow);
    env.add_function("word", helpers::word);
    env.add_function("num", helpers::num);
    env.add_function("plural", helpers::plural);
    env.add_function("series", helpers::series);
    env.add_function("of", helpers::of);
    env.add_function("pct", helpers::pct);
    env.add_function("failing", helpers::failing);
    env.add_function("passing", helpers::passing);
    env.add_filter("pluck", helpers::pluck);
    env.add_filter("covers", helpers::covers);
    env.add_filter("reads", helpers::reads);
    env.add_filter("looks", helpers::looks);
    env.add_filter("prefix", helpers::prefix);
    env.add_filter("wrong_at", helpers::wrong_at);
    env.add_function("spike_spans", helpers::spike_spans);
    env.add_function("differs", compare::differs);
    env.add_function("paired", compare::paired);
    env
}

/// [`environment`] with the book's named expressions (`[expressions]` in book.toml), each
/// a function.
pub fn book_environment(book: &crate::book::parse::Book) -> Environment<'static> {
    let mut env = environment();
    named::register(&mut env, &named_expressions(book));
    env
}

/// The book's named expressions: book.toml's `[expressions]`, then each chapter's
/// ```` ```expression ```` directives, in order (a name defined twice is an error the parse
/// reported; the first definition is kept).
pub fn named_expressions(
    book: &crate::book::parse::Book,
) -> Vec<(String, crate::book::parse::config::NamedExpr)> {
    let mut out: Vec<(String, crate::book::parse::config::NamedExpr)> = book
        .config
        .expressions
        .iter()
        .map(|(k, v)| (k.clone(), v.get_ref().clone()))
        .collect();
    for ch in &book.chapters {
        for d in ch.directives() {
            if let crate::book::parse::Directive::Expression { name, def } = &d.node {
                if !out.iter().any(|(n, _)| n == name) {
                    out.push((name.clone(), def.clone()));
                }
            }
        }
    }
    out
}

/// Evaluates an expression; an undefined result (a missing field) is an error too.
pub fn evaluate(env: &Environment<'static>, expr: &str, ctx: &Value) -> Result<Value, String> {
    let compiled = env.compile_expression(expr).map_err(|e| e.to_string())?;
    match compiled.eval(ctx) {
        Ok(v) if v.is_undefined() => Err("this path does not exist in the run's result".into()),
        Ok(v) => Ok(v),
        Err(e) => Err(e.to_string()),
    }
}

/// The context claims are evaluated in: each run id → its result (single seed) or
/// `{seeds, runs, config}` (several seeds). Where a run ran is in its own result
/// (`run.env.cpu`, `run.env.threads`, `run.env.libtorch`, …): there is no `machine`, since a
/// cached run may have been computed on another machine than the build's.
pub fn context(results: &Results) -> Value {
    Value::from((**run_values(results)).clone())
}

/// Each run by its id as expressions see it ([`context`]), converted once per build and
/// shared: a minijinja value is a counted reference, so a table's scope or a claim's
/// context costs a map of pointers, not a copy of the results.
pub fn run_values(results: &Results) -> &std::sync::Arc<std::collections::BTreeMap<String, Value>> {
    results.values.get_or_init(|| {
        // `serve` keeps its verified results from build to build: a rebuild whose results
        // are the very same (the same shared results, kept alive here so that none can be
        // mistaken for another) takes the last conversion.
        static LAST: std::sync::Mutex<Option<(Seen, Converted)>> = std::sync::Mutex::new(None);
        let seen = seen(results);
        let mut last = LAST
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((before, converted)) = last.as_ref() {
            if same(before, &seen) {
                return std::sync::Arc::clone(converted);
            }
        }
        let converted = convert(results);
        *last = Some((seen, std::sync::Arc::clone(&converted)));
        converted
    })
}

/// What a conversion was made from: each run's id, seed count, and its shared results
/// with their entries.
type Seen = Vec<(
    String,
    usize,
    Vec<(std::sync::Arc<RunResult>, std::path::PathBuf)>,
)>;
type Converted = std::sync::Arc<std::collections::BTreeMap<String, Value>>;

fn seen(results: &Results) -> Seen {
    results
        .by_run
        .iter()
        .map(|(id, produced)| {
            let seeds = results
                .plans
                .iter()
                .find(|p| &p.id == id)
                .map_or(0, |p| p.seeds.len());
            let each = produced
                .iter()
                .map(|p| (std::sync::Arc::clone(&p.result), p.dir.clone()))
                .collect();
            (id.clone(), seeds, each)
        })
        .collect()
}

/// Whether two builds' results are the very same: the same runs, seeds, entries and
/// shared results (by address: the same allocation, not equal contents).
fn same(a: &Seen, b: &Seen) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.0 == y.0
                && x.1 == y.1
                && x.2.len() == y.2.len()
                && x.2
                    .iter()
                    .zip(&y.2)
                    .all(|(r, q)| std::sync::Arc::ptr_eq(&r.0, &q.0) && r.1 == q.1)
        })
}

/// Each run's result converted into the values expressions read ([`run_values`]).
fn convert(results: &Results) -> std::sync::Arc<std::collections::BTreeMap<String, Value>> {
    let mut map = std::collections::BTreeMap::new();
    for (id, produced) in &results.by_run {
        let plan = results.plans.iter().find(|p| &p.id == id);
        let ensemble = plan.is_some_and(|p| p.seeds.len() > 1);
        let seeds: Vec<Value> = produced
            .iter()
            .map(|p| {
                seed_value(
                    &p.result,
                    crate::book::weights::table(&p.dir).map(Value::from_serialize),
                )
            })
            .collect();
        let value = if ensemble {
            Value::from_iter([
                (
                    "seeds",
                    produced.iter().map(|p| p.result.seed).collect::<Value>(),
                ),
                ("runs", Value::from(seeds)),
                ("config", Value::from_serialize(&produced[0].result.config)),
            ])
        } else {
            seeds.into_iter().next().unwrap_or_default()
        };
        map.insert(id.clone(), value);
    }
    std::sync::Arc::new(map)
}

/// One seed's result as expressions see it: its fields, with `table` (a learned table's
/// similarities, read from its weights: `run.table`) where it has one. Converted straight
/// from the result, not through a JSON value (a result read from JSON holds no NaN, which
/// JSON cannot write, so nothing needs JSON's NaN-to-null); its maps keep the result's own
/// field order.
pub fn seed_value(result: &RunResult, table: Option<Value>) -> Value {
    let value = Value::from_serialize(result);
    match table {
        Some(table) => value
            .try_iter()
            .into_iter()
            .flatten()
            .map(|k| {
                let v = value.get_item(&k).unwrap_or_default();
                (k, v)
            })
            .chain([(Value::from("table"), table)])
            .collect(),
        None => value,
    }
}

/// The operands of a condition that read the runs: each path that starts at a run (`is_run`
/// tells which names are runs), with the filters applied to it, in order of first
/// mention: `min(r.runs | pluck('a')) > 0.01` gives `r.runs | pluck('a')`.
pub fn operands(expr: &str, is_run: &dyn Fn(&str) -> bool) -> Vec<String> {
    let b = expr.as_bytes();
    let ident = |k: usize| {
        b.get(k)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    };
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => i = skip_string(b, i, q),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while ident(i) {
                    i += 1;
                }
                let attr = expr[..start].trim_end().ends_with('.');
                if attr || !is_run(&expr[start..i]) {
                    continue;
                }
                // The path: `.name` and `[…]` steps.
                loop {
                    if b.get(i) == Some(&b'.') && ident(i + 1) {
                        i += 1;
                        while ident(i) {
                            i += 1;
                        }
                    } else if b.get(i) == Some(&b'[') {
                        i = skip_group(b, i);
                    } else {
                        break;
                    }
                }
                // Its filters: `| name` and `| name(…)`.
                let mut end = i;
                loop {
                    let mut k = end;
                    while b.get(k).is_some_and(u8::is_ascii_whitespace) {
                        k += 1;
                    }
                    if b.get(k) != Some(&b'|') {
                        break;
                    }
                    k += 1;
                    while b.get(k).is_some_and(u8::is_ascii_whitespace) {
                        k += 1;
                    }
                    let name = k;
                    while ident(k) {
                        k += 1;
                    }
                    if k == name {
                        break;
                    }
                    if b.get(k) == Some(&b'(') {
                        k = skip_group(b, k);
                    }
                    end = k;
                }
                let op = expr[start..end].to_string();
                if !out.contains(&op) {
                    out.push(op);
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// The offset after the string literal starting at `i`.
fn skip_string(b: &[u8], i: usize, q: u8) -> usize {
    let mut k = i + 1;
    while k < b.len() && b[k] != q {
        k += if b[k] == b'\\' { 2 } else { 1 };
    }
    (k + 1).min(b.len())
}

/// The offset after the bracketed group (`(…)` or `[…]`) starting at `i`.
fn skip_group(b: &[u8], i: usize) -> usize {
    let mut depth = 0;
    let mut k = i;
    while k < b.len() {
        match b[k] {
            q @ (b'\'' | b'"') => {
                k = skip_string(b, k, q);
                continue;
            }
            b'(' | b'[' => depth += 1,
            b')' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
        k += 1;
    }
    b.len()
}

/// A value shortly, for diagnostics and tooltips: numbers at full precision, lists item by
/// item, maps elided, at most about 100 characters.
pub fn as_short_text(v: &Value) -> String {
    let s = match v.kind() {
        minijinja::value::ValueKind::Seq => {
            let items: Vec<String> = v
                .try_iter()
                .map(|it| it.map(|x| as_short_text(&x)).collect())
                .unwrap_or_default();
            format!("[{}]", items.join(", "))
        }
        minijinja::value::ValueKind::Map => "{…}".to_string(),
        minijinja::value::ValueKind::String => format!("'{}'", as_text(v)),
        _ => as_full_text(v),
    };
    if s.chars().count() > 100 {
        s.chars().take(99).chain(std::iter::once('…')).collect()
    } else {
        s
    }
}

/// The value as a number, if it is one.
pub fn as_f64(v: &Value) -> Option<f64> {
    if v.is_number() {
        f64::try_from(v.clone()).ok()
    } else {
        None
    }
}

/// How an inserted value is shown: strings as they are, integers plainly, floats with
/// up to four significant decimals.
pub fn as_text(v: &Value) -> String {
    if let Some(s) = v.as_str() {
        return s.to_string();
    }
    if v.is_number() && !v.is_integer() {
        if let Some(f) = as_f64(v) {
            return trim_float(f);
        }
    }
    v.to_string()
}

/// A value with full precision, for tooltips.
pub fn as_full_text(v: &Value) -> String {
    match as_f64(v) {
        Some(f) if !v.is_integer() => format!("{f:.6}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
        _ => as_text(v),
    }
}

pub(crate) fn trim_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    #[allow(clippy::cast_possible_truncation)] // a float's decimal exponent fits an i32
    let mag = f.abs().log10().floor() as i32;
    let decimals = usize::try_from((3 - mag).clamp(0, 12)).unwrap_or(0);
    let s = format!("{f:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One run whose recorded attention has two heads in one block over `ab|ab`: the
    /// answer rows are the queries at the separator and at the first answer letter.
    fn attention_run(task: &str) -> serde_json::Value {
        let row = |query: usize, key: usize, tok: &str| serde_json::json!({"query": query, "query_token": "", "key": key, "key_token": tok, "weight": 0.9});
        serde_json::json!({
            "config": {"data": {"task": task}},
            "train": {
                "attention": {
                    "tokens": ["a", "b", "|", "b", "a"],
                    // Head 1 reads the right letter at the separator (b, one back) and
                    // then looks at itself; head 2 looks two back and reads nothing.
                    "strongest": [[[row(2, 1, "b"), row(3, 3, "b")], [row(2, 0, "a"), row(3, 1, "b")]]]
                },
                "test": {"inputs": ["ab", "abc"], "outputs": ["ba", "cab"]},
                "long": {"inputs": ["abcd"], "outputs": ["dcab"]}
            }
        })
    }

    /// `wrong_at` counts wrong answer digits position by position, units first, and splits
    /// them by whether a carry comes in: 19+01 = 020 (a carry into the tens), 12+34 = 640.
    #[test]
    fn wrong_at_counts_digits_and_carries() {
        let env = environment();
        let run = serde_json::json!({
            "config": {"data": {"task": "add", "letters": 10}},
            // Right, then wrong in the tens only, then a one-digit problem left out.
            "train": {"test": {"inputs": ["19+01", "12+34", "1+2"], "outputs": ["020", "650", "30"]}}
        });
        let ctx = Value::from_serialize(serde_json::json!({ "run": run }));
        let eval = |e: &str| evaluate(&env, e, &ctx).map(|v| v.to_string());
        assert_eq!(
            eval("run | wrong_at(2) | map(attribute='wrong') | list").unwrap(),
            "[0, 1, 0]"
        );
        assert_eq!(
            eval("run | wrong_at(2) | map(attribute='first') | list").unwrap(),
            "[0, 1, 0]"
        );
        assert_eq!(
            eval("run | wrong_at(2) | map(attribute='carried') | list").unwrap(),
            "[0, 1, 0]"
        );
        assert_eq!(
            eval("run | wrong_at(2) | map(attribute='carried_wrong') | list").unwrap(),
            "[0, 0, 0]"
        );
        assert_eq!(eval("(run | wrong_at(1))[0].total").unwrap(), "1");
        assert!(eval("run | wrong_at(3)")
            .unwrap_err()
            .contains("no problem of size 3"));
    }

    #[test]
    fn attention_and_prefix_helpers() {
        let env = environment();
        let ctx = Value::from_serialize(serde_json::json!({
            "rev": attention_run("reverse"), "copy": attention_run("copy"),
        }));
        let eval = |e: &str| evaluate(&env, e, &ctx).map(|v| v.to_string());
        // reads: row 0 reads `b` (the letter after the separator); row 1 reads nothing.
        assert_eq!(eval("rev | reads(0)").unwrap(), "1");
        assert_eq!(eval("rev | reads(0, 1)").unwrap(), "0");
        assert_eq!(eval("rev | reads(0, 0, 1)").unwrap(), "1");
        // looks: one back only in row 0 (key 1 for query 2), two back in both rows.
        assert_eq!(eval("rev | looks(0, 1)").unwrap(), "1");
        assert_eq!(eval("rev | looks(0, 2)").unwrap(), "2");
        assert!(eval("rev | reads(1)").unwrap_err().contains("no block 1"));
        // prefix: reverse `ab` → `ba` right (2); copy `ab` → `ba` wrong at once (0).
        assert_eq!(eval("rev | prefix(2)").unwrap(), "2.0");
        assert_eq!(eval("copy | prefix(2)").unwrap(), "0.0");
        // `abc` reversed is `cba`: `cab` keeps one letter; `abcd` → `dcab` keeps two.
        assert_eq!(eval("rev | prefix(3)").unwrap(), "1.0");
        assert_eq!(eval("rev | prefix(4)").unwrap(), "2.0");
        assert!(eval("rev | prefix(5)")
            .unwrap_err()
            .contains("no string of 5 letters"));
        assert_eq!(eval("sum([1, 2.5])").unwrap(), "3.5");
        assert_eq!(eval("sum([])").unwrap(), "0.0");
        assert!(eval("sum([1, 'a'])")
            .unwrap_err()
            .contains("is not a number"));
    }

    #[test]
    fn expressions_see_runs_and_helpers() {
        let env = environment();
        let ctx = Value::from_serialize(serde_json::json!({
            "r": {"runs": [{"a": {"b": 1.0}}, {"a": {"b": 3.0}}], "x": 0.25}
        }));
        let eval = |e: &str| evaluate(&env, e, &ctx);
        assert_eq!(
            as_f64(&eval("mean(r.runs | pluck('a.b'))").unwrap()),
            Some(2.0)
        );
        assert_eq!(as_f64(&eval("r.x * 2").unwrap()), Some(0.5));
        assert!(eval("r.nope").is_err(), "undefined paths are errors");
        // One pair per run, joined so that `count` can look for a combination.
        assert_eq!(
            eval("zip([1, 0, 0], [1, 0, 2]) | map('join', '/') | list")
                .unwrap()
                .to_string(),
            r#"["1/1", "0/0", "0/2"]"#
        );
        assert!(eval("zip([1], [1, 2])").is_err(), "lengths must agree");
        // Two heads that share a diagonal between them, and two that both miss key 3.
        let shared = "[[5, 5, 3, 2], [5, 4, 6, 2]] | covers([5, 4, 3, 2])";
        assert!(eval(shared).unwrap().is_true());
        let missed = "[[5, 5, 6, 2], [5, 4, 6, 2]] | covers([5, 4, 3, 2])";
        assert!(!eval(missed).unwrap().is_true());
        assert!(
            eval("[[5, 4]] | covers([5, 4, 3])").is_err(),
            "lengths must agree"
        );
    }

    #[test]
    fn operands_are_run_paths_with_their_filters() {
        let runs = |n: &str| matches!(n, "r" | "s");
        assert_eq!(
            operands(
                "r.train.test.correct == r.train.test.total and min(s.runs | pluck('a.b') | reject('none') | list) > 0.01",
                &runs
            ),
            [
                "r.train.test.correct",
                "r.train.test.total",
                "s.runs | pluck('a.b') | reject('none') | list"
            ]
        );
        assert_eq!(
            operands("r.losses[250:500] | max > 'r.x' ~ s", &runs),
            ["r.losses[250:500] | max", "s"]
        );
        assert!(
            operands("x.r + 1", &runs).is_empty(),
            "attributes are not runs"
        );
    }

    #[test]
    fn wording_helpers() {
        let env = environment();
        let ctx = Value::from_serialize(serde_json::json!({
            "e": {"by_length": [
                {"len": 3, "accuracy": 1.0}, {"len": 6, "accuracy": 0.9},
                {"len": 7, "accuracy": 0.5}, {"len": 8, "accuracy": 0.0}
            ]}
        }));
        let eval = |e: &str| as_text(&evaluate(&env, e, &ctx).unwrap());
        assert_eq!(eval("word(7)"), "seven");
        assert_eq!(eval("word(0)"), "zero");
        assert_eq!(eval("word(1063)"), "1,063");
        assert_eq!(eval("num(1063)"), "1,063");
        assert_eq!(eval("num(1234.5, 2)"), "1,234.50");
        assert_eq!(eval("num(0.25, decimals=1)"), "0.2");
        assert_eq!(eval("plural(1, 'string')"), "1 string");
        assert_eq!(eval("plural(1063, 'string')"), "1,063 strings");
        assert_eq!(eval("plural(2, 'child', 'children')"), "2 children");
        assert_eq!(eval("rises([3, 2, 5, 4, 9])"), "2");
        assert_eq!(
            eval("rises([3, 2, 5, 4, 9], 2)"),
            "2",
            "2 → 5 and 4 → 9 more than double"
        );
        assert_eq!(eval("rises([3, 2, 5, 4, 7], 2)"), "1");
        assert_eq!(eval("rises([1])"), "0");
        let mut losses = vec!["0.001"; 42];
        (losses[30], losses[31]) = ("0.5", "0.2");
        let flat = format!("[{}]", losses.join(", "));
        assert_eq!(eval(&format!("spikes({flat})")), "[31]");
        assert_eq!(eval(&format!("spikes({flat}, 10, 0.6)")), "[]");
        assert_eq!(eval(&format!("spikes({flat}, 10, 0.01, 40)")), "[]");
        assert_eq!(eval("at([4, 5, 6], [1, 3])"), "[4, 6]");
        assert_eq!(eval("at([4, 5, 6], [2, 3], -1)"), "[4, 5]");
        assert_eq!(eval("median([5, 1, 3])"), "3");
        assert_eq!(eval("[[1, 2], [3, 5]] | each('run[1] - run[0]')"), "[1, 2]");
        assert!(evaluate(&env, "[1] | each('run.nothing')", &ctx).is_err());
        assert_eq!(eval("median([4, 1, 3, 2])"), "2.5");
        assert!(evaluate(&env, "median([])", &ctx).is_err());
        assert_eq!(
            eval(&format!(
                "[{flat}, {flat}] | map('spikes') | map('length') | list"
            )),
            "[1, 1]"
        );
        assert!(evaluate(&env, "at([4, 5, 6], [0])", &ctx).is_err());
        assert!(evaluate(&env, "at([4, 5, 6], [4])", &ctx).is_err());
        assert_eq!(eval("series([6])"), "6");
        assert_eq!(eval("series([6, 7])"), "6 and 7");
        assert_eq!(eval("series([6, 7, 8])"), "6, 7 and 8");
        assert_eq!(eval("series([])"), "none");
        assert_eq!(eval("of(500, 500)"), "all 500");
        assert_eq!(eval("of(0, 500)"), "none of the 500");
        assert_eq!(eval("of(63, 500)"), "63 of 500");
        assert_eq!(eval("pct(0.946)"), "94.6%");
        assert_eq!(eval("pct(0.94612, decimals=2)"), "94.61%");
        assert_eq!(
            eval("pct(-0.001, 0)"),
            "0%",
            "no sign on a value shown as zero"
        );
        assert_eq!(eval("pct(-0.0)"), "0.0%");
        assert_eq!(eval("pct(-0.01, 0)"), "-1%");
        assert_eq!(eval("num(-0.0004, 2)"), "0.00");
        assert_eq!(eval("series(failing(e))"), "6, 7 and 8");
        assert_eq!(eval("series(passing(e))"), "3");
        assert_eq!(eval("of(2, 5) | capitalize"), "2 of 5");
        assert_eq!(eval("of(0, 5) | capitalize"), "None of the 5");
        assert_eq!(eval("'abc' | reverse"), "cba");
        assert_eq!(
            eval("[1.234, 2.345] | map('round', 2) | join(' ')"),
            "1.23 2.35"
        );
        assert_eq!(
            eval("(e.by_length | sort(attribute='accuracy') | first).len"),
            "8"
        );
        assert_eq!(
            eval("e.by_length | selectattr('accuracy', 'lt', 1) | map(attribute='len') | sum"),
            "21"
        );
        assert_eq!(
            eval("e.by_length | rejectattr('accuracy', 'lt', 1) | list | length"),
            "1"
        );
        assert_eq!(eval("[none, 1] | reject('none') | list | length"), "1");
        for e in ["mean([])", "sd([])", "min([])", "max([])"] {
            let err = evaluate(&env, e, &ctx).unwrap_err();
            assert!(err.contains("empty list"), "{e}: {err}");
        }
    }

    #[test]
    fn inserted_values_read_well() {
        assert_eq!(as_text(&Value::from(0.013_456_7)), "0.01346");
        assert_eq!(as_text(&Value::from(12_345)), "12345");
        assert_eq!(as_full_text(&Value::from(0.827_731_2)), "0.827731");
    }

    /// Two builds' results are the same only when they share every result itself: equal
    /// contents read again (a changed entry read anew) are another conversion.
    #[test]
    fn results_are_the_same_only_when_they_share_each_result() {
        let bytes = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/results/train-s0.json"),
        )
        .unwrap();
        let read = || std::sync::Arc::new(serde_json::from_slice::<RunResult>(&bytes).unwrap());
        let one = read();
        let dir = std::path::PathBuf::from("entry");
        let of = |r: &std::sync::Arc<RunResult>, seeds: usize| -> Seen {
            vec![(
                "a".into(),
                seeds,
                vec![(std::sync::Arc::clone(r), dir.clone())],
            )]
        };
        assert!(same(&of(&one, 1), &of(&one, 1)));
        assert!(
            !same(&of(&one, 1), &of(&read(), 1)),
            "equal, but read again"
        );
        assert!(!same(&of(&one, 1), &of(&one, 2)), "another seed count");
        let mut elsewhere = of(&one, 1);
        elsewhere[0].2[0].1 = "other".into();
        assert!(!same(&of(&one, 1), &elsewhere), "another entry");
        assert!(!same(&of(&one, 1), &Vec::new()));
    }
}
