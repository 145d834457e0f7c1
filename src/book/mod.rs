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
    let mut sources = Sources {
        root: opts.root.clone(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let mut timings = Vec::new();
    let mut outcome_claims = Vec::new();
    let mut chapters_out = Vec::new();
    let mut counts = Counts::default();
    let mut run_report = Vec::new();
    let mut blessed = Vec::new();

    let t = Instant::now();
    let book = parse::load(&opts.root, &mut sources, &mut diags);
    timings.push(("parse", t.elapsed()));

    if let Some(book) = &book {
        let t = Instant::now();
        let plans = runs::plan(book, &mut diags);
        timings.push(("plan", t.elapsed()));

        // A book with broken directives is not worth hours of training: only cached runs then.
        let mut run_opts = opts.runs.clone();
        if diags.iter().any(|d| d.severity == Severity::Error) {
            run_opts.offline = true;
        }
        let t = Instant::now();
        let mut run_diags = Vec::new();
        let results = runs::execute(plans, &run_opts, &mut run_diags);
        if !run_opts.offline || opts.runs.offline {
            diags.extend(run_diags);
        }
        run_report = results.report.clone();
        timings.push(("runs", t.elapsed()));
        if runs::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            diags.push(Diagnostic::error(
                None,
                "interrupted: the site and the finished cache entries are left as they were",
            ));
            return Outcome {
                sources,
                diags,
                claims: outcome_claims,
                chapters: chapters_out,
                counts,
                run_report,
                timings,
                blessed,
            };
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
            sources: &sources,
        };
        for ch in &book.chapters {
            let rc = r.chapter(ch);
            let c = rc.counts;
            counts.checked += c.checked;
            counts.inserted += c.inserted;
            counts.figures += c.figures;
            counts.tables += c.tables;
            counts.equations += c.equations;
            counts.listings += c.listings;
            chapters_out.push(rc);
        }
        outcome_claims = std::mem::take(&mut r.claims);
        diags.extend(std::mem::take(&mut r.diags));
        if katex.dirty {
            let _ =
                site::write_atomic(&katex_path, &serde_json::to_vec(&katex).unwrap_or_default());
        }
        timings.push(("render", t.elapsed()));

        if opts.bless {
            blessed = bless(&outcome_claims, &sources, &mut diags);
        }

        let t = Instant::now();
        let errors = diags.iter().any(|d| d.severity == Severity::Error);
        if let (Some(out), false) = (&opts.out, errors) {
            let claims_json =
                serde_json::to_string_pretty(&outcome_claims).unwrap_or_default() + "\n";
            let ctx = site::SiteContext {
                book,
                chapters: &chapters_out,
                results: &results,
                claims_json: &claims_json,
                live_reload: opts.live_reload,
            };
            if let Err(e) = site::write(&opts.root, out, &ctx) {
                diags.push(Diagnostic::error(
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
        timings.push(("write", t.elapsed()));
    }
    Outcome {
        sources,
        diags,
        claims: outcome_claims,
        chapters: chapters_out,
        counts,
        run_report,
        timings,
        blessed,
    }
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
