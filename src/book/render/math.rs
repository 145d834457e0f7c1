//! Math: formulas rendered by KaTeX (server-side), with a cache that warm builds read
//! instead of starting the JavaScript engine, and KaTeX's errors placed in the source.

use super::Renderer;
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::parse::Math;
use minijinja::context;
use std::collections::HashMap;

/// KaTeX output by (display, formula). Persisted so warm builds never start the JS engine.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct KatexCache {
    pub entries: HashMap<String, String>,
    /// Highlighted code by (tool versions, language, code): loading syntect's syntaxes and
    /// compiling their patterns took a quarter of a warm build.
    #[serde(default)]
    pub highlights: HashMap<String, Option<String>>,
    #[serde(skip)]
    pub dirty: bool,
}

impl KatexCache {
    /// The cache at `path`; empty when it is missing or unreadable.
    pub fn load(path: &std::path::Path) -> Self {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes the cache to `path` if this build added to it (a failure only costs time).
    pub fn save(&self, path: &std::path::Path) {
        if self.dirty {
            let bytes = serde_json::to_vec(self).unwrap_or_default();
            let _ = crate::book::site::write_atomic(path, &bytes);
        }
    }
    /// `listings::highlight(code, lang)`, remembered.
    pub fn highlight(&mut self, code: &str, lang: &str) -> Option<String> {
        // The dependencies' versions (syntect's syntaxes among them) are part of the key.
        static SALT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            blake3::hash(include_bytes!("../../../Cargo.lock")).to_hex()[..16].to_string()
        });
        let key = format!("{}\0{lang}\0{code}", *SALT);
        if let Some(h) = self.highlights.get(&key) {
            return h.clone();
        }
        let html = super::listings::highlight(code, lang);
        self.highlights.insert(key, html.clone());
        self.dirty = true;
        html
    }

    pub fn render(&mut self, formula: &str, display: bool) -> Result<String, String> {
        let key = format!("{}{formula}", if display { "D" } else { "I" });
        if let Some(h) = self.entries.get(&key) {
            return Ok(h.clone());
        }
        let opts = katex::Opts::builder()
            .display_mode(display)
            .throw_on_error(true)
            .build()
            .map_err(|e| e.to_string())?;
        let html = katex::render_with_opts(formula, &opts).map_err(|e| e.to_string())?;
        self.entries.insert(key, html.clone());
        self.dirty = true;
        Ok(html)
    }
}

impl Renderer<'_> {
    /// A formula's HTML; one KaTeX cannot render is reported and shown as written.
    pub(super) fn math(&mut self, m: &Math) -> String {
        match self.katex.render(&m.tex, m.display) {
            Ok(h) => h,
            Err(e) => {
                self.katex_error(m, &e);
                self.html("partials/math-error.html", context! { tex => &m.tex })
            }
        }
    }

    fn katex_error(&mut self, m: &Math, e: &str) {
        let mut span = m.span.clone();
        // KaTeX reports a 1-based "position N" within the formula.
        if let Some(p) = e
            .split("position ")
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|_| m.exact)
        {
            let start = span.range.start + if m.display { 2 } else { 1 } + p.saturating_sub(1);
            if start < span.range.end {
                span.range = start..start + 1;
            }
        }
        // "failed to execute js (detail: String(\"ParseError: KaTeX parse error: … at position N: …\"))"
        let msg = match e.split("KaTeX parse error: ").nth(1) {
            Some(m) => m
                .split(" at position")
                .next()
                .unwrap_or(m)
                .replace("\\\\", "\\")
                .replace('\u{332}', ""),
            None => e.to_string(),
        };
        self.diags.push(
            Diagnostic::error(Code::Katex, Some(span), "KaTeX cannot render this formula")
                .label(msg),
        );
    }
}
