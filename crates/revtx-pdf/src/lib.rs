//! Typeset: a typst document held in memory (its markup and the files it reads) → PDF bytes.
//! In process, with typst's bundled fonts only, no clock and no file system, so the same
//! document gives the same bytes on every machine.

mod math;

pub use math::{latex_to_typst, PRELUDE};

use std::collections::HashMap;
use std::sync::LazyLock;
use typst::diag::{FileError, FileResult, Severity, SourceDiagnostic};
use typst::foundations::{Bytes, Datetime};
use typst::syntax::{FileId, RootedPath, Source, VirtualPath, VirtualRoot};
use typst::text::{Font, FontBook};
use typst::utils::LazyHash;
use typst::{Library, LibraryExt, World, WorldExt};
use typst_layout::PagedDocument;
use typst_pdf::{PdfOptions, PdfStandard, PdfStandards, Timestamp};

/// A document to typeset.
pub struct Document {
    /// The typst markup of the whole document.
    pub main: String,
    /// The files it reads (`image("fig/loss.svg")`), by path from the document's root.
    pub files: HashMap<String, Vec<u8>>,
    /// The creation date written into the PDF, as seconds since 1970 (from
    /// `SOURCE_DATE_EPOCH`); `None` writes no date.
    pub epoch: Option<i64>,
    /// A stable name for the document, hashed into the PDF's identifier.
    pub ident: String,
}

/// A problem typst reported, with where in the markup it lies.
#[derive(Debug, Clone)]
pub struct Problem {
    pub message: String,
    pub hints: Vec<String>,
    /// The 1-based line of the document's markup and that line's text, when the problem
    /// has a place (0 for a line of the math prelude).
    pub line: Option<(usize, String)>,
    /// Where in the document's markup (`Document::main`, in bytes) the problem lies: its own
    /// place, or else the innermost call in the document that led to it (a prelude helper
    /// that fails is reported at the formula that called it).
    pub at: Option<std::ops::Range<usize>>,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some((n, text)) = &self.line {
            write!(f, " (typst line {n}: `{}`)", text.trim())?;
        }
        for h in &self.hints {
            write!(f, "; hint: {h}")?;
        }
        Ok(())
    }
}

/// Typesets `doc` into a tagged PDF/UA-1 document.
///
/// # Errors
/// typst's errors (and, with them, its warnings), each with its line of the markup.
pub fn typeset(doc: &Document) -> Result<Vec<u8>, Vec<Problem>> {
    typeset_with_pages(doc, "\u{0}").map(|(bytes, _)| bytes)
}

/// The page of the file (1-based) each label of a document is on, by label.
pub type Pages = std::collections::BTreeMap<String, usize>;

/// [`typeset`], and the page (1-based, counting every page of the file) of each labelled
/// element whose label starts with `prefix`: where the document put what it labelled.
///
/// # Errors
/// As [`typeset`].
pub fn typeset_with_pages(doc: &Document, prefix: &str) -> Result<(Vec<u8>, Pages), Vec<Problem>> {
    use typst::introspection::Introspector as _;
    let world = Memory::new(doc);
    let warned = typst::compile::<PagedDocument>(&world);
    let document = warned
        .output
        .map_err(|errs| problems(&world, errs.iter().chain(&warned.warnings)))?;
    let timestamp = doc.epoch.and_then(date).map(Timestamp::new_utc);
    // PDF/UA-1: tagged, with a language, a title, and alt text on every image and formula;
    // typst refuses a document that falls short, and that is an error here, not a fallback.
    let options = PdfOptions {
        ident: typst::foundations::Smart::Custom(doc.ident.clone()),
        creator: typst::foundations::Smart::Custom(Some("revtx-book".into())),
        timestamp,
        page_ranges: None,
        standards: PdfStandards::new(&[PdfStandard::Ua_1]).unwrap_or_default(),
        tagged: true,
        pretty: false,
    };
    let mut pages = std::collections::BTreeMap::new();
    let introspector = document.introspector();
    for element in introspector.query_labelled() {
        let (Some(label), Some(at)) = (element.label(), element.location()) else {
            continue;
        };
        let name = label.resolve();
        if name.starts_with(prefix) {
            if let Some(page) = introspector.page(at) {
                pages.insert(name.to_string(), page.get());
            }
        }
    }
    let bytes =
        typst_pdf::pdf(&document, &options).map_err(|errs| problems(&world, errs.iter()))?;
    Ok((bytes, pages))
}

/// typst's diagnostics as problems (errors first, as given).
fn problems<'a>(world: &Memory, diags: impl Iterator<Item = &'a SourceDiagnostic>) -> Vec<Problem> {
    diags
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            let line = world.range(d.span).map(|r| {
                let text = world.source.text();
                let n = text[..r.start].matches('\n').count() + 1;
                let line = text.lines().nth(n - 1).unwrap_or_default().to_string();
                // Lines of the document, not of the prelude before it.
                (n.saturating_sub(PRELUDE.lines().count()), line)
            });
            // The diagnostic's own span, then its trace (innermost call first).
            let prelude = PRELUDE.len();
            let at = std::iter::once(d.span)
                .chain(d.trace.iter().map(|t| t.span.into()))
                .filter_map(|s| world.range(s))
                .find(|r| r.start >= prelude)
                .map(|r| r.start - prelude..r.end - prelude);
            Problem {
                message: d.message.to_string(),
                hints: d.hints.iter().map(|h| h.v.to_string()).collect(),
                line,
                at,
            }
        })
        .collect()
}

/// The characters of `s` that no bundled font has a glyph for (whitespace and control
/// characters aside), each once, in order: what typst cannot display in the PDF.
#[must_use]
pub fn uncovered(s: &str) -> Vec<char> {
    let mut out: Vec<char> = Vec::new();
    for c in s.chars() {
        if c.is_whitespace() || c.is_control() || out.contains(&c) {
            continue;
        }
        if !FONTS.0.iter().any(|f| f.info().coverage.contains(c as u32)) {
            out.push(c);
        }
    }
    out
}

/// A UTC date from seconds since 1970.
fn date(epoch: i64) -> Option<Datetime> {
    let days = epoch.div_euclid(86_400);
    let secs = epoch.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u8::try_from(doy - (153 * mp + 2) / 5 + 1).ok()?;
    let month = u8::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).ok()?;
    let year = i32::try_from(yoe + era * 400 + i64::from(month <= 2)).ok()?;
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    Datetime::from_ymd_hms(
        year,
        month,
        day,
        u8::try_from(h).ok()?,
        u8::try_from(m).ok()?,
        u8::try_from(s).ok()?,
    )
}

/// The bundled fonts and their book, loaded once per process.
static FONTS: LazyLock<(Vec<Font>, LazyHash<FontBook>)> = LazyLock::new(|| {
    let fonts: Vec<Font> = typst_assets::fonts()
        .flat_map(|data| Font::iter(Bytes::new(data)))
        .collect();
    let book = LazyHash::new(FontBook::from_fonts(&fonts));
    (fonts, book)
});

static LIBRARY: LazyLock<LazyHash<Library>> = LazyLock::new(|| LazyHash::new(Library::default()));

/// The world typst sees: one source, the document's files, the bundled fonts.
struct Memory {
    main: FileId,
    source: Source,
    files: HashMap<FileId, Bytes>,
}

impl Memory {
    fn new(doc: &Document) -> Self {
        let id = |path: &str| {
            RootedPath::new(
                VirtualRoot::Project,
                VirtualPath::new(format!("/{path}")).expect("a relative path"),
            )
            .intern()
        };
        let main = id("main.typ");
        Memory {
            main,
            source: Source::new(main, format!("{PRELUDE}{}", doc.main)),
            files: doc
                .files
                .iter()
                .map(|(p, b)| (id(p), Bytes::new(b.clone())))
                .collect(),
        }
    }
}

impl World for Memory {
    fn library(&self) -> &LazyHash<Library> {
        &LIBRARY
    }

    fn book(&self) -> &LazyHash<FontBook> {
        &FONTS.1
    }

    fn main(&self) -> FileId {
        self.main
    }

    fn source(&self, id: FileId) -> FileResult<Source> {
        if id == self.main {
            Ok(self.source.clone())
        } else {
            Err(FileError::NotFound(
                id.get().vpath().get_without_slash().into(),
            ))
        }
    }

    fn file(&self, id: FileId) -> FileResult<Bytes> {
        self.files
            .get(&id)
            .cloned()
            .ok_or_else(|| FileError::NotFound(id.get().vpath().get_without_slash().into()))
    }

    fn font(&self, index: usize) -> Option<Font> {
        FONTS.0.get(index).cloned()
    }

    fn today(&self, _offset: Option<typst::foundations::Duration>) -> Option<Datetime> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::date;

    #[test]
    fn dates_from_seconds_since_1970() {
        let d = date(0).unwrap();
        assert_eq!(
            (d.year(), d.month(), d.day()),
            (Some(1970), Some(1), Some(1))
        );
        let d = date(1_700_000_000).unwrap();
        assert_eq!(
            (
                d.year(),
                d.month(),
                d.day(),
                d.hour(),
                d.minute(),
                d.second()
            ),
            (Some(2023), Some(11), Some(14), Some(22), Some(13), Some(20))
        );
        let d = date(951_782_400).unwrap(); // a leap day
        assert_eq!(
            (d.year(), d.month(), d.day()),
            (Some(2000), Some(2), Some(29))
        );
    }
}
