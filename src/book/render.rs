//! Render: a parsed chapter plus run results → HTML, with every claim checked.
//!
//! Markdown events are rewritten (directives → figures, tables and listings; math →
//! KaTeX HTML; code → highlighted HTML; headings → anchored, collected for the TOC), then
//! pulldown-cmark writes the HTML and placeholders are filled with claims and references.

use super::claims::{self, Verdict};
use super::diag::{Diagnostic, Span};
use super::figures::{self, Bars, Series};
use super::parse::{
    self, Chapter, Directive, FigureSpec, Inline, TableSpec, PLACEHOLDER_CLOSE, PLACEHOLDER_OPEN,
};
use super::runs::Results;
use crate::result::{RunResult, TrainResult};
use minijinja::Value;
use pulldown_cmark::{CodeBlockKind, CowStr, Event, HeadingLevel, Parser, Tag, TagEnd};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

/// One checked or inserted figure, as listed in `claims.json`.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimRecord {
    pub file: String,
    pub line: usize,
    pub col: usize,
    /// `checked` or `inserted`.
    pub kind: &'static str,
    pub expr: String,
    /// The author's text (checked claims only).
    pub quoted: Option<String>,
    /// The recomputed value written like the quote (checked claims only).
    pub recomputed: Option<String>,
    /// `ok`, `drift` or `error`.
    pub verdict: &'static str,
    #[serde(skip)]
    pub quoted_span: Option<Span>,
    #[serde(skip)]
    pub value_text: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct TocEntry {
    pub level: u8,
    pub id: String,
    pub text: String,
}

/// A section of plain text for the search index.
#[derive(Clone, Debug, Serialize)]
pub struct SearchEntry {
    pub title: String,
    pub url: String,
    pub text: String,
}

/// A rendered chapter.
pub struct RenderedChapter {
    pub title: String,
    pub slug: String,
    pub html: String,
    pub toc: Vec<TocEntry>,
    pub search: Vec<SearchEntry>,
    pub counts: Counts,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Counts {
    pub checked: usize,
    pub inserted: usize,
    pub figures: usize,
    pub tables: usize,
    pub equations: usize,
    pub listings: usize,
}

/// Where numbered things live, across chapters: id → (label, page).
pub type Anchors = HashMap<String, (String, String)>;

/// Shared state of the render stage.
pub struct Renderer<'a> {
    pub root: &'a Path,
    pub results: &'a Results,
    pub ctx: Value,
    pub env: minijinja::Environment<'static>,
    pub katex: &'a mut KatexCache,
    pub anchors: Anchors,
    pub claims: Vec<ClaimRecord>,
    pub diags: Vec<Diagnostic>,
    pub sources: &'a super::diag::Sources,
}

/// KaTeX output by (display, formula). Persisted so warm builds never start the JS engine.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct KatexCache {
    pub entries: HashMap<String, String>,
    #[serde(skip)]
    pub dirty: bool,
}

impl KatexCache {
    pub fn render(&mut self, formula: &str, display: bool) -> Result<String, String> {
        let key = format!("{}{formula}", if display { "D" } else { "I" });
        if let Some(h) = self.entries.get(&key) {
            return Ok(h.clone());
        }
        let opts = katex::Opts::builder()
            .display_mode(display)
            .throw_on_error(true)
            .build()
            .map_err(|e| e.to_string())?;
        let html = katex::render_with_opts(formula, &opts).map_err(|e| e.to_string())?;
        self.entries.insert(key, html.clone());
        self.dirty = true;
        Ok(html)
    }
}

/// Builds the expression context: each run id → its result (single seed) or
/// `{seeds, runs}` (several seeds); `machine` → facts about where the runs ran.
pub fn context(results: &Results) -> Value {
    let mut map = serde_json::Map::new();
    for (id, produced) in &results.by_run {
        let plan = results.plans.iter().find(|p| &p.id == id);
        let multi = plan.is_some_and(|p| p.seeds.len() > 1);
        let v = if multi {
            serde_json::json!({
                "seeds": produced.iter().map(|p| p.result.seed).collect::<Vec<_>>(),
                "runs": produced.iter().map(|p| &p.result).collect::<Vec<_>>(),
                "config": produced[0].result.config,
            })
        } else {
            serde_json::to_value(&produced[0].result).unwrap()
        };
        map.insert(id.clone(), v);
    }
    let reference = results
        .by_run
        .values()
        .flatten()
        .find(|p| p.result.train.is_some())
        .map(|p| &p.result.env);
    map.insert(
        "machine".into(),
        serde_json::json!({
            "cpu": reference.map(|e| e.cpu.clone()).unwrap_or_else(crate::result::cpu_model),
            "threads": reference.map(|e| e.threads).unwrap_or(1),
            "libtorch": super::runs::LIBTORCH_VERSION,
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        }),
    );
    Value::from_serialize(serde_json::Value::Object(map))
}

/// Escapes text for HTML (and XML) content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// The id of a heading: explicit `{#id}` or a slug of its text.
pub fn slugify(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if (c.is_whitespace() || c == '-' || c == '.')
            && !out.ends_with('-')
            && !out.is_empty()
        {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn syntax() -> &'static (syntect::parsing::SyntaxSet, ()) {
    static S: OnceLock<(syntect::parsing::SyntaxSet, ())> = OnceLock::new();
    S.get_or_init(|| (syntect::parsing::SyntaxSet::load_defaults_newlines(), ()))
}

/// Highlights code into `<span class="hl-…">` HTML; plain escaped text for unknown languages.
pub fn highlight(code: &str, lang: &str) -> String {
    use syntect::html::{ClassStyle, ClassedHTMLGenerator};
    use syntect::util::LinesWithEndings;
    let ss = &syntax().0;
    let Some(syn) = ss.find_syntax_by_token(lang) else {
        return esc(code);
    };
    let mut g = ClassedHTMLGenerator::new_with_class_style(
        syn,
        ss,
        ClassStyle::SpacedPrefixed { prefix: "hl-" },
    );
    for line in LinesWithEndings::from(code) {
        if g.parse_html_for_line_which_includes_newline(line).is_err() {
            return esc(code);
        }
    }
    g.finalize()
}

/// The lines between `// ANCHOR: name` and `// ANCHOR_END: name`, other anchor lines removed, dedented.
pub fn extract_anchor(src: &str, anchor: Option<&str>) -> Result<String, Vec<String>> {
    let is_marker = |l: &str| {
        let t = l.trim_start();
        t.starts_with("// ANCHOR:") || t.starts_with("// ANCHOR_END:")
    };
    let lines: Vec<&str> = match anchor {
        None => src.lines().filter(|l| !is_marker(l)).collect(),
        Some(a) => {
            let start = src
                .lines()
                .position(|l| l.trim_start() == format!("// ANCHOR: {a}"));
            let end = src
                .lines()
                .position(|l| l.trim_start() == format!("// ANCHOR_END: {a}"));
            match (start, end) {
                (Some(s), Some(e)) if s < e => src
                    .lines()
                    .skip(s + 1)
                    .take(e - s - 1)
                    .filter(|l| !is_marker(l))
                    .collect(),
                _ => {
                    let known = src
                        .lines()
                        .filter_map(|l| {
                            l.trim_start()
                                .strip_prefix("// ANCHOR: ")
                                .map(|s| s.trim().to_string())
                        })
                        .collect();
                    return Err(known);
                }
            }
        }
    };
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    Ok(lines
        .iter()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n")
}

/// A numbered thing in a chapter, in document order.
#[derive(Clone, Debug)]
pub struct Numbered {
    /// Offset in the chapter's placeholder text where it starts (fence, table or math).
    pub offset: usize,
    /// "Figure 1.2", "Table 1.1" or "(1.3)".
    pub label: String,
    pub id: Option<String>,
}

/// Figures, tables (directive tables and captioned markdown tables) and display equations
/// of a chapter, numbered in document order.
pub fn numbered(ch: &Chapter) -> Vec<Numbered> {
    let events: Vec<(Event, std::ops::Range<usize>)> = Parser::new_ext(&ch.text, parse::options())
        .into_offset_iter()
        .collect();
    let (mut fig, mut tab, mut eq) = (0, 0, 0);
    let mut out = Vec::new();
    for (i, (ev, range)) in events.iter().enumerate() {
        match ev {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                let Some(k) = ch.directive_offsets.iter().position(|&o| o == range.start) else {
                    continue;
                };
                match &ch.directives[k].node {
                    Directive::Figure { id, .. } => {
                        fig += 1;
                        out.push(Numbered {
                            offset: range.start,
                            label: format!("Figure {}.{fig}", ch.number),
                            id: Some(id.clone()),
                        });
                    }
                    Directive::Table { id, .. } => {
                        tab += 1;
                        out.push(Numbered {
                            offset: range.start,
                            label: format!("Table {}.{tab}", ch.number),
                            id: Some(id.clone()),
                        });
                    }
                    _ => {}
                }
            }
            Event::Start(Tag::Table(_)) => {
                if let Some(cap) = table_caption(ch, &events, i) {
                    tab += 1;
                    out.push(Numbered {
                        offset: range.start,
                        label: format!("Table {}.{tab}", ch.number),
                        id: cap.id,
                    });
                }
            }
            Event::DisplayMath(_) => {
                eq += 1;
                out.push(Numbered {
                    offset: range.start,
                    label: format!("({}.{eq})", ch.number),
                    id: label_after(ch, events.get(i + 1).map(|e| &e.0)),
                });
            }
            _ => {}
        }
    }
    out
}

/// Numbers figures, tables and equations of every chapter; returns id → (label, page).
pub fn number_everything(chapters: &[Chapter]) -> Anchors {
    let mut anchors = Anchors::new();
    for ch in chapters {
        for n in numbered(ch) {
            if let Some(id) = n.id {
                anchors.insert(id, (n.label, ch.slug.clone()));
            }
        }
    }
    anchors
}

/// A `Table: caption {#tab-id}` paragraph right after the markdown table starting at `start`.
struct TableCaption {
    id: Option<String>,
    /// Events of the caption paragraph's content, and the index after the paragraph.
    inner: Vec<Event<'static>>,
    end: usize,
}

fn table_caption(
    ch: &Chapter,
    events: &[(Event, std::ops::Range<usize>)],
    start: usize,
) -> Option<TableCaption> {
    let close = start
        + events[start..]
            .iter()
            .position(|(e, _)| matches!(e, Event::End(TagEnd::Table)))?;
    if !matches!(events.get(close + 1)?.0, Event::Start(Tag::Paragraph)) {
        return None;
    }
    let Event::Text(first) = &events.get(close + 2)?.0 else {
        return None;
    };
    let rest = first.strip_prefix("Table:")?;
    let para_end = close
        + 2
        + events[close + 2..]
            .iter()
            .position(|(e, _)| matches!(e, Event::End(TagEnd::Paragraph)))?;
    let mut inner: Vec<Event<'static>> =
        vec![Event::Text(CowStr::from(rest.trim_start().to_string()))];
    inner.extend(
        events[close + 3..para_end]
            .iter()
            .map(|(e, _)| e.clone().into_static()),
    );
    let mut id = None;
    for e in &inner {
        if let Event::Text(t) = e {
            for part in t.split(PLACEHOLDER_OPEN).skip(1) {
                let n: Option<usize> = part
                    .split(PLACEHOLDER_CLOSE)
                    .next()
                    .and_then(|x| x.parse().ok());
                if let Some(Inline::Label { id: l }) =
                    n.and_then(|n| ch.inlines.get(n)).map(|x| &x.node)
                {
                    id = Some(l.clone());
                }
            }
        }
    }
    Some(TableCaption {
        id,
        inner,
        end: para_end + 1,
    })
}

fn label_after(ch: &Chapter, ev: Option<&Event>) -> Option<String> {
    let Some(Event::Text(t)) = ev else {
        return None;
    };
    let t = t.trim_start();
    let rest = t.strip_prefix(PLACEHOLDER_OPEN)?;
    let n: usize = rest[..rest.find(PLACEHOLDER_CLOSE)?].parse().ok()?;
    match &ch.inlines.get(n)?.node {
        Inline::Label { id } => Some(id.clone()),
        _ => None,
    }
}

impl Renderer<'_> {
    fn run(&self, id: &str) -> Option<&RunResult> {
        self.results
            .by_run
            .get(id)
            .and_then(|v| v.first())
            .map(|p| &p.result)
    }

    fn train_of(
        &mut self,
        id: &str,
        span: &Span,
        what: &str,
    ) -> Option<(&RunResult, &TrainResult)> {
        match self
            .results
            .by_run
            .get(id)
            .and_then(|v| v.first())
            .map(|p| &p.result)
        {
            Some(r) => match &r.train {
                Some(t) => Some((r, t)),
                None => {
                    self.diags.push(Diagnostic::error(
                        Some(span.clone()),
                        format!("{what} needs a training run, and `{id}` is a probe"),
                    ));
                    None
                }
            },
            None => {
                let known: Vec<String> = self.results.plans.iter().map(|p| p.id.clone()).collect();
                self.diags.push(
                    Diagnostic::error(
                        Some(span.clone()),
                        format!("{what} uses unknown run `{id}`"),
                    )
                    .hint(format!("runs declared in the book: {}", known.join(", "))),
                );
                None
            }
        }
    }

    /// Evaluates an expression, turning failures into diagnostics at `span`.
    fn eval(&mut self, expr: &str, span: &Span) -> Option<Value> {
        if let Err(e) = self.env.compile_expression(expr) {
            self.diags.push(
                Diagnostic::error(Some(span.clone()), "cannot parse this expression")
                    .label(e.to_string())
                    .hint("expressions look like `reference.train.test.accuracy`"),
            );
            return None;
        }
        match claims::evaluate(&self.env, expr, &self.ctx) {
            Ok(v) => Some(v),
            Err(e) => {
                let first = expr
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .find(|w| !w.is_empty())
                    .unwrap_or("");
                let known_run = self.results.by_run.contains_key(first) || first == "machine";
                let mut d =
                    Diagnostic::error(Some(span.clone()), format!("cannot evaluate `{expr}`"))
                        .label(e);
                if !known_run {
                    let known: Vec<String> =
                        self.results.plans.iter().map(|p| p.id.clone()).collect();
                    d = d.hint(format!(
                        "`{first}` is not a run; declared runs: {}",
                        known.join(", ")
                    ));
                } else {
                    d = d
                        .hint("see the run's result.json (Runs appendix) for the available fields");
                }
                self.diags.push(d);
                None
            }
        }
    }

    /// The HTML of every inline construct of a chapter, indexed like `chapter.inlines`.
    fn inlines_html(&mut self, ch: &Chapter) -> Vec<String> {
        let mut out = Vec::with_capacity(ch.inlines.len());
        for (n, inl) in ch.inlines.iter().enumerate() {
            let (line, col) = self.sources.line_col(ch.file, inl.span.range.start);
            let file = self.sources.display_path(ch.file);
            let html = match &inl.node {
                Inline::Label { .. } => String::new(),
                Inline::Ref { id } => match self.anchors.get(id) {
                    Some((label, page)) => {
                        let href = if *page == ch.slug {
                            format!("#{id}")
                        } else {
                            format!("{page}#{id}")
                        };
                        format!(
                            "<a class=\"xref\" href=\"{}\">{}</a>",
                            esc(&href),
                            esc(label)
                        )
                    }
                    None => {
                        self.diags.push(
                            Diagnostic::error(
                                Some(inl.span.clone()),
                                format!("unknown reference `{id}`"),
                            )
                            .hint("refer to a figure, table or labelled equation by its id"),
                        );
                        "??".into()
                    }
                },
                Inline::Insert { expr, expr_span } => {
                    let v = self.eval(expr, expr_span);
                    let text = v
                        .as_ref()
                        .map(claims::value_as_text)
                        .unwrap_or_else(|| "??".into());
                    self.claims.push(ClaimRecord {
                        file,
                        line,
                        col,
                        kind: "inserted",
                        expr: expr.clone(),
                        quoted: None,
                        recomputed: None,
                        verdict: if v.is_some() { "ok" } else { "error" },
                        quoted_span: None,
                        value_text: text.clone(),
                    });
                    claim_html(
                        n,
                        "claim-insert",
                        &text,
                        expr,
                        &text,
                        "inserted, not checked",
                        &self.runs_in(expr),
                    )
                }
                Inline::Claim {
                    quoted,
                    quoted_span,
                    expr,
                    expr_span,
                    tolerance,
                } => {
                    let v = self.eval(expr, expr_span);
                    let (verdict, recomputed, value_text) = match &v {
                        None => ("error", None, "??".to_string()),
                        Some(val) => {
                            let vt = full_text(val);
                            match claims::check(quoted, val, *tolerance) {
                                Verdict::Ok => ("ok", Some(quoted.clone()), vt),
                                Verdict::Drift { recomputed } => {
                                    self.diags.push(
                                        Diagnostic::error(Some(quoted_span.clone()), "quoted figure does not match its run")
                                            .label(format!("quoted `{quoted}`, recomputed `{recomputed}`"))
                                            .note(format!("expression: {expr} = {vt}"))
                                            .hint("update the text, or run `revtx-book check --bless` to rewrite drifted figures"),
                                    );
                                    ("drift", Some(recomputed), vt)
                                }
                                Verdict::Mismatch { reason } => {
                                    self.diags.push(
                                        Diagnostic::error(
                                            Some(quoted_span.clone()),
                                            "quoted figure cannot be compared with its value",
                                        )
                                        .label(reason)
                                        .note(format!("expression: {expr}")),
                                    );
                                    ("error", None, vt)
                                }
                            }
                        }
                    };
                    let class = if verdict == "ok" {
                        "claim-ok"
                    } else {
                        "claim-fail"
                    };
                    let status = match verdict {
                        "ok" => "checked".to_string(),
                        "drift" => format!(
                            "does not match: now {}",
                            recomputed.clone().unwrap_or_default()
                        ),
                        _ => "error".to_string(),
                    };
                    self.claims.push(ClaimRecord {
                        file,
                        line,
                        col,
                        kind: "checked",
                        expr: expr.clone(),
                        quoted: Some(quoted.clone()),
                        recomputed: recomputed.clone(),
                        verdict,
                        quoted_span: Some(quoted_span.clone()),
                        value_text: value_text.clone(),
                    });
                    claim_html(
                        n,
                        class,
                        quoted,
                        expr,
                        &value_text,
                        &status,
                        &self.runs_in(expr),
                    )
                }
            };
            out.push(html);
        }
        out
    }

    fn runs_in(&self, expr: &str) -> Vec<String> {
        let mut v: Vec<String> = expr
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .filter(|w| self.results.by_run.contains_key(*w))
            .map(String::from)
            .collect();
        v.dedup();
        v
    }

    /// Renders one chapter.
    pub fn chapter(&mut self, ch: &Chapter) -> RenderedChapter {
        let inline_html = self.inlines_html(ch);
        let events: Vec<(Event, std::ops::Range<usize>)> =
            Parser::new_ext(&ch.text, parse::options())
                .into_offset_iter()
                .collect();
        let mut out: Vec<Event> = Vec::with_capacity(events.len());
        let mut toc = Vec::new();
        let mut counts = Counts::default();
        let numbers = numbered(ch);
        let number_at = |offset: usize| numbers.iter().find(|n| n.offset == offset);
        let mut title = ch.title.clone();
        let mut i = 0;
        while i < events.len() {
            let (ev, range) = &events[i];
            match ev {
                Event::Start(Tag::Heading { level, id, .. }) => {
                    // Gather the heading's inner events, render them, then wrap with an anchor.
                    let mut j = i + 1;
                    let mut inner = Vec::new();
                    while !matches!(events[j].0, Event::End(TagEnd::Heading(_))) {
                        inner.push(events[j].0.clone());
                        j += 1;
                    }
                    let mut inner_html = String::new();
                    pulldown_cmark::html::push_html(&mut inner_html, inner.into_iter());
                    let plain = strip_tags(&fill(&inner_html, &inline_html));
                    if *level == HeadingLevel::H1 {
                        title = plain;
                    } else {
                        let hid = id
                            .as_ref()
                            .map(|s| s.to_string())
                            .unwrap_or_else(|| format!("sec-{}", slugify(&plain)));
                        let lv = *level as u8;
                        if lv <= 3 {
                            toc.push(TocEntry {
                                level: lv,
                                id: hid.clone(),
                                text: plain.clone(),
                            });
                        }
                        out.push(Event::Html(CowStr::from(format!(
                            "<h{lv} id=\"{hid}\">{inner_html}<a class=\"anchor\" href=\"#{hid}\" aria-label=\"Link to this section: {}\">#</a></h{lv}>\n",
                            esc(&plain)
                        ))));
                    }
                    i = j + 1;
                    continue;
                }
                Event::Start(Tag::CodeBlock(kind)) => {
                    let mut j = i + 1;
                    let mut body = String::new();
                    while !matches!(events[j].0, Event::End(TagEnd::CodeBlock)) {
                        if let Event::Text(t) = &events[j].0 {
                            body.push_str(t);
                        }
                        j += 1;
                    }
                    let info = match kind {
                        CodeBlockKind::Fenced(s) => s.to_string(),
                        CodeBlockKind::Indented => String::new(),
                    };
                    let word = info.split_whitespace().next().unwrap_or("");
                    let directive = ch.directive_offsets.iter().position(|&o| o == range.start);
                    let html = if let Some(k) = directive {
                        let d = ch.directives[k].clone();
                        let label = number_at(range.start)
                            .map(|n| n.label.clone())
                            .unwrap_or_default();
                        self.directive(&d, &label, &mut counts)
                    } else if matches!(word, "run" | "figure" | "table" | "include") {
                        String::new() // an invalid directive: already diagnosed
                    } else {
                        format!(
                            "<pre class=\"code\"><code class=\"language-{}\">{}</code></pre>\n",
                            esc(word),
                            highlight(&body, word)
                        )
                    };
                    out.push(Event::Html(CowStr::from(html)));
                    i = j + 1;
                    continue;
                }
                Event::InlineMath(f) | Event::DisplayMath(f) => {
                    let display = matches!(ev, Event::DisplayMath(_));
                    let html = match self.katex.render(f, display) {
                        Ok(h) => h,
                        Err(e) => {
                            self.katex_error(ch, range.start, display, &e);
                            format!("<code class=\"math-error\">{}</code>", esc(f))
                        }
                    };
                    if display {
                        counts.equations += 1;
                        let n = number_at(range.start);
                        let id = n
                            .and_then(|n| n.id.as_ref())
                            .map(|l| format!(" id=\"{l}\""))
                            .unwrap_or_default();
                        let label = n.map(|n| n.label.as_str()).unwrap_or_default();
                        out.push(Event::Html(CowStr::from(format!("<span class=\"math-display\"{id}>{html}<span class=\"eq-num\">{label}</span></span>"))));
                    } else {
                        out.push(Event::InlineHtml(CowStr::from(html)));
                    }
                }
                Event::Start(Tag::Table(_)) => {
                    // A captioned table becomes a numbered figure; its caption paragraph is consumed.
                    let close = i + events[i..]
                        .iter()
                        .position(|(e, _)| matches!(e, Event::End(TagEnd::Table)))
                        .unwrap_or(0);
                    let caption = table_caption(ch, &events, i);
                    let mut body = String::new();
                    pulldown_cmark::html::push_html(
                        &mut body,
                        events[i..=close].iter().map(|(e, _)| e.clone()),
                    );
                    let html = match &caption {
                        Some(cap) => {
                            counts.tables += 1;
                            let mut c = String::new();
                            pulldown_cmark::html::push_html(&mut c, cap.inner.clone().into_iter());
                            let label = number_at(range.start)
                                .map(|n| n.label.clone())
                                .unwrap_or_default();
                            let id = cap
                                .id
                                .as_ref()
                                .map(|l| format!(" id=\"{l}\""))
                                .unwrap_or_default();
                            format!("<figure class=\"table\"{id}>\n<figcaption><span class=\"fig-num\">{label}.</span> {}</figcaption>\n<div class=\"table-wrap\">{body}</div>\n</figure>\n", trim_label(c.trim()))
                        }
                        None => format!("<div class=\"table-wrap\">{body}</div>\n"),
                    };
                    out.push(Event::Html(CowStr::from(html)));
                    i = caption.map(|c| c.end).unwrap_or(close + 1);
                    continue;
                }
                _ => out.push(ev.clone()),
            }
            i += 1;
        }
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, out.into_iter());
        let html = fill(&html, &inline_html);
        counts.checked = self
            .claims
            .iter()
            .filter(|c| c.kind == "checked" && c.file == self.sources.display_path(ch.file))
            .count();
        counts.inserted = self
            .claims
            .iter()
            .filter(|c| c.kind == "inserted" && c.file == self.sources.display_path(ch.file))
            .count();
        let search = search_entries(&title, &ch.slug, &html);
        RenderedChapter {
            title,
            slug: ch.slug.clone(),
            html,
            toc,
            search,
            counts,
        }
    }

    fn katex_error(&mut self, ch: &Chapter, text_offset: usize, display: bool, e: &str) {
        let span = ch
            .math
            .iter()
            .find(|(o, _)| *o == text_offset)
            .map(|(_, s)| s.clone());
        let mut span = span.unwrap_or(Span {
            file: ch.file,
            range: 0..0,
        });
        // KaTeX reports a 1-based "position N" within the formula.
        if let Some(p) = e
            .split("position ")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<usize>().ok())
        {
            let start = span.range.start + if display { 2 } else { 1 } + p.saturating_sub(1);
            if start < span.range.end {
                span.range = start..start + 1;
            }
        }
        // "failed to execute js (detail: String(\"ParseError: KaTeX parse error: … at position N: …\"))"
        let msg = match e.split("KaTeX parse error: ").nth(1) {
            Some(m) => m
                .split(" at position")
                .next()
                .unwrap_or(m)
                .replace("\\\\", "\\")
                .replace('\u{332}', ""),
            None => e.to_string(),
        };
        self.diags
            .push(Diagnostic::error(Some(span), "KaTeX cannot render this formula").label(msg));
    }

    fn directive(
        &mut self,
        d: &parse::Spanned<Directive>,
        label: &str,
        counts: &mut Counts,
    ) -> String {
        match &d.node {
            Directive::Run { .. } => String::new(),
            Directive::Include { path, anchor, .. } => {
                counts.listings += 1;
                self.include(path, anchor.as_deref(), &d.span)
            }
            Directive::Figure { id, spec } => {
                counts.figures += 1;
                let svg = self.figure(spec, &d.span);
                let caption = inline_markdown(&spec.caption);
                match svg {
                    Some(s) => format!(
                        "<figure class=\"plot\" id=\"{id}\">\n<div class=\"plot-svg\">{}</div>\n<figcaption><span class=\"fig-num\">{label}.</span> {caption}</figcaption>\n</figure>\n",
                        s.svg
                    ),
                    None => String::new(),
                }
            }
            Directive::Table { id, spec } => {
                counts.tables += 1;
                let body = self.table(spec, &d.span).unwrap_or_default();
                let caption = inline_markdown(&spec.caption);
                format!("<figure class=\"table\" id=\"{id}\">\n<figcaption><span class=\"fig-num\">{label}.</span> {caption}</figcaption>\n<div class=\"table-wrap\">{body}</div>\n</figure>\n")
            }
        }
    }

    fn include(&mut self, path: &str, anchor: Option<&str>, span: &Span) -> String {
        let root = std::fs::canonicalize(self.root).unwrap_or_else(|_| self.root.to_path_buf());
        let full = root.join(path);
        let canon = match std::fs::canonicalize(&full) {
            Ok(c) => c,
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(Some(span.clone()), format!("cannot include `{path}`"))
                        .label(e.to_string())
                        .hint(
                            "paths are relative to the project root, e.g. src/model/attention.rs",
                        ),
                );
                return String::new();
            }
        };
        if !canon.starts_with(&root) {
            self.diags.push(
                Diagnostic::error(
                    Some(span.clone()),
                    format!("refusing to include `{path}`: it is outside the project"),
                )
                .hint("only files inside the project can be included"),
            );
            return String::new();
        }
        let src = match std::fs::read_to_string(&canon) {
            Ok(s) => s,
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(Some(span.clone()), format!("cannot read `{path}`"))
                        .label(e.to_string()),
                );
                return String::new();
            }
        };
        match extract_anchor(&src, anchor) {
            Ok(code) => {
                let lang = canon.extension().and_then(|e| e.to_str()).unwrap_or("");
                let title = match anchor {
                    Some(a) => format!("{path} ({a})"),
                    None => path.to_string(),
                };
                format!(
                    "<figure class=\"listing\">\n<figcaption><code>{}</code></figcaption>\n<pre class=\"code\"><code class=\"language-{}\">{}</code></pre>\n</figure>\n",
                    esc(&title),
                    esc(lang),
                    highlight(&code, lang)
                )
            }
            Err(known) => {
                self.diags.push(
                    Diagnostic::error(
                        Some(span.clone()),
                        format!("no anchor `{}` in `{path}`", anchor.unwrap_or_default()),
                    )
                    .hint(if known.is_empty() {
                        "mark the lines with `// ANCHOR: name` and `// ANCHOR_END: name`"
                            .to_string()
                    } else {
                        format!("anchors in that file: {}", known.join(", "))
                    }),
                );
                String::new()
            }
        }
    }

    fn labels(&self, spec_labels: &[String], runs: &[String]) -> Vec<String> {
        runs.iter()
            .enumerate()
            .map(|(k, r)| spec_labels.get(k).cloned().unwrap_or_else(|| r.clone()))
            .collect()
    }

    fn figure(&mut self, spec: &FigureSpec, span: &Span) -> Option<figures::Svg> {
        let labels = self.labels(&spec.labels, &spec.runs);
        let mut trains = Vec::new();
        for r in &spec.runs {
            let (_, t) = self.train_of(r, span, "this figure")?;
            trains.push(t.clone());
        }
        let res = match spec.kind.as_str() {
            "loss" => {
                let series: Vec<Series> = trains
                    .iter()
                    .zip(&labels)
                    .map(|(t, l)| match spec.smooth {
                        Some(w) if w > 1 => smoothed(l, &t.losses, w),
                        _ => Series {
                            label: l.clone(),
                            points: t
                                .losses
                                .iter()
                                .enumerate()
                                .map(|(i, &v)| ((i + 1) as f64, v))
                                .collect(),
                        },
                    })
                    .collect();
                figures::loss_curve(&series, "training loss")
            }
            "attention" => {
                let t = trains.first()?;
                figures::attention_grid(&t.attention.tokens, &t.attention.weights)
            }
            "faults" => {
                let w = spec.smooth.unwrap_or(25);
                let curves: Vec<Series> = trains
                    .iter()
                    .zip(&labels)
                    .map(|(t, l)| smoothed(l, &t.losses, w))
                    .collect();
                let bars: Vec<Bars> = trains
                    .iter()
                    .zip(&labels)
                    .map(|(t, l)| Bars {
                        label: l.clone(),
                        values: t
                            .test
                            .by_length
                            .iter()
                            .map(|b| (b.len, 100.0 * b.accuracy))
                            .collect(),
                    })
                    .collect();
                figures::fault_comparison(&curves, &bars)
            }
            other => {
                self.diags.push(
                    Diagnostic::error(Some(span.clone()), format!("unknown figure kind `{other}`"))
                        .hint("figure kinds: loss, attention, faults"),
                );
                return None;
            }
        };
        match res {
            Ok(s) => Some(s),
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(Some(span.clone()), "cannot draw this figure").label(e),
                );
                None
            }
        }
    }

    fn table(&mut self, spec: &TableSpec, span: &Span) -> Option<String> {
        let labels = self.labels(&spec.labels, &spec.runs);
        let pct = |x: f64| format!("{:.1}%", 100.0 * x);
        match spec.kind.as_str() {
            "accuracy-by-length" => {
                let mut rows = Vec::new();
                let mut lens: Vec<usize> = Vec::new();
                for (r, l) in spec.runs.iter().zip(&labels) {
                    let (_, t) = self.train_of(r, span, "this table")?;
                    for b in &t.test.by_length {
                        if !lens.contains(&b.len) {
                            lens.push(b.len);
                        }
                    }
                    rows.push((l.clone(), t.test.clone()));
                }
                lens.sort_unstable();
                let mut h = String::from("<table>\n<thead><tr><th scope=\"col\">run</th>");
                for n in &lens {
                    h += &format!("<th scope=\"col\" class=\"num\">length {n}</th>");
                }
                h += "<th scope=\"col\" class=\"num\">all</th></tr></thead>\n<tbody>\n";
                for (l, e) in rows {
                    h += &format!("<tr><th scope=\"row\">{}</th>", esc(&l));
                    for n in &lens {
                        let cell = e
                            .by_length
                            .iter()
                            .find(|b| b.len == *n)
                            .map(|b| format!("{}/{}", b.correct, b.total))
                            .unwrap_or_default();
                        h += &format!("<td class=\"num\">{cell}</td>");
                    }
                    h += &format!("<td class=\"num\">{}</td></tr>\n", pct(e.accuracy));
                }
                Some(h + "</tbody>\n</table>")
            }
            "strongest-keys" => {
                let r = spec.runs.first()?.clone();
                let (_, t) = self.train_of(&r, span, "this table")?;
                let a = &t.attention;
                let last = a.strongest.last()?;
                let mut h = String::from("<table>\n<thead><tr><th scope=\"col\">query</th>");
                for k in 0..last.len() {
                    h += &format!("<th scope=\"col\">head {} key</th><th scope=\"col\" class=\"num\">weight</th>", k + 1);
                }
                h += "</tr></thead>\n<tbody>\n";
                for row in 0..last[0].len() {
                    let q = &last[0][row];
                    h += &format!(
                        "<tr><th scope=\"row\"><code>{}</code> (position {})</th>",
                        esc(&q.query_token),
                        q.query
                    );
                    for head in last {
                        let s = &head[row];
                        h += &format!(
                            "<td><code>{}</code> (position {})</td><td class=\"num\">{:.2}</td>",
                            esc(&s.key_token),
                            s.key,
                            s.weight
                        );
                    }
                    h += "</tr>\n";
                }
                Some(h + "</tbody>\n</table>")
            }
            "worked-example" => {
                let r = spec.runs.first()?.clone();
                let Some(w) = self.run(&r).and_then(|x| x.worked.clone()) else {
                    self.diags.push(
                        Diagnostic::error(
                            Some(span.clone()),
                            format!("`{r}` is not a worked-example run"),
                        )
                        .hint("use a run with base = \"worked-example\""),
                    );
                    return None;
                };
                let names = ["the", "cat", "sat", "on"];
                let v2 = |v: &[f64]| format!("({}, {})", v[0], v[1]);
                let mut h = String::from("<table>\n<thead><tr><th scope=\"col\">key token</th><th scope=\"col\">key</th><th scope=\"col\">value</th><th scope=\"col\" class=\"num\">score</th><th scope=\"col\" class=\"num\">weight</th></tr></thead>\n<tbody>\n");
                for k in 0..w.keys.len() {
                    h += &format!(
                        "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td></tr>\n",
                        names.get(k).unwrap_or(&"?"),
                        v2(&w.keys[k]),
                        v2(&w.values[k]),
                        w.scores[k],
                        w.weights[k]
                    );
                }
                Some(h + "</tbody>\n</table>")
            }
            "seed-spread" => {
                // Rows: seeds of one multi-seed run; columns: expressions over each result.
                let r = spec.runs.first()?.clone();
                let Some(produced) = self.results.by_run.get(&r).cloned() else {
                    self.diags.push(Diagnostic::error(
                        Some(span.clone()),
                        format!("this table uses unknown run `{r}`"),
                    ));
                    return None;
                };
                let mut h = String::from("<table>\n<thead><tr><th scope=\"col\">seed</th>");
                for (label, _) in &spec.columns {
                    h += &format!("<th scope=\"col\" class=\"num\">{}</th>", esc(label));
                }
                h += "</tr></thead>\n<tbody>\n";
                for p in &produced {
                    let v = Value::from_serialize(&p.result);
                    h += &format!("<tr><th scope=\"row\">{}</th>", p.result.seed);
                    for (_, expr) in &spec.columns {
                        let text = match self
                            .env
                            .compile_expression(expr)
                            .and_then(|c| c.eval(minijinja::context! { run => v.clone() }))
                        {
                            Ok(x) if x.is_none() => "—".to_string(),
                            Ok(x) if !x.is_undefined() => claims::value_as_text(&x),
                            Ok(_) | Err(_) => {
                                self.diags.push(Diagnostic::error(Some(span.clone()), format!("cannot evaluate column `{expr}`")).hint("columns are expressions over `run`, e.g. run.train.first_below"));
                                return None;
                            }
                        };
                        h += &format!("<td class=\"num\">{}</td>", esc(&text));
                    }
                    h += "</tr>\n";
                }
                Some(h + "</tbody>\n</table>")
            }
            other => {
                self.diags.push(Diagnostic::error(Some(span.clone()), format!("unknown table kind `{other}`")).hint("table kinds: accuracy-by-length, strongest-keys, worked-example, seed-spread"));
                None
            }
        }
    }
}

fn smoothed(label: &str, losses: &[f64], w: usize) -> Series {
    let w = w.min(losses.len()).max(1);
    let points = losses
        .windows(w)
        .enumerate()
        .map(|(i, win)| ((i + w) as f64, win.iter().sum::<f64>() / w as f64))
        .collect();
    Series {
        label: label.to_string(),
        points,
    }
}

/// A value with full precision, for tooltips.
fn full_text(v: &Value) -> String {
    match claims::value_as_f64(v) {
        Some(f) if !v.is_integer() => format!("{f:.6}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
        _ => claims::value_as_text(v),
    }
}

fn claim_html(
    n: usize,
    class: &str,
    shown: &str,
    expr: &str,
    value: &str,
    status: &str,
    runs: &[String],
) -> String {
    let links: Vec<String> = runs
        .iter()
        .map(|r| format!("<a href=\"runs.html#run-{}\">{}</a>", esc(r), esc(r)))
        .collect();
    let run_part = if links.is_empty() {
        String::new()
    } else {
        format!("run {} · ", links.join(", "))
    };
    format!(
        "<span class=\"claim {class}\" tabindex=\"0\" aria-describedby=\"claim-{n}-tip\"><span class=\"claim-value\">{}</span><span class=\"claim-tip\" role=\"tooltip\" id=\"claim-{n}-tip\">{run_part}<code>{}</code> = {} · {}</span></span>",
        esc(shown),
        esc(expr),
        esc(value),
        esc(status)
    )
}

/// Drops a trailing `{#tab-…}` label placeholder (and the space before it) from a caption.
fn trim_label(caption: &str) -> String {
    match caption.rfind(PLACEHOLDER_OPEN) {
        Some(k) if caption[k..].trim_end().ends_with(PLACEHOLDER_CLOSE) => {
            format!("{}{}", caption[..k].trim_end(), &caption[k..])
        }
        _ => caption.to_string(),
    }
}

/// Replaces placeholders with their HTML.
pub fn fill(html: &str, inlines: &[String]) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(k) = rest.find(PLACEHOLDER_OPEN) {
        out.push_str(&rest[..k]);
        let after = &rest[k + PLACEHOLDER_OPEN.len_utf8()..];
        match after.find(PLACEHOLDER_CLOSE) {
            Some(e) => {
                let n: usize = after[..e].parse().unwrap_or(usize::MAX);
                out.push_str(inlines.get(n).map(String::as_str).unwrap_or(""));
                rest = &after[e + PLACEHOLDER_CLOSE.len_utf8()..];
            }
            None => {
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Markdown of one line (a caption) as inline HTML, placeholders kept.
fn inline_markdown(s: &str) -> String {
    let mut h = String::new();
    pulldown_cmark::html::push_html(&mut h, Parser::new_ext(s, parse::options()));
    let h = h.trim();
    h.strip_prefix("<p>")
        .and_then(|x| x.strip_suffix("</p>"))
        .unwrap_or(h)
        .to_string()
}

/// One search entry per `<h2>` section.
fn search_entries(title: &str, slug: &str, html: &str) -> Vec<SearchEntry> {
    let mut out = Vec::new();
    let mut parts = html.split("<h2 id=\"");
    if let Some(intro) = parts.next() {
        out.push(SearchEntry {
            title: title.to_string(),
            url: slug.to_string(),
            text: strip_tags(intro),
        });
    }
    for p in parts {
        let id = p.split('"').next().unwrap_or("");
        let head_end = p.find("</h2>").unwrap_or(0);
        let head = strip_tags(&format!("<x {}", &p[..head_end]))
            .trim_end_matches('#')
            .trim()
            .to_string();
        let text = strip_tags(&p[head_end..]);
        out.push(SearchEntry {
            title: head,
            url: format!("{slug}#{id}"),
            text,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_extracted_and_dedented() {
        let src = "a\n    // ANCHOR: f\n    fn f() {\n        // ANCHOR: inner\n        1\n        // ANCHOR_END: inner\n    }\n    // ANCHOR_END: f\n";
        assert_eq!(
            extract_anchor(src, Some("f")).unwrap(),
            "fn f() {\n    1\n}\n"
        );
        assert_eq!(
            extract_anchor(src, Some("nope")).unwrap_err(),
            vec!["f".to_string(), "inner".to_string()]
        );
    }

    #[test]
    fn slugs() {
        assert_eq!(
            slugify("1.4 Why the square root"),
            "1-4-why-the-square-root"
        );
        assert_eq!(slugify("Where this goes wrong"), "where-this-goes-wrong");
    }

    #[test]
    fn fill_replaces_placeholders() {
        let h = format!("a{PLACEHOLDER_OPEN}1{PLACEHOLDER_CLOSE}b");
        assert_eq!(fill(&h, &["x".into(), "y".into()]), "ayb");
    }
}
