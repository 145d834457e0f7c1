//! Write: rendered chapters, the index, the Runs appendix and assets → the site's files
//! (`sitefiles::Files`), assembled in memory and then written, only what changed.
//!
//! A failed or interrupted build therefore leaves the previous site intact. The page
//! templates (`page.html`, `index.html`, `runs.html`, `overlay.html`) are rendered here.
//! A book with a widget also gets its models, exported under `models/` (see `export.rs`),
//! and the pages that hold a widget load its script and styles.

use super::export;
use super::parse::directive::WidgetModel;
use super::parse::{Book, Chapter, Directive};
use super::render::{self, RenderedChapter, SearchEntry};
use super::runs::Results;
use super::sitefiles::Files;
use crate::ENGINE;
use anyhow::{Context, Result};
use minijinja::{context, Environment};
use std::fmt::Write as _;
use std::path::Path;

/// The pages that hold a widget (and so load its script and styles).
fn widget_pages(book: &Book) -> Vec<&str> {
    (book.chapters.iter())
        .filter(|ch| {
            ch.directives()
                .any(|d| matches!(d.node, Directive::Widget(_)))
        })
        .map(|ch| ch.slug.as_str())
        .collect()
}

/// What a page's header and scripts depend on beyond its kind: its chapter's notebook (file
/// name) and Colab link, and whether it has tabbed listings (which load `static/tabs.js`).
fn page_extras<'c>(
    ctx: &'c SiteContext,
    slug: &str,
    content: &str,
) -> (Option<&'c str>, Option<&'c str>, bool) {
    let rendered = ctx.chapters.iter().find(|c| c.slug == slug);
    let notebook = rendered
        .and_then(|c| c.notebook.as_ref())
        .map(|(name, _)| name.as_str());
    let colab = rendered.and_then(|c| c.colab.as_deref());
    (notebook, colab, content.contains("data-tabs"))
}

/// Where the widget's models go, relative to the site root (the pages are at the root).
pub const MODELS_DIR: &str = "models/";

pub struct SiteContext<'a> {
    pub book: &'a Book,
    pub chapters: &'a [RenderedChapter],
    pub results: &'a Results,
    pub claims_json: &'a str,
    pub live_reload: bool,
    /// The print edition: its file name and bytes, if it was typeset.
    pub pdf: Option<&'a (String, Vec<u8>)>,
    /// What changed since the book's last listed edition, when it lists one.
    pub changes: Option<&'a super::editions::Changes>,
    /// The print edition's page of each claim label (with `changes` and a PDF).
    pub pdf_pages: &'a std::collections::BTreeMap<String, usize>,
    /// Where files derived from a run's result (its loss as CSV) are kept, by the result's
    /// entry and checksum, to be linked into the site rather than made again.
    pub derived: Option<&'a Path>,
}

/// Writes `bytes` to `path` through a temp file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    // Keep the file's permissions (a temp file starts as 0600).
    let perms = std::fs::metadata(path).map_or_else(
        |_| std::os::unix::fs::PermissionsExt::from_mode(0o644),
        |m| m.permissions(),
    );
    tmp.as_file().set_permissions(perms)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes only when the content differs (keeps mtimes and diffs quiet).
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    write_atomic(path, bytes)
}

pub fn templates(root: &Path) -> Result<Environment<'static>> {
    let mut env = Environment::new();
    for name in ["page.html", "overlay.html", "runs.html", "index.html"] {
        let text = super::theme::text(root, &format!("templates/{name}"))
            .with_context(|| format!("reading templates/{name}"))?;
        env.add_template_owned(name.to_string(), text)
            .with_context(|| format!("templates/{name}"))?;
    }
    Ok(env)
}

/// Renders the site's files, then makes `out` (which holds `state`) hold exactly them.
pub fn write(
    root: &Path,
    out: &Path,
    state: &super::outdir::OutState,
    ctx: &SiteContext,
) -> Result<super::sitefiles::Written> {
    files(root, ctx)?.write(out, state)
}

/// Every file of the site, rendered.
#[allow(
    clippy::too_many_lines,
    reason = "the site's pages in order, read top to bottom; what each shows is a function of its own"
)]
pub fn files(root: &Path, ctx: &SiteContext) -> Result<Files> {
    let env = templates(root)?;
    let mut files = Files::default();

    let book = ctx.book;
    // The book's pages, each chapter with its sections (h2), for every page's sidebar.
    let none: &[render::TocEntry] = &[];
    let mut nav = vec![("Home".to_string(), "index.html".to_string(), none)];
    nav.extend(
        ctx.chapters
            .iter()
            .map(|c| (c.title.clone(), c.slug.clone(), c.toc.as_slice())),
    );
    nav.push(("Runs".to_string(), "runs.html".to_string(), none));
    if ctx.changes.is_some() {
        nav.push((
            "Changes in this edition".to_string(),
            CHANGES_PAGE.to_string(),
            none,
        ));
    }
    let generated = build_time();
    let with_widget = widget_pages(book);
    let page = |title: &str,
                slug: &str,
                kind: &str,
                content: String,
                toc: &[render::TocEntry]|
     -> Result<String> {
        let widget = with_widget.contains(&slug);
        let (notebook, colab, tabs) = page_extras(ctx, slug, &content);
        // A chapter's `# Title {#id}`: the page's title carries the id references link to.
        let title_id = book
            .chapters
            .iter()
            .find(|ch| ch.slug == slug)
            .and_then(Chapter::title_id);
        let nav: Vec<_> = nav
            .iter()
            .map(|(t, h, toc)| {
                let sections: Vec<_> = toc.iter().filter(|e| e.level == 2).collect();
                context! { title => t, href => h, current => h == slug, sections => sections }
            })
            .collect();
        Ok(env.get_template("page.html")?.render(context! {
            book => context! { title => &book.config.title, author => &book.config.author, language => &book.config.language, pdf => ctx.pdf.map(|(name, _)| name.as_str()) },
            page => context! { title => title, title_id => title_id, content => minijinja::Value::from_safe_string(content), toc => toc, kind => kind, widget => widget, tabs => tabs, notebook => notebook, colab => colab },
            root => "",
            nav => nav,
            build => context! { version => env!("CARGO_PKG_VERSION"), fingerprint => ENGINE.code, generated => generated },
            diagnostics => Vec::<String>::new(),
            live_reload => ctx.live_reload,
        })?)
    };

    // Chapters.
    let mut search: Vec<SearchEntry> = Vec::new();
    for ch in ctx.chapters {
        files.bytes(
            ch.slug.clone(),
            page(&ch.title, &ch.slug, "chapter", ch.html.clone(), &ch.toc)?,
        );
        search.extend(ch.search.iter().cloned());
    }

    // Each chapter's notebook, beside its page.
    for (name, bytes) in ctx.chapters.iter().filter_map(|c| c.notebook.as_ref()) {
        files.bytes(name.as_str(), bytes.as_slice());
    }

    // Index.
    let chapters: Vec<_> = ctx
        .chapters
        .iter()
        .map(|c| context! { title => &c.title, href => &c.slug, toc => &c.toc })
        .collect();
    let index = env.get_template("index.html")?.render(context! {
        book => context! { title => &book.config.title, author => &book.config.author, description => &book.config.description, pdf => ctx.pdf.map(|(name, _)| name.as_str()) },
        chapters => chapters,
    })?;
    if let Some((name, bytes)) = ctx.pdf {
        files.bytes(name.as_str(), bytes.as_slice());
    }
    files.bytes(
        "index.html",
        page(&book.config.title, "index.html", "index", index, &[])?,
    );

    // Runs appendix and downloads.
    let runs_view = downloads(ctx.results, ctx.derived, &mut files);
    let costs = chapter_costs(ctx);
    let comparisons = comparisons(ctx);
    let named: Vec<minijinja::Value> = super::expr::named_expressions(book)
        .iter()
        .map(|(name, n)| {
            context! { name, params => n.params.join(", "), expr => &n.expr, about => &n.about }
        })
        .collect();
    let runs_html = env.get_template("runs.html")?.render(
        context! { runs => runs_view, costs => costs, comparisons, named, libtorch => ENGINE.libtorch, fingerprint => ENGINE.code },
    )?;
    let runs_toc: Vec<render::TocEntry> = ctx
        .results
        .plans
        .iter()
        .map(|p| render::TocEntry {
            level: 2,
            id: format!("run-{}", p.id),
            text: p.id.clone(),
        })
        .collect();
    files.bytes(
        "runs.html",
        page("Runs", "runs.html", "runs", runs_html, &runs_toc)?,
    );

    // What changed since the last edition.
    if let Some(c) = ctx.changes {
        let pdf = ctx.pdf.map(|(name, _)| (name.as_str(), ctx.pdf_pages));
        let (toc, html) = changes_page(c, pdf);
        files.bytes(
            CHANGES_PAGE,
            page("Changes in this edition", CHANGES_PAGE, "runs", html, &toc)?,
        );
    }

    // The widget's models, when the book has a widget.
    let models = widget_models(book);
    if !models.is_empty() {
        for (name, bytes) in export_models(ctx.results, &models)?.files {
            files.bytes(format!("{MODELS_DIR}{name}"), bytes);
        }
    }

    // Assets and metadata.
    static_files(root, &mut files)?;
    files.bytes("search-index.json", serde_json::to_vec(&search)?);
    files.bytes("claims.json", ctx.claims_json);
    files.bytes(".nojekyll", "");
    Ok(files)
}

/// The theme's static files, then the book's own, which replace any of the same path.
fn static_files(root: &Path, files: &mut Files) -> Result<()> {
    for (rel, bytes) in super::theme::defaults_under("static") {
        files.bytes(format!("static/{rel}"), bytes);
    }
    let own = root.join("static");
    if own.is_dir() {
        files.copy_tree("static", &own)?;
    }
    Ok(())
}

/// Each chapter's training, for the Runs appendix: its distinct runs (a key shared with an
/// earlier chapter counts there), their cost estimated from their FLOPs at the median speed
/// of the book's training runs, and the seconds they took when they were trained.
fn chapter_costs(ctx: &SiteContext) -> Vec<minijinja::Value> {
    let results = ctx.results;
    let mut rates: Vec<f64> = Vec::new();
    for p in &results.plans {
        let flop = p.config.flop();
        for r in results.by_run.get(&p.id).into_iter().flatten() {
            if flop > 0.0 && r.result.env.train_seconds > 0.0 {
                rates.push(flop / r.result.env.train_seconds);
            }
        }
    }
    rates.sort_by(f64::total_cmp);
    let rate = rates.get(rates.len() / 2).copied();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (ch, rendered) in ctx.book.chapters.iter().zip(ctx.chapters) {
        let (mut runs, mut estimated, mut measured) = (0usize, 0.0f64, 0.0f64);
        for p in results.plans.iter().filter(|p| p.span.file == ch.file) {
            for r in results.by_run.get(&p.id).into_iter().flatten() {
                if !seen.insert(r.dir.clone()) {
                    continue;
                }
                runs += 1;
                measured += r.result.env.train_seconds;
                estimated += rate.map_or(0.0, |rate| p.config.flop() / rate);
            }
        }
        if runs > 0 {
            out.push(context! {
                chapter => &rendered.title,
                href => &rendered.slug,
                runs => runs,
                estimated => format!("{estimated:.0}"),
                measured => format!("{measured:.0}"),
            });
        }
    }
    out
}

/// The changes page's sections and content.
fn changes_page(
    c: &super::editions::Changes,
    pdf: Option<(&str, &std::collections::BTreeMap<String, usize>)>,
) -> (Vec<render::TocEntry>, String) {
    let toc = [
        ("changed", "Changed"),
        ("appeared", "New in this edition"),
        ("disappeared", "No longer in the book"),
    ]
    .iter()
    .map(|(id, text)| render::TocEntry {
        level: 2,
        id: (*id).to_string(),
        text: (*text).to_string(),
    })
    .collect();
    (toc, super::editions::page_html(c, pdf))
}

/// The page of what changed since the last edition.
pub const CHANGES_PAGE: &str = "changes.html";

/// Every figure and table that sets runs side by side, with how each run differs from its
/// baseline (`contrast::side_by_side`), for the Runs appendix.
fn comparisons(ctx: &SiteContext) -> Vec<minijinja::Value> {
    let anchors = render::numbering::anchors(&ctx.book.chapters);
    let mut out = Vec::new();
    for ch in &ctx.book.chapters {
        for d in ch.directives() {
            let (id, runs) = match &d.node {
                Directive::Figure(b) => (&b.id, &b.runs),
                Directive::Table(b) => (&b.id, &b.runs),
                _ => continue,
            };
            let lines = super::contrast::side_by_side_lines(runs, &ctx.results.plans);
            if lines.is_empty() {
                continue;
            }
            let (label, page) = anchors.get(id).cloned().unwrap_or_default();
            out.push(context! { label, href => format!("{page}#{id}"), lines });
        }
    }
    out
}

/// What `runs.html` shows where a column does not apply to a run.
const DASH: &str = "\u{2014}";

/// Adds each run's downloads (result, weights, loss as CSV) under `runs/`, and returns what
/// `runs.html` shows of them.
fn downloads(
    results: &Results,
    derived: Option<&Path>,
    files: &mut Files,
) -> Vec<minijinja::Value> {
    let mut runs_view = Vec::new();
    for plan in &results.plans {
        let Some(produced) = results.by_run.get(&plan.id) else {
            continue;
        };
        let mut seeds = Vec::new();
        for p in produced {
            let stem = format!("{}-s{}", plan.id, p.result.seed);
            files.link(format!("runs/{stem}.json"), &p.dir.join("result.json"));
            let weights = p.dir.join("weights.safetensors");
            let has_weights = weights.exists();
            if has_weights {
                files.link(format!("runs/{stem}.safetensors"), &weights);
            }
            if let Some(t) = p.result.train() {
                let rel = format!("runs/{stem}-loss.csv");
                match derived.and_then(|d| kept_loss_csv(d, &p.dir, &t.losses)) {
                    Some(kept) => files.link(rel, &kept),
                    None => files.bytes(rel, loss_csv(&t.losses)),
                }
            }
            let e = &p.result.env;
            // A probe run trains no model: it has no parameters, training time or speed to
            // show, and "0" would read as a measurement.
            let trained = p.result.train().is_some();
            let shown = |v: f64| {
                if trained {
                    format!("{v:.1}")
                } else {
                    DASH.into()
                }
            };
            seeds.push(context! {
                seed => p.result.seed,
                cached => p.cached,
                train_seconds => shown(e.train_seconds),
                steps_per_second => shown(e.steps_per_second),
                threads => e.threads,
                cpu => &e.cpu,
                json => format!("runs/{stem}.json"),
                csv => p.result.train().map(|_| format!("runs/{stem}-loss.csv")),
                weights => has_weights.then(|| format!("runs/{stem}.safetensors")),
                params => if p.result.params > 0 { p.result.params.to_string() } else { DASH.into() },
            });
        }
        let contrast = plan
            .contrast
            .as_ref()
            .map(|c| format!("varies {} against {}", c.varies.join(", "), c.with));
        runs_view.push(context! {
            id => &plan.id,
            contrast,
            config => serde_json::to_string_pretty(&plan.config).unwrap_or_default(),
            seeds => seeds,
        });
    }
    runs_view
}

/// A run's loss per step, as CSV.
fn loss_csv(losses: &[f64]) -> String {
    let mut csv = String::from("step,loss\n");
    for (i, l) in losses.iter().enumerate() {
        let _ = writeln!(csv, "{},{l}", i + 1);
    }
    csv
}

/// The loss CSV of the result in cache entry `entry`, kept in `derived` under the entry's
/// name and checksum (written the first time): formatting every step's loss of every run
/// took a tenth of a warm build. None where it cannot be kept.
fn kept_loss_csv(derived: &Path, entry: &Path, losses: &[f64]) -> Option<std::path::PathBuf> {
    let name = entry.file_name()?.to_str()?;
    let sum = super::runs::entry_checksum(entry)?;
    let path = derived.join(format!("{name}-{}-loss.csv", &sum[..sum.len().min(32)]));
    if !path.is_file() {
        write_atomic(&path, loss_csv(losses).as_bytes()).ok()?;
    }
    Some(path)
}

/// The models of every widget in the book, each run once, in the order they first appear.
pub fn widget_models(book: &Book) -> Vec<&WidgetModel> {
    let mut out: Vec<&WidgetModel> = Vec::new();
    for ch in &book.chapters {
        for d in ch.directives() {
            if let Directive::Widget(w) = &d.node {
                for m in &w.models {
                    if !out.iter().any(|o| o.run == m.run) {
                        out.push(m);
                    }
                }
            }
        }
    }
    out
}

/// The files that export `models` (each run's first seed, from its cache entry): the
/// manifest, the engine's decodes and one weights file per model; and the weights' bytes.
pub fn export_models(results: &Results, models: &[&WidgetModel]) -> Result<export::Export> {
    let mut list = Vec::new();
    for m in models {
        let produced = results
            .by_run
            .get(&m.run)
            .and_then(|p| p.first())
            .with_context(|| format!("the widget's run `{}` has no result", m.run))?;
        let key = produced
            .dir
            .file_name()
            .and_then(|k| k.to_str())
            .unwrap_or_default();
        list.push(export::Model {
            id: &m.run,
            label: m.label(),
            result: &produced.result,
            key,
            entry: &produced.dir,
        });
    }
    let export = export::files(&list)
        .map_err(|e| anyhow::anyhow!(e))
        .context("exporting the widget's models")?;
    // Each chapter's models were held to the budget at their `widget` directives.
    Ok(export)
}

/// When the site was built, in Unix seconds: `SOURCE_DATE_EPOCH` if set (reproducible
/// builds), else now.
fn build_time() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result's loss CSV is kept by its entry and checksum: the same entry links the same
    /// file, and an entry written again (another checksum) gets a CSV of its own losses.
    #[test]
    fn a_loss_csv_is_kept_by_its_entry_and_checksum() {
        let tmp = tempfile::tempdir().unwrap();
        let entry = tmp.path().join("runs/0123abcd");
        std::fs::create_dir_all(&entry).unwrap();
        let derived = tmp.path().join("derived");
        let sum = entry.join(revtx_spec::entry::CHECKSUM_FILE);
        std::fs::write(&sum, "aaaa\n").unwrap();
        let first = kept_loss_csv(&derived, &entry, &[2.5, 0.125]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&first).unwrap(),
            "step,loss\n1,2.5\n2,0.125\n"
        );
        assert_eq!(
            kept_loss_csv(&derived, &entry, &[2.5, 0.125]).unwrap(),
            first
        );
        std::fs::write(&sum, "bbbb\n").unwrap();
        let second = kept_loss_csv(&derived, &entry, &[1.0]).unwrap();
        assert_ne!(second, first);
        assert_eq!(
            std::fs::read_to_string(&second).unwrap(),
            "step,loss\n1,1\n"
        );
        std::fs::remove_file(&sum).unwrap();
        assert_eq!(
            kept_loss_csv(&derived, &entry, &[1.0]),
            None,
            "no checksum, nothing kept"
        );
    }
}
