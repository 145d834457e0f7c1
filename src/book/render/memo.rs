//! The render memo: a chapter that rendered without a diagnostic is kept in the cache
//! (`<cache>/render/<slug>.cbor`) under the key of everything its rendering read, and a later
//! build whose key for it is the same takes it from there instead of rendering it again.
//!
//! The key holds the tool (its version, engine fingerprint and the binary's own identity),
//! the templates, every source file of the book that is not another chapter (book.toml, the
//! bibliography, its citation style), the chapters' titles, places and numbered anchors, the named expressions,
//! every run's configuration, seeds and cache entries (with their checksums), the chapter's
//! own text, and where the book's numbering of references stands when the chapter begins. The files the chapter reads
//! besides (included listings, its notebook's) are recorded with their digests and checked
//! (`reads`). A chapter with a diagnostic is never kept, so its warnings are shown on every
//! build.

use super::reads::Read;
use super::{Counts, RenderedChapter, SearchEntry, TocEntry};
use crate::book::cite::Work;
use crate::book::claims::ClaimRecord;
use crate::book::diag::Sources;
use crate::book::parse::{Book, Chapter};
use crate::book::runs::Results;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Bumped whenever what an entry holds changes shape.
const FORMAT: &str = "revtx-book render memo 1";

/// Where entries live and the part of every chapter's key the whole book decides.
pub struct Memo {
    dir: PathBuf,
    book: blake3::Hash,
}

/// What a chapter's rendering produced, as kept.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    reads: Vec<Read>,
    chapter: Kept,
    claims: Vec<ClaimRecord>,
    previews: Vec<(String, String)>,
    xrefs: usize,
}

/// [`RenderedChapter`], its notebook as text.
#[derive(Serialize, Deserialize)]
struct Kept {
    title: String,
    slug: String,
    html: String,
    toc: Vec<TocEntry>,
    search: Vec<SearchEntry>,
    counts: Counts,
    inline_text: Vec<String>,
    references: Vec<Work>,
    notebook: Option<(String, String)>,
    colab: Option<String>,
}

impl Memo {
    /// The memo in `dir`, its book part of the key computed from what every chapter reads;
    /// none where the running binary cannot be told from another, or a result has no
    /// checksum to tell it by.
    pub fn new(dir: &Path, book: &Book, results: &Results, sources: &Sources) -> Option<Self> {
        let binary = binary_identity()?;
        let mut h = blake3::Hasher::new();
        let mut put = |part: &str, bytes: &[u8]| {
            h.update(part.as_bytes());
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        put("format", FORMAT.as_bytes());
        put("version", env!("CARGO_PKG_VERSION").as_bytes());
        put("engine", env!("REVTX_CODE_FINGERPRINT").as_bytes());
        put("binary", binary.as_bytes());
        put("root", book.root.to_string_lossy().as_bytes());
        for (rel, bytes) in files_under(&book.root.join("templates")) {
            put("template", rel.as_bytes());
            put("bytes", &bytes);
        }
        let chapter_files: Vec<usize> = book.chapters.iter().map(|c| c.file).collect();
        for (id, (path, text)) in sources.files.iter().enumerate() {
            if !chapter_files.contains(&id) {
                put("source", path.to_string_lossy().as_bytes());
                put("text", text.as_bytes());
            }
        }
        // A citation style of the book's own is read while parsing, not kept as a source.
        if let Some(csl) = &book.config.csl {
            put("csl", csl.get_ref().as_bytes());
            if let Ok((path, _)) =
                crate::book::parse::book_file(&book.root.join("book"), csl.get_ref())
            {
                put("csl file", &std::fs::read(path).unwrap_or_default());
            }
        }
        for c in &book.chapters {
            put(
                "chapter",
                format!("{}\0{}\0{:?}\0{}", c.file, c.slug, c.place, c.title).as_bytes(),
            );
        }
        let mut anchors: Vec<_> = super::numbering::anchors(&book.chapters)
            .into_iter()
            .collect();
        anchors.sort();
        put("anchors", format!("{anchors:?}").as_bytes());
        let named = crate::book::expr::named_expressions(book);
        put("named", format!("{named:?}").as_bytes());
        for p in &results.plans {
            let config = serde_json::to_string(&p.config).unwrap_or_default();
            let contrast = p.contrast.as_ref().map(|c| (&c.with, &c.varies));
            put(
                "plan",
                format!(
                    "{}\0{config}\0{:?}\0{:?}\0{contrast:?}",
                    p.id, p.seeds, p.weights
                )
                .as_bytes(),
            );
        }
        for (id, produced) in &results.by_run {
            put("results", id.as_bytes());
            for p in produced {
                // The entry's checksum, which its loading verified: what the result holds,
                // not only where it is (an entry can be written again under its key).
                let sum = p.checksum()?;
                put("entry", p.dir.to_string_lossy().as_bytes());
                put("checksum", sum.as_bytes());
            }
        }
        Some(Memo {
            dir: dir.to_path_buf(),
            book: h.finalize(),
        })
    }

    /// The key of chapter `ch` when the book's references so far number `xrefs`.
    pub fn key(&self, ch: &Chapter, sources: &Sources, xrefs: usize) -> String {
        let mut h = blake3::Hasher::new();
        h.update(self.book.as_bytes());
        h.update(&(ch.file as u64).to_le_bytes());
        h.update(&(xrefs as u64).to_le_bytes());
        h.update(sources.text(ch.file).as_bytes());
        h.finalize().to_hex().to_string()
    }

    fn path(&self, slug: &str) -> PathBuf {
        self.dir.join(format!("{slug}.cbor"))
    }

    /// The kept rendering of `slug` under `key`, if there is one and nothing it read changed.
    pub fn get(&self, slug: &str, key: &str) -> Option<(RenderedChapter, Produced)> {
        let bytes = std::fs::read(self.path(slug)).ok()?;
        let entry: Entry = ciborium::from_reader(bytes.as_slice()).ok()?;
        if entry.key != key || !super::reads::unchanged(&entry.reads) {
            return None;
        }
        let Entry {
            chapter: k,
            claims,
            previews,
            xrefs,
            ..
        } = entry;
        let chapter = RenderedChapter {
            title: k.title,
            slug: k.slug,
            html: k.html,
            toc: k.toc,
            search: k.search,
            counts: k.counts,
            inline_text: k.inline_text,
            references: k.references,
            notebook: k.notebook.map(|(name, text)| (name, text.into_bytes())),
            colab: k.colab,
        };
        let produced = Produced {
            claims,
            previews,
            xrefs,
        };
        Some((chapter, produced))
    }

    /// Keeps a chapter's rendering under `key` (written beside and renamed, so that a build
    /// killed meanwhile leaves no half an entry). A failure only costs time next build.
    pub fn put(&self, key: String, reads: Vec<Read>, ch: &RenderedChapter, out: &Produced) {
        let notebook = match &ch.notebook {
            Some((name, bytes)) => match String::from_utf8(bytes.clone()) {
                Ok(text) => Some((name.clone(), text)),
                Err(_) => return,
            },
            None => None,
        };
        let entry = Entry {
            key,
            reads,
            chapter: Kept {
                title: ch.title.clone(),
                slug: ch.slug.clone(),
                html: ch.html.clone(),
                toc: ch.toc.clone(),
                search: ch.search.clone(),
                counts: ch.counts,
                inline_text: ch.inline_text.clone(),
                references: ch.references.clone(),
                notebook,
                colab: ch.colab.clone(),
            },
            claims: out.claims.clone(),
            previews: out.previews.clone(),
            xrefs: out.xrefs,
        };
        let mut bytes = Vec::new();
        if ciborium::into_writer(&entry, &mut bytes).is_err() {
            return;
        }
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let Ok(mut tmp) = tempfile::NamedTempFile::new_in(&self.dir) else {
            return;
        };
        if std::io::Write::write_all(&mut tmp, &bytes).is_ok() {
            let _ = tmp.persist(self.path(&ch.slug));
        }
    }
}

/// What a chapter's rendering added to the book-wide state, besides the chapter.
pub struct Produced {
    /// Its claim records (their quoted spans are not kept: a build that blesses renders).
    pub claims: Vec<ClaimRecord>,
    /// What references to its figures, tables, equations and sections preview.
    pub previews: Vec<(String, String)>,
    /// How many references it numbered.
    pub xrefs: usize,
}

/// The running binary, as its size, modification time and inode: a rebuilt tool is another.
fn binary_identity() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::env::current_exe().and_then(std::fs::metadata).ok()?;
    Some(format!(
        "{} {} {} {}",
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino()
    ))
}

/// Every file under `dir` (relative path, bytes), sorted by path; none if it is missing.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let rel = p
                    .strip_prefix(base)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .into_owned();
                out.push((rel, bytes));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
