//! Listings: source included from the project (the lines between `// ANCHOR: name` and
//! `// ANCHOR_END: name`) and code blocks, highlighted by syntect into `hl-…` classes.

use super::Renderer;
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Span};
use minijinja::context;
use std::sync::OnceLock;
use syntect::parsing::SyntaxSet;

fn syntaxes() -> &'static SyntaxSet {
    static S: OnceLock<SyntaxSet> = OnceLock::new();
    S.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Highlights code into `<span class="hl-…">` HTML; `None` for an unknown language.
pub fn highlight(code: &str, lang: &str) -> Option<String> {
    use syntect::html::{ClassStyle, ClassedHTMLGenerator};
    use syntect::util::LinesWithEndings;
    let ss = syntaxes();
    let syn = ss.find_syntax_by_token(lang)?;
    let mut g = ClassedHTMLGenerator::new_with_class_style(
        syn,
        ss,
        ClassStyle::SpacedPrefixed { prefix: "hl-" },
    );
    for line in LinesWithEndings::from(code) {
        g.parse_html_for_line_which_includes_newline(line).ok()?;
    }
    Some(g.finalize())
}

/// The lines between `// ANCHOR: name` and `// ANCHOR_END: name`, other anchor lines
/// removed, dedented; `Err` lists the anchors the file has.
pub fn extract_anchor(src: &str, anchor: Option<&str>) -> Result<String, Vec<String>> {
    let is_marker = |l: &str| {
        let t = l.trim_start();
        t.starts_with("// ANCHOR:") || t.starts_with("// ANCHOR_END:")
    };
    let lines: Vec<&str> = match anchor {
        None => src.lines().filter(|l| !is_marker(l)).collect(),
        Some(a) => {
            let start = src
                .lines()
                .position(|l| l.trim_start() == format!("// ANCHOR: {a}"));
            let end = src
                .lines()
                .position(|l| l.trim_start() == format!("// ANCHOR_END: {a}"));
            match (start, end) {
                (Some(s), Some(e)) if s < e => src
                    .lines()
                    .skip(s + 1)
                    .take(e - s - 1)
                    .filter(|l| !is_marker(l))
                    .collect(),
                _ => {
                    let known = src
                        .lines()
                        .filter_map(|l| {
                            l.trim_start()
                                .strip_prefix("// ANCHOR: ")
                                .map(|s| s.trim().to_string())
                        })
                        .collect();
                    return Err(known);
                }
            }
        }
    };
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    Ok(lines
        .iter()
        .map(|l| {
            if l.len() >= indent {
                &l[indent..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n")
}

impl Renderer<'_> {
    /// A code block of the chapter.
    pub(super) fn code_block(&mut self, lang: &str, code: &str) -> String {
        let html = self.katex.highlight(code, lang).unwrap_or_default();
        self.html("partials/code.html", context! { lang, html, code })
    }

    /// An ```` ```include ```` listing and its code; problems are reported at `span`.
    pub(super) fn include(
        &mut self,
        path: &str,
        anchor: Option<&str>,
        span: &Span,
    ) -> (String, String) {
        match self.read_anchor(path, anchor) {
            Ok((code, lang)) => {
                let title = match anchor {
                    Some(a) => format!("{path} ({a})"),
                    None => path.to_string(),
                };
                let html = self.katex.highlight(&code, &lang).unwrap_or_default();
                let listing = self.html(
                    "partials/listing.html",
                    context! { title, lang, html, code => &code },
                );
                (listing, code)
            }
            Err(d) => {
                self.diags.push(d.at(span.clone()));
                (String::new(), String::new())
            }
        }
    }

    fn read_anchor(
        &self,
        path: &str,
        anchor: Option<&str>,
    ) -> Result<(String, String), Diagnostic> {
        read_listing(self.root, path, anchor)
    }
}

/// The anchored lines of a project file, and the file's extension: what an
/// ```` ```include ```` listing shows, on the site and in print.
pub fn read_listing(
    root: &std::path::Path,
    path: &str,
    anchor: Option<&str>,
) -> Result<(String, String), Diagnostic> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let canon = std::fs::canonicalize(root.join(path)).map_err(|e| {
            Diagnostic::error(Code::Include, None, format!("cannot include `{path}`"))
                .label(e.to_string())
                .hint("paths are relative to the project root, e.g. crates/revtx-engine/src/model/attention.rs")
        })?;
    if !canon.starts_with(&root) {
        return Err(Diagnostic::error(
            Code::Include,
            None,
            format!("refusing to include `{path}`: it is outside the project"),
        )
        .hint("only files inside the project can be included"));
    }
    let src = std::fs::read_to_string(&canon).map_err(|e| {
        Diagnostic::error(Code::Include, None, format!("cannot read `{path}`")).label(e.to_string())
    })?;
    let code = extract_anchor(&src, anchor).map_err(|known| {
        Diagnostic::error(
            Code::Include,
            None,
            format!("no anchor `{}` in `{path}`", anchor.unwrap_or_default()),
        )
        .hint(if known.is_empty() {
            "mark the lines with `// ANCHOR: name` and `// ANCHOR_END: name`".to_string()
        } else {
            format!("anchors in that file: {}", known.join(", "))
        })
    })?;
    let lang = canon
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_string();
    Ok((code, lang))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_extracted_and_dedented() {
        let src = "a\n    // ANCHOR: f\n    fn f() {\n        // ANCHOR: inner\n        1\n        // ANCHOR_END: inner\n    }\n    // ANCHOR_END: f\n";
        assert_eq!(
            extract_anchor(src, Some("f")).unwrap(),
            "fn f() {\n    1\n}\n"
        );
        assert_eq!(
            extract_anchor(src, Some("nope")).unwrap_err(),
            vec!["f".to_string(), "inner".to_string()]
        );
    }

    #[test]
    fn unknown_languages_are_not_highlighted() {
        assert!(highlight("x", "no-such-language").is_none());
        assert!(highlight("fn f() {}\n", "rs").unwrap().contains("hl-rust"));
    }
}
