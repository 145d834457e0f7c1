//! The search index: one entry per `##` section (and one for the chapter's opening), its
//! text collected from the nodes as they are rendered, not from the HTML.

use super::SearchEntry;

/// Collects a chapter's searchable text, section by section.
pub struct Search {
    slug: String,
    entries: Vec<SearchEntry>,
    text: String,
}

impl Search {
    /// Starts the opening section of the chapter at `slug`.
    pub fn new(slug: &str) -> Self {
        Search {
            slug: slug.to_string(),
            entries: vec![SearchEntry {
                title: String::new(),
                url: slug.to_string(),
                text: String::new(),
            }],
            text: String::new(),
        }
    }

    /// Adds text to the current section; pieces are separated by blanks.
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push(' ');
    }

    /// Adds text that continues the current word (inline text within a block).
    pub fn push_inline(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Ends the current section and starts one at an `##` heading.
    pub fn section(&mut self, title: &str, id: &str) {
        self.flush();
        self.entries.push(SearchEntry {
            title: title.to_string(),
            url: format!("{}#{id}", self.slug),
            text: String::new(),
        });
    }

    fn flush(&mut self) {
        if let Some(e) = self.entries.last_mut() {
            e.text = self.text.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        self.text.clear();
    }

    /// The entries, the opening one titled `title`.
    pub fn finish(mut self, title: &str) -> Vec<SearchEntry> {
        self.flush();
        if let Some(first) = self.entries.first_mut() {
            first.title = title.to_string();
        }
        self.entries
    }
}
