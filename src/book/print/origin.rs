//! Where the print edition's markup came from, so that typst's problems are reported in the
//! chapter, never at a line of the generated typst.
//!
//! The walk wraps what it writes for a formula and for a whole chapter in a pair of typst
//! comments, `/*<N*/ … /*N>*/` (comments are nothing to typst, in markup and in math alike),
//! with `N` the index of its [`Origin`]. A problem's place in the markup is then inside
//! one or more pairs, and the innermost names what it came from: a formula is reported
//! at the formula; a character no bundled font has, at each place the chapter writes it.

use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, FileId, Sources, Span};
use std::ops::Range;

/// What a marked stretch of markup came from.
#[derive(Clone, Debug)]
pub enum Origin {
    /// A formula, at its span in the chapter.
    Formula(Span),
    /// A chapter's whole markup, in its file.
    Chapter(FileId),
}

/// `markup` between the comments that mark it as origin `n`.
pub fn wrap(n: usize, markup: &str) -> String {
    format!("/*<{n}*/ {markup} /*{n}>*/")
}

/// The innermost marked stretch of `main` that holds `at`: its origin's index.
fn innermost(main: &str, at: &Range<usize>) -> Option<usize> {
    let start = at.start.min(main.len());
    let mut end = start;
    while let Some(open) = main.get(..end)?.rfind("/*<") {
        let rest = &main[open + 3..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if let (Ok(n), true) = (
            rest[..digits].parse::<usize>(),
            rest[digits..].starts_with("*/"),
        ) {
            let close = format!("/*{n}>*/");
            if main[open..]
                .find(&close)
                .is_some_and(|c| open + c + close.len() >= at.end.max(start))
            {
                return Some(n);
            }
        }
        end = open;
    }
    None
}

/// typst's problems as diagnostics in the chapters: each formula that fails, once, at the
/// formula; each character no font has, at every place a chapter writes it. What has no
/// such place is one `print` diagnostic with typst's words, as before. None are dropped:
/// the result is empty only when `problems` is.
pub fn diagnostics(
    problems: &[revtx_pdf::Problem],
    main: &str,
    origins: &[Origin],
    sources: &Sources,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut formulas: Vec<usize> = Vec::new();
    let mut glyphs: Vec<(Option<FileId>, char)> = Vec::new();
    let mut rest = Vec::new();
    for p in problems {
        let origin =
            p.at.as_ref()
                .and_then(|at| innermost(main, at))
                .and_then(|n| Some((n, origins.get(n)?)));
        let missing = missing_chars(p, main);
        match origin {
            Some((n, Origin::Formula(span))) => {
                if !formulas.contains(&n) {
                    formulas.push(n);
                    out.push(
                        Diagnostic::error(
                            Code::Print,
                            Some(span.clone()),
                            "this formula cannot be typeset for print",
                        )
                        .label(p.message.trim_start_matches("PDF/UA-1 error: "))
                        .hint(
                            "write it with the LaTeX the guide lists in \"Math in print\" (the print \
                             edition's chapter), or build with --no-pdf",
                        ),
                    );
                }
            }
            Some((_, Origin::Chapter(file))) if !missing.is_empty() => {
                glyphs.extend(missing.iter().map(|c| (Some(*file), *c)));
            }
            None if !missing.is_empty() => glyphs.extend(missing.iter().map(|c| (None, *c))),
            _ => rest.push(p),
        }
    }
    glyphs.sort_unstable();
    glyphs.dedup();
    for (file, c) in glyphs {
        let files: Vec<FileId> = match file {
            Some(f) => vec![f],
            // Not inside a chapter's markup: any chapter that writes it.
            None => origins
                .iter()
                .filter_map(|o| match o {
                    Origin::Chapter(f) => Some(*f),
                    Origin::Formula(_) => None,
                })
                .collect(),
        };
        let mut found = false;
        for f in files {
            for (i, _) in sources.text(f).match_indices(c) {
                found = true;
                out.push(glyph(
                    c,
                    Some(Span {
                        file: f,
                        range: i..i + c.len_utf8(),
                    }),
                ));
            }
        }
        if !found {
            out.push(glyph(c, None));
        }
    }
    if !rest.is_empty() {
        let mut d = Diagnostic::error(Code::Print, None, "cannot typeset the print edition");
        for p in rest.iter().take(8) {
            d = d.note(p.to_string());
        }
        out.push(d.hint("build with --no-pdf to skip the print edition while you look into it"));
    }
    out
}

/// The characters no bundled font has that a problem is about (typst's words quote them,
/// and its place in the markup holds them).
fn missing_chars(p: &revtx_pdf::Problem, main: &str) -> Vec<char> {
    if !p.message.contains("could not be displayed") {
        return Vec::new();
    }
    let at =
        p.at.as_ref()
            .and_then(|r| main.get(r.clone()))
            .unwrap_or("");
    revtx_pdf::uncovered(&format!("{}{at}", p.message))
}

fn glyph(c: char, span: Option<Span>) -> Diagnostic {
    Diagnostic::error(
        Code::Print,
        span,
        format!(
            "no font of the print edition has the character `{c}` (U+{:04X})",
            c as u32
        ),
    )
    .label("the PDF cannot show this character")
    .hint(
        "the print edition uses typst's bundled fonts only (Libertinus Serif, New Computer \
         Modern, DejaVu Sans Mono), which have no emoji; write it in words, or build with \
         --no-pdf",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_marked_stretch_holds_a_place() {
        let main = format!("a {} b", wrap(0, &format!("x {} y", wrap(1, "$ f $"))));
        let f = main.find('f').unwrap();
        assert_eq!(innermost(&main, &(f..f + 1)), Some(1));
        let x = main.find('x').unwrap();
        assert_eq!(innermost(&main, &(x..x + 1)), Some(0));
        let y = main.find('y').unwrap();
        assert_eq!(
            innermost(&main, &(y..y + 1)),
            Some(0),
            "after the formula's pair"
        );
        assert_eq!(innermost(&main, &(0..1)), None);
        let b = main.rfind('b').unwrap();
        assert_eq!(innermost(&main, &(b..b + 1)), None);
    }
}
