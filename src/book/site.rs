//! Write: rendered chapters, the index, the Runs appendix and assets → `site/`, assembled
//! in a temporary sibling directory and swapped in with renames at the end.
//!
//! A failed or interrupted build therefore leaves the previous site intact. The page
//! templates (`page.html`, `index.html`, `runs.html`, `overlay.html`) are rendered here.
//! A book with a widget also gets its models, exported under `models/` (see `export.rs`),
//! and the pages that hold a widget load its script and styles.

use super::export;
use super::parse::directive::WidgetModel;
use super::parse::{Book, Directive};
use super::render::{self, RenderedChapter, SearchEntry};
use super::runs::Results;
use crate::engine::{CODE_FINGERPRINT, LIBTORCH_VERSION};
use anyhow::{Context, Result};
use minijinja::{context, Environment};
use std::fmt::Write as _;
use std::path::Path;

/// Where the widget's models go, relative to the site root (the pages are at the root).
pub const MODELS_DIR: &str = "models/";

pub struct SiteContext<'a> {
    pub book: &'a Book,
    pub chapters: &'a [RenderedChapter],
    pub results: &'a Results,
    pub claims_json: &'a str,
    pub live_reload: bool,
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
    let dir = root.join("templates");
    for name in ["page.html", "overlay.html", "runs.html", "index.html"] {
        let text = std::fs::read_to_string(dir.join(name))
            .with_context(|| format!("reading templates/{name}"))?;
        env.add_template_owned(name.to_string(), text)
            .with_context(|| format!("templates/{name}"))?;
    }
    Ok(env)
}

/// Builds the site in a temp dir next to `out`, then swaps it in.
pub fn write(root: &Path, out: &Path, ctx: &SiteContext) -> Result<()> {
    let env = templates(root)?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::Builder::new()
        .prefix(".site-tmp-")
        .tempdir_in(parent)?;
    let dir = tmp.path();

    let book = ctx.book;
    let mut nav = vec![("Home".to_string(), "index.html".to_string())];
    nav.extend(
        ctx.chapters
            .iter()
            .map(|c| (c.title.clone(), c.slug.clone())),
    );
    nav.push(("Runs".to_string(), "runs.html".to_string()));
    let generated = build_time();
    let with_widget: Vec<&str> = book
        .chapters
        .iter()
        .filter(|ch| {
            ch.directives()
                .any(|d| matches!(d.node, Directive::Widget(_)))
        })
        .map(|ch| ch.slug.as_str())
        .collect();
    let page = |title: &str,
                slug: &str,
                kind: &str,
                content: String,
                toc: &[render::TocEntry]|
     -> Result<String> {
        let widget = with_widget.contains(&slug);
        let nav: Vec<_> = nav
            .iter()
            .map(|(t, h)| context! { title => t, href => h, current => h == slug })
            .collect();
        Ok(env.get_template("page.html")?.render(context! {
            book => context! { title => &book.config.title, author => &book.config.author, language => &book.config.language },
            page => context! { title => title, content => minijinja::Value::from_safe_string(content), toc => toc, kind => kind, widget => widget },
            root => "",
            nav => nav,
            build => context! { version => env!("CARGO_PKG_VERSION"), fingerprint => CODE_FINGERPRINT, generated => generated },
            diagnostics => Vec::<String>::new(),
            live_reload => ctx.live_reload,
        })?)
    };

    // Chapters.
    let mut search: Vec<SearchEntry> = Vec::new();
    for ch in ctx.chapters {
        std::fs::write(
            dir.join(&ch.slug),
            page(&ch.title, &ch.slug, "chapter", ch.html.clone(), &ch.toc)?,
        )?;
        search.extend(ch.search.iter().cloned());
    }

    // Index.
    let chapters: Vec<_> = ctx
        .chapters
        .iter()
        .map(|c| context! { title => &c.title, href => &c.slug, toc => &c.toc })
        .collect();
    let index = env.get_template("index.html")?.render(context! {
        book => context! { title => &book.config.title, author => &book.config.author, description => &book.config.description },
        chapters => chapters,
    })?;
    std::fs::write(
        dir.join("index.html"),
        page(&book.config.title, "index.html", "index", index, &[])?,
    )?;

    // Runs appendix and downloads.
    let runs_view = downloads(ctx.results, &dir.join("runs"))?;
    let runs_html = env.get_template("runs.html")?.render(context! { runs => runs_view, libtorch => LIBTORCH_VERSION, fingerprint => CODE_FINGERPRINT })?;
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
    std::fs::write(
        dir.join("runs.html"),
        page("Runs", "runs.html", "runs", runs_html, &runs_toc)?,
    )?;

    // The widget's models, when the book has a widget.
    let models = widget_models(book);
    if !models.is_empty() {
        export_models(ctx.results, &models, &dir.join(MODELS_DIR))?;
    }

    // Assets and metadata.
    copy_dir(&root.join("static"), &dir.join("static"))?;
    std::fs::write(dir.join("search-index.json"), serde_json::to_vec(&search)?)?;
    std::fs::write(dir.join("claims.json"), ctx.claims_json)?;
    std::fs::write(dir.join(".nojekyll"), "")?;

    swap_in(&tmp.keep(), out)
}

/// Writes each run's downloads (result, weights, loss as CSV) into `runs_dir`, and returns
/// what `runs.html` shows of them.
fn downloads(results: &Results, runs_dir: &Path) -> Result<Vec<minijinja::Value>> {
    std::fs::create_dir_all(runs_dir)?;
    let mut runs_view = Vec::new();
    for plan in &results.plans {
        let Some(produced) = results.by_run.get(&plan.id) else {
            continue;
        };
        let mut seeds = Vec::new();
        for p in produced {
            let stem = format!("{}-s{}", plan.id, p.result.seed);
            link_or_copy(
                &p.dir.join("result.json"),
                &runs_dir.join(format!("{stem}.json")),
            )?;
            let weights = p.dir.join("weights.safetensors");
            let has_weights = weights.exists();
            if has_weights {
                link_or_copy(&weights, &runs_dir.join(format!("{stem}.safetensors")))?;
            }
            let mut csv = String::from("step,loss\n");
            if let Some(t) = &p.result.train {
                for (i, l) in t.losses.iter().enumerate() {
                    let _ = writeln!(csv, "{},{l}", i + 1);
                }
                std::fs::write(runs_dir.join(format!("{stem}-loss.csv")), csv)?;
            }
            let e = &p.result.env;
            seeds.push(context! {
                seed => p.result.seed,
                cached => p.cached,
                train_seconds => format!("{:.1}", e.train_seconds),
                eval_seconds => format!("{:.1}", e.eval_seconds),
                steps_per_second => format!("{:.1}", e.steps_per_second),
                threads => e.threads,
                cpu => &e.cpu,
                libtorch => &e.libtorch,
                fingerprint => &e.code_fingerprint,
                started => e.started_unix,
                json => format!("runs/{stem}.json"),
                csv => p.result.train.as_ref().map(|_| format!("runs/{stem}-loss.csv")),
                weights => has_weights.then(|| format!("runs/{stem}.safetensors")),
                params => p.result.params,
            });
        }
        runs_view.push(context! {
            id => &plan.id,
            config => serde_json::to_string_pretty(&plan.config).unwrap_or_default(),
            seeds => seeds,
        });
    }
    Ok(runs_view)
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

/// Writes `models` (each run's first seed, from its cache entry) into `dir`: the manifest,
/// the engine's decodes and one weights file per model. Returns the weights' bytes.
pub fn export_models(results: &Results, models: &[&WidgetModel], dir: &Path) -> Result<usize> {
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
    let total = export::write(dir, &list)
        .map_err(|e| anyhow::anyhow!(e))
        .context("exporting the widget's models")?;
    anyhow::ensure!(
        total <= export::BUDGET,
        "the widget's models weigh {total} bytes together, over the budget of {} bytes: \
         list fewer models",
        export::BUDGET
    );
    Ok(total)
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

/// Replaces `out` with `new` using renames; the old site is removed only afterwards.
fn swap_in(new: &Path, out: &Path) -> Result<()> {
    if out.exists() {
        let old = out.with_file_name(format!(".site-old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(out, &old)
            .with_context(|| format!("moving the old {} aside", out.display()))?;
        std::fs::rename(new, out)
            .with_context(|| format!("moving the new site into {}", out.display()))?;
        let _ = std::fs::remove_dir_all(&old);
    } else {
        std::fs::rename(new, out)?;
    }
    Ok(())
}

fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(from).follow_links(true) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from)?;
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest)?;
        } else {
            // Copied, not linked: nothing written into the site may ever reach the sources.
            std::fs::copy(entry.path(), &dest)
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
