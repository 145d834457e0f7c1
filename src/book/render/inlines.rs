//! Inline constructs: claims are evaluated and checked, inserts evaluated, assertions
//! decided, literals shown as written, references resolved; each becomes its partial's HTML
//! and every claim, insert, literal and assertion a claim record.

use super::Renderer;
use crate::book::claims::{self, Check, ClaimKind, ClaimRecord, Operand, Verdict};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Span};
use crate::book::expr::{self, words};
use crate::book::parse::{Chapter, Inline, Tolerance};
use crate::book::{contrast, loso};
use minijinja::{context, Value};

/// What an inline construct renders as: HTML, and the plain text search indexes.
#[derive(Default)]
pub struct InlineOut {
    pub html: String,
    pub text: String,
}

/// What a literal's reason says in its tooltip.
fn reason_text(reason: &str) -> String {
    match reason {
        "original" => "quoted from the original chapter".into(),
        other => other.to_string(),
    }
}

/// How a value's type reads in a message, as typst names them.
fn type_name(v: &Value) -> &'static str {
    use minijinja::value::ValueKind;
    match v.kind() {
        ValueKind::Bool => "boolean",
        ValueKind::Number if v.is_integer() => "integer",
        ValueKind::Number => "float",
        ValueKind::String => "string",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "map",
        ValueKind::None => "none",
        ValueKind::Undefined => "undefined",
        _ => "value",
    }
}

/// A claim record's fields that vary by kind.
struct Fields {
    kind: ClaimKind,
    expr: String,
    quoted: Option<String>,
    recomputed: Option<serde_json::Value>,
    formatted: Option<String>,
    tolerance: Option<Tolerance>,
    difference: Option<f64>,
    verdict: Verdict,
    reason: Option<String>,
    values: Vec<Operand>,
    quoted_span: Option<Span>,
}

impl Fields {
    fn new(kind: ClaimKind, expr: &str, verdict: Verdict) -> Self {
        Fields {
            kind,
            expr: expr.to_string(),
            quoted: None,
            recomputed: None,
            formatted: None,
            tolerance: None,
            difference: None,
            verdict,
            reason: None,
            values: Vec::new(),
            quoted_span: None,
        }
    }
}

/// A checked figure's evaluation.
struct Checked {
    verdict: Verdict,
    value: Option<Value>,
    formatted: Option<String>,
    /// The value at full precision, for the tooltip.
    full: String,
}

impl Renderer<'_> {
    /// The output of every inline construct of a chapter, indexed like `chapter.inlines`,
    /// evaluated in source order.
    #[allow(
        clippy::too_many_lines,
        reason = "one match over the inline kinds, an arm each, read top to bottom"
    )]
    pub(super) fn inlines(&mut self, ch: &Chapter) -> Vec<InlineOut> {
        let file = self.sources.display_path(ch.file);
        let mut out: Vec<InlineOut> = Vec::with_capacity(ch.inlines.len());
        // The `[` of the assertions whose `]{? …}` is still ahead, innermost last.
        let mut open: Vec<usize> = Vec::new();
        for (n, inl) in ch.inlines.iter().enumerate() {
            let at = match &inl.node {
                Inline::Claim { quoted_span, .. } | Inline::Literal { quoted_span, .. } => {
                    quoted_span.range.start
                }
                Inline::Assert {
                    text: Some(text), ..
                } => text.range.start,
                _ => inl.span.range.start,
            };
            let (line, col) = self.sources.line_col(ch.file, at);
            let record = |f: Fields| ClaimRecord {
                file: file.clone(),
                line,
                col,
                kind: f.kind,
                expr: f.expr,
                quoted: f.quoted,
                recomputed: f.recomputed,
                formatted: f.formatted,
                tolerance: f.tolerance.map(claims::tolerance_text),
                difference: f.difference,
                verdict: f.verdict,
                reason: f.reason,
                values: f.values,
                quoted_span: f.quoted_span,
            };
            let o = match &inl.node {
                // Formatted for the whole chapter at once: `Renderer::citations`.
                Inline::Label { .. } | Inline::Cite { .. } => InlineOut::default(),
                Inline::Ref { id } => self.reference(id, &ch.slug, &inl.span),
                Inline::Insert { expr, expr_span } => {
                    let v = self.eval(expr, expr_span);
                    let text = v.as_ref().map_or_else(|| "??".into(), expr::as_text);
                    let verdict = if v.is_some() {
                        Verdict::Ok
                    } else {
                        Verdict::Error
                    };
                    let mut f = Fields::new(ClaimKind::Inserted, expr, verdict);
                    f.recomputed = v.as_ref().and_then(claims::to_json);
                    f.formatted = v.is_some().then(|| text.clone());
                    self.claims.push(record(f));
                    let html = self.claim_html(
                        n,
                        "claim-insert",
                        &text,
                        expr,
                        &text,
                        "inserted, not checked",
                    );
                    InlineOut { html, text }
                }
                Inline::Literal {
                    quoted,
                    quoted_span,
                    reason,
                } => {
                    let mut f = Fields::new(ClaimKind::Literal, "", Verdict::Ok);
                    f.quoted = Some(quoted.clone());
                    f.reason = Some(reason.clone());
                    f.quoted_span = Some(quoted_span.clone());
                    self.claims.push(record(f));
                    let status = format!("literal, not checked: {}", reason_text(reason));
                    let html = self.claim_html(n, "claim-literal", quoted, "", "", &status);
                    InlineOut {
                        html,
                        text: quoted.clone(),
                    }
                }
                Inline::Claim {
                    quoted,
                    quoted_span,
                    expr,
                    expr_span,
                    tolerance,
                } => {
                    let c = self.check(quoted, quoted_span, expr, expr_span, *tolerance);
                    // A page with a drifted figure is written only under `build --seed-shift`,
                    // to be read as the moved seeds have it: the figure shows its run's value.
                    let (class, status, shown) = match (c.verdict, &c.formatted) {
                        (Verdict::Ok, _) => ("claim-ok", "checked".to_string(), quoted),
                        (Verdict::Drift, Some(now)) => (
                            "claim-fail",
                            format!("does not match: written {quoted}, now {now}"),
                            now,
                        ),
                        (Verdict::Drift, None) => ("claim-fail", "does not match".into(), quoted),
                        (Verdict::False | Verdict::Error, _) => {
                            ("claim-fail", "error".to_string(), quoted)
                        }
                    };
                    let shown = shown.clone();
                    let mut f = Fields::new(ClaimKind::Checked, expr, c.verdict);
                    f.quoted = Some(quoted.clone());
                    f.recomputed = c.value.as_ref().and_then(claims::to_json);
                    f.difference = match (&c.formatted, &c.value) {
                        (Some(fmt), Some(v)) if fmt != quoted => claims::difference(quoted, v),
                        _ => None,
                    };
                    f.formatted = c.formatted;
                    f.tolerance = *tolerance;
                    f.quoted_span = Some(quoted_span.clone());
                    self.claims.push(record(f));
                    let html = self.claim_html(n, class, &shown, expr, &c.full, &status);
                    InlineOut { html, text: shown }
                }
                Inline::AssertStart => {
                    open.push(n);
                    InlineOut::default()
                }
                Inline::Assert {
                    expr,
                    expr_span,
                    text,
                } => {
                    let at = text.clone().unwrap_or_else(|| inl.span.clone());
                    let (verdict, values) = self.assertion(expr, expr_span, &at);
                    let mut f = Fields::new(ClaimKind::Asserted, expr, verdict);
                    f.quoted = text
                        .as_ref()
                        .map(|t| self.sources.text(t.file)[t.range.clone()].to_string());
                    f.recomputed = match verdict {
                        Verdict::Ok => Some(true.into()),
                        Verdict::False => Some(false.into()),
                        _ => None,
                    };
                    f.values.clone_from(&values);
                    self.claims.push(record(f));
                    let class = match verdict {
                        Verdict::Ok => "claim-ok",
                        _ => "claim-fail",
                    };
                    let status = match verdict {
                        Verdict::Ok => "asserted, holds",
                        Verdict::False => "asserted, does not hold",
                        _ => "asserted, error",
                    };
                    let runs = self.runs_in(expr);
                    let ctx =
                        context! { n, class, runs, expr, values, status, bare => text.is_none() };
                    match text.as_ref().and(open.pop()) {
                        Some(k) => {
                            out[k].html = self.html(
                                "partials/assert.html",
                                context! { part => "open", ..ctx.clone() },
                            );
                            let html = self
                                .html("partials/assert.html", context! { part => "close", ..ctx });
                            InlineOut {
                                html,
                                text: String::new(),
                            }
                        }
                        None => InlineOut {
                            html: self
                                .html("partials/assert.html", context! { part => "bare", ..ctx }),
                            text: String::new(),
                        },
                    }
                }
            };
            out.push(o);
        }
        out
    }

    /// Decides an assertion: its verdict and the values of the run paths its condition
    /// reads; a false one is reported at `at` (its text, or the bare `{?`).
    fn assertion(&mut self, expr: &str, expr_span: &Span, at: &Span) -> (Verdict, Vec<Operand>) {
        let Some(v) = self.eval(expr, expr_span) else {
            return (Verdict::Error, Vec::new());
        };
        let results = self.results;
        let values: Vec<Operand> = expr::operands(expr, &|name| results.by_run.contains_key(name))
            .into_iter()
            .filter_map(|op| {
                let v = expr::evaluate(&self.env, &op, self.ctx()).ok()?;
                Some(Operand {
                    expr: op,
                    value: expr::as_short_text(&v),
                })
            })
            .collect();
        if self.constant(expr) {
            self.diags.push(
                Diagnostic::error(
                    Code::ConstantClaim,
                    Some(at.clone()),
                    "an assertion that depends on no run",
                )
                .label(format!("`{expr}` is a constant"))
                .hint("assert something about a run's result, e.g. `{? run.train.test.correct == run.train.test.total}`"),
            );
            return (Verdict::Error, values);
        }
        if v.kind() != minijinja::value::ValueKind::Bool {
            self.diags.push(
                Diagnostic::error(
                    Code::AssertionNotBoolean,
                    Some(at.clone()),
                    "an assertion's condition must be true or false",
                )
                .label(format!(
                    "expected boolean, found {} `{}`",
                    type_name(&v),
                    expr::as_short_text(&v)
                ))
                .note(format!("condition: {expr}"))
                .hint("compare the value with something, e.g. `{? run.train.test.accuracy > 0.9}`"),
            );
            return (Verdict::Error, values);
        }
        if v.is_true() {
            self.fragile(expr, at);
            self.comparison(expr, at);
            return (Verdict::Ok, values);
        }
        let mut d = Diagnostic::error(
            Code::AssertionFalse,
            Some(at.clone()),
            "asserted statement does not hold",
        )
        .label(format!("false: {expr}"));
        // A whole result (`copy.runs = [{…}, {…}]`) says nothing: each seed's verdict does.
        for op in values.iter().filter(|op| !op.value.contains("{…}")) {
            d = d.note(format!("{} = {}", op.expr, op.value));
        }
        for l in loso::alone(&self.env, expr::run_values(self.results), expr) {
            let v = l.value.as_ref().map_or_else(
                |e| format!("cannot be evaluated ({e})"),
                expr::as_short_text,
            );
            d = d.note(format!("with seed {} of `{}` alone: {v}", l.seed, l.run));
        }
        self.diags.push(d.hint(
            "rewrite the statement (and its condition) to what the runs show; `--bless` never rewrites an assertion",
        ));
        (Verdict::False, values)
    }

    /// A claim that compares runs: those differing in more than one key need a declared
    /// contrast (`undeclared-comparison`), and two ensembles that share seeds, compared by
    /// their unpaired means, are better compared seed by seed (`unpaired`).
    fn comparison(&mut self, expr: &str, at: &Span) {
        // Each statement of a condition on its own: `a.x < a.y and b.x < b.y` compares nothing.
        let found = contrast::atoms(expr)
            .into_iter()
            .find_map(|atom| contrast::undeclared(&self.runs_in(atom), &self.results.plans));
        if let Some((a, b, ds)) = found {
            self.diags.push(
                Diagnostic::warning(
                    Code::UndeclaredComparison,
                    Some(at.clone()),
                    format!("this compares `{a}` with `{b}`, which differ in {} keys, and no contrast is declared between them", ds.len()),
                )
                .label(contrast::prose(&ds))
                .hint(format!(
                    "declare what `{a}` varies in its run block (`contrast = {{ with = \"{b}\", varies = [\"{}\"] }}`) and say it in the sentence (`{{=differs({a}, {b})}}`), or compare runs that differ in one key",
                    ds.iter().map(|d| d.key.as_str()).collect::<Vec<_>>().join("\", \"")
                )),
            );
        }
        // Likewise the means: `mean(a…) > 0.2 and mean(b…) < 0.2` holds two thresholds,
        // not a comparison of a with b.
        let values = expr::run_values(self.results);
        let seeds = |id: &str| -> Vec<u64> {
            self.results
                .plans
                .iter()
                .find(|p| p.id == id)
                .map(|p| p.seeds.clone())
                .unwrap_or_default()
        };
        for atom in contrast::atoms(expr) {
            if atom.contains("paired(") || !atom.contains("mean(") {
                continue;
            }
            let ensembles = loso::ensembles_read(atom, values);
            for (i, a) in ensembles.iter().enumerate() {
                for b in &ensembles[i + 1..] {
                    let shared: Vec<u64> = seeds(a)
                        .into_iter()
                        .filter(|s| seeds(b).contains(s))
                        .collect();
                    if shared.len() >= 2 {
                        self.diags.push(
                            Diagnostic::warning(
                                Code::Unpaired,
                                Some(at.clone()),
                                format!("this compares the means of `{a}` and `{b}`, which share seeds {}: same initialisation, same batches", series_of(&shared)),
                            )
                            .hint(format!(
                                "compare them seed by seed: `paired({a}, {b}, 'EXPR')` gives the differences, their mean and standard error, and in how many seeds one is above the other"
                            )),
                        );
                        return;
                    }
                }
            }
        }
    }

    /// A true assertion that one seed decides: re-evaluated with each seed of each ensemble
    /// it reads left out, false without one of them (`crate::book::loso`).
    fn fragile(&mut self, expr: &str, at: &Span) {
        let left = loso::evaluations(&self.env, expr::run_values(self.results), expr);
        let deciders = loso::fragile(&left);
        let Some((run, seed)) = deciders.first() else {
            return;
        };
        let of = left.iter().filter(|l| &l.run == run).count();
        let mut d = Diagnostic::warning(
            Code::Fragile,
            Some(at.clone()),
            format!(
                "this statement holds with all {of} seeds of `{run}`, but not without seed {seed}"
            ),
        )
        .label(format!(
            "false when seed {seed} of `{run}` is left out: {expr}"
        ));
        for (r, s) in &deciders[1..] {
            d = d.note(format!("it is false without seed {s} of `{r}` too"));
        }
        if deciders.iter().filter(|(r, _)| r == run).count() == of {
            d = d.note(
                "false without any one seed: a count of seeds written as a number (`length == 5`, `>= 2`) changes meaning when one is left out; compare it with the number of seeds (`run.seeds | length`)",
            );
        }
        self.diags.push(d.hint(
            "say what every seed shows, hedge it (\"in 2 of 3 seeds\"), or give the runs more seeds",
        ));
    }

    /// A checked figure quoted to finer digits than its ensembles' seeds earn: the jackknife
    /// standard error of its leave-one-seed-out values is larger than its last digit.
    fn precision(
        &mut self,
        quoted: &str,
        span: &Span,
        expr: &str,
        value: &Value,
        tolerance: Option<Tolerance>,
    ) {
        // An average of seeds is an estimate with a standard error; a seed's own value, an
        // extreme (`max(…)`, "the calmest seed") or a count is a fact about the draw.
        if !loso::averages(expr, &self.averaging) {
            return;
        }
        let left = loso::evaluations(&self.env, expr::run_values(self.results), expr);
        let Some(loso::OverPrecise {
            decimals,
            earned,
            se,
            percent,
            sci,
        }) = loso::over_precise(quoted, &left, tolerance, expr::as_f64(value))
        else {
            return;
        };
        let points = if percent { " points" } else { "" };
        let se_text = expr::trim_float(se);
        let earned_text = match earned {
            e if e > 1 => format!("{e} decimals"),
            1 => "one decimal".to_string(),
            0 => "whole units".to_string(),
            e => format!("nothing finer than {}{points}", 10f64.powi(-e)),
        };
        let shows = match decimals {
            0 => "whole units".to_string(),
            1 => "one decimal".to_string(),
            d => format!("{d} decimals"),
        };
        let hint = if earned < 0 && !sci {
            format!("quote it with a tolerance as wide as its spread, e.g. `~ {}`, or give the runs more seeds", 10f64.powi(-earned))
        } else {
            format!("quote it to {earned_text}, or give the runs more seeds")
        };
        self.diags.push(
            Diagnostic::warning(
                Code::Precision,
                Some(span.clone()),
                format!("`{quoted}` shows {shows}, but its seeds earn {earned_text}"),
            )
            .label(format!(
                "leave-one-seed-out standard error {se_text}{points}"
            ))
            .note(format!(
                "{} re-evaluations of `{expr}`, each without one seed",
                left.len()
            ))
            .hint(hint),
        );
    }

    /// Whether an expression evaluates without any run: a constant.
    fn constant(&self, expr: &str) -> bool {
        let empty = Value::from_serialize(serde_json::json!({}));
        expr::evaluate(&self.env, expr, &empty).is_ok()
    }

    /// Checks a claim: its verdict, its value, what it recomputes to (written like the
    /// quote) and its value at full precision; a drift, mismatch or constant is reported at
    /// the quote.
    fn check(
        &mut self,
        quoted: &str,
        quoted_span: &Span,
        expr: &str,
        expr_span: &Span,
        tolerance: Option<Tolerance>,
    ) -> Checked {
        let Some(val) = self.eval(expr, expr_span) else {
            return Checked {
                verdict: Verdict::Error,
                value: None,
                formatted: None,
                full: "??".to_string(),
            };
        };
        let full = expr::as_full_text(&val);
        if self.constant(expr) {
            self.diags.push(
                Diagnostic::error(
                    Code::ConstantClaim,
                    Some(quoted_span.clone()),
                    "a checked figure that depends on no run",
                )
                .label(format!("`{expr}` is a constant: there is nothing to check"))
                .hint(format!(
                    "mark it as a literal, `[{quoted}]{{! reason}}` (e.g. `{{! original}}`), or compute it from a run's result"
                )),
            );
            return Checked {
                verdict: Verdict::Error,
                value: Some(val),
                formatted: None,
                full,
            };
        }
        let (verdict, formatted) = match claims::check(quoted, &val, tolerance) {
            Check::Holds { formatted } => {
                self.precision(quoted, quoted_span, expr, &val, tolerance);
                self.comparison(expr, quoted_span);
                (Verdict::Ok, Some(formatted))
            }
            Check::Drift { recomputed } => {
                self.diags.push(
                    Diagnostic::error(
                        Code::Drift,
                        Some(quoted_span.clone()),
                        "quoted figure does not match its run",
                    )
                    .label(format!("quoted `{quoted}`, recomputed `{recomputed}`"))
                    .note(format!("expression: {expr} = {full}"))
                    .hint("update the text, or run `revtx-book check --bless` to rewrite drifted figures"),
                );
                (Verdict::Drift, Some(recomputed))
            }
            Check::Mismatch { reason } => {
                self.diags.push(
                    Diagnostic::error(
                        Code::QuoteMismatch,
                        Some(quoted_span.clone()),
                        "quoted figure cannot be compared with its value",
                    )
                    .label(reason)
                    .note(format!("expression: {expr}")),
                );
                (Verdict::Error, None)
            }
        };
        Checked {
            verdict,
            value: Some(val),
            formatted,
            full,
        }
    }

    fn reference(&mut self, id: &str, slug: &str, span: &Span) -> InlineOut {
        let Some((label, page)) = self.anchors.get(id).cloned() else {
            // A malformed id was reported as such when the chapter was parsed.
            if !crate::book::parse::valid_id(id) {
                return InlineOut {
                    html: "??".into(),
                    text: "??".into(),
                };
            }
            self.diags.push(
                Diagnostic::error(
                    Code::UnknownReference,
                    Some(span.clone()),
                    format!("unknown reference `{id}`"),
                )
                .hint("refer to a figure, table, labelled equation or heading by its id"),
            );
            return InlineOut {
                html: "??".into(),
                text: "??".into(),
            };
        };
        let href = if page == slug {
            format!("#{id}")
        } else {
            format!("{page}#{id}")
        };
        self.xrefs += 1;
        let n = self.xrefs;
        let preview = format!("{PREVIEW_OPEN}{id}{PREVIEW_CLOSE}");
        let html = self.html("partials/xref.html", context! { n, href, label, preview });
        InlineOut { html, text: label }
    }

    fn claim_html(
        &mut self,
        n: usize,
        class: &str,
        shown: &str,
        expr: &str,
        value: &str,
        status: &str,
    ) -> String {
        let runs = self.runs_in(expr);
        self.html(
            "partials/claim.html",
            context! { n, class, shown, runs, expr, value, status },
        )
    }

    /// The runs an expression names, in order of first mention.
    fn runs_in(&self, expr: &str) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for w in words(expr).filter(|w| self.results.by_run.contains_key(*w)) {
            if !v.iter().any(|x| x == w) {
                v.push(w.to_string());
            }
        }
        v
    }

    /// Evaluates an expression, turning failures into diagnostics at `span`.
    fn eval(&mut self, expr: &str, span: &Span) -> Option<Value> {
        if expr.trim().is_empty() {
            return None; // reported when the chapter was parsed (`empty-expression`)
        }
        match expr::evaluate_or_report(&self.env, self.ctx(), self.results, expr, span) {
            Ok(v) => Some(v),
            Err(d) => {
                // `None`: a declared run without a result failed, or did not train because
                // the book has errors: both are reported already.
                self.diags.extend(d);
                None
            }
        }
    }
}

/// Where a reference's preview goes, until every target's preview is known:
/// `U+E002 id U+E003` (private-use characters no source holds).
const PREVIEW_OPEN: char = '\u{E002}';
const PREVIEW_CLOSE: char = '\u{E003}';

/// `html` with each reference's preview marker replaced by its target's label and preview.
pub(super) fn fill_previews(
    html: &str,
    anchors: &super::numbering::Anchors,
    previews: &std::collections::HashMap<String, String>,
) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(k) = rest.find(PREVIEW_OPEN) {
        out.push_str(&rest[..k]);
        let after = &rest[k + PREVIEW_OPEN.len_utf8()..];
        let Some(e) = after.find(PREVIEW_CLOSE) else {
            break;
        };
        let id = &after[..e];
        let label = anchors.get(id).map_or("", |(l, _)| l.as_str());
        out.push_str("<span class=\"xref-tip-label\">");
        out.push_str(&super::escape_text(label));
        out.push_str("</span>");
        if let Some(p) = previews.get(id) {
            out.push(' ');
            out.push_str(p);
        }
        rest = &after[e + PREVIEW_CLOSE.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// `0, 1 and 2`.
fn series_of(seeds: &[u64]) -> String {
    let s: Vec<String> = seeds.iter().map(u64::to_string).collect();
    match s.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}
