//! Print: the parsed book, its run results and what the render stage computed (each inline
//! construct's value, each chapter's reference list) → one typst document → the PDF.
//!
//! - `walk`: a chapter's nodes as typst markup (the site's walk, for paper)
//! - `markup`: typst escaping, and the print templates (`templates/print/`)
//! - `origin`: where each formula's and chapter's markup came from, so that typst's problems
//!   are reported in the chapter
//!
//! The document's frame (page, title page, contents, running heads, colophon) is
//! `templates/print/book.typ`; a table kind's body is `templates/print/tables/<kind>.typ`.
//! Typesetting is `revtx-pdf`'s (typst, in process); the PDF is cached by its document's
//! hash, so a warm build that changed nothing in print does not typeset again.

mod markup;
mod origin;
mod walk;

use crate::book::codes::Code;
use crate::book::diag::{Diagnostic, Sources};
use crate::book::figures::FigureKind;
use crate::book::kinds::{Kinds as _, RunData};
use crate::book::parse::{Block, Book, Listing, Math};
use crate::book::render::{listings, RenderedChapter};
use crate::book::runs::Results;
use crate::book::tables::TableKind;
use crate::ENGINE;
use markup::{string, text as walk_text, Templates};
use minijinja::{context, Value};
use origin::Origin;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

/// The file name of a book's PDF in the site: its title as a slug.
pub fn file_name(book: &Book) -> String {
    let slug = crate::book::render::slugify(&book.config.title);
    format!("{}.pdf", if slug.is_empty() { "book" } else { &slug })
}

/// The print edition: the typst document of the whole book.
pub struct Edition {
    pub document: revtx_pdf::Document,
    /// What each marked stretch of the markup came from ([`origin`]).
    origins: Vec<Origin>,
}

/// Shared state of the print walk.
struct Printer<'a> {
    root: &'a Path,
    book: &'a Book,
    results: &'a Results,
    env: minijinja::Environment<'static>,
    templates: Templates,
    /// Every id the document labels (numbered things, headings with ids, answers): a
    /// reference to one of them becomes a link.
    labels: HashSet<String>,
    /// The figures' SVGs, by path in the document.
    files: HashMap<String, Vec<u8>>,
    /// What each marked stretch of the markup came from, by its index.
    origins: Vec<Origin>,
    /// The listings' twins, for their appendix, in the order of the book.
    twins: Vec<TwinOut>,
    diags: Vec<Diagnostic>,
    /// With a changes appendix: the sources (where each claim is) and every claim label
    /// the text carries.
    claim_labels: Option<(&'a Sources, HashSet<String>)>,
}

/// A twin of a listing, printed in the appendix of twins.
struct TwinOut {
    /// The listing's number among those with twins (its label `listing-N`).
    number: usize,
    label: String,
    /// The tab label of the listing itself (`Rust`).
    own: String,
    title: String,
    /// The listing's title, and its chapter's.
    of: String,
    chapter: String,
    lang: String,
    code: String,
}

/// Writes the book as one typst document; problems (a formula typst cannot take, a template
/// that fails) are diagnostics.
pub fn edition(
    book: &Book,
    results: &Results,
    chapters: &[RenderedChapter],
    diags: &mut Vec<Diagnostic>,
) -> Option<Edition> {
    edition_with(book, results, chapters, None, diags)
}

/// [`edition`], with the appendix "Changes in this edition" when `changes` is given: each
/// claim of the text then carries a label (`claim-<file>-<line>-<col>`, found through
/// `sources`) so that the appendix can give its page.
pub fn edition_with(
    book: &Book,
    results: &Results,
    chapters: &[RenderedChapter],
    changes: Option<(&Sources, &crate::book::editions::Changes)>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Edition> {
    let mut labels: HashSet<String> = crate::book::render::numbering::anchors(&book.chapters)
        .into_keys()
        .collect();
    labels.extend(answer_ids(book));
    let mut p = Printer {
        root: &book.root,
        book,
        results,
        env: crate::book::expr::book_environment(book),
        templates: Templates::new(&book.root),
        labels,
        files: HashMap::new(),
        origins: Vec::new(),
        twins: Vec::new(),
        diags: Vec::new(),
        claim_labels: changes.map(|(sources, _)| (sources, HashSet::new())),
    };
    let mut body = String::new();
    for (ch, rendered) in book.chapters.iter().zip(chapters) {
        let mut w = walk::Walk::new(ch, rendered);
        let markup = p.chapter(&mut w);
        body.push_str(&p.mark(Origin::Chapter(ch.file), &markup));
    }
    let twins = p.twins_appendix();
    if let Some(appendix) = &twins {
        body.push_str(appendix);
    }
    if let Some((_, c)) = changes {
        body.push_str(&p.changes_appendix(c, twins.is_some()));
    }
    let colophon = p.colophon();
    let main = p.template(
        "print/book.typ",
        context! {
            title => &book.config.title,
            author => &book.config.author,
            description => &book.config.description,
            language => &book.config.language,
            url => &book.config.url,
            body => Value::from_safe_string(body),
            colophon,
        },
    );
    let failed = !p.diags.is_empty();
    diags.append(&mut p.diags);
    if failed {
        return None;
    }
    Some(Edition {
        document: revtx_pdf::Document {
            main,
            files: p.files,
            epoch: std::env::var("SOURCE_DATE_EPOCH")
                .ok()
                .and_then(|s| s.trim().parse().ok()),
            ident: book.config.title.clone(),
        },
        origins: p.origins,
    })
}

/// The ids of every answer heading that has one.
fn answer_ids(book: &Book) -> Vec<String> {
    use pulldown_cmark::{Event, Tag};
    let mut out = Vec::new();
    for ch in &book.chapters {
        for n in &ch.nodes {
            if let crate::book::parse::Node::Md(Event::Start(Tag::Heading {
                id: Some(id),
                classes,
                ..
            })) = n
            {
                if classes.iter().any(|c| &**c == "answer") {
                    out.push(id.to_string());
                }
            }
        }
    }
    out
}

/// Typesets an edition, or takes the PDF from `cache` when the same document was typeset
/// before. Returns the bytes and whether they were typeset now. A book keeps one PDF in
/// the cache: typesetting a new one removes that book's older ones (several books may
/// share a cache, each under its own name).
///
/// # Errors
/// typst's errors, each at the formula or the character of the chapter it came from
/// (`sources` holds the chapters), or else one `print` diagnostic with typst's words.
pub fn typeset(
    edition: &Edition,
    cache: &Path,
    sources: &Sources,
) -> Result<Typeset, Vec<Diagnostic>> {
    let dir = cache.join("print");
    let book = crate::book::render::slugify(&edition.document.ident);
    let key = cache_key(&edition.document);
    let name = format!("{book}-{key}.pdf");
    let cached = dir.join(&name);
    // Where each claim was put, beside the PDF it was read from (see `CLAIM_PREFIX`).
    let pages_file = dir.join(format!("{book}-{key}.pages.json"));
    if let Some(t) = from_cache(cache, &book, &key) {
        return Ok(t);
    }
    let (bytes, pages) =
        revtx_pdf::typeset_with_pages(&edition.document, CLAIM_PREFIX).map_err(|problems| {
            origin::diagnostics(&problems, &edition.document.main, &edition.origins, sources)
        })?;
    // A cache that cannot be written only costs the next build a typesetting.
    let _ = std::fs::create_dir_all(&dir);
    // Only a print edition with a changes appendix labels its claims.
    let pages_kept = pages.is_empty()
        || crate::book::site::write_atomic(
            &pages_file,
            &serde_json::to_vec(&pages).unwrap_or_default(),
        )
        .is_ok();
    if pages_kept && crate::book::site::write_atomic(&cached, &bytes).is_ok() {
        for old in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let n = old.file_name().to_string_lossy().to_string();
            let this_book = n.strip_prefix(&book).and_then(|r| r.strip_prefix('-'));
            let old_key = this_book.and_then(|r| {
                r.strip_suffix(".pdf")
                    .or_else(|| r.strip_suffix(".pages.json"))
            });
            if old_key.is_some_and(|k| {
                k.len() == KEY_LEN && k.bytes().all(|c| c.is_ascii_hexdigit()) && k != key
            }) {
                let _ = std::fs::remove_file(old.path());
            }
        }
    }
    Ok(Typeset {
        bytes,
        typeset: true,
        pages,
        key,
    })
}

/// The PDF of book `book` (its slug) the cache holds under `key`, with its claims' pages.
fn from_cache(cache: &Path, book: &str, key: &str) -> Option<Typeset> {
    let dir = cache.join("print");
    let bytes = std::fs::read(dir.join(format!("{book}-{key}.pdf"))).ok()?;
    let pages = std::fs::read(dir.join(format!("{book}-{key}.pages.json")))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    Some(Typeset {
        bytes,
        typeset: false,
        pages,
        key: key.to_string(),
    })
}

/// The print edition a build made before from the same inputs, by `inputs` (the key of
/// the rendered book and the changes it lists; see `book::print_stage`): generating the
/// document again only to find its PDF in the cache took a third of a warm build.
pub fn remembered(cache: &Path, book: &Book, inputs: &str) -> Option<Typeset> {
    let slug = crate::book::render::slugify(&book.config.title);
    let memo = std::fs::read_to_string(memo_path(cache, &slug)).ok()?;
    let (seen, key) = memo.trim_end().split_once(' ')?;
    (seen == inputs && key.len() == KEY_LEN && key.bytes().all(|c| c.is_ascii_hexdigit()))
        .then(|| from_cache(cache, &slug, key))?
}

/// Remembers that `inputs` gave the PDF the cache holds under `key` (a failure only costs
/// the next build the document's generation).
pub fn remember(cache: &Path, book: &Book, inputs: &str, key: &str) {
    let slug = crate::book::render::slugify(&book.config.title);
    let _ = crate::book::site::write_atomic(
        &memo_path(cache, &slug),
        format!("{inputs} {key}\n").as_bytes(),
    );
}

/// Beside the render memo, so that the print cache holds only PDFs and their pages.
fn memo_path(cache: &Path, slug: &str) -> std::path::PathBuf {
    cache.join("render").join(format!("{slug}.print"))
}

/// The prefix of the labels the print edition puts at claims (`claim-chapter-1-85-637`),
/// with a changes appendix: the page each is on is read back from the typesetter.
pub const CLAIM_PREFIX: &str = "claim-";

/// A typeset print edition.
pub struct Typeset {
    pub bytes: Vec<u8>,
    /// Typeset now (`false`: from the cache).
    pub typeset: bool,
    /// The page of the file (1-based, every page counted) of each claim label.
    pub pages: std::collections::BTreeMap<String, usize>,
    /// The key it is cached under.
    pub key: String,
}

/// Hex digits of a PDF's cache key.
const KEY_LEN: usize = 32;

/// What the PDF depends on: the markup, every file, the date, the math prelude, and the
/// typesetter itself (this version and the locked dependencies, typst's among them).
fn cache_key(doc: &revtx_pdf::Document) -> String {
    let mut h = blake3::Hasher::new();
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(include_bytes!("../../../Cargo.lock"));
    h.update(revtx_pdf::PRELUDE.as_bytes());
    h.update(doc.main.as_bytes());
    let mut names: Vec<&String> = doc.files.keys().collect();
    names.sort();
    for n in names {
        h.update(n.as_bytes());
        h.update(&doc.files[n]);
    }
    h.update(format!("{:?}|{}", doc.epoch, doc.ident).as_bytes());
    h.finalize().to_hex()[..KEY_LEN].to_string()
}

impl<'a> Printer<'a> {
    /// A print template's output; a template that fails is reported and writes nothing.
    fn template(&mut self, name: &str, ctx: Value) -> String {
        match self.templates.render(name, ctx) {
            Ok(s) => s,
            Err(e) => {
                self.diags.push(Diagnostic::error(
                    Code::Template,
                    None,
                    format!("cannot render templates/{name}: {e:#}"),
                ));
                String::new()
            }
        }
    }

    /// `markup` marked as coming from `origin`, for typst's problems in it.
    fn mark(&mut self, origin: Origin, markup: &str) -> String {
        self.origins.push(origin);
        origin::wrap(self.origins.len() - 1, markup)
    }

    /// A formula as typst math (marked as the formula's, for typst's problems in it); one
    /// mitex cannot convert is reported at the formula.
    fn math(&mut self, m: &Math) -> String {
        match revtx_pdf::latex_to_typst(&m.tex) {
            Ok(s) => self.mark(Origin::Formula(m.span.clone()), &s),
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(
                        Code::Print,
                        Some(m.span.clone()),
                        "this formula cannot be typeset for print",
                    )
                    .label(e)
                    .hint("write it with the LaTeX commands KaTeX and mitex share, or build with --no-pdf"),
                );
                String::new()
            }
        }
    }

    /// A directive's runs with their labels (an unknown run was reported by the site's
    /// render, so here it only leaves the directive out).
    fn runs<'r, K>(&self, b: &'r Block<K>) -> Option<Vec<RunData<'r>>>
    where
        'a: 'r,
    {
        let results: &'r Results = self.results;
        b.runs
            .iter()
            .zip(b.run_labels())
            .map(|(id, label)| RunData::of(results, id, label))
            .collect()
    }

    /// A figure: its light-theme SVG as a file of the document, numbered and captioned.
    fn figure(&mut self, b: &Block<FigureKind>, number: &str, caption: &str) -> String {
        let Some(runs) = self.runs(b) else {
            return String::new();
        };
        let Ok(svg) = b.kind.get().draw(&runs) else {
            return String::new();
        };
        let path = format!("figures/{}.svg", b.id);
        let file = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" color=\"{INK}\">\n{}",
            svg.body.replace("currentColor", INK),
            w = svg.width,
            h = svg.height,
        );
        self.files.insert(path.clone(), file.into_bytes());
        format!(
            "\n#numbered-figure({}, {}, {}, [{caption}]) <{}>\n",
            string(number.trim_start_matches("Figure ")),
            string(&path),
            string(&svg.alt),
            b.id
        )
    }

    /// A table of a kind: its print template, numbered and captioned.
    fn kind_table(&mut self, b: &Block<TableKind>, number: &str, caption: &str) -> String {
        let Some(runs) = self.runs(b) else {
            return String::new();
        };
        let Ok(rows) = b.kind.get().rows(&runs, &self.env) else {
            return String::new();
        };
        let name = format!("print/tables/{}.typ", b.kind.name());
        let table = self.template(&name, rows);
        format!(
            "\n#numbered-table({}, [{caption}])[{}] <{}>\n",
            string(number.trim_start_matches("Table ")),
            table.trim(),
            b.id
        )
    }

    /// An included listing, with its path as its title; its twins in other languages go
    /// to the appendix of twins, and a line here says where.
    fn listing(&mut self, listing: &Listing, chapter: &str) -> String {
        let Ok((code, lang)) = listings::read_listing(
            self.root,
            &listing.source.path,
            listing.source.anchor.as_deref(),
        ) else {
            return String::new();
        };
        let own = listing
            .label
            .clone()
            .unwrap_or_else(|| listings::language_name(&lang));
        let mut out = format!(
            "\n#listing({}, {}, {})",
            string(&listing.source.title()),
            string(&lang),
            string(code.trim_end())
        );
        if listing.twins.is_empty() {
            out.push('\n');
            return out;
        }
        let number = self.twins.len() + 1;
        let _ = writeln!(out, " <listing-{number}>");
        let mut labels = Vec::new();
        for t in &listing.twins {
            let Ok((code, lang)) =
                listings::read_listing(self.root, &t.source.path, t.source.anchor.as_deref())
            else {
                return String::new();
            };
            labels.push(t.label.clone());
            self.twins.push(TwinOut {
                number,
                label: t.label.clone(),
                own: own.clone(),
                title: t.source.title(),
                of: listing.source.title(),
                chapter: chapter.to_string(),
                lang,
                code,
            });
        }
        let _ = writeln!(
            out,
            "#twin-pointer(<twins-{number}>, {})",
            string(&labels.join(" and "))
        );
        out
    }

    /// The appendix of the listings' twins: each under the listing it translates, with a
    /// link back; `None` when no listing has one. Its letter follows the book's appendices.
    fn twins_appendix(&self) -> Option<String> {
        let first = self.twins.first()?;
        let letter = (b'A'
            + u8::try_from(
                self.book
                    .chapters
                    .iter()
                    .filter(|c| matches!(c.place, crate::book::parse::Place::Appendix(_)))
                    .count(),
            )
            .unwrap_or(0)) as char;
        let same = self.twins.iter().all(|t| t.label == first.label);
        let title = if same {
            format!("The listings in {}", first.label)
        } else {
            "The listings in other languages".to_string()
        };
        let mut out = format!(
            "\n#chapter({}, {})[{}] <appendix-twins>\n\nThe web edition shows each listing of the book in {} with tabs. This edition prints the {} in place and the {} here, in the order of the chapters. Each is the same computation, and the web edition's tests check that they agree.\n",
            string(&format!("Appendix {letter}")),
            string(&title),
            walk_text(&title),
            walk_text(&self.languages()),
            walk_text(&first.own),
            walk_text(&if same { first.label.clone() } else { "others".into() }),
        );
        let mut last = 0;
        for t in &self.twins {
            let label = if t.number == last {
                String::new()
            } else {
                format!(" <twins-{}>", t.number)
            };
            last = t.number;
            let _ = write!(
                out,
                "\n#twin-heading(<listing-{}>, {}, {}, {}){label}\n#listing({}, {}, {})\n",
                t.number,
                string(&t.label),
                string(&t.of),
                string(&t.chapter),
                string(&t.title),
                string(&t.lang),
                string(t.code.trim_end())
            );
        }
        Some(out)
    }

    /// The appendix "Changes in this edition": what the site's changes page says, with the
    /// page of each claim in this edition. Its letter follows the book's appendices and the
    /// appendix of twins.
    fn changes_appendix(&self, c: &crate::book::editions::Changes, after_twins: bool) -> String {
        use crate::book::editions::{
            text::{clean, clean_with},
            Cause,
        };
        let appendices = self
            .book
            .chapters
            .iter()
            .filter(|c| matches!(c.place, crate::book::parse::Place::Appendix(_)))
            .count()
            + usize::from(after_twins);
        let letter = char::from(b'A' + u8::try_from(appendices).unwrap_or(25).min(25));
        let title = "Changes in this edition";
        let mut out = format!(
            "\n#chapter({}, {})[{}] <appendix-changes>\n\n",
            string(&format!("Appendix {letter}")),
            string(title),
            walk_text(title)
        );
        let summary = c.summary();
        out.push_str(&walk_text(&summary));
        out.push_str("\n\n");
        let labels = self.claim_labels.as_ref().map(|(_, l)| l);
        for ch in &c.changed {
            let label = ch.new.label();
            let page = if labels.is_some_and(|l| l.contains(&label)) {
                format!(", page #context counter(page).at(locate(<{label}>)).first()")
            } else {
                String::new()
            };
            let section = ch
                .new
                .section
                .as_ref()
                .map(|(s, _)| format!(", {}", walk_text(s)))
                .unwrap_or_default();
            let _ = write!(
                out,
                "#block(breakable: false)[*{}*{section}{page}\\\n_{}_\\\n#raw({}): was *{}*, now *{}*",
                walk_text(&ch.new.chapter),
                walk_text(&clean_with(&ch.new.sentence, &ch.new.expr, &ch.new.value)),
                string(&ch.new.expr),
                walk_text(&ch.old.value),
                walk_text(&ch.new.value),
            );
            for cause in &ch.causes {
                let _ = write!(out, "\n- {}", walk_text(&cause.describe()));
                if let Cause::Sentence { old, .. } = cause {
                    let _ = write!(out, "; it read: {}", walk_text(&clean(old)));
                }
            }
            out.push_str("]\n\n");
        }
        for (what, list) in [
            ("New in this edition", &c.appeared),
            ("No longer in the book", &c.disappeared),
        ] {
            let _ = write!(out, "*{}*: ", walk_text(what));
            if list.is_empty() {
                out.push_str("none.\n\n");
                continue;
            }
            out.push('\n');
            for claim in list {
                let _ = write!(
                    out,
                    "\n- {}: {} ({} = {})",
                    walk_text(&claim.chapter),
                    walk_text(&clean(&claim.sentence)),
                    walk_text(&claim.expr),
                    walk_text(&claim.value)
                );
            }
            out.push_str("\n\n");
        }
        out
    }

    /// The languages the listings come in, in order of first use: `Rust and PyTorch`.
    fn languages(&self) -> String {
        let mut langs: Vec<&str> = Vec::new();
        for t in &self.twins {
            for l in [t.own.as_str(), t.label.as_str()] {
                if !langs.contains(&l) {
                    langs.push(l);
                }
            }
        }
        match langs.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => langs.join(""),
        }
    }

    /// The widget: a note that it is in the web edition, with the page's address.
    fn widget(&mut self, id: &str, slug: &str) -> String {
        let page = format!("{slug}#{id}");
        let url = match &self.book.config.url {
            Some(u) => format!("{}/{page}", u.trim_end_matches('/')),
            None => page,
        };
        format!("\n#widget-note({})\n", string(&url))
    }

    /// Where the runs behind this copy ran, and what computed them.
    fn colophon(&self) -> Value {
        let mut machines = BTreeSet::new();
        for produced in self.results.by_run.values().flatten() {
            let e = &produced.result.env;
            machines.insert(format!(
                "{} ({}), libtorch {}, numeric profile {}, {} per run",
                e.cpu,
                e.isa,
                e.libtorch,
                e.profile,
                if e.threads == 1 {
                    "1 thread".to_string()
                } else {
                    format!("{} threads", e.threads)
                }
            ));
        }
        context! {
            version => env!("CARGO_PKG_VERSION"),
            fingerprint => ENGINE.code,
            commit => commit(self.root),
            machines => machines.into_iter().collect::<Vec<_>>(),
            runs => self.results.by_run.values().map(Vec::len).sum::<usize>(),
        }
    }
}

/// The light theme's ink: what `currentColor` is on paper.
const INK: &str = "#1b1b1b";

/// The commit of the project's work tree, marked if it has changes; `None` outside git.
fn commit(root: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{head}, with uncommitted changes")
    } else {
        head
    })
}
