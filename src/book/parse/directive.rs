//! Directives: fenced blocks whose info string is `run`, `figure`, `table`, `include` or
//! `widget`, typed from their TOML bodies, with every problem placed at its line.

use super::events::Node;
use super::Spanned;
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};
use crate::book::figures::FigureKind;
use crate::book::kinds::{self, Body, Common};
use crate::book::tables::TableKind;
use revtx_spec::experiments::RunSpec;

/// A figure or table directive: its id, common fields and kind.
#[derive(Clone, Debug)]
pub struct Block<K> {
    pub id: String,
    /// The runs it draws, by id; never empty.
    pub runs: Vec<String>,
    /// One label per run (default: the run ids).
    pub labels: Vec<String>,
    /// The caption, parsed as inline markdown with its constructs attached.
    pub caption: Vec<Node>,
    pub kind: K,
}

impl<K> Block<K> {
    /// The label of each run: the given one, else the run id.
    pub fn run_labels(&self) -> Vec<&str> {
        self.runs
            .iter()
            .enumerate()
            .map(|(k, r)| self.labels.get(k).unwrap_or(r).as_str())
            .collect()
    }
}

#[derive(Clone, Debug)]
pub enum Directive {
    /// ```` ```run id ````: a run spec (base, seed|seeds, overrides).
    /// `contrast = { with, varies }` declares what the run varies against another.
    Run {
        id: String,
        spec: RunSpec,
        contrast: Option<Box<crate::book::contrast::Contrast>>,
        /// `from` and `ablate`: a run that retrains nothing, and switches parts of the
        /// trained run `from` off.
        intervene: Option<Box<crate::book::intervene::Written>>,
    },
    /// ```` ```figure id ````.
    Figure(Block<FigureKind>),
    /// ```` ```table id ````.
    Table(Block<TableKind>),
    /// ```` ```include path[:anchor] ````, with its twins in other languages (the body's
    /// `twins`), shown as tabs beside it.
    Include(Listing),
    /// ```` ```widget id ````: the reversal widget, running the listed models in the page.
    Widget(Widget),
    /// ```` ```notebook run ````: the chapter's notebook trains this run's configuration
    /// (book.toml's `[notebook]` says how it is written).
    Notebook { run: String },
    /// ```` ```expression name ````: an expression named once (`params`, `expr`, `about`),
    /// called as `name(args…)` in any chapter, like book.toml's `[expressions.name]`.
    Expression {
        name: String,
        def: crate::book::parse::config::NamedExpr,
    },
}

/// A widget directive: the models the reader can run, each a training run of the book.
#[derive(Clone, Debug)]
pub struct Widget {
    pub id: String,
    /// In the order of the picker; never empty, no run twice.
    pub models: Vec<WidgetModel>,
}

/// An included listing: a project file's anchored lines, and the same code in other
/// languages, each from its own file (`twins = [{ label = "PyTorch", source = "…" }]`).
#[derive(Clone, Debug)]
pub struct Listing {
    pub source: Source,
    /// The tab of the listing itself (default: its language's name, e.g. `Rust`).
    pub label: Option<String>,
    pub twins: Vec<Twin>,
}

/// A project file, and the anchor whose lines it shows (`None`: the whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub path: String,
    pub anchor: Option<String>,
}

impl Source {
    /// `path[:anchor]`.
    pub fn parse(s: &str) -> Self {
        match s.split_once(':') {
            Some((p, a)) => Source {
                path: p.to_string(),
                anchor: Some(a.to_string()),
            },
            None => Source {
                path: s.to_string(),
                anchor: None,
            },
        }
    }

    /// How the listing is titled: `path (anchor)`.
    pub fn title(&self) -> String {
        match &self.anchor {
            Some(a) => format!("{} ({a})", self.path),
            None => self.path.clone(),
        }
    }
}

/// One twin of a listing: its tab's label, its source, and where the body names it.
#[derive(Clone, Debug)]
pub struct Twin {
    pub label: String,
    pub source: Source,
    pub span: Span,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListingBody {
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    twins: Vec<TwinBody>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TwinBody {
    label: toml::Spanned<String>,
    source: toml::Spanned<String>,
}

/// One model of a widget: `{ run = "reference", label = "…" }`.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WidgetModel {
    pub run: String,
    /// What the picker shows (default: the run id).
    #[serde(default)]
    pub label: Option<String>,
}

impl WidgetModel {
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.run)
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WidgetBody {
    models: Vec<WidgetModel>,
}

impl Directive {
    pub fn id(&self) -> Option<&str> {
        match self {
            Directive::Run { id, .. } => Some(id),
            Directive::Figure(b) => Some(&b.id),
            Directive::Table(b) => Some(&b.id),
            Directive::Widget(w) => Some(&w.id),
            Directive::Include(_) | Directive::Notebook { .. } | Directive::Expression { .. } => {
                None
            }
        }
    }
}

/// The directives, by the first word of their fence's info string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectiveKind {
    Run,
    Figure,
    Table,
    Include,
    Widget,
    Notebook,
    Expression,
}

impl DirectiveKind {
    pub const ALL: [DirectiveKind; 7] = [
        DirectiveKind::Run,
        DirectiveKind::Figure,
        DirectiveKind::Table,
        DirectiveKind::Include,
        DirectiveKind::Widget,
        DirectiveKind::Notebook,
        DirectiveKind::Expression,
    ];

    /// The fence word that opens it.
    pub fn word(self) -> &'static str {
        match self {
            DirectiveKind::Run => "run",
            DirectiveKind::Figure => "figure",
            DirectiveKind::Table => "table",
            DirectiveKind::Include => "include",
            DirectiveKind::Widget => "widget",
            DirectiveKind::Notebook => "notebook",
            DirectiveKind::Expression => "expression",
        }
    }

    /// The directive a fence's first word names; `None` for a plain code block.
    pub fn from_word(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.word() == word)
    }

    /// Whether inline constructs in its body are read (figure and table captions).
    pub fn has_prose(self) -> bool {
        matches!(self, DirectiveKind::Figure | DirectiveKind::Table)
    }
}

/// What a directive's body needs from the chapter parse.
pub struct Fence<'a> {
    pub info: &'a str,
    pub body: &'a str,
    pub file: FileId,
    /// The info line.
    pub span: Span,
    /// Source offset of a byte of `body`.
    pub to_src: &'a dyn Fn(usize) -> usize,
    /// Parses a caption into nodes.
    pub caption: &'a dyn Fn(&str) -> Vec<Node>,
}

/// Parses a fence into a directive; `None` when it names one but is broken (diagnosed).
pub fn parse(
    kind: DirectiveKind,
    f: &Fence,
    diags: &mut Vec<Diagnostic>,
) -> Option<Spanned<Directive>> {
    let mut words = f.info.split_whitespace();
    let word = words.next().unwrap_or_default();
    let err = |code, msg: String, hint: &str| {
        Diagnostic::error(code, Some(f.span.clone()), msg).hint(hint.to_string())
    };
    let Some(arg) = words.next() else {
        diags.push(err(
            Code::Directive,
            format!("`{word}` needs an argument"),
            match kind {
                DirectiveKind::Include => "write ```include src/file.rs:anchor",
                _ => "write e.g. ```run reference",
            },
        ));
        return None;
    };
    if words.next().is_some() {
        diags.push(err(
            Code::Directive,
            format!("unexpected text after `{word} {arg}`"),
            "a directive takes one argument",
        ));
        return None;
    }
    if kind != DirectiveKind::Include && !super::valid_id(arg) {
        diags.push(err(
            Code::Directive,
            format!("`{arg}` is not a valid id"),
            "ids are lowercase letters, digits, `-` and `_`",
        ));
        return None;
    }
    let id = arg.to_string();
    let body = Body {
        text: f.body,
        file: f.file,
        to_src: f.to_src,
        fence: &f.span,
    };
    let node = match kind {
        DirectiveKind::Run => match run_contrast(&body).and_then(|(rest, contrast)| {
            crate::book::intervene::read(&rest, &body).map(|(rest, iv)| (rest, contrast, iv))
        }) {
            Err(e) => {
                diags.push(e);
                return None;
            }
            Ok((rest, contrast, intervene)) => match toml::from_str::<RunSpec>(&rest) {
                Ok(spec) => {
                    if let Some(d) = repeated_seed(&body) {
                        diags.push(d);
                        return None;
                    }
                    Directive::Run {
                        id,
                        spec,
                        contrast,
                        intervene,
                    }
                }
                Err(e) => {
                    diags.push(body.toml_error(&e, "run directive"));
                    return None;
                }
            },
        },
        DirectiveKind::Expression => expression(id, f, &body, diags)?,
        DirectiveKind::Figure => Directive::Figure(block(id, &body, f, diags)?),
        DirectiveKind::Table => Directive::Table(block(id, &body, f, diags)?),
        DirectiveKind::Widget => Directive::Widget(widget(id, &body, diags)?),
        DirectiveKind::Notebook => {
            if !body.text.trim().is_empty() {
                diags.push(
                    Diagnostic::error(
                        Code::Directive,
                        Some(body.span(0..body.text.trim_end().len())),
                        "a notebook directive has no body",
                    )
                    .hint("name the run it trains on the fence: ```notebook reference"),
                );
                return None;
            }
            Directive::Notebook { run: id }
        }
        DirectiveKind::Include => Directive::Include(listing(Source::parse(arg), &body, diags)?),
    };
    Some(Spanned {
        node,
        span: f.span.clone(),
    })
}

/// A seed listed twice in `seeds` would count twice in every mean and spread over the
/// run's seeds: an error at the second one.
/// An ```` ```expression name ```` directive: a name an expression can call, and its TOML.
fn expression(
    id: String,
    f: &Fence,
    body: &Body,
    diags: &mut Vec<Diagnostic>,
) -> Option<Directive> {
    let ident = id
        .bytes()
        .enumerate()
        .all(|(i, b)| b == b'_' || b.is_ascii_lowercase() || (i > 0 && b.is_ascii_digit()));
    if !ident {
        diags.push(
            Diagnostic::error(
                Code::Directive,
                Some(f.span.clone()),
                format!("`{id}` cannot name an expression"),
            )
            .hint("an expression's name is a word of lowercase letters, digits and `_`, e.g. `distinct_share`"),
        );
        return None;
    }
    match toml::from_str::<crate::book::parse::config::NamedExpr>(f.body) {
        Ok(def) => Some(Directive::Expression { name: id, def }),
        Err(e) => {
            diags.push(body.toml_error(&e, "expression directive"));
            None
        }
    }
}

/// A run block's `contrast = { with = "run", varies = ["key", …] }`, read apart from the
/// run spec (it decides no result: the block's text, with its lines blanked, is the spec).
fn run_contrast(
    body: &Body,
) -> Result<(String, Option<Box<crate::book::contrast::Contrast>>), Diagnostic> {
    #[derive(serde::Deserialize)]
    struct Head {
        contrast: Option<toml::Spanned<Written>>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Written {
        with: toml::Spanned<String>,
        varies: toml::Spanned<Vec<String>>,
    }
    let what = "run directive";
    let head: Head = toml::from_str(body.text).map_err(|e| body.toml_error(&e, what))?;
    let Some(c) = head.contrast else {
        return Ok((body.text.to_string(), None));
    };
    let span = c.span();
    let c = c.into_inner();
    if c.varies.get_ref().is_empty() {
        return Err(Diagnostic::error(
            Code::Confounded,
            Some(body.span(c.varies.span())),
            "a contrast that varies nothing",
        )
        .hint("name the keys the run varies, e.g. `varies = [\"train.warmup\"]`"));
    }
    let mut rest = body.text.as_bytes().to_vec();
    crate::book::kinds::blank_lines(&mut rest, span.clone());
    let contrast = crate::book::contrast::Contrast {
        with: c.with.get_ref().clone(),
        varies: c.varies.get_ref().clone(),
        span: body.span(span),
        with_span: body.span(c.with.span()),
        varies_span: body.span(c.varies.span()),
    };
    Ok((
        String::from_utf8(rest).unwrap_or_default(),
        Some(Box::new(contrast)),
    ))
}

fn repeated_seed(body: &Body) -> Option<Diagnostic> {
    // Other fields are ignored here: the run spec itself was read already.
    #[derive(serde::Deserialize)]
    struct Seeds {
        seeds: Option<Vec<toml::Spanned<u64>>>,
    }
    let seeds = toml::from_str::<Seeds>(body.text).ok()?.seeds?;
    for (k, s) in seeds.iter().enumerate() {
        if seeds[..k].iter().any(|f| f.get_ref() == s.get_ref()) {
            return Some(
                Diagnostic::error(
                    Code::RepeatedSeed,
                    Some(body.span(s.span())),
                    format!("seed {} is listed twice", s.get_ref()),
                )
                .label("listed again here")
                .note("a repeated seed counts twice in every mean and spread over the run's seeds")
                .hint("list each seed once, e.g. `seeds = [0, 1, 2, 3, 4]`"),
            );
        }
    }
    None
}

fn block<K: kinds::Kinds>(
    id: String,
    body: &Body,
    f: &Fence,
    diags: &mut Vec<Diagnostic>,
) -> Option<Block<K>> {
    let (common, kind): (Common, K) = kinds::read(body).map_err(|d| diags.push(d)).ok()?;
    let placeholders = |s: &str| s.matches(super::PLACEHOLDER_OPEN).count();
    if placeholders(f.body) != placeholders(&common.caption) {
        diags.push(
            Diagnostic::error(
                Code::Directive,
                Some(f.span.clone()),
                "claims, inserts and references belong in the caption",
            )
            .hint("write labels and other fields as plain text"),
        );
        return None;
    }
    Some(Block {
        id,
        runs: common.runs,
        labels: common.labels,
        caption: (f.caption)(&common.caption),
        kind,
    })
}

/// A widget's body: at least one model, each run named once. Whether the runs exist and
/// train is known once the runs are planned (see `render/directives.rs`).
/// An include's body: nothing, or the listing's own tab label and its twins.
fn listing(source: Source, body: &Body, diags: &mut Vec<Diagnostic>) -> Option<Listing> {
    if body.text.trim().is_empty() {
        return Some(Listing {
            source,
            label: None,
            twins: Vec::new(),
        });
    }
    let example =
        "e.g. `twins = [{ label = \"PyTorch\", source = \"python/pkg/model.py:attention\" }]`";
    let parsed: ListingBody = match toml::from_str(body.text) {
        Ok(b) => b,
        Err(e) => {
            diags.push(body.toml_error(&e, "include directive").hint(example));
            return None;
        }
    };
    let mut twins: Vec<Twin> = Vec::new();
    for t in parsed.twins {
        let label = t.label.get_ref().trim().to_string();
        let taken = twins.iter().any(|o| o.label == label)
            || parsed.label.as_deref().is_some_and(|l| l.trim() == label);
        if label.is_empty() || taken {
            diags.push(
                Diagnostic::error(
                    Code::Directive,
                    Some(body.span(t.label.span())),
                    if label.is_empty() {
                        "a twin's label is empty".to_string()
                    } else {
                        format!("two tabs of this listing are labelled `{label}`")
                    },
                )
                .hint("each tab needs its own label, e.g. `PyTorch`"),
            );
            return None;
        }
        twins.push(Twin {
            label,
            source: Source::parse(t.source.get_ref()),
            span: body.span(t.source.span()),
        });
    }
    Some(Listing {
        source,
        label: parsed.label,
        twins,
    })
}

fn widget(id: String, body: &Body, diags: &mut Vec<Diagnostic>) -> Option<Widget> {
    let fence = || Some(body.fence.clone());
    let example = "list the training runs it runs, e.g. `models = [{ run = \"reference\", label = \"Reference\" }]`";
    if body.text.trim().is_empty() {
        diags.push(
            Diagnostic::error(Code::NoRuns, fence(), "this widget has no models").hint(example),
        );
        return None;
    }
    let parsed: WidgetBody = match toml::from_str(body.text) {
        Ok(b) => b,
        Err(e) => {
            diags.push(body.toml_error(&e, "widget directive").hint(example));
            return None;
        }
    };
    if parsed.models.is_empty() {
        diags.push(
            Diagnostic::error(Code::NoRuns, fence(), "this widget has no models").hint(example),
        );
        return None;
    }
    for (k, m) in parsed.models.iter().enumerate() {
        if parsed.models[..k].iter().any(|o| o.run == m.run) {
            diags.push(
                Diagnostic::error(
                    Code::Directive,
                    fence(),
                    format!("this widget lists run `{}` twice", m.run),
                )
                .hint("list each model once"),
            );
            return None;
        }
    }
    Some(Widget {
        id,
        models: parsed.models,
    })
}
