//! Footnotes: pulldown-cmark's `[^label]` definitions are taken out of the flow and each is
//! rendered at its first reference (`partials/footnote.html`): a margin note on wide
//! screens, a note the reader opens in place on narrow ones.

use super::inlines::InlineOut;
use super::search::Search;
use super::Renderer;
use crate::book::parse::{Chapter, Node};
use minijinja::{context, Value};
use pulldown_cmark::{Event, Tag, TagEnd};
use std::collections::HashMap;

/// A chapter's footnotes: where each definition lies, its HTML, and the numbers given so
/// far (in order of first reference).
#[derive(Default)]
pub(super) struct Notes {
    /// Node index of a definition's start → the index after its end.
    spans: HashMap<usize, usize>,
    html: HashMap<String, String>,
    numbers: HashMap<String, usize>,
}

impl Notes {
    /// If node `i` starts a footnote definition, the node after it.
    pub fn skip(&self, i: usize) -> Option<usize> {
        self.spans.get(&i).copied()
    }
}

impl Renderer<'_> {
    /// Finds and renders a chapter's footnote definitions (their text is searchable where
    /// they are defined). Paragraphs of a note run on: a note sits inside a paragraph.
    pub(super) fn footnotes(
        &mut self,
        ch: &Chapter,
        inlines: &[InlineOut],
        search: &mut Search,
    ) -> Notes {
        let mut notes = Notes::default();
        for (i, node) in ch.nodes.iter().enumerate() {
            let Node::Md(Event::Start(Tag::FootnoteDefinition(label))) = node else {
                continue;
            };
            let end = i + ch.nodes[i..]
                .iter()
                .position(|n| matches!(n, Node::Md(Event::End(TagEnd::FootnoteDefinition))))
                .unwrap_or(ch.nodes.len() - i - 1);
            let (html, text) = self.inline_html(&ch.nodes[i + 1..end], inlines);
            search.push(&text);
            let html = html
                .replace("</p>\n<p>", " ")
                .replace("<p>", "")
                .replace("</p>\n", "")
                .replace("</p>", "");
            notes.spans.insert(i, end + 1);
            notes
                .html
                .insert(label.to_string(), html.trim().to_string());
        }
        notes
    }

    /// A reference to footnote `label`: the note itself at the first reference, a link to
    /// it at any later one.
    pub(super) fn footnote_ref(&mut self, notes: &mut Notes, label: &str) -> String {
        let next = notes.numbers.len() + 1;
        let first = !notes.numbers.contains_key(label);
        let n = *notes.numbers.entry(label.to_string()).or_insert(next);
        let id = super::walk::slugify(label);
        let note = Value::from_safe_string(notes.html.get(label).cloned().unwrap_or_default());
        self.html("partials/footnote.html", context! { n, id, note, first })
    }
}
