//! Footnotes: pulldown-cmark's `[^label]` definitions are taken out of the flow and each is
//! rendered at its first reference (`partials/footnote.html`): a margin note on wide
//! screens, a note the reader opens in place on narrow ones. The parse stage has checked
//! them and put each note's id, unique in its chapter, in place of its label.
//!
//! A note of prose only sits inside the paragraph that refers to it, its paragraphs run on.
//! A note that holds blocks (a list, code, a display formula, a quote) cannot sit inside a
//! paragraph: its reference is a button there, and the note itself
//! (`partials/footnote-block.html`) follows the block that holds the reference. A note that
//! refers to another is rendered with the other's reference inside it, the other numbered
//! next.

use super::inlines::InlineOut;
use super::Renderer;
use crate::book::parse::{Chapter, Node};
use minijinja::{context, Value};
use pulldown_cmark::{Event, Tag, TagEnd};
use std::collections::HashMap;

/// A chapter's footnotes: where each definition lies, the numbers given so far (in order of
/// first reference), and what waits to be written.
#[derive(Default)]
pub(super) struct Notes {
    /// Node index of a definition's start → the index after its end.
    spans: HashMap<usize, usize>,
    /// A note's nodes, by id (a definition written inside it left out).
    bodies: HashMap<String, Vec<Node>>,
    numbers: HashMap<String, usize>,
    /// The HTML of notes with blocks whose references are written, for the end of the
    /// block that holds them.
    pending: Vec<String>,
    /// The text of notes rendered since the search index last took it.
    unsearched: Vec<String>,
}

impl Notes {
    /// Finds a chapter's footnote definitions.
    pub fn of(ch: &Chapter) -> Self {
        let mut notes = Notes::default();
        for (i, node) in ch.nodes.iter().enumerate() {
            let Node::Md(Event::Start(Tag::FootnoteDefinition(id))) = node else {
                continue;
            };
            let end = definition_end(&ch.nodes, i);
            notes.spans.insert(i, end + 1);
            let mut body = Vec::new();
            let mut k = i + 1;
            while k < end {
                if matches!(
                    &ch.nodes[k],
                    Node::Md(Event::Start(Tag::FootnoteDefinition(_)))
                ) {
                    k = definition_end(&ch.nodes, k) + 1;
                    continue;
                }
                body.push(ch.nodes[k].clone());
                k += 1;
            }
            notes.bodies.entry(id.to_string()).or_insert(body);
        }
        notes
    }

    /// If node `i` starts a footnote definition, the node after it.
    pub fn skip(&self, i: usize) -> Option<usize> {
        self.spans.get(&i).copied()
    }

    /// The notes with blocks waiting to be written, as HTML events.
    pub fn take_pending(&mut self) -> impl Iterator<Item = Event<'static>> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|h| Event::Html(h.into()))
    }

    /// Whether notes with blocks wait to be written.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The text of the notes rendered since the last call.
    pub fn take_text(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unsearched)
    }
}

/// The index of the end of the definition starting at `i` (definitions do not nest in it:
/// a second start is an error of the parse, and ends there too).
fn definition_end(nodes: &[Node], i: usize) -> usize {
    let mut depth = 0usize;
    for (k, n) in nodes.iter().enumerate().skip(i) {
        match n {
            Node::Md(Event::Start(Tag::FootnoteDefinition(_))) => depth += 1,
            Node::Md(Event::End(TagEnd::FootnoteDefinition)) => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    nodes.len() - 1
}

/// Whether a note's nodes hold anything but paragraphs of prose.
fn has_blocks(nodes: &[Node]) -> bool {
    nodes.iter().any(|n| match n {
        Node::Code { .. }
        | Node::Directive(_)
        | Node::Broken
        | Node::Md(Event::Rule | Event::Html(_)) => true,
        Node::Math(m) => m.display,
        Node::Md(Event::Start(t)) => matches!(
            t,
            Tag::List(_)
                | Tag::Item
                | Tag::BlockQuote(_)
                | Tag::CodeBlock(_)
                | Tag::HtmlBlock
                | Tag::Heading { .. }
                | Tag::Table(_)
                | Tag::DefinitionList
        ),
        _ => false,
    })
}

impl Renderer<'_> {
    /// A reference to footnote `id`: the note itself at the first reference (or, for a note
    /// with blocks, a button whose note waits for the end of the block), a link to it at
    /// any later one.
    pub(super) fn footnote_ref(&mut self, id: &str, inlines: &[InlineOut]) -> String {
        let next = self.notes.numbers.len() + 1;
        let first = !self.notes.numbers.contains_key(id);
        let n = *self.notes.numbers.entry(id.to_string()).or_insert(next);
        let body = if first {
            self.notes.bodies.get(id).cloned().unwrap_or_default()
        } else {
            Vec::new()
        };
        let block = first && has_blocks(&body);
        let note = if !first {
            String::new()
        } else if block {
            let (html, text) = self.note_blocks(&body, inlines);
            self.notes.unsearched.push(text);
            let note = Value::from_safe_string(html);
            let html = self.html("partials/footnote-block.html", context! { n, id, note });
            self.notes.pending.push(html);
            String::new()
        } else {
            let (html, text) = self.inline_html(&body, inlines);
            self.notes.unsearched.push(text);
            html.replace("</p>\n<p>", " ")
                .replace("<p>", "")
                .replace("</p>\n", "")
                .replace("</p>", "")
                .trim()
                .to_string()
        };
        let note = Value::from_safe_string(note);
        self.html(
            "partials/footnote.html",
            context! { n, id, note, first, block },
        )
    }

    /// A note's blocks as HTML (code highlighted, display formulas typeset), and their text.
    fn note_blocks(&mut self, nodes: &[Node], inlines: &[InlineOut]) -> (String, String) {
        let mut events: Vec<Event<'static>> = Vec::with_capacity(nodes.len());
        let mut search = super::search::Search::new("");
        for node in nodes {
            match node {
                Node::Code { lang, body } => {
                    search.push(body);
                    let html = self.code_block(lang, body);
                    events.push(Event::Html(html.into()));
                }
                Node::Math(m) if m.display => {
                    search.push(&m.tex);
                    let html = self.equation(m, None);
                    events.push(Event::Html(html.into()));
                }
                node => self.inline_node(node, inlines, &mut events, &mut search),
            }
        }
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, events.into_iter());
        (html.trim().to_string(), search.finish("").remove(0).text)
    }
}
