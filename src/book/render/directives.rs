//! Figure, table and widget directives: their runs are looked up, their kind draws them or
//! lists their rows, and the result is wrapped, numbered and captioned by its partial; a
//! widget is `templates/widget.html` over the models `site.rs` exports.

use super::Renderer;
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Span};
use crate::book::figures::FigureKind;
use crate::book::kinds::RunData;
use crate::book::parse::directive::Widget;
use crate::book::parse::{Block, Node};
use crate::book::runs::Results;
use crate::book::tables::TableKind;
use minijinja::{context, Value};

/// `1500000` → `1,500,000`.
fn thousands(n: usize) -> String {
    crate::book::claims::group_thousands(&n.to_string())
}

/// The runs of a directive with their labels; an unknown run is reported at `span`.
fn resolve<'r, K>(
    diags: &mut Vec<Diagnostic>,
    results: &'r Results,
    b: &'r Block<K>,
    what: &str,
    span: &Span,
) -> Option<Vec<RunData<'r>>> {
    let mut out = Vec::new();
    for (id, label) in b.runs.iter().zip(b.run_labels()) {
        let Some(run) = RunData::of(results, id, label) else {
            if results.plans.iter().any(|p| &p.id == id) {
                // Declared, but it failed or could not train (`--offline` and not in the
                // cache): its own error says why.
                return None;
            }
            diags.push(Diagnostic::unknown_run(
                what,
                id,
                Some(span.clone()),
                &results.declared(),
            ));
            return None;
        };
        out.push(run);
    }
    Some(out)
}

impl Renderer<'_> {
    /// A figure directive: its SVG in `partials/figure.html`, or nothing if it cannot be drawn.
    pub(super) fn figure(
        &mut self,
        b: &Block<FigureKind>,
        label: &str,
        caption: &str,
        span: &Span,
    ) -> String {
        let results = self.results;
        let Some(runs) = resolve(&mut self.diags, results, b, "this figure", span) else {
            return String::new();
        };
        let differs = crate::book::contrast::side_by_side_lines(&b.runs, &results.plans);
        match b.kind.get().draw(&runs) {
            Ok(svg) => self.html(
                "partials/figure.html",
                context! { id => &b.id, label, caption => Value::from_safe_string(caption.into()), svg, differs },
            ),
            Err(d) => {
                self.diags.push(d.at(span.clone()));
                String::new()
            }
        }
    }

    /// A table directive: its kind's template in `partials/table.html` (empty on a problem).
    pub(super) fn table(
        &mut self,
        b: &Block<TableKind>,
        label: &str,
        caption: &str,
        span: &Span,
    ) -> String {
        let results = self.results;
        let rows =
            resolve(&mut self.diags, results, b, "this table", span).and_then(|runs| {
                match b.kind.get().rows(&runs, &self.env) {
                    Ok(rows) => Some(rows),
                    Err(d) => {
                        self.diags.push(d.at(span.clone()));
                        None
                    }
                }
            });
        let table = match rows {
            Some(rows) => self.html(&b.kind.template(), rows),
            None => String::new(),
        };
        let differs = crate::book::contrast::side_by_side_lines(&b.runs, &results.plans);
        self.wrap_table(&b.id, label, caption, &table, &differs)
    }

    /// A numbered table (directive or captioned markdown): `partials/table.html`.
    pub(super) fn wrap_table(
        &mut self,
        id: &str,
        label: &str,
        caption: &str,
        table: &str,
        differs: &[String],
    ) -> String {
        self.html(
            "partials/table.html",
            context! {
                id,
                label,
                caption => Value::from_safe_string(caption.into()),
                table => Value::from_safe_string(table.into()),
                differs,
            },
        )
    }

    /// A notebook directive: the chapter's notebook, training `run`'s configuration (its
    /// first seed), rendered from the book's template; problems are errors at the fence.
    pub(super) fn notebook(&mut self, run: &str, span: &Span) {
        if self.notebook.is_some() {
            self.diags.push(
                Diagnostic::error(
                    Code::Directive,
                    Some(span.clone()),
                    "a second notebook directive in this chapter",
                )
                .hint("a chapter has one notebook: keep one ```notebook"),
            );
            return;
        }
        let Some(produced) = self.results.by_run.get(run).and_then(|p| p.first()) else {
            if !self.results.plans.iter().any(|p| p.id == run) {
                self.diags.push(Diagnostic::unknown_run(
                    "this notebook",
                    run,
                    Some(span.clone()),
                    &self.results.declared(),
                ));
            }
            return;
        };
        let result = &produced.result;
        if result.train().is_none() {
            self.diags.push(
                Diagnostic::error(
                    Code::ProbeRun,
                    Some(span.clone()),
                    format!("this notebook trains a model, and `{run}` is a probe"),
                )
                .hint("name a training run"),
            );
            return;
        }
        let (title, slug, number) = self.page.clone();
        let book_dir = self.root.join("book");
        let input = crate::book::notebook::Input {
            config: self.config,
            root: self.root,
            book_dir: &book_dir,
            chapter_title: &title,
            chapter_number: &number,
            slug: &slug,
            run,
            seed: result.seed,
            run_config: &result.config,
        };
        match crate::book::notebook::render(&input) {
            Ok(bytes) => self.notebook = Some((crate::book::notebook::file_name(&slug), bytes)),
            Err(e) => self.diags.push(
                Diagnostic::error(
                    Code::Directive,
                    Some(span.clone()),
                    "cannot write this chapter's notebook",
                )
                .label(e),
            ),
        }
    }

    /// A widget directive: `templates/widget.html`, for models that are all training runs
    /// of the book (otherwise an error at the fence, and nothing).
    pub(super) fn widget(&mut self, w: &Widget, span: &Span) -> String {
        let mut models = Vec::new();
        let (mut max_len, mut max_input) = (0, usize::MAX);
        let (mut tasks, mut example) = (Vec::new(), None);
        for m in &w.models {
            let Some(result) = self.results.by_run.get(&m.run).and_then(|p| p.first()) else {
                if self.results.plans.iter().any(|p| p.id == m.run) {
                    // Declared, but it failed or could not train: its own error says why.
                    return String::new();
                }
                self.diags.push(Diagnostic::unknown_run(
                    "this widget",
                    &m.run,
                    Some(span.clone()),
                    &self.results.declared(),
                ));
                return String::new();
            };
            let result = &result.result;
            if result.train().is_none() {
                self.diags.push(
                    Diagnostic::error(
                        Code::ProbeRun,
                        Some(span.clone()),
                        format!(
                            "this widget runs trained models, and `{}` is a probe",
                            m.run
                        ),
                    )
                    .hint("list training runs (base = \"reference\" or one of its faults)"),
                );
                return String::new();
            }
            if let Some(what) = result.config.widget_cannot_run() {
                self.diags.push(
                    Diagnostic::error(
                        Code::WidgetModel,
                        Some(span.clone()),
                        format!("the widget cannot run `{}`: its run has {what}", m.run),
                    )
                    .hint("the page runs models that answer a string of the letters a-j with as many letters (reverse, copy, sort); show this run with a figure"),
                );
                return String::new();
            }
            max_len = max_len.max(result.config.data.max_len);
            // 2n + 1 tokens must fit every model's positions (static/widget/main.js).
            let positions = usize::try_from(result.config.model.positions).unwrap_or(0);
            max_input = max_input.min(positions.saturating_sub(1) / 2);
            let task = result.config.data.task.name();
            if !tasks.contains(&task) {
                tasks.push(task);
            }
            example = example.or_else(|| result.train().map(|t| t.attention.input.clone()));
            models.push(context! { id => &m.run, label => m.label() });
        }
        if !self.within_budget(w, span) {
            return String::new();
        }
        let widget = context! {
            id => &w.id,
            models_url => format!("{}manifest.json", super::super::site::MODELS_DIR),
            max_len,
            max_input,
            tasks,
            example,
            models,
        };
        self.html("widget.html", context! { widget })
    }

    /// Adds this widget's models to its chapter's and holds their packed weights to the
    /// budget a page may load (`export::BUDGET`); over it, an error at the directive that
    /// names each model's size.
    fn within_budget(&mut self, w: &Widget, span: &Span) -> bool {
        for m in &w.models {
            if self.widget_bytes.iter().any(|(run, _)| *run == m.run) {
                continue;
            }
            let Some(p) = self.results.by_run.get(&m.run).and_then(|p| p.first()) else {
                continue;
            };
            match crate::book::export::packed_size(&p.dir) {
                Ok(bytes) => self.widget_bytes.push((m.run.clone(), bytes)),
                Err(e) => {
                    self.diags.push(Diagnostic::error(
                        Code::Io,
                        Some(span.clone()),
                        format!("cannot read the weights of `{}`: {e}", m.run),
                    ));
                    return false;
                }
            }
        }
        let total: usize = self.widget_bytes.iter().map(|(_, b)| b).sum();
        if total <= crate::book::export::BUDGET {
            return true;
        }
        let sizes: Vec<String> = self
            .widget_bytes
            .iter()
            .map(|(run, b)| format!("`{run}` {}", thousands(*b)))
            .collect();
        self.diags.push(
            Diagnostic::error(
                Code::WidgetBudget,
                Some(span.clone()),
                format!(
                    "this chapter's widgets load {} bytes of weights, over the budget of {} bytes a page may load",
                    thousands(total),
                    thousands(crate::book::export::BUDGET)
                ),
            )
            .note(format!("packed weights: {}", sizes.join(", ")))
            .hint("list fewer or smaller models, or move a widget to another chapter (each chapter has its own budget)"),
        );
        false
    }

    /// A caption's nodes as inline HTML (without the paragraph), and as plain text.
    pub(super) fn caption(
        &mut self,
        nodes: &[Node],
        inlines: &[super::inlines::InlineOut],
    ) -> (String, String) {
        let (html, text) = self.inline_html(nodes, inlines);
        let h = html.trim();
        let h = h
            .strip_prefix("<p>")
            .and_then(|x| x.strip_suffix("</p>"))
            .unwrap_or(h);
        (h.to_string(), text)
    }
}
