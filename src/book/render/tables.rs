//! Markdown tables: written by pulldown-cmark, then wrapped; one followed by a
//! `Table: caption {#tab-id}` paragraph becomes a numbered table with that caption.

use super::inlines::InlineOut;
use super::numbering::{table_caption, table_end};
use super::search::Search;
use super::{Counts, Renderer};
use crate::book::parse::Chapter;
use std::collections::HashMap;

impl Renderer<'_> {
    /// The markdown table starting at node `i`: its HTML and the index after it (and after
    /// its caption paragraph).
    pub(super) fn md_table(
        &mut self,
        ch: &Chapter,
        i: usize,
        numbers: &HashMap<usize, super::numbering::Number>,
        inlines: &[InlineOut],
        counts: &mut Counts,
        search: &mut Search,
    ) -> (String, usize) {
        let close = table_end(&ch.nodes, i);
        let (body, text) = self.inline_html(&ch.nodes[i..=close], inlines);
        search.push(&text);
        let Some(cap) = table_caption(ch, i) else {
            return (self.wrap_table("", "", "", &body, &[]), close + 1);
        };
        counts.tables += 1;
        let (caption, caption_text) = self.inline_html(&cap.inner, inlines);
        search.push(&caption_text);
        let label = numbers
            .get(&i)
            .map(|n| n.label.as_str())
            .unwrap_or_default();
        let id = cap.id.as_deref().unwrap_or_default();
        self.preview(id, &caption_text);
        (
            self.wrap_table(id, label, caption.trim(), &body, &[]),
            cap.end,
        )
    }
}
