//! Citations: `[@a; @b, sec. 3.2]` in brackets and `@key` in prose, found in the raw
//! markdown with their keys, locators and the mistakes an author makes writing them.

use super::{CiteItem, Inline};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};

/// A citation starting at `at` (its `[` or its `@`): where it ends, what it cites, and
/// the mistakes in how it is written (reported if it turns out to be prose).
pub(super) fn citation(
    src: &str,
    file: FileId,
    at: usize,
) -> Option<(std::ops::Range<usize>, Inline, Vec<Diagnostic>)> {
    match src.as_bytes()[at] {
        b'[' => {
            let mut diags = Vec::new();
            let (close, items) = bracketed_citation(src, file, at, &mut diags)?;
            let cite = Inline::Cite {
                items,
                narrative: false,
            };
            Some((at..close + 1, cite, diags))
        }
        b'@' => {
            let item = narrative_citation(src, file, at)?;
            let end = item.key_span.range.end;
            let cite = Inline::Cite {
                items: vec![item],
                narrative: true,
            };
            Some((at..end, cite, Vec::new()))
        }
        _ => None,
    }
}

/// A citation key's characters (Pandoc's): letters, digits and `_`, with `:.#$%&-+?<>~/`
/// inside; a key ends at the last letter, digit or `_`, so `@ba2016.` cites `ba2016`.
fn key_len(s: &str) -> usize {
    let inner = |c: char| c.is_alphanumeric() || "_:.#$%&-+?<>~/".contains(c);
    let end = s.find(|c: char| !inner(c)).unwrap_or(s.len());
    s[..end]
        .trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
        .len()
}

/// `@key` at `at`, cited narratively: the `@` starts a word (not `a@b`, not `{@ref}`) and a
/// letter follows it.
fn narrative_citation(src: &str, file: FileId, at: usize) -> Option<CiteItem> {
    let before = src[..at].chars().next_back();
    if before.is_some_and(|c| c.is_alphanumeric() || "{[@_\\/.:-`".contains(c)) {
        return None;
    }
    let rest = &src[at + 1..];
    if !rest.starts_with(|c: char| c.is_alphabetic()) {
        return None;
    }
    let n = key_len(rest);
    Some(CiteItem {
        key: rest[..n].to_string(),
        key_span: Span {
            file,
            range: at + 1..at + 1 + n,
        },
        locator: None,
    })
}

/// If the `[` at `open` starts a bracketed citation `[@a; @b, locator]` (closed on its
/// line, and not a link or an assertion's text), its `]` and its items.
fn bracketed_citation(
    src: &str,
    file: FileId,
    open: usize,
    diags: &mut Vec<Diagnostic>,
) -> Option<(usize, Vec<CiteItem>)> {
    if !src[open + 1..].trim_start_matches(' ').starts_with('@') {
        return None;
    }
    let line_end = src[open..].find('\n').map_or(src.len(), |k| open + k);
    let close = open + src[open..line_end].find(']')?;
    if src[close + 1..].starts_with(['(', '[', '{']) {
        return None;
    }
    let mut items = Vec::new();
    let mut start = open + 1;
    for part in src[open + 1..close].split(';') {
        let lead = part.len() - part.trim_start().len();
        let item = part.trim();
        let at = start + lead;
        start += part.len() + 1;
        let rest = item.strip_prefix('@')?;
        let n = key_len(rest);
        if n == 0 {
            return None;
        }
        let after = rest[n..].trim_start();
        // Where `after` starts in the source.
        let a0 = at + 1 + n + (rest[n..].len() - after.len());
        let locator = match after.strip_prefix(',') {
            Some(l) if !l.trim().is_empty() => {
                let lead = l.len() - l.trim_start().len();
                let text = l.trim().to_string();
                let span = Span {
                    file,
                    range: a0 + 1 + lead..a0 + 1 + lead + text.len(),
                };
                Some((text, span))
            }
            None if after.is_empty() => None,
            Some(_) => {
                diags.push(
                    Diagnostic::error(
                        Code::BadLocator,
                        Some(Span {
                            file,
                            range: a0..a0 + 1,
                        }),
                        "a comma with no locator after it",
                    )
                    .hint(format!(
                        "write `[@{}]`, or `[@{}, p. 3]`",
                        &rest[..n],
                        &rest[..n]
                    )),
                );
                None
            }
            // `[@known p. 3]`: the locator is there and its comma is not.
            None => {
                let span = Span {
                    file,
                    range: a0..a0 + after.len(),
                };
                diags.push(
                    Diagnostic::error(
                        Code::BadLocator,
                        Some(span.clone()),
                        format!("`{after}` follows the key `{}` without a comma", &rest[..n]),
                    )
                    .label("a locator follows its key after a comma")
                    .hint(format!("write `[@{}, {after}]`", &rest[..n])),
                );
                Some((after.to_string(), span))
            }
        };
        items.push(CiteItem {
            key: rest[..n].to_string(),
            key_span: Span {
                file,
                range: at + 1..at + 1 + n,
            },
            locator,
        });
    }
    Some((close, items))
}
