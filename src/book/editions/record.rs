//! An edition as the changes page compares it: every claim with its place (chapter,
//! section, sentence) and the runs it reads, each run's resolved configuration, the engine
//! fingerprint and the numeric profile. Made from a build, from the book at a git revision,
//! or read from a file `changes --save` wrote.

use super::text::Index;
use crate::book::diag::{Diagnostic, Sources};
use crate::book::parse::{Book, Place};
use crate::book::runs::RunPlan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The format of a saved record.
pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub format: u32,
    /// What the edition is called (book.toml's `[[editions]]` name, or "this edition").
    pub name: String,
    /// The engine's code fingerprint its runs were keyed on.
    pub engine: String,
    /// Its numeric profile.
    pub profile: String,
    /// Every run it declares, by id.
    pub runs: BTreeMap<String, RunInfo>,
    pub claims: Vec<Claim>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    /// The resolved configuration, every value written out.
    pub config: serde_json::Value,
    pub seeds: Vec<u64>,
}

/// One claim of an edition.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Claim {
    pub file: String,
    pub line: usize,
    pub col: usize,
    /// `checked`, `inserted` or `asserted`.
    pub kind: String,
    pub expr: String,
    /// What the text shows: a checked figure as written, an insert's value, an assertion's
    /// truth (`true` or `false`).
    pub value: String,
    /// The author's quote as written (a checked figure; an assertion's statement).
    pub quoted: Option<String>,
    /// "Chapter 2, Positions", "Appendix A, …".
    pub chapter: String,
    /// The page of the site it is on.
    pub page: String,
    /// The section it is in, and that section's id (for a link), if any.
    pub section: Option<(String, Option<String>)>,
    /// The sentence around it, as written.
    pub sentence: String,
    /// The runs its expression reads.
    pub runs: Vec<String>,
}

impl Claim {
    /// The label the print edition puts at the claim (its page is read back from there).
    pub fn label(&self) -> String {
        claim_label(Path::new(&self.file), self.line, self.col)
    }
}

/// The print edition's label of the claim at `line`, `col` of `file`:
/// `claim-chapter-1-85-637`. The print edition writes it, the changes page looks it up.
pub fn claim_label(file: &Path, line: usize, col: usize) -> String {
    let stem: String = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{}{stem}-{line}-{col}", crate::book::print::CLAIM_PREFIX)
}

/// A claim as `claims.json` has it (any version): what the record needs of it.
#[derive(Deserialize)]
struct Written {
    file: String,
    line: usize,
    col: usize,
    kind: String,
    #[serde(default)]
    expr: String,
    #[serde(default)]
    quoted: Option<String>,
    #[serde(default)]
    recomputed: Option<serde_json::Value>,
    #[serde(default)]
    formatted: Option<String>,
}

/// The record of a book: `claims` is its `claims.json` (as written), `plans` its runs.
pub fn of_book(
    name: &str,
    book: &Book,
    sources: &Sources,
    claims_json: &str,
    plans: &[RunPlan],
    (engine, profile): (&str, &str),
) -> Result<Record, String> {
    let written: Vec<Written> =
        serde_json::from_str(claims_json).map_err(|e| format!("its claims do not parse: {e}"))?;
    let runs: BTreeMap<String, RunInfo> = plans
        .iter()
        .map(|p| {
            (
                p.id.clone(),
                RunInfo {
                    config: serde_json::to_value(&p.config).unwrap_or_default(),
                    seeds: p.seeds.clone(),
                },
            )
        })
        .collect();
    // Each chapter by the path its claims give, its lines indexed once.
    let chapters: Vec<(String, &crate::book::parse::Chapter, Index)> = book
        .chapters
        .iter()
        .map(|c| {
            (
                sources.display_path(c.file),
                c,
                Index::new(sources.text(c.file)),
            )
        })
        .collect();
    let nowhere = Index::new("");
    let mut claims = Vec::new();
    for w in written {
        let value = match w.kind.as_str() {
            "checked" | "inserted" => w.formatted.clone().or_else(|| w.quoted.clone()),
            "asserted" => w.recomputed.as_ref().map(ToString::to_string),
            _ => None, // a literal is the author's, not computed
        };
        let Some(value) = value else { continue };
        let ch = chapters.iter().find(|(path, _, _)| *path == w.file);
        let index = ch.map_or(&nowhere, |(_, _, i)| i);
        let (chapter, page) = ch.map_or_else(
            || (w.file.clone(), String::new()),
            |(_, c, _)| (chapter_name(c.place, &c.title), c.slug.clone()),
        );
        claims.push(Claim {
            runs: reads(&w.expr, &runs),
            section: index.section_at(w.line),
            sentence: index.sentence_at(w.line, w.col),
            file: w.file,
            line: w.line,
            col: w.col,
            kind: w.kind,
            expr: w.expr,
            value,
            quoted: w.quoted,
            chapter,
            page,
        });
    }
    Ok(Record {
        format: FORMAT,
        name: name.to_string(),
        engine: engine.to_string(),
        profile: profile.to_string(),
        runs,
        claims,
    })
}

/// "Chapter 2, Positions and length"; "Appendix A, …"; front matter by its title.
fn chapter_name(place: Place, title: &str) -> String {
    match place {
        Place::Chapter(n) => format!("Chapter {n}, {title}"),
        Place::Appendix(k) => {
            let letter = char::from(b'A' + u8::try_from(k).unwrap_or(25).min(25));
            format!("Appendix {letter}, {title}")
        }
        Place::Front(_) => title.to_string(),
    }
}

/// The runs an expression names: identifiers that are not a member (`.name`) and are runs.
fn reads(expr: &str, runs: &BTreeMap<String, RunInfo>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &expr[start..i];
            let member = start > 0 && bytes[start - 1] == b'.';
            let quoted = start > 0 && matches!(bytes[start - 1], b'\'' | b'"');
            if !member && !quoted && runs.contains_key(word) && !out.iter().any(|r| r == word) {
                out.push(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The record of the book at git revision `rev` of the repository at `root`: its `book/`
/// taken out of git into a temporary folder, parsed, its runs resolved, its `claims.json`
/// and `numerics.json` read. Nothing outside the project is read.
pub fn at_revision(root: &Path, rev: &str, name: &str) -> Result<Record, String> {
    if rev.starts_with('-') || rev.is_empty() {
        return Err(format!("`{rev}` is not a git revision"));
    }
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tar = tmp.path().join("book.tar");
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["archive", "--format=tar", "-o"])
        .arg(&tar)
        .arg(rev)
        .arg("book")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git cannot give book/ at `{rev}`: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let dir = tmp.path().join("edition");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let untar = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !untar.status.success() {
        return Err(format!(
            "cannot unpack book/ at `{rev}`: {}",
            String::from_utf8_lossy(&untar.stderr).trim()
        ));
    }
    of_folder(&dir, name).map_err(|e| format!("the book at `{rev}`: {e}"))
}

/// The record of the book in `root/book/` as its files say (its `claims.json` is the one
/// its last check wrote).
pub fn of_folder(root: &Path, name: &str) -> Result<Record, String> {
    let claims = std::fs::read_to_string(root.join("book/claims.json"))
        .map_err(|e| format!("no book/claims.json ({e})"))?;
    let numerics: serde_json::Value = std::fs::read_to_string(root.join("book/numerics.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mut sources = Sources {
        root: root.to_path_buf(),
        ..Default::default()
    };
    let mut diags: Vec<Diagnostic> = Vec::new();
    let book = crate::book::parse::load(root, &mut sources, &mut diags)
        .ok_or_else(|| "its book.toml does not parse".to_string())?;
    let plans = crate::book::runs::plan(&book, &sources, &mut diags);
    of_book(
        name,
        &book,
        &sources,
        &claims,
        &plans,
        (
            numerics["engine"].as_str().unwrap_or("unknown"),
            numerics["profile"].as_str().unwrap_or("unknown"),
        ),
    )
}

/// A record's bytes as `changes --save` writes them: JSON, gzipped when the file's name
/// ends in `.gz` (a record repeats each sentence for each claim in it).
pub fn to_bytes(r: &Record, path: &Path) -> Vec<u8> {
    let text = serde_json::to_string_pretty(r).unwrap_or_default() + "\n";
    if path.extension().is_some_and(|e| e == "gz") {
        use std::io::Write as _;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let _ = z.write_all(text.as_bytes());
        z.finish().unwrap_or_default()
    } else {
        text.into_bytes()
    }
}

/// A record `changes --save` wrote.
pub fn from_file(path: &Path) -> Result<Record, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = if path.extension().is_some_and(|e| e == "gz") {
        use std::io::Read as _;
        let mut t = String::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_string(&mut t)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        t
    } else {
        String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))?
    };
    let r: Record = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if r.format != FORMAT {
        return Err(format!(
            "{}: format {} (this version reads {FORMAT})",
            path.display(),
            r.format
        ));
    }
    Ok(r)
}
