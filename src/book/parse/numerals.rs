//! The unbound-number lint: every numeral in prose (paragraphs, list items, headings, table
//! cells, captions) must be checked (`[94.6%]{=…}`), inserted (`{=…}`), or marked literal
//! (`[362]{! original}`). Anything else is a warning, `unbound-number`, at its place.
//!
//! What is not prose is not read: code spans and blocks, math, HTML, link destinations and
//! autolinks, the insides of constructs (an assertion's condition, a claim's expression).
//! An assertion's bracketed text is prose, so a number in it needs its own claim.
//!
//! Exempt in prose: numerals inside words (`GPT-2`, `AVX2`, `x86-64`, `d_k`, `2D`), URLs,
//! four-digit years 1900–2099, and what the tool generates (section, figure, table and
//! equation numbers, ordered-list markers, inserted values).

use super::inline::{pieces, Piece};
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Span};
use pulldown_cmark::{Event, LinkType, Tag, TagEnd};
use std::ops::Range;

/// The unbound numerals of the prose events `events`, whose ranges index `text`;
/// `to_src` maps an offset of `text` to the chapter source.
pub fn lint<'e>(
    events: impl IntoIterator<Item = (&'e Event<'e>, Range<usize>)>,
    text: &str,
    to_src: &dyn Fn(usize) -> usize,
    file: FileId,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // A block's warnings wait for its end: text after a `$$` that opens no formula is
    // broken math (already an error), not prose.
    let mut pending: Vec<Diagnostic> = Vec::new();
    let mut stray_math = false;
    let mut code = false;
    let mut autolink = 0usize;
    // Inline HTML elements open around the text (`<span>5</span>`).
    let mut html = 0usize;
    for (ev, range) in events {
        match ev {
            Event::InlineHtml(tag) => html = html_depth(html, tag),
            Event::Start(Tag::CodeBlock(_)) => code = true,
            Event::End(TagEnd::CodeBlock) => code = false,
            Event::Start(Tag::Link {
                link_type: LinkType::Autolink | LinkType::Email,
                ..
            }) => autolink += 1,
            Event::End(TagEnd::Link) if autolink > 0 => autolink -= 1,
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::TableCell
                | TagEnd::Item
                | TagEnd::BlockQuote(_)
                | TagEnd::FootnoteDefinition,
            ) => {
                if !stray_math {
                    out.append(&mut pending);
                }
                pending.clear();
                stray_math = false;
                html = 0;
            }
            Event::Text(_) if !code && autolink == 0 && html == 0 => {
                let Some(raw) = text.get(range.clone()) else {
                    continue;
                };
                stray_math |= text
                    .get(range.start..=range.end)
                    .unwrap_or(raw)
                    .contains("$$");
                for r in numerals(raw) {
                    let (a, b) = (to_src(range.start + r.start), to_src(range.start + r.end));
                    let n = &raw[r];
                    pending.push(
                        Diagnostic::warning(
                            Code::UnboundNumber,
                            Some(Span {
                                file,
                                range: a..b.max(a),
                            }),
                            format!("`{n}` is bound to no run"),
                        )
                        .label("neither checked, inserted nor marked literal")
                        .hint(format!(
                            "check it with `[{n}]{{=run.path}}`, or mark it as deliberate with `[{n}]{{! original}}` (or another reason)"
                        )),
                    );
                }
            }
            _ => {}
        }
    }
    if !stray_math {
        out.append(&mut pending);
    }
    out
}

/// The depth of open inline HTML elements after the tag `tag`.
fn html_depth(depth: usize, tag: &str) -> usize {
    const VOID: [&str; 6] = ["br", "img", "hr", "wbr", "input", "source"];
    let t = tag.trim();
    if let Some(rest) = t.strip_prefix("</") {
        return depth.saturating_sub(usize::from(
            rest.starts_with(|c: char| c.is_ascii_alphabetic()),
        ));
    }
    let Some(rest) = t.strip_prefix('<') else {
        return depth;
    };
    let name: String = rest
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    if name.is_empty() || t.ends_with("/>") || VOID.contains(&name.to_ascii_lowercase().as_str()) {
        depth
    } else {
        depth + 1
    }
}

/// The byte ranges of the unbound numerals of one stretch of prose, as written (placeholders
/// of constructs are boundaries, never read).
pub fn numerals(raw: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for piece in pieces(raw) {
        let Piece::Text(t) = piece else { continue };
        let base = t.as_ptr() as usize - raw.as_ptr() as usize;
        for r in in_text(t) {
            out.push(base + r.start..base + r.end);
        }
    }
    out
}

fn in_text(t: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // URLs and character references are skipped whole.
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let token_end = t[i..]
            .find(|c: char| c.is_whitespace())
            .map_or(t.len(), |k| i + k);
        let token = &t[i..token_end];
        if token.contains("://") || token.starts_with("www.") {
            i = token_end;
            continue;
        }
        if b[i] == b'&' {
            if let Some(k) = token.find(';') {
                if token[1..k].starts_with('#') {
                    i += k + 1;
                    continue;
                }
            }
        }
        if !is_word(t, i) {
            i += t[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let end = word_end(t, i);
        classify(&t[i..end], i, &mut out);
        i = end;
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_word(t: &str, i: usize) -> bool {
    t[i..].chars().next().is_some_and(is_word_char)
}

/// The end of the word starting at `i`: word characters, joined by `-`, `.` or `,` between
/// two word characters.
fn word_end(t: &str, i: usize) -> usize {
    let mut end = i;
    let mut chars = t[i..].char_indices().peekable();
    while let Some((k, c)) = chars.next() {
        if is_word_char(c) {
            end = i + k + c.len_utf8();
        } else if !(matches!(c, '-' | '.' | ',')
            && chars.peek().is_some_and(|&(_, n)| is_word_char(n)))
        {
            break;
        }
    }
    end
}

/// A word's unbound numerals (offsets `at` + within the word).
fn classify(w: &str, at: usize, out: &mut Vec<Range<usize>>) {
    if !w.bytes().any(|b| b.is_ascii_digit()) {
        return;
    }
    if is_number(w) {
        if !is_year(w) {
            out.push(at..at + w.len());
        }
        return;
    }
    // `3-letter`, `1-2`: the numeric parts of a hyphenated word whose first part is a
    // number; `GPT-2`, `x86-64` are names.
    let parts: Vec<&str> = w.split('-').collect();
    if parts.len() > 1 && is_number(parts[0]) {
        let mut k = at;
        for p in parts {
            if is_number(p) && !is_year(p) {
                out.push(k..k + p.len());
            }
            k += p.len() + 1;
        }
    }
}

/// `7`, `1,063`, `0.25`, `1e-4`, `2.5E+3`, and ordinals `37th`, `1st`.
fn is_number(w: &str) -> bool {
    let w = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|s| {
            w.strip_suffix(s)
                .filter(|r| r.bytes().all(|b| b.is_ascii_digit()))
        })
        .unwrap_or(w);
    let (mantissa, exp) = match w.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (w, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (int, frac) = mantissa
        .split_once('.')
        .map_or((mantissa, None), |(i, f)| (i, Some(f)));
    let int_ok = if int.contains(',') {
        let g: Vec<&str> = int.split(',').collect();
        digits(g[0]) && g[0].len() <= 3 && g[1..].iter().all(|x| x.len() == 3 && digits(x))
    } else {
        digits(int)
    };
    int_ok
        && frac.is_none_or(digits)
        && exp.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)))
}

fn is_year(w: &str) -> bool {
    w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1900..=2099).contains(&y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<&str> {
        numerals(t).into_iter().map(|r| &t[r]).collect()
    }

    #[test]
    fn numerals_in_prose() {
        assert_eq!(
            found("that floor is 1.10, at step 1,300."),
            ["1.10", "1,300"]
        );
        assert_eq!(found("it scored 94.6% and 1e-4"), ["94.6", "1e-4"]);
        assert_eq!(found("the 3-letter strings, lengths 3–8"), ["3", "3", "8"]);
        assert_eq!(found("the 37th conference"), ["37th"]);
    }

    #[test]
    fn exemptions() {
        assert!(found("GPT-2 on AVX2 and x86-64, d_k and 2D").is_empty());
        assert!(found("Vaswani et al. (2017) and 1999").is_empty());
        assert!(found("see https://arxiv.org/abs/1607.06450 or www.x1.org").is_empty());
        assert!(found("caf&#233; &amp; co").is_empty());
        assert_eq!(found("in 1850 and 2100"), ["1850", "2100"]);
        let p = format!(
            "a {}12{} b",
            super::super::PLACEHOLDER_OPEN,
            super::super::PLACEHOLDER_CLOSE
        );
        assert!(found(&p).is_empty(), "a placeholder's number is no numeral");
    }
}
