//! Diagnostics are data: every stage appends to one list, and the list is printed once,
//! rustc-style, at the end. Nothing stops at the first error; every diagnostic has a code.
//!
//! ```text
//! error[drift]: quoted figure does not match its run
//!   --> book/chapter-1.md:12:34
//!    |
//! 12 | …the reference reverses [94.6%]{=reference.train.test.accuracy} of the test…
//!    |                          ^^^^^ quoted `94.6%`, recomputed `95.0%`
//!    |
//!    = note: expression: reference.train.test.accuracy = 0.95
//! ```
//!
//! A source line is shown as a window of at most [`WIDTH`] columns around the span, with
//! `…` where it is cut; the header's `file:line:col` is exact. Colour only goes to a
//! terminal; under GitHub Actions each diagnostic is also an `::error file=…::` annotation.

use super::codes::Code;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::ops::Range;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A file's byte range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub file: FileId,
    pub range: Range<usize>,
}

/// Index of a source file in [`Sources`].
pub type FileId = usize;

/// One problem, located in the source.
#[derive(Clone, Debug)]
#[must_use = "a diagnostic is reported only when pushed onto the build's list"]
pub struct Diagnostic {
    pub severity: Severity,
    /// What kind of problem this is, e.g. `drift`: bless, `--deny-warnings` and the build
    /// summary select diagnostics by it, never by their message.
    pub code: Code,
    pub span: Option<Span>,
    pub message: String,
    /// Shown under the caret.
    pub label: Option<String>,
    /// `= note:` lines.
    pub notes: Vec<String>,
    /// `= help:` lines.
    pub hints: Vec<String>,
}

impl Diagnostic {
    /// An error with its code (e.g. `Code::Drift`), where it is, and what is wrong.
    pub fn error(code: Code, span: Option<Span>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            span,
            message: message.into(),
            label: None,
            notes: vec![],
            hints: vec![],
        }
    }
    /// A warning: reported, but the build goes on (unless warnings are denied).
    pub fn warning(code: Code, span: Option<Span>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Self::error(code, span, message)
        }
    }
    /// `what` names run `id`, which the book does not declare (`declared` are the ids it
    /// does). One message for figures, tables, widgets, expressions and `--rerun`.
    pub fn unknown_run<S: AsRef<str>>(
        what: &str,
        id: &str,
        span: Option<Span>,
        declared: &[S],
    ) -> Self {
        let declared: Vec<&str> = declared.iter().map(AsRef::as_ref).collect();
        Self::error(
            Code::UnknownRun,
            span,
            format!("{what} uses unknown run `{id}`"),
        )
        .hint(format!(
            "runs declared in the book: {}",
            declared.join(", ")
        ))
    }
    /// The same problem, placed at `span` (for problems found before their place is known).
    pub fn at(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }
    pub fn label(mut self, l: impl Into<String>) -> Self {
        self.label = Some(l.into());
        self
    }
    pub fn note(mut self, n: impl Into<String>) -> Self {
        self.notes.push(n.into());
        self
    }
    pub fn hint(mut self, h: impl Into<String>) -> Self {
        self.hints.push(h.into());
        self
    }
}

/// Which warnings become errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deny {
    /// `--deny-warnings`: every warning.
    All,
    /// `deny_warnings = true` in book/book.toml: the warnings about the text.
    Text,
}

/// Turns warnings into errors, each with a note saying why.
pub fn deny_warnings(diags: &mut [Diagnostic], which: Deny) {
    for d in diags.iter_mut().filter(|d| {
        d.severity == Severity::Warning && (which == Deny::All || !d.code.is_environmental())
    }) {
        d.severity = Severity::Error;
        d.notes.push(match which {
            Deny::All => "warnings are denied (`--deny-warnings`)".into(),
            Deny::Text => {
                "warnings about the text are denied (`deny_warnings = true` in book/book.toml)"
                    .into()
            }
        });
    }
}

/// The source files the build read, so diagnostics can quote them.
#[derive(Default)]
pub struct Sources {
    pub files: Vec<(PathBuf, String)>,
    /// The project root; paths are shown relative to it.
    pub root: PathBuf,
}

impl Sources {
    pub fn add(&mut self, path: PathBuf, text: String) -> FileId {
        self.files.push((path, text));
        self.files.len() - 1
    }
    pub fn text(&self, id: FileId) -> &str {
        &self.files[id].1
    }
    pub fn path(&self, id: FileId) -> &Path {
        &self.files[id].0
    }
    /// The path as shown in diagnostics: relative to the project root.
    pub fn display_path(&self, id: FileId) -> String {
        let p = self.path(id);
        p.strip_prefix(&self.root)
            .unwrap_or(p)
            .display()
            .to_string()
    }
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, id: FileId, offset: usize) -> (usize, usize) {
        let text = self.text(id);
        let offset = floor_char(text, offset.min(text.len()));
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (line, col)
    }
}

/// The widest a printed source or caret line gets, gutter included.
pub const WIDTH: usize = 120;

/// Prints diagnostics rustc-style to stderr (coloured on a terminal only), and as GitHub
/// Actions annotations on stdout when running under Actions.
pub fn emit_stderr(diags: &[Diagnostic], sources: &Sources) {
    let color = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none()
        && std::env::var("TERM").as_deref() != Ok("dumb");
    emit(diags, sources, &mut std::io::stderr().lock(), color);
}

/// Prints diagnostics rustc-style to `out` (with ANSI colour if `color`), and as GitHub
/// Actions annotations on stdout when running under Actions.
pub fn emit(diags: &[Diagnostic], sources: &Sources, out: &mut dyn std::io::Write, color: bool) {
    let _ = out.write_all(render(diags, sources, color).as_bytes());
    let _ = out.flush();
    if std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true") {
        for d in diags {
            println!("{}", github_annotation(d, sources));
        }
    }
}

/// `::error file=…,line=…,col=…::message` for GitHub Actions.
pub fn github_annotation(d: &Diagnostic, sources: &Sources) -> String {
    let kind = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let esc = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let mut msg = d.message.clone();
    if let Some(l) = &d.label {
        msg.push_str(": ");
        msg.push_str(l);
    }
    match &d.span {
        Some(s) => {
            let (line, col) = sources.line_col(s.file, s.range.start);
            format!(
                "::{kind} file={},line={line},col={col}::{}",
                sources.display_path(s.file),
                esc(&msg)
            )
        }
        None => format!("::{kind}::{}", esc(&msg)),
    }
}

/// Diagnostics as plain text (no colour), e.g. for the live-preview overlay and tests;
/// each ends with a blank line.
pub fn to_plain_text(diags: &[Diagnostic], sources: &Sources) -> String {
    render(diags, sources, false)
}

/// ANSI styles, or nothing.
struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn severity(&self, sev: Severity, s: &str) -> String {
        self.paint(
            match sev {
                Severity::Error => "1;31",
                Severity::Warning => "1;33",
            },
            s,
        )
    }
    fn gutter(&self, s: &str) -> String {
        self.paint("1;34", s)
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
}

/// Every diagnostic, rustc-style.
pub fn render(diags: &[Diagnostic], sources: &Sources, color: bool) -> String {
    let st = Style { on: color };
    let mut out = String::new();
    for d in diags {
        render_one(&mut out, d, sources, &st);
    }
    out
}

fn render_one(out: &mut String, d: &Diagnostic, sources: &Sources, st: &Style) {
    let sev = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let _ = writeln!(
        out,
        "{}{}",
        st.severity(d.severity, &format!("{sev}[{}]", d.code)),
        st.bold(&format!(": {}", d.message))
    );
    let located = d.span.as_ref().filter(|s| s.file < sources.files.len());
    let gutter_width = located.map_or(1, |s| {
        sources.line_col(s.file, s.range.start).0.to_string().len()
    });
    let pad = " ".repeat(gutter_width);
    if let Some(s) = located {
        let (line, col) = sources.line_col(s.file, s.range.start);
        let _ = writeln!(
            out,
            "{pad}{} {}:{line}:{col}",
            st.gutter("-->"),
            sources.display_path(s.file)
        );
        let _ = writeln!(out, "{pad} {}", st.gutter("|"));
        let text = sources.text(s.file);
        let (shown, caret_at, caret_len) = window(text, s.range.clone(), WIDTH - gutter_width - 3);
        let _ = writeln!(
            out,
            "{} {} {shown}",
            st.gutter(&line.to_string()),
            st.gutter("|")
        );
        let mut caret = format!("{}{}", " ".repeat(caret_at), "^".repeat(caret_len.max(1)));
        if let Some(l) = &d.label {
            caret.push(' ');
            caret.push_str(l);
        }
        let _ = writeln!(
            out,
            "{pad} {} {}",
            st.gutter("|"),
            st.severity(d.severity, &caret)
        );
    }
    let notes = d
        .notes
        .iter()
        .map(|n| ("note", n))
        .chain(d.hints.iter().map(|h| ("help", h)));
    let mut first = true;
    for (kind, text) in notes {
        if first && located.is_some() {
            let _ = writeln!(out, "{pad} {}", st.gutter("|"));
        }
        first = false;
        let _ = writeln!(out, "{pad} {} {kind}: {text}", st.gutter("="));
    }
    if located.is_none() {
        if let Some(l) = &d.label {
            let _ = writeln!(out, "{pad} {} {l}", st.gutter("="));
        }
    }
    out.push('\n');
}

/// The part of the span's first line to print, at most `width` columns, and where under
/// it the caret goes (column, length), in characters. A cut end is marked with `…`.
pub fn window(text: &str, range: Range<usize>, width: usize) -> (String, usize, usize) {
    let start = floor_char(text, range.start.min(text.len()));
    let line_start = text[..start].rfind('\n').map_or(0, |k| k + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |k| start + k);
    let line: Vec<char> = text[line_start..line_end]
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let end = floor_char(text, range.end.clamp(start, line_end));
    // In characters, within the line.
    let s = text[line_start..start].chars().count();
    let e = (s + text[start..end].chars().count()).max(s + 1);
    let width = width.max(20);
    if line.len() <= width {
        return (line.iter().collect(), s, e.min(line.len().max(s + 1)) - s);
    }
    // Room for the span and some context either side, the cut ends marked.
    let span_len = e - s;
    let inner = width - 2;
    let (from, to) = if span_len >= inner {
        (s, s + inner)
    } else {
        let before = (inner - span_len) / 2;
        let from = s.saturating_sub(before);
        let to = (from + inner).min(line.len());
        (to.saturating_sub(inner), to)
    };
    let mut shown = String::new();
    let left_cut = from > 0;
    if left_cut {
        shown.push('…');
    }
    shown.extend(&line[from..to]);
    if to < line.len() {
        shown.push('…');
    }
    let caret_at = s - from + usize::from(left_cut);
    let caret_len = e.min(to) - s;
    (shown, caret_at, caret_len)
}

/// The largest char boundary at or before `at`.
fn floor_char(s: &str, mut at: usize) -> usize {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(text: &str) -> Sources {
        let mut s = Sources::default();
        s.add(PathBuf::from("book/c.md"), text.to_string());
        s
    }

    #[test]
    fn short_lines_are_shown_whole() {
        let src = "# T\n\nIt scored [9.99]{=x} here.\n";
        let at = src.find("9.99").unwrap();
        let s = sources(src);
        let d = Diagnostic::error(
            Code::Drift,
            Some(Span {
                file: 0,
                range: at..at + 4,
            }),
            "quoted figure does not match its run",
        )
        .label("quoted `9.99`")
        .note("expression: x = 1");
        let text = to_plain_text(&[d], &s);
        assert_eq!(
            text,
            "error[drift]: quoted figure does not match its run\n --> book/c.md:3:12\n  |\n3 | It scored [9.99]{=x} here.\n  |            ^^^^ quoted `9.99`\n  |\n  = note: expression: x = 1\n\n"
        );
    }

    #[test]
    fn long_lines_are_cut_around_the_span() {
        let mut line = "word ".repeat(150);
        line.push_str("[9.99]{=x}");
        line.push_str(&" more".repeat(150));
        let src = format!("# T\n\n{line}\n");
        let at = src.find("9.99").unwrap();
        let s = sources(&src);
        let d = Diagnostic::error(
            Code::Drift,
            Some(Span {
                file: 0,
                range: at..at + 4,
            }),
            "m",
        );
        let text = to_plain_text(&[d], &s);
        let col = line.find("9.99").unwrap() + 1;
        assert!(text.contains(&format!("book/c.md:3:{col}")), "{text}");
        for l in text.lines() {
            assert!(l.chars().count() <= WIDTH, "{} > {WIDTH}: {l}", l.len());
        }
        let shown = text.lines().nth(3).unwrap();
        let caret = text.lines().nth(4).unwrap();
        assert!(shown.contains('…') && shown.ends_with('…'), "{shown}");
        let k = caret.find('^').unwrap();
        let shown_chars: Vec<char> = shown.chars().collect();
        let caret_col = caret[..k].chars().count();
        assert_eq!(
            shown_chars[caret_col..caret_col + 4]
                .iter()
                .collect::<String>(),
            "9.99"
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let s = sources("x\n");
        let d = Diagnostic::warning(
            Code::UnboundNumber,
            Some(Span {
                file: 0,
                range: 0..1,
            }),
            "m",
        );
        assert!(!render(std::slice::from_ref(&d), &s, false).contains('\x1b'));
        assert!(render(&[d], &s, true).contains("\x1b[1;33m"));
    }
}
