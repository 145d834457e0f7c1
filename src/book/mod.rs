//! The book compiler, one stage per function:
//!
//! ```text
//! book/book.toml + *.md ─load→ Book ─plan→ [RunPlan] ─execute→ Results (cache or engine)
//!      ─render→ [RenderedChapter] + claims ─write→ site/ (atomic swap)
//! ```
//!
//! Every stage appends to one list of diagnostics; the caller prints them once.

pub mod claims;
pub mod diag;
pub mod figures;
pub mod parse;
pub mod render;
pub mod runs;
pub mod site;

use diag::{Diagnostic, Severity, Sources};
use render::{ClaimRecord, Counts, KatexCache, RenderedChapter};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What `build` and `check` do.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Project root (holds `book/`, `templates/`, `static/`, `src/`).
    pub root: PathBuf,
    /// Output directory; `None` renders and checks without writing a site.
    pub out: Option<PathBuf>,
    pub runs: runs::RunOptions,
    /// Rewrite drifted quoted figures in the source.
    pub bless: bool,
    /// Add the live-reload script (for `serve`).
    pub live_reload: bool,
}

/// Everything a build produced, diagnostics included.
pub struct Outcome {
    pub sources: Sources,
    pub diags: Vec<Diagnostic>,
    pub claims: Vec<ClaimRecord>,
    pub chapters: Vec<RenderedChapter>,
    pub counts: Counts,
    pub run_report: Vec<String>,
    pub timings: Vec<(&'static str, Duration)>,
    /// Source edits made by `--bless`: (file, line, old, new).
    pub blessed: Vec<(String, usize, String, String)>,
}

impl Outcome {
    pub fn errors(&self) -> usize {
        self.diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }
}

/// Runs the whole pipeline.
pub fn build(opts: &BuildOptions) -> Outcome {
    let mut o = Outcome {
        sources: Sources {
            root: opts.root.clone(),
            ..Default::default()
        },
        diags: Vec::new(),
        claims: Vec::new(),
        chapters: Vec::new(),
        counts: Counts::default(),
        run_report: Vec::new(),
        timings: Vec::new(),
        blessed: Vec::new(),
    };
    pipeline(opts, &mut o);
    o
}

/// The stages, filling `o` as they go; an early return keeps what was done so far.
fn pipeline(opts: &BuildOptions, o: &mut Outcome) {
    let t = Instant::now();
    let book = parse::load(&opts.root, &mut o.sources, &mut o.diags);
    o.timings.push(("parse", t.elapsed()));
    let Some(book) = book else { return };

    let t = Instant::now();
    let plans = runs::plan(&book, &mut o.diags);
    o.timings.push(("plan", t.elapsed()));

    // A book with broken directives is not worth hours of training: only cached runs then.
    let mut run_opts = opts.runs.clone();
    run_opts.offline |= o.errors() > 0;
    let t = Instant::now();
    let mut run_diags = Vec::new();
    let results = runs::execute(plans, &run_opts, &mut run_diags);
    if !run_opts.offline || opts.runs.offline {
        o.diags.extend(run_diags);
    }
    o.run_report = results.report.clone();
    o.timings.push(("runs", t.elapsed()));
    if runs::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        o.diags.push(Diagnostic::error(
            None,
            "interrupted: the site and the finished cache entries are left as they were",
        ));
        return;
    }

    let t = Instant::now();
    let katex_path = opts.runs.cache_dir.join("katex.json");
    let mut katex: KatexCache = std::fs::read(&katex_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut r = render::Renderer {
        root: &opts.root,
        results: &results,
        ctx: render::context(&results),
        env: claims::environment(),
        katex: &mut katex,
        anchors: render::number_everything(&book.chapters),
        claims: Vec::new(),
        diags: Vec::new(),
        sources: &o.sources,
    };
    let mut chapters = Vec::new();
    for ch in &book.chapters {
        chapters.push(r.chapter(ch));
    }
    let claims = std::mem::take(&mut r.claims);
    let render_diags = std::mem::take(&mut r.diags);
    o.diags.extend(render_diags);
    for c in chapters.iter().map(|c| c.counts) {
        o.counts.checked += c.checked;
        o.counts.inserted += c.inserted;
        o.counts.figures += c.figures;
        o.counts.tables += c.tables;
        o.counts.equations += c.equations;
        o.counts.listings += c.listings;
    }
    if katex.dirty {
        let _ = site::write_atomic(&katex_path, &serde_json::to_vec(&katex).unwrap_or_default());
    }
    o.timings.push(("render", t.elapsed()));

    if opts.bless {
        o.blessed = bless(&claims, &o.sources, &mut o.diags);
    }

    let t = Instant::now();
    if let (Some(out), 0) = (&opts.out, o.errors()) {
        let claims_json = serde_json::to_string_pretty(&claims).unwrap_or_default() + "\n";
        let ctx = site::SiteContext {
            book: &book,
            chapters: &chapters,
            results: &results,
            claims_json: &claims_json,
            live_reload: opts.live_reload,
        };
        if let Err(e) = site::write(&opts.root, out, &ctx) {
            o.diags.push(Diagnostic::error(
                None,
                format!("cannot write the site to {}: {e:#}", out.display()),
            ));
        } else {
            // Kept in the repository so a pull request's diff shows which figures moved.
            let _ = site::write_if_changed(
                &opts.root.join("book").join("claims.json"),
                claims_json.as_bytes(),
            );
        }
    }
    o.timings.push(("write", t.elapsed()));
    o.claims = claims;
    o.chapters = chapters;
}

/// Rewrites drifted quoted figures in their source files, returning the edits.
fn bless(
    claims: &[ClaimRecord],
    sources: &Sources,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(String, usize, String, String)> {
    let mut edits: Vec<(usize, std::ops::Range<usize>, String)> = claims
        .iter()
        .filter(|c| c.verdict == "drift")
        .filter_map(|c| {
            Some((
                c.quoted_span.as_ref()?.file,
                c.quoted_span.as_ref()?.range.clone(),
                c.recomputed.clone()?,
            ))
        })
        .collect();
    edits.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1.start)));
    let mut report = Vec::new();
    let mut files: Vec<usize> = edits.iter().map(|e| e.0).collect();
    files.dedup();
    for f in files {
        let mut text = sources.text(f).to_string();
        for (_, range, new) in edits.iter().filter(|e| e.0 == f) {
            let (line, _) = sources.line_col(f, range.start);
            report.push((
                sources.display_path(f),
                line,
                text[range.clone()].to_string(),
                new.clone(),
            ));
            text.replace_range(range.clone(), new);
        }
        if let Err(e) = site::write_atomic(sources.path(f), text.as_bytes()) {
            diags.push(Diagnostic::error(
                None,
                format!("cannot bless {}: {e}", sources.display_path(f)),
            ));
        }
    }
    // Blessed drifts are no longer errors.
    diags.retain(|d| d.message != "quoted figure does not match its run");
    report.reverse();
    report
}
