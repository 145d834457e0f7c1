//! Footnotes (`[^label]` and `[^label]: text`), checked once so that the site and the print
//! edition read one checked book: a reference to a note no definition gives, a second
//! definition of a label, and a definition nothing refers to are reported where they are
//! written; every note gets an id of its own, unique in its chapter, which replaces its
//! label in the nodes (`Event::FootnoteReference` and `Tag::FootnoteDefinition`).
//!
//! Labels match as pulldown-cmark matches them: its label scanner trims them and collapses
//! runs of whitespace, then they are compared with Unicode case folding (`unicase`), so
//! `[^Source]` refers to `[^source]:`.

use super::events::Node;
use super::inline::Substituted;
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};
use pulldown_cmark::{CowStr, Event, Tag, TagEnd};
use std::collections::HashMap;
use std::ops::Range;
use unicase::UniCase;

/// A chapter's notes: the id of each definition, in source order, and the id a reference
/// of each label gets (its first definition's).
#[derive(Default)]
pub struct Labels {
    definitions: Vec<String>,
    by_label: HashMap<UniCase<String>, String>,
}

/// A definition as written.
struct Definition {
    label: String,
    /// `[^label]` in the substituted text.
    at: Range<usize>,
}

/// Checks a chapter's footnotes in its events (offsets in `sub.text`), and gives each note
/// its id.
pub fn check(
    file: FileId,
    src: &str,
    events: &[(Event, Range<usize>)],
    sub: &Substituted,
    diags: &mut Vec<Diagnostic>,
) -> Labels {
    let span = |r: &Range<usize>| Span {
        file,
        range: sub.to_src(r.start)..sub.to_src(r.end),
    };
    let mut definitions = Vec::new();
    let mut references: Vec<(String, Range<usize>)> = Vec::new();
    let mut undefined: Vec<(String, Range<usize>)> = Vec::new();
    let mut in_code = false;
    for (ev, range) in events {
        match ev {
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Start(Tag::FootnoteDefinition(label)) => {
                let text = &sub.text[range.start..];
                let end = text.find("]:").map_or(range.end, |n| range.start + n + 1);
                definitions.push(Definition {
                    label: label.to_string(),
                    at: range.start..end,
                });
            }
            Event::FootnoteReference(label) => references.push((label.to_string(), range.clone())),
            // pulldown-cmark leaves a reference to a label no definition gives as text, its
            // `[` an event of its own (an escaped `\[` is part of a longer text).
            Event::Text(t) if !in_code && &**t == "[" && range.len() == 1 => {
                if let Some((label, end)) = unresolved(&sub.text[range.end..]) {
                    undefined.push((label, range.start..range.end + end));
                }
            }
            _ => {}
        }
    }

    let mut labels = Labels::default();
    let mut ids: Vec<String> = Vec::new();
    let mut first: HashMap<UniCase<String>, usize> = HashMap::new();
    for (n, d) in definitions.iter().enumerate() {
        let id = unique(&slug(&d.label), &ids);
        ids.push(id.clone());
        labels.definitions.push(id.clone());
        let key = UniCase::new(d.label.clone());
        if let Some(&f) = first.get(&key) {
            let line = src[..sub.to_src(definitions[f].at.start)]
                .matches('\n')
                .count()
                + 1;
            diags.push(
                Diagnostic::error(
                    Code::FootnoteDuplicate,
                    Some(span(&d.at)),
                    format!("footnote `[^{}]` is defined twice", d.label),
                )
                .label("defined again here")
                .note(format!("first defined on line {line}"))
                .hint("labels match whatever their case: give this note a label of its own, or merge the two"),
            );
        } else {
            first.insert(key.clone(), n);
            labels.by_label.insert(key, id);
        }
    }

    for (label, at) in undefined {
        diags.push(
            Diagnostic::error(
                Code::FootnoteUndefined,
                Some(span(&at)),
                format!("footnote `[^{label}]` is not defined"),
            )
            .label("no `[^…]:` gives this note")
            .hint(format!(
                "define it on a line of its own, e.g. `[^{label}]: The note's text.`, or write `\\[^{label}]` for the brackets themselves"
            )),
        );
    }

    for (n, d) in definitions.iter().enumerate() {
        let key = UniCase::new(d.label.clone());
        let used = first.get(&key) != Some(&n)
            || references
                .iter()
                .any(|(l, _)| UniCase::new(l.as_str()) == UniCase::new(d.label.as_str()));
        if !used {
            diags.push(
                Diagnostic::warning(
                    Code::FootnoteUnused,
                    Some(span(&d.at)),
                    format!("footnote `[^{}]` is never referred to", d.label),
                )
                .label("neither the site nor the print edition shows this note")
                .hint(format!(
                    "refer to it with `[^{}]` where it belongs, or delete it",
                    d.label
                )),
            );
        }
    }
    labels
}

/// After a text `[`: `^label]` of a footnote reference, as pulldown-cmark scans a label
/// (on one line, no `[`, not only whitespace; `\]` is part of it). Gives the label, trimmed
/// with its whitespace collapsed, and the length of what was read.
fn unresolved(rest: &str) -> Option<(String, usize)> {
    let body = rest.strip_prefix('^')?;
    let mut escaped = false;
    for (k, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' | '\n' | '\r' => return None,
            ']' => {
                let label = body[..k].split_whitespace().collect::<Vec<_>>().join(" ");
                return (!label.is_empty()).then_some((label, k + 2));
            }
            _ => {}
        }
    }
    None
}

/// The id a label suggests: its ASCII letters and digits, lower-case, runs of anything else
/// one `-` (`a.b` → `a-b`); `note` if nothing is left.
fn slug(label: &str) -> String {
    let mut out = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "note".into()
    } else {
        out.into()
    }
}

/// `base`, or `base-2`, `base-3`, … : the first not in `taken`.
fn unique(base: &str, taken: &[String]) -> String {
    let mut id = base.to_string();
    let mut n = 1;
    while taken.contains(&id) {
        n += 1;
        id = format!("{base}-{n}");
    }
    id
}

/// Puts each note's id in place of its label: definitions in source order, references by
/// the label they match.
pub fn relabel(nodes: &mut [Node], labels: &Labels) {
    let mut defs = labels.definitions.iter();
    for node in nodes {
        match node {
            Node::Md(Event::Start(Tag::FootnoteDefinition(label))) => {
                if let Some(id) = defs.next() {
                    *label = CowStr::from(id.clone());
                }
            }
            Node::Md(Event::FootnoteReference(label)) => {
                if let Some(id) = labels.by_label.get(&UniCase::new(label.to_string())) {
                    *label = CowStr::from(id.clone());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> (Vec<String>, Vec<Diagnostic>) {
        let mut diags = Vec::new();
        let ch = super::super::parse_chapter(0, super::super::Place::Chapter(1), src, &mut diags);
        let labels = (ch.nodes.iter())
            .filter_map(|n| match n {
                Node::Md(
                    Event::FootnoteReference(l) | Event::Start(Tag::FootnoteDefinition(l)),
                ) => Some(l.to_string()),
                _ => None,
            })
            .collect();
        (labels, diags)
    }

    #[test]
    fn a_second_definition_names_the_first_and_labels_match_whatever_their_case() {
        let (ids, diags) = parse("Text.[^Source]\n\n[^source]: One.\n\n[^SOURCE]: Two.\n");
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, Code::FootnoteDuplicate);
        assert_eq!(diags[0].notes, ["first defined on line 3"]);
        assert_eq!(
            ids,
            ["source", "source", "source-2"],
            "the reference finds the first"
        );
    }

    #[test]
    fn ids_are_unique_and_safe() {
        assert_eq!(slug("a.b"), "a-b");
        assert_eq!(slug("Source"), "source");
        assert_eq!(slug("†"), "note");
        let taken = vec!["a-b".to_string(), "a-b-2".to_string()];
        assert_eq!(unique("a-b", &taken), "a-b-3");
    }

    #[test]
    fn unresolved_references_are_read_as_pulldown_reads_labels() {
        assert_eq!(unresolved("^src] more"), Some(("src".into(), 5)));
        assert_eq!(unresolved("^ a   b ]"), Some(("a b".into(), 9)));
        assert_eq!(unresolved("^a\\]b]"), Some(("a\\]b".into(), 6)));
        assert_eq!(unresolved("^]"), None);
        assert_eq!(unresolved("^a\nb]"), None);
        assert_eq!(unresolved("src]"), None);
    }
}
