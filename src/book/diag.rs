//! Diagnostics are data: every stage appends to one list, and the list is printed once,
//! rustc-style, at the end. Nothing stops at the first error; every diagnostic has a code.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor::WriteColor};
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
    /// What kind of problem this is, e.g. `drift`: bless and the build summary select
    /// diagnostics by it, never by their message.
    pub code: &'static str,
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
    /// An error with its code (kebab-case, e.g. `drift`), where it is, and what is wrong.
    pub fn error(code: &'static str, span: Option<Span>, message: impl Into<String>) -> Self {
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
    /// A warning: reported, but the build goes on.
    pub fn warning(code: &'static str, span: Option<Span>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Self::error(code, span, message)
        }
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
        let offset = offset.min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        (line, col)
    }
}

/// Prints diagnostics rustc-style (with colour on a terminal), and as GitHub Actions
/// annotations on stdout when running under Actions.
pub fn emit(diags: &[Diagnostic], sources: &Sources, out: &mut dyn WriteColor) {
    emit_rustc_style(diags, sources, out);
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

/// Diagnostics as plain text (no colour), e.g. for the live-preview overlay and tests.
pub fn to_plain_text(diags: &[Diagnostic], sources: &Sources) -> String {
    let mut buf = term::termcolor::NoColor::new(Vec::new());
    emit_rustc_style(diags, sources, &mut buf);
    String::from_utf8_lossy(&buf.into_inner()).into_owned()
}

fn emit_rustc_style(diags: &[Diagnostic], sources: &Sources, out: &mut dyn WriteColor) {
    let mut files = SimpleFiles::new();
    for i in 0..sources.files.len() {
        files.add(sources.display_path(i), sources.text(i).to_string());
    }
    for d in diags {
        let mut cs = match d.severity {
            Severity::Error => CsDiagnostic::error(),
            Severity::Warning => CsDiagnostic::warning(),
        }
        .with_message(&d.message);
        cs = cs.with_code(d.code);
        if let Some(s) = &d.span {
            let mut label = Label::primary(s.file, s.range.clone());
            if let Some(l) = &d.label {
                label = label.with_message(l);
            }
            cs = cs.with_labels(vec![label]);
        }
        let mut notes = d.notes.clone();
        notes.extend(d.hints.iter().map(|h| format!("help: {h}")));
        let _ = term::emit(out, &term::Config::default(), &files, &cs.with_notes(notes));
    }
}
