//! Numbering and cross-references: sections (`##` headings), figures, tables (directives and
//! captioned markdown tables) and display equations are numbered in document order, per
//! chapter: "1.4", "Figure 1.2" in chapter 1, "A.4", "Figure A.2" in appendix A. Front
//! matter has no section numbers, and numbers its figures, tables and equations 1, 2, ….
//!
//! A `##` heading is numbered "1.4" (chapter 1, fourth section) unless it has the class
//! `{.unnumbered}`; `###` headings are not numbered. A heading with an id (`{#sec-scale}`)
//! can be referred to: `{@sec-scale}` reads "Section 1.4"; a `###` heading reads as the
//! section it belongs to ("Section 1.4") and links to itself; an unnumbered one reads as
//! its title in quotes. A heading of any level with the class `{.exercise}` is an
//! exercise, numbered per chapter ("Exercise 1.2"), and a reference to it reads so. The
//! chapter's `#` title with an id (`{#chap-attention}`) reads as the chapter ("Chapter 1").

use crate::book::parse::{Chapter, Directive, Inline, Node};
use pulldown_cmark::{Event, HeadingLevel, Tag, TagEnd};
use std::collections::HashMap;

/// Where numbered things live, across chapters: id → (label, page).
pub type Anchors = HashMap<String, (String, String)>;

/// A numbered thing: "Figure 1.2", "Table 1.1", "(1.3)" or a section's "1.4" (empty for
/// an unnumbered heading), its id if it has one, and how a reference to it reads.
#[derive(Clone, Debug)]
pub struct Number {
    pub label: String,
    pub id: Option<String>,
    /// "Figure 1.2", "(1.3)", "Section 1.4".
    pub xref: String,
}

/// The numbers of a chapter, by the index of the node that starts each numbered thing
/// (headings with an id or a number included).
pub fn numbers(ch: &Chapter) -> HashMap<usize, Number> {
    let (mut fig, mut tab, mut eq, mut sec, mut ex) = (0, 0, 0, 0, 0);
    let prefix = ch.place.prefix();
    // "1.2", "A.2"; in front matter, "2".
    let num = |n: usize| {
        prefix
            .as_ref()
            .map_or_else(|| n.to_string(), |p| format!("{p}.{n}"))
    };
    let mut section = if prefix.is_some() {
        ch.place.name()
    } else {
        format!("“{}”", ch.title)
    };
    let mut out = HashMap::new();
    for (i, node) in ch.nodes.iter().enumerate() {
        if let Node::Md(Event::Start(Tag::Heading {
            level, id, classes, ..
        })) = node
        {
            if classes.iter().any(|c| &**c == "exercise") {
                ex += 1;
                let label = format!("Exercise {}", num(ex));
                out.insert(
                    i,
                    Number {
                        xref: label.clone(),
                        label,
                        id: id.as_ref().map(ToString::to_string),
                    },
                );
                continue;
            }
            let numbered = *level == HeadingLevel::H2
                && prefix.is_some()
                && !classes
                    .iter()
                    .any(|c| &**c == "unnumbered" || &**c == "answer");
            let (label, xref) = if numbered {
                sec += 1;
                let label = num(sec);
                section = format!("Section {label}");
                (label, section.clone())
            } else if *level == HeadingLevel::H2 {
                (String::new(), format!("“{}”", heading_text(ch, i)))
            } else {
                (String::new(), section.clone())
            };
            if *level == HeadingLevel::H1 {
                if let Some(id) = id {
                    out.insert(i, chapter_number(ch, id));
                }
            } else {
                out.insert(
                    i,
                    Number {
                        label,
                        id: id.as_ref().map(ToString::to_string),
                        xref,
                    },
                );
            }
            continue;
        }
        let number = match node {
            Node::Directive(d) => match &d.node {
                Directive::Figure(b) => {
                    fig += 1;
                    (format!("Figure {}", num(fig)), Some(b.id.clone()))
                }
                Directive::Table(b) => {
                    tab += 1;
                    (format!("Table {}", num(tab)), Some(b.id.clone()))
                }
                _ => continue,
            },
            Node::Md(Event::Start(Tag::Table(_))) => {
                let Some(cap) = table_caption(ch, i) else {
                    continue;
                };
                tab += 1;
                (format!("Table {}", num(tab)), cap.id)
            }
            Node::Math(m) if m.display => {
                eq += 1;
                (format!("({})", num(eq)), label_after(ch, i))
            }
            _ => continue,
        };
        out.insert(
            i,
            Number {
                xref: number.0.clone(),
                label: number.0,
                id: number.1,
            },
        );
    }
    out
}

/// The chapter's `#` title with an id: a reference to it reads as the chapter ("Chapter
/// 1"), or as its title in quotes in front matter.
fn chapter_number(ch: &Chapter, id: &str) -> Number {
    Number {
        label: String::new(),
        id: Some(id.to_string()),
        xref: if ch.place.prefix().is_some() {
            ch.place.name()
        } else {
            format!("“{}”", ch.title)
        },
    }
}

/// The plain text of the heading starting at node `i`.
fn heading_text(ch: &Chapter, i: usize) -> String {
    let mut t = String::new();
    for n in &ch.nodes[i + 1..] {
        match n {
            Node::Md(Event::End(TagEnd::Heading(_))) => break,
            Node::Md(Event::Text(s) | Event::Code(s)) => t.push_str(s),
            _ => {}
        }
    }
    t.trim().to_string()
}

/// Numbers every chapter; returns id → (label, page).
pub fn anchors(chapters: &[Chapter]) -> Anchors {
    let mut anchors = Anchors::new();
    for ch in chapters {
        for n in numbers(ch).into_values() {
            if let Some(id) = n.id {
                anchors.insert(id, (n.xref, ch.slug.clone()));
            }
        }
    }
    anchors
}

/// A `Table: caption {#tab-id}` paragraph right after a markdown table.
pub struct TableCaption {
    pub id: Option<String>,
    /// The caption's nodes, without `Table:`.
    pub inner: Vec<Node>,
    /// The index after the caption paragraph.
    pub end: usize,
}

/// The index of the `End(Table)` of the table starting at `start`.
pub fn table_end(nodes: &[Node], start: usize) -> usize {
    start
        + nodes[start..]
            .iter()
            .position(|n| matches!(n, Node::Md(Event::End(TagEnd::Table))))
            .unwrap_or(0)
}

/// The caption of the markdown table starting at node `start`, if it has one.
pub fn table_caption(ch: &Chapter, start: usize) -> Option<TableCaption> {
    let nodes = &ch.nodes;
    let close = table_end(nodes, start);
    if !matches!(
        nodes.get(close + 1)?,
        Node::Md(Event::Start(Tag::Paragraph))
    ) {
        return None;
    }
    let Node::Md(Event::Text(first)) = nodes.get(close + 2)? else {
        return None;
    };
    let rest = first.strip_prefix("Table:")?;
    let para_end = close
        + 2
        + nodes[close + 2..]
            .iter()
            .position(|n| matches!(n, Node::Md(Event::End(TagEnd::Paragraph))))?;
    let mut inner = vec![Node::Md(Event::Text(rest.trim_start().to_string().into()))];
    inner.extend(nodes[close + 3..para_end].iter().cloned());
    let id = inner.iter().rev().find_map(|n| match n {
        Node::Inline(k) => match &ch.inlines[*k].node {
            Inline::Label { id } => Some(id.clone()),
            _ => None,
        },
        _ => None,
    });
    Some(TableCaption {
        id,
        inner,
        end: para_end + 1,
    })
}

/// The `{#eq-…}` label right after the display formula at node `i`, after blanks only.
fn label_after(ch: &Chapter, i: usize) -> Option<String> {
    for node in &ch.nodes[i + 1..] {
        match node {
            Node::Md(Event::Text(t)) if t.trim().is_empty() => {}
            Node::Inline(k) => {
                return match &ch.inlines[*k].node {
                    Inline::Label { id } => Some(id.clone()),
                    _ => None,
                }
            }
            _ => return None,
        }
    }
    None
}
