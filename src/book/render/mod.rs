//! Render: parsed chapters plus run results → HTML, one job per file, with every claim
//! checked on the way. All HTML comes from `templates/partials/` and `templates/tables/`.
//!
//! - `walk`: the walk over a chapter's nodes, into pulldown-cmark's HTML writer
//! - `answers`: answers to exercises, shut, in place or collected at the chapter's end
//! - `inlines`: claims, inserts, references and citations (and the claim records)
//! - `notes`: footnotes, as margin notes at their references
//! - `numbering`: figure, table and equation numbers, and what references point to
//! - `math`: KaTeX, with its cache
//! - `listings`: included source and highlighted code blocks
//! - `directives`: figures and tables from their kinds
//! - `tables`: markdown tables and their captions
//! - `search`: the search index, from the nodes' text
//! - `memo`: chapters rendered before, kept under the key of what they read (`reads`)
//! - `html`: the partials' template environment

mod answers;
mod directives;
pub mod html;
mod inlines;
pub(crate) mod listings;
mod math;
mod memo;
mod notes;
pub(crate) mod numbering;
pub(crate) mod reads;
mod search;
mod tables;
mod walk;

pub use html::escape_text;
pub use math::KatexCache;
pub use walk::slugify;

use super::claims::ClaimRecord;
use super::diag::{Diagnostic, Sources};
use super::parse::Book;
use super::runs::Results;
use crate::book::codes::Code;
use serde::Serialize;
use std::path::Path;

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct TocEntry {
    pub level: u8,
    pub id: String,
    /// The heading's text, after its section number if it has one ("1.4 Why …").
    pub text: String,
}

/// A section of plain text for the search index.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
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
    /// What each inline construct of the chapter reads as, in plain text (indexed like
    /// `Chapter::inlines`): the print edition writes the same values.
    pub inline_text: Vec<String>,
    /// The works the chapter cites, in its reference list's order.
    pub references: Vec<crate::book::cite::Work>,
    /// Its notebook (```` ```notebook run ````): file name beside the page, and bytes.
    pub notebook: Option<(String, Vec<u8>)>,
    /// Where Colab opens that notebook, when the book names its GitHub repository.
    pub colab: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, Serialize, serde::Deserialize)]
pub struct Counts {
    /// Claims by kind: checked figures, asserted statements, literals, inserted values,
    /// and the numerals of the prose bound to none of them.
    pub checked: usize,
    pub asserted: usize,
    pub literal: usize,
    pub inserted: usize,
    pub unbound: usize,
    pub figures: usize,
    pub tables: usize,
    pub equations: usize,
    pub listings: usize,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.checked += o.checked;
        self.asserted += o.asserted;
        self.literal += o.literal;
        self.inserted += o.inserted;
        self.unbound += o.unbound;
        self.figures += o.figures;
        self.tables += o.tables;
        self.equations += o.equations;
        self.listings += o.listings;
    }
}

/// What rendering the book produced.
pub struct Rendered {
    pub chapters: Vec<RenderedChapter>,
    pub claims: Vec<ClaimRecord>,
    pub counts: Counts,
    /// How many chapters came from the render memo, unchanged, of how many.
    pub from_memo: (usize, usize),
    /// With the memo: the key of the whole rendering (every chapter's, in order), which
    /// names everything the chapters were made from.
    pub key: Option<String>,
}

/// Shared state of the render stage.
struct Renderer<'a> {
    root: &'a Path,
    results: &'a Results,
    sources: &'a Sources,
    /// The expression environment and the context claims are evaluated in.
    env: minijinja::Environment<'static>,
    /// The named expressions that average seeds (see `loso::averaging`).
    averaging: Vec<String>,
    /// The runs as expressions see them ([`super::expr::context`]), made when a chapter first
    /// evaluates one: a build whose chapters all come from the memo converts none.
    ctx: std::sync::OnceLock<minijinja::Value>,
    katex: &'a mut KatexCache,
    partials: html::Partials,
    anchors: numbering::Anchors,
    /// What a reference's tooltip shows of its target, by id (escaped HTML): a figure's or
    /// table's caption, an equation, the first words of a section.
    previews: std::collections::HashMap<String, String>,
    bibliography: Option<&'a crate::book::cite::Bibliography>,
    /// `answers = "end"` in book.toml: answers move to the end of their chapter.
    answers_at_end: bool,
    claims: Vec<ClaimRecord>,
    /// References rendered so far (each tooltip's id).
    xrefs: usize,
    /// The footnotes of the chapter being rendered.
    notes: notes::Notes,
    /// The models the chapter's widgets load so far, with their packed bytes.
    widget_bytes: Vec<(String, usize)>,
    config: &'a crate::book::parse::BookConfig,
    /// The chapter being rendered: its title, page and place (`Chapter 2`, or empty).
    page: (String, String, String),
    /// The chapter's notebook, once its directive is rendered: file name and bytes.
    notebook: Option<(String, Vec<u8>)>,
    diags: Vec<Diagnostic>,
}

impl Renderer<'_> {
    /// Adds what a chapter's rendering produced (rendered now or taken from the memo) to
    /// the book-wide state.
    fn absorb(&mut self, produced: memo::Produced) {
        self.claims.extend(produced.claims);
        self.previews.extend(produced.previews);
        self.xrefs += produced.xrefs;
    }

    /// The context expressions are evaluated in.
    fn ctx(&self) -> &minijinja::Value {
        self.ctx.get_or_init(|| super::expr::context(self.results))
    }

    /// Records what a reference to `id` previews: `text` (plain), shortened to about
    /// [`PREVIEW_CHARS`] characters.
    fn preview(&mut self, id: &str, text: &str) {
        if !id.is_empty() {
            let html = escape_text(&shorten(text, PREVIEW_CHARS));
            self.previews.insert(id.to_string(), html);
        }
    }

    /// A partial's HTML; a template that fails is reported, and renders as nothing.
    fn html(&mut self, name: &str, ctx: minijinja::Value) -> String {
        match self.partials.render(name, ctx) {
            Ok(h) => h,
            Err(e) => {
                self.diags.push(Diagnostic::error(
                    Code::Template,
                    None,
                    format!("cannot render templates/{name}: {e:#}"),
                ));
                String::new()
            }
        }
    }
}

/// How much of its target a reference's preview shows.
const PREVIEW_CHARS: usize = 240;

/// `text` with its whitespace collapsed, cut at a word to about `max` characters, "…" added.
fn shorten(text: &str, max: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = String::new();
    for w in words {
        if out.len() + w.len() > max {
            out.push('…');
            return out;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Renders every chapter of the book, checking its claims against `results`. With `memo`
/// (a folder), a chapter whose inputs are those of a rendering kept there is taken from it,
/// and a chapter rendered without a diagnostic is kept (see `memo`).
pub fn render(
    book: &Book,
    results: &Results,
    sources: &Sources,
    katex: &mut KatexCache,
    memo: Option<&Path>,
    diags: &mut Vec<Diagnostic>,
) -> Rendered {
    let named = super::expr::named_expressions(book);
    let mut r = Renderer {
        root: &book.root,
        results,
        sources,
        env: super::expr::book_environment(book),
        averaging: super::loso::averaging(&named),
        ctx: std::sync::OnceLock::new(),
        katex,
        partials: html::Partials::new(&book.root),
        anchors: numbering::anchors(&book.chapters),
        previews: std::collections::HashMap::new(),
        bibliography: book.bibliography.as_ref(),
        answers_at_end: book.config.answers == crate::book::parse::AnswerPlace::End,
        claims: Vec::new(),
        xrefs: 0,
        notes: notes::Notes::default(),
        widget_bytes: Vec::new(),
        config: &book.config,
        page: Default::default(),
        notebook: None,
        diags: Vec::new(),
    };
    let memo = memo.and_then(|dir| memo::Memo::new(dir, book, results, sources));
    let mut from_memo = 0;
    let mut whole = blake3::Hasher::new();
    let mut chapters: Vec<RenderedChapter> = Vec::with_capacity(book.chapters.len());
    for ch in &book.chapters {
        let key = memo.as_ref().map(|m| m.key(ch, sources, r.xrefs));
        whole.update(key.as_deref().unwrap_or_default().as_bytes());
        let kept = memo
            .as_ref()
            .zip(key.as_deref())
            .and_then(|(m, key)| m.get(&ch.slug, key));
        if let Some((chapter, produced)) = kept {
            r.absorb(produced);
            from_memo += 1;
            chapters.push(chapter);
            continue;
        }
        // Rendered with the book-wide state of its own, merged after: what it added is
        // what the memo keeps.
        let (claims, previews, xrefs, errors) = (
            std::mem::take(&mut r.claims),
            std::mem::take(&mut r.previews),
            r.xrefs,
            r.diags.len(),
        );
        let (chapter, read) = reads::recording(|| r.chapter(ch));
        let produced = memo::Produced {
            claims: std::mem::replace(&mut r.claims, claims),
            previews: std::mem::replace(&mut r.previews, previews)
                .into_iter()
                .collect(),
            xrefs: r.xrefs - xrefs,
        };
        r.xrefs = xrefs;
        if let (Some(m), Some(key), true) = (&memo, key, r.diags.len() == errors) {
            m.put(key, read, &chapter, &produced);
        }
        r.absorb(produced);
        chapters.push(chapter);
    }
    // A reference's preview may come from a later chapter: put them in once all are known.
    for c in &mut chapters {
        c.html = inlines::fill_previews(&c.html, &r.anchors, &r.previews);
    }
    let mut counts = Counts::default();
    for c in &chapters {
        counts += c.counts;
    }
    diags.append(&mut r.diags);
    Rendered {
        key: memo.map(|_| whole.finalize().to_hex().to_string()),
        from_memo: (from_memo, chapters.len()),
        chapters,
        claims: r.claims,
        counts,
    }
}
