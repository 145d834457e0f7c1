//! Listings: source included from the project (the lines between `// ANCHOR: name` and
//! `// ANCHOR_END: name`, or `# ANCHOR: name` in Python), with the same code in other
//! languages as tabs beside it, and code blocks, highlighted by syntect into `hl-…` classes.

use super::Renderer;
use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Span};
use crate::book::parse::Listing;
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

/// The anchor a line opens (`Some(("ANCHOR", name))`) or closes (`"ANCHOR_END"`), in a
/// `//` or a `#` comment.
fn marker(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let t = t.strip_prefix("//").or_else(|| t.strip_prefix('#'))?;
    let (word, name) = t.trim_start().split_once(':')?;
    matches!(word, "ANCHOR" | "ANCHOR_END").then(|| (word, name.trim()))
}

/// The lines between `// ANCHOR: name` and `// ANCHOR_END: name` (or `# ANCHOR: name`),
/// other anchor lines removed, dedented; `Err` lists the anchors the file has.
/// Why an anchor's lines cannot be taken.
#[derive(Debug, PartialEq, Eq)]
pub enum AnchorError {
    /// No `ANCHOR: name` line; the anchors the file has.
    Missing(Vec<String>),
    /// `ANCHOR: name` with no `ANCHOR_END: name` after it.
    Unclosed,
    /// `ANCHOR_END: name` before its `ANCHOR: name`.
    EndFirst,
}

pub fn extract_anchor(src: &str, anchor: Option<&str>) -> Result<String, AnchorError> {
    let is_marker = |l: &str| marker(l).is_some();
    let lines: Vec<&str> = match anchor {
        None => src.lines().filter(|l| !is_marker(l)).collect(),
        Some(a) => {
            let start = src.lines().position(|l| marker(l) == Some(("ANCHOR", a)));
            let end = src
                .lines()
                .position(|l| marker(l) == Some(("ANCHOR_END", a)));
            match (start, end) {
                (Some(s), Some(e)) if s < e => src
                    .lines()
                    .skip(s + 1)
                    .take(e - s - 1)
                    .filter(|l| !is_marker(l))
                    .collect(),
                (Some(_), None) => return Err(AnchorError::Unclosed),
                (Some(_), Some(_)) => return Err(AnchorError::EndFirst),
                (None, _) => {
                    let known = src
                        .lines()
                        .filter_map(|l| match marker(l) {
                            Some(("ANCHOR", name)) => Some(name.to_string()),
                            _ => None,
                        })
                        .collect();
                    return Err(AnchorError::Missing(known));
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

    /// An ```` ```include ```` listing, its twins as tabs beside it, and all their code
    /// (for search); `number` tells one listing's tabs from another's. Problems are
    /// reported at `span`, a twin's at its line.
    pub(super) fn include(
        &mut self,
        listing: &Listing,
        number: usize,
        span: &Span,
    ) -> (String, String) {
        let mut tabs = Vec::new();
        let mut all_code = String::new();
        let sources = std::iter::once((listing.label.clone(), &listing.source, span)).chain(
            listing
                .twins
                .iter()
                .map(|t| (Some(t.label.clone()), &t.source, &t.span)),
        );
        for (label, source, at) in sources {
            match self.read_anchor(&source.path, source.anchor.as_deref()) {
                Ok((code, lang)) => {
                    let html = self.katex.highlight(&code, &lang).unwrap_or_default();
                    let label = label.unwrap_or_else(|| language_name(&lang));
                    all_code.push_str(&code);
                    tabs.push(context! { title => source.title(), label, lang, html, code });
                }
                Err(d) => self.diags.push(d.at(at.clone())),
            }
        }
        if tabs.len() != 1 + listing.twins.len() {
            return (String::new(), String::new());
        }
        let id = format!("listing-{number}");
        let html = self.html("partials/listing.html", context! { id, tabs });
        (html, all_code)
    }

    fn read_anchor(
        &self,
        path: &str,
        anchor: Option<&str>,
    ) -> Result<(String, String), Diagnostic> {
        read_listing(self.root, path, anchor)
    }
}

/// What a listing's tab is called when the book does not say: its language's name, from
/// the file's extension.
pub fn language_name(ext: &str) -> String {
    match ext {
        "rs" => "Rust",
        "py" => "Python",
        "js" | "mjs" => "JavaScript",
        "ts" => "TypeScript",
        "c" => "C",
        "cpp" | "cc" | "h" | "hpp" => "C++",
        "typ" => "Typst",
        other => other,
    }
    .to_string()
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
    let src = super::reads::read_to_string(&canon).map_err(|e| {
        Diagnostic::error(Code::Include, None, format!("cannot read `{path}`")).label(e.to_string())
    })?;
    let name = anchor.unwrap_or_default();
    let code = extract_anchor(&src, anchor).map_err(|e| match e {
        AnchorError::Missing(known) => Diagnostic::error(
            Code::Include,
            None,
            format!("no anchor `{name}` in `{path}`"),
        )
        .hint(if known.is_empty() {
            "mark the lines with `// ANCHOR: name` and `// ANCHOR_END: name` (`#` in Python)"
                .to_string()
        } else {
            format!("anchors in that file: {}", known.join(", "))
        }),
        AnchorError::Unclosed => Diagnostic::error(
            Code::Include,
            None,
            format!("anchor `{name}` in `{path}` is opened and never closed"),
        )
        .hint(format!(
            "add a line `ANCHOR_END: {name}` (as a comment) where its lines end"
        )),
        AnchorError::EndFirst => Diagnostic::error(
            Code::Include,
            None,
            format!("anchor `{name}` in `{path}` ends before it starts"),
        )
        .hint(format!("put `ANCHOR: {name}` above `ANCHOR_END: {name}`")),
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
            AnchorError::Missing(vec!["f".to_string(), "inner".to_string()])
        );
        assert_eq!(
            extract_anchor(
                "// ANCHOR: open
x
",
                Some("open")
            )
            .unwrap_err(),
            AnchorError::Unclosed
        );
        assert_eq!(
            extract_anchor(
                "// ANCHOR_END: f
x
// ANCHOR: f
",
                Some("f")
            )
            .unwrap_err(),
            AnchorError::EndFirst
        );
    }

    #[test]
    fn python_anchors_are_extracted_too() {
        let src = "import torch\n\n# ANCHOR: f\ndef f(x):\n    # ANCHOR: body\n    return x\n    # ANCHOR_END: body\n# ANCHOR_END: f\n";
        assert_eq!(
            extract_anchor(src, Some("f")).unwrap(),
            "def f(x):\n    return x\n"
        );
        assert_eq!(extract_anchor(src, Some("body")).unwrap(), "return x\n");
        // A comment that merely mentions the word is no marker.
        assert_eq!(
            extract_anchor("# ANCHORS: f\nx\n", Some("f")).unwrap_err(),
            AnchorError::Missing(Vec::new())
        );
    }

    #[test]
    fn unknown_languages_are_not_highlighted() {
        assert!(highlight("x", "no-such-language").is_none());
        assert!(highlight("fn f() {}\n", "rs").unwrap().contains("hl-rust"));
    }
}
