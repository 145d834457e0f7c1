//! Inline constructs: claims are evaluated and checked, inserts evaluated, references
//! resolved; each becomes its partial's HTML and every claim and insert a claim record.

use super::Renderer;
use crate::book::claims::{self, Check, ClaimKind, ClaimRecord, Verdict};
use crate::book::diag::{Diagnostic, Span};
use crate::book::expr;
use crate::book::parse::{Chapter, Inline, Tolerance};
use minijinja::{context, Value};

/// What an inline construct renders as: HTML, and the plain text search indexes.
pub struct InlineOut {
    pub html: String,
    pub text: String,
}

impl Renderer<'_> {
    /// The output of every inline construct of a chapter, indexed like `chapter.inlines`,
    /// evaluated in source order.
    pub(super) fn inlines(&mut self, ch: &Chapter) -> Vec<InlineOut> {
        let file = self.sources.display_path(ch.file);
        let mut out = Vec::with_capacity(ch.inlines.len());
        for (n, inl) in ch.inlines.iter().enumerate() {
            let (line, col) = self.sources.line_col(ch.file, inl.span.range.start);
            let record =
                |kind, expr: &str, quoted: Option<&str>, recomputed, verdict, span| ClaimRecord {
                    file: file.clone(),
                    line,
                    col,
                    kind,
                    expr: expr.to_string(),
                    quoted: quoted.map(str::to_string),
                    recomputed,
                    verdict,
                    quoted_span: span,
                };
            let o = match &inl.node {
                Inline::Label { .. } => InlineOut {
                    html: String::new(),
                    text: String::new(),
                },
                Inline::Ref { id } => self.reference(id, &ch.slug, &inl.span),
                Inline::Insert { expr, expr_span } => {
                    let v = self.eval(expr, expr_span);
                    let text = v.as_ref().map_or_else(|| "??".into(), expr::as_text);
                    let verdict = if v.is_some() {
                        Verdict::Ok
                    } else {
                        Verdict::Error
                    };
                    self.claims
                        .push(record(ClaimKind::Inserted, expr, None, None, verdict, None));
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
                Inline::Claim {
                    quoted,
                    quoted_span,
                    expr,
                    expr_span,
                    tolerance,
                } => {
                    let (verdict, recomputed, value) =
                        self.check(quoted, quoted_span, expr, expr_span, *tolerance);
                    let (class, status) = match verdict {
                        Verdict::Ok => ("claim-ok", "checked".to_string()),
                        Verdict::Drift => (
                            "claim-fail",
                            format!(
                                "does not match: now {}",
                                recomputed.clone().unwrap_or_default()
                            ),
                        ),
                        Verdict::Error => ("claim-fail", "error".to_string()),
                    };
                    let span = Some(quoted_span.clone());
                    self.claims.push(record(
                        ClaimKind::Checked,
                        expr,
                        Some(quoted),
                        recomputed,
                        verdict,
                        span,
                    ));
                    let html = self.claim_html(n, class, quoted, expr, &value, &status);
                    InlineOut {
                        html,
                        text: quoted.clone(),
                    }
                }
            };
            out.push(o);
        }
        out
    }

    /// Checks a claim: its verdict, what it recomputes to (written like the quote) and
    /// its value at full precision; a drift or mismatch is reported at the quote.
    fn check(
        &mut self,
        quoted: &str,
        quoted_span: &Span,
        expr: &str,
        expr_span: &Span,
        tolerance: Option<Tolerance>,
    ) -> (Verdict, Option<String>, String) {
        let Some(val) = self.eval(expr, expr_span) else {
            return (Verdict::Error, None, "??".to_string());
        };
        let full = expr::as_full_text(&val);
        match claims::check(quoted, &val, tolerance) {
            Check::Holds => (Verdict::Ok, Some(quoted.to_string()), full),
            Check::Drift { recomputed } => {
                self.diags.push(
                            Diagnostic::error("drift", Some(quoted_span.clone()), "quoted figure does not match its run")
                                .label(format!("quoted `{quoted}`, recomputed `{recomputed}`"))
                                .note(format!("expression: {expr} = {full}"))
                                .hint("update the text, or run `revtx-book check --bless` to rewrite drifted figures"),
                        );
                (Verdict::Drift, Some(recomputed), full)
            }
            Check::Mismatch { reason } => {
                self.diags.push(
                    Diagnostic::error(
                        "quote-mismatch",
                        Some(quoted_span.clone()),
                        "quoted figure cannot be compared with its value",
                    )
                    .label(reason)
                    .note(format!("expression: {expr}")),
                );
                (Verdict::Error, None, full)
            }
        }
    }

    fn reference(&mut self, id: &str, slug: &str, span: &Span) -> InlineOut {
        let Some((label, page)) = self.anchors.get(id).cloned() else {
            self.diags.push(
                Diagnostic::error(
                    "unknown-reference",
                    Some(span.clone()),
                    format!("unknown reference `{id}`"),
                )
                .hint("refer to a figure, table or labelled equation by its id"),
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
        let html = self.html("partials/xref.html", context! { href, label });
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
        let mut v: Vec<String> = expr
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .filter(|w| self.results.by_run.contains_key(*w))
            .map(String::from)
            .collect();
        v.dedup();
        v
    }

    /// Evaluates an expression, turning failures into diagnostics at `span`.
    fn eval(&mut self, expr: &str, span: &Span) -> Option<Value> {
        if let Err(e) = self.env.compile_expression(expr) {
            self.diags.push(
                Diagnostic::error(
                    "expression",
                    Some(span.clone()),
                    "cannot parse this expression",
                )
                .label(e.to_string())
                .hint("expressions look like `reference.train.test.accuracy`"),
            );
            return None;
        }
        match expr::evaluate(&self.env, expr, &self.ctx) {
            Ok(v) => Some(v),
            Err(e) => {
                let first = expr
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .find(|w| !w.is_empty())
                    .unwrap_or("");
                let known_run = self.results.by_run.contains_key(first) || first == "machine";
                let d = Diagnostic::error(
                    "expression",
                    Some(span.clone()),
                    format!("cannot evaluate `{expr}`"),
                )
                .label(e);
                let d = if known_run {
                    d.hint("see the run's result.json (Runs appendix) for the available fields")
                } else {
                    d.hint(format!(
                        "`{first}` is not a run; declared runs: {}",
                        self.results.declared().join(", ")
                    ))
                };
                self.diags.push(d);
                None
            }
        }
    }
}
