//! Which runs' weights the book reads, so that the store keeps those and no others: a
//! widget's models (their first seed, which the page loads), the runs a figure of a kind
//! that reads weights draws, and the runs an expression reads a learned table of.

use crate::book::diag::Sources;
use crate::book::figures::FigureKind;
use crate::book::parse::{Book, Directive};
use std::collections::BTreeMap;

/// Which seeds of a run something reads the weights of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WeightsRead {
    /// The first seed: a widget exports it.
    First,
    /// Every seed.
    All,
}

impl WeightsRead {
    /// Whether the seed at `index` (in the run's order) is read.
    pub fn reads(self, index: usize) -> bool {
        self == WeightsRead::All || index == 0
    }
}

/// Every run whose weights something in the book reads, and which seeds.
pub fn weights_read(book: &Book, sources: &Sources) -> BTreeMap<String, WeightsRead> {
    let mut out: BTreeMap<String, WeightsRead> = BTreeMap::new();
    let mut add = |run: &str, how: WeightsRead| {
        let e = out.entry(run.to_string()).or_insert(how);
        *e = (*e).max(how);
    };
    for ch in &book.chapters {
        for d in ch.directives() {
            match &d.node {
                Directive::Widget(w) => w
                    .models
                    .iter()
                    .for_each(|m| add(&m.run, WeightsRead::First)),
                Directive::Figure(f) if reads_weights(&f.kind) => {
                    f.runs.iter().for_each(|r| add(r, WeightsRead::All));
                }
                _ => {}
            }
        }
        for run in table_reads(sources.text(ch.file)) {
            add(&run, WeightsRead::All);
        }
    }
    out
}

/// Whether a figure of this kind draws from the weights (`RunData::entries`).
fn reads_weights(kind: &FigureKind) -> bool {
    matches!(kind, FigureKind::PositionSimilarity(_))
}

/// The runs an expression in `text` reads a learned table of (`run.table`,
/// `run.runs[2].table`): the name that starts each path ending in `.table`.
pub fn table_reads(text: &str) -> Vec<String> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']');
    let mut out = Vec::new();
    for (at, _) in text.match_indices(".table") {
        let after = text[at + ".table".len()..].chars().next();
        if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `.tables`, `.table_of`
        }
        let start = text[..at]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| path_char(c))
            .last()
            .map_or(at, |(i, _)| i);
        let run: String = text[start..at]
            .chars()
            .take_while(|&c| c.is_ascii_alphanumeric() || c == '_')
            .collect();
        if !run.is_empty() && !out.contains(&run) {
            out.push(run);
        }
    }
    out
}
