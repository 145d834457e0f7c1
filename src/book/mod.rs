//! The book compiler, one stage per function; every stage appends to one list of
//! diagnostics, which the caller prints once.
//!
//! ```text
//! book/book.toml + *.md + references.bib ─parse→ Book ─plan→ [RunPlan] ─execute→ Results (cache or engine)
//!      ─render→ [RenderedChapter] + claims ─write→ site/ (atomic swap)
//! ```

#![allow(
    clippy::result_large_err,
    reason = "a Diagnostic is made once per problem and carries its text; boxing buys nothing"
)]
#![allow(
    clippy::must_use_candidate,
    reason = "the compiler's functions are called for what they return; marking them all is noise"
)]
#![allow(
    clippy::missing_errors_doc,
    reason = "errors are diagnostics (or anyhow errors) that say what went wrong themselves"
)]
#![allow(
    clippy::doc_markdown,
    reason = "KaTeX, CommonMark, TOML and the like are names in prose, not code"
)]

pub mod audit;
mod bless;
pub mod cite;
pub mod claims;
pub mod codes;
pub mod contrast;
pub mod diag;
pub mod editions;
pub mod export;
pub mod expr;
pub mod figures;
pub mod intervene;
pub mod kinds;
pub mod loso;
pub mod notebook;
pub mod numerics;
pub mod outdir;
pub mod parse;
pub mod plan;
pub mod print;
pub mod render;
pub mod runs;
pub mod site;
pub mod sitefiles;
pub mod spikes;
pub mod store;
pub mod tables;
pub mod theme;
pub mod weights;
pub mod why;

use crate::book::codes::Code;
use claims::ClaimRecord;
use diag::{Diagnostic, Severity, Sources};
use render::{Counts, KatexCache, RenderedChapter};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What `build` and `check` do.
#[derive(Clone, Debug)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent switches, one per command-line flag"
)]
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
    /// Train even if this machine's numerics differ from the book's; figures that then
    /// differ are reported as not comparable instead of drifted.
    pub ignore_numerics: bool,
    /// Make every warning about the text an error (`unbound-number`, …), as
    /// `deny_warnings = true` in `book/book.toml` does.
    pub deny_warnings: bool,
    /// Typeset the print edition (`site/<title>.pdf`) with the site.
    pub pdf: bool,
    /// Move every run's seeds up by this much (`check --seed-shift K`; 0: none). Quoted
    /// figures are then expected to differ and are counted, not errors; every assertion
    /// must still hold.
    pub seed_shift: u64,
    /// Shift only these runs' seeds (`--seed-shift K --runs ID…`; empty: every run's). The
    /// others, and what reads only them, stay as the book has them.
    pub seed_shift_runs: Vec<String>,
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
    /// Source edits made by `--bless`.
    pub blessed: Vec<bless::BlessEdit>,
    /// Whether the runs' figures can be compared with the book's (see `numerics`).
    pub comparable: bool,
    /// Lints book.toml's `[lints]` allows, and how many of each this build found.
    pub allowed: Vec<(Code, usize)>,
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
        comparable: true,
        allowed: Vec::new(),
    };
    pipeline(opts, &mut o);
    o
}

/// The stages, filling `o` as they go; an early return keeps what was done so far.
#[allow(
    clippy::too_many_lines,
    reason = "the stages in order, read top to bottom; each is a function of its own"
)]
fn pipeline(opts: &BuildOptions, o: &mut Outcome) {
    if out_refused(opts, o) {
        return;
    }
    let t = Instant::now();
    let book = parse::load(&opts.root, &mut o.sources, &mut o.diags);
    o.timings.push(("parse", t.elapsed()));
    let Some(book) = book else { return };

    let t = Instant::now();
    let mut plans = runs::plan(&book, &o.sources, &mut o.diags);
    shift_seeds(
        &mut plans,
        opts.seed_shift,
        &opts.seed_shift_runs,
        &mut o.diags,
    );
    unknown_reruns(&opts.runs, &plans, &mut o.diags);
    o.timings.push(("plan", t.elapsed()));

    // A book with broken directives is not worth hours of training: only cached runs then.
    let mut run_opts = opts.runs.clone();
    run_opts.offline |= o.errors() > 0;
    if let Some((store, at)) = book.store.as_ref().filter(|_| !opts.runs.ignore_store) {
        run_opts.store = Some(store.clone());
        // A shifted build's runs are not the book's, and a native result is this machine's.
        run_opts.store_write = opts.seed_shift == 0 && opts.runs.profile.comparable();
        if opts.seed_shift == 0 && o.errors() == 0 {
            o.diags
                .extend(store::unused(store, at, &plans, opts.runs.profile));
        }
    }
    let t = Instant::now();
    let resolved = runs::resolve(&plans, &run_opts);
    if !resolved.conflicts.is_empty() || !resolved.corrupt.is_empty() {
        o.diags.extend(runs::conflict_diagnostics(&resolved));
        o.diags.extend(runs::corrupt_diagnostics(&resolved));
        return;
    }
    if let (Some(store), n @ 1..) = (&run_opts.store, resolved.from_store) {
        o.run_report.push(format!(
            "store: {n} result(s) read from {}",
            store.dir.display()
        ));
    }

    // Before anything trains: does this machine compute the book's bits?
    let must_train = !run_opts.offline && !resolved.todo.is_empty();
    let mut measured = None;
    o.comparable = opts.runs.profile.comparable();
    if must_train || opts.bless {
        let gate = numerics::gate(
            &opts.root,
            &run_opts.engine,
            run_opts.profile,
            (opts.ignore_numerics, opts.bless),
            &mut o.sources,
            &mut o.diags,
        );
        o.run_report.push(gate.summary.clone());
        o.timings.push(("numerics", t.elapsed()));
        if !gate.proceed {
            return;
        }
        o.comparable = gate.comparable;
        measured = gate.measured;
    } else {
        numerics::recorded_by_this_engine(
            &opts.root,
            run_opts.profile,
            &mut o.sources,
            &mut o.diags,
        );
    }

    let mut run_diags = Vec::new();
    let results = runs::execute(plans, resolved, &run_opts, &mut run_diags);
    if !run_opts.offline || opts.runs.offline {
        o.diags.extend(run_diags);
    }
    o.run_report.extend(results.report.iter().cloned());
    o.timings.push(("runs", t.elapsed()));
    if runs::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        o.diags.push(Diagnostic::error(
            Code::Interrupted,
            None,
            "interrupted: the site and the finished cache entries are left as they were",
        ));
        return;
    }

    let t = Instant::now();
    let katex_path = opts.runs.cache_dir.join("katex.json");
    let mut katex = KatexCache::load(&katex_path);
    // A build that blesses needs every claim's span, and a shifted one renders other seeds'
    // results: both render every chapter, and keep none.
    let memo_dir = opts.runs.cache_dir.join("render");
    let memo = (!opts.bless && opts.seed_shift == 0).then_some(memo_dir.as_path());
    let rendered = render::render(&book, &results, &o.sources, &mut katex, memo, &mut o.diags);
    if let (Some(_), (kept @ 1.., of)) = (memo, rendered.from_memo) {
        o.run_report.push(format!(
            "render: {kept} of {of} chapters unchanged, from the render memo"
        ));
    }
    let (chapters, claims, rendered_key) = (rendered.chapters, rendered.claims, rendered.key);
    o.counts = rendered.counts;
    katex.save(&katex_path);
    o.timings.push(("render", t.elapsed()));

    if !o.comparable {
        bless::not_comparable(&mut o.diags, opts.runs.profile);
    }
    seed_shift_stage(opts, o, &claims);
    if opts.bless {
        bless_stage(opts, o, &claims, measured.as_ref());
    }
    o.allowed = lint_levels(&book, &o.sources, &mut o.diags);
    // `--deny-warnings` denies every warning, the machine's included; the book's own
    // `deny_warnings` denies the warnings about its text.
    if opts.deny_warnings {
        diag::deny_warnings(&mut o.diags, diag::Deny::All);
    } else if book.config.deny_warnings {
        diag::deny_warnings(&mut o.diags, diag::Deny::Text);
    }

    let claims_json = serde_json::to_string_pretty(&claims).unwrap_or_default() + "\n";
    let changes = editions_stage(
        opts,
        o,
        (&book, &results, rendered_key.as_deref()),
        &claims_json,
    );
    let printed = print_stage(
        opts,
        o,
        (&book, &results, &chapters, rendered_key.as_deref()),
        changes.as_ref(),
    );
    let (pdf, pdf_pages) = match printed {
        Some((name, bytes, pages)) => (Some((name, bytes)), pages),
        None => (None, std::collections::BTreeMap::new()),
    };

    let t = Instant::now();
    // A seed-shifted site is written to be read, false statements marked on its pages.
    let blocking = o
        .diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .filter(|d| !(opts.seed_shift != 0 && d.code == Code::AssertionFalse))
        .count();
    if let (Some(out), 0) = (&opts.out, blocking) {
        let derived = opts.runs.cache_dir.join("derived");
        let ctx = site::SiteContext {
            book: &book,
            chapters: &chapters,
            results: &results,
            claims_json: &claims_json,
            live_reload: opts.live_reload,
            pdf: pdf.as_ref(),
            changes: changes.as_ref(),
            pdf_pages: &pdf_pages,
            derived: Some(&derived),
        };
        write_stage(opts, o, out, &ctx);
    } else if opts.out.is_none() && o.errors() == 0 && opts.seed_shift == 0 {
        // `check` keeps the record too, so that what a run gave can be read without a site.
        let _ = site::write_if_changed(&opts.root.join("book/claims.json"), claims_json.as_bytes());
    }
    o.timings.push(("write", t.elapsed()));
    o.claims = claims;
    o.chapters = chapters;
}

/// `check --seed-shift K`: every run's seeds moved up by `k`.
/// A seed the shift would carry past the largest seed is an error at its run: the sum
/// would wrap round to a small seed, and the "shifted" book would check the book's own.
fn shift_seeds(plans: &mut [runs::RunPlan], k: u64, only: &[String], diags: &mut Vec<Diagnostic>) {
    if k == 0 {
        return;
    }
    let declared: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
    for id in only.iter().filter(|id| !declared.contains(id)) {
        diags.push(Diagnostic::unknown_run(
            "--seed-shift --runs",
            id,
            None,
            &declared,
        ));
    }
    // An intervening run reads its trained run at the same seeds: shifting one shifts both.
    let from: Vec<String> = plans
        .iter()
        .filter(|p| only.contains(&p.id))
        .filter_map(|p| p.config.intervene.as_ref().map(|iv| iv.from.clone()))
        .collect();
    for p in plans
        .iter_mut()
        .filter(|p| only.is_empty() || only.contains(&p.id) || from.contains(&p.id))
    {
        let shifted: Option<Vec<u64>> = p.seeds.iter().map(|s| s.checked_add(k)).collect();
        let Some(seeds) = shifted else {
            let largest = p.seeds.iter().max().copied().unwrap_or_default();
            diags.push(
                Diagnostic::error(
                    Code::InvalidRun,
                    Some(p.span.clone()),
                    format!(
                        "--seed-shift {k} carries run `{}`'s seed {largest} past the largest seed ({})",
                        p.id,
                        u64::MAX
                    ),
                )
                .hint(format!("give a shift of at most {}", u64::MAX - largest)),
            );
            continue;
        };
        p.seeds = seeds;
    }
}

/// book.toml's `[lints]` applied, a file's `[lints-for."FILE"]` over them: an allowed lint
/// is dropped and counted, a denied one is an error. Returns the counts of the allowed ones.
fn lint_levels(
    book: &parse::Book,
    sources: &Sources,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Code, usize)> {
    use parse::config::LintLevel;
    let config = &book.config;
    let find = |table: &std::collections::BTreeMap<toml::Spanned<String>, LintLevel>, c: Code| {
        table
            .iter()
            .find(|(k, _)| k.get_ref() == c.name())
            .map(|(_, l)| *l)
    };
    let book_dir = book.root.join("book");
    // The level of a lint where it was found, and the table that set it.
    let level = |d: &Diagnostic| {
        let in_file = d.span.as_ref().and_then(|s| {
            config.lints_for.iter().find_map(|(f, table)| {
                (sources.path(s.file) == book_dir.join(f.get_ref()))
                    .then(|| {
                        find(table, d.code).map(|l| (l, format!("[lints-for.\"{}\"]", f.get_ref())))
                    })
                    .flatten()
            })
        });
        in_file
            .or_else(|| find(&config.lints, d.code).map(|l| (l, "[lints]".to_string())))
            .unwrap_or((LintLevel::Warn, String::new()))
    };
    let mut allowed: Vec<(Code, usize)> = Vec::new();
    diags.retain_mut(|d| {
        if !(d.code.is_lint() && d.severity == Severity::Warning) {
            return true;
        }
        match level(d) {
            (LintLevel::Warn, _) => true,
            (LintLevel::Deny, table) => {
                d.severity = Severity::Error;
                d.notes.push(format!(
                    "denied by `{} = \"deny\"` in book.toml's {table}",
                    d.code
                ));
                true
            }
            (LintLevel::Allow, _) => {
                match allowed.iter_mut().find(|(c, _)| *c == d.code) {
                    Some((_, n)) => *n += 1,
                    None => allowed.push((d.code, 1)),
                }
                false
            }
        }
    });
    allowed.sort();
    allowed
}

/// `check --seed-shift K` after rendering: drift expected and counted, the chapters as they
/// read under the shift written beside its cache (see `bless::seed_shifted`).
fn seed_shift_stage(opts: &BuildOptions, o: &mut Outcome, claims: &[ClaimRecord]) {
    if opts.seed_shift == 0 {
        return;
    }
    let line = bless::seed_shifted(
        &mut o.diags,
        opts.seed_shift,
        &opts.seed_shift_runs,
        claims,
        &o.sources,
        &opts.runs.cache_dir,
    );
    o.run_report.push(line);
}

/// An output folder the tool may not write is refused before anything is read or run.
fn out_refused(opts: &BuildOptions, o: &mut Outcome) -> bool {
    let Some(out) = &opts.out else { return false };
    if opts.seed_shift != 0 {
        if let Some(d) = outdir::refuse_book_site(&opts.root, out) {
            o.diags.push(d);
            return true;
        }
    }
    match outdir::check(&opts.root, &opts.runs.caches(), out) {
        Ok(_) => false,
        Err(d) => {
            o.diags.push(d);
            true
        }
    }
}

/// What changed since the edition book.toml lists last, for a build that writes a site
/// (not a seed-shifted one, whose numbers are other seeds'): `None` without editions.
fn editions_stage(
    opts: &BuildOptions,
    o: &mut Outcome,
    (book, results, rendered): (&parse::Book, &runs::Results, Option<&str>),
    claims_json: &str,
) -> Option<editions::Changes> {
    if opts.out.is_none() || opts.seed_shift != 0 || o.errors() > 0 {
        return None;
    }
    let t = Instant::now();
    // The same rendered book, engine, profile and earlier edition: the same changes.
    let key = rendered.and_then(|r| {
        let inputs = format!("{r}\0{}\0{}", crate::ENGINE.code, opts.runs.profile.id());
        editions::memo_key(&opts.root, &book.editions, &inputs)
    });
    if let Some(c) = key
        .as_deref()
        .and_then(|k| editions::remembered(&opts.runs.cache_dir, k))
    {
        o.timings.push(("editions", t.elapsed()));
        o.run_report.push(changes_line(&c));
        return Some(c);
    }
    let previous = match editions::previous(&opts.root, &book.editions)? {
        Ok(r) => r,
        Err(d) => {
            o.diags.push(d);
            return None;
        }
    };
    let this = editions::record::of_book(
        "this edition",
        book,
        &o.sources,
        claims_json,
        &results.plans,
        (crate::ENGINE.code, opts.runs.profile.id()),
    );
    o.timings.push(("editions", t.elapsed()));
    match this {
        Ok(this) => {
            let c = editions::compare(&previous, &this);
            if let Some(k) = &key {
                editions::remember(&opts.runs.cache_dir, k, &c);
            }
            o.run_report.push(changes_line(&c));
            Some(c)
        }
        Err(why) => {
            o.diags.push(Diagnostic::error(
                Code::Edition,
                None,
                format!("this edition: {why}"),
            ));
            None
        }
    }
}

/// The build's report of what changed since the last edition.
fn changes_line(c: &editions::Changes) -> String {
    format!(
        "changes: against {}, {} changed, {} appeared, {} disappeared",
        c.from,
        c.changed.len(),
        c.appeared.len(),
        c.disappeared.len()
    )
}

/// The print edition's file name and bytes (typeset now, or from the cache), for a build
/// that writes a site, asks for the PDF and has no errors; it runs before anything is
/// written, so a PDF is never out of step with its site. Problems are diagnostics, and
/// then there is no PDF.
fn print_stage(
    opts: &BuildOptions,
    o: &mut Outcome,
    (book, results, chapters, rendered): (
        &parse::Book,
        &runs::Results,
        &[RenderedChapter],
        Option<&str>,
    ),
    changes: Option<&editions::Changes>,
) -> Option<(String, Vec<u8>, std::collections::BTreeMap<String, usize>)> {
    if opts.out.is_none() || !opts.pdf || o.errors() > 0 {
        return None;
    }
    let t = Instant::now();
    // The document is made from the rendered book and the changes it lists: the same
    // inputs as a build before, the same PDF (see `print::remembered`).
    let inputs = rendered.map(|key| {
        let mut h = blake3::Hasher::new();
        h.update(b"print memo 1\0");
        h.update(key.as_bytes());
        h.update(
            serde_json::to_string(&changes)
                .unwrap_or_default()
                .as_bytes(),
        );
        h.update(format!("{:?}", std::env::var_os("SOURCE_DATE_EPOCH")).as_bytes());
        h.finalize().to_hex().to_string()
    });
    let remembered = inputs
        .as_deref()
        .and_then(|i| print::remembered(&opts.runs.cache_dir, book, i));
    let typeset = if let Some(t) = remembered {
        Some(Ok(t))
    } else {
        let diags_before = o.diags.len();
        let with = changes.map(|c| (&o.sources, c));
        let edition = print::edition_with(book, results, chapters, with, &mut o.diags);
        let typeset = edition.map(|e| print::typeset(&e, &opts.runs.cache_dir, &o.sources));
        if let (Some(Ok(t)), Some(i), true) = (&typeset, &inputs, o.diags.len() == diags_before) {
            print::remember(&opts.runs.cache_dir, book, i, &t.key);
        }
        typeset
    };
    o.timings.push(("print", t.elapsed()));
    match typeset? {
        Ok(t) => {
            o.run_report.push(format!(
                "print: {} ({} KiB, {})",
                print::file_name(book),
                t.bytes.len() / 1024,
                if t.typeset {
                    "typeset"
                } else {
                    "unchanged, from the cache"
                }
            ));
            Some((print::file_name(book), t.bytes, t.pages))
        }
        Err(d) => {
            o.diags.extend(d);
            None
        }
    }
}

/// `--rerun ID` for an id the book does not declare is an error (it would rerun nothing).
fn unknown_reruns(opts: &runs::RunOptions, plans: &[runs::RunPlan], diags: &mut Vec<Diagnostic>) {
    for id in &opts.rerun {
        if !plans.iter().any(|p| &p.id == id) {
            let declared: Vec<&str> = plans.iter().map(|p| p.id.as_str()).collect();
            diags.push(Diagnostic::unknown_run("`--rerun`", id, None, &declared));
        }
    }
}

/// `--bless`: drifted figures rewritten, this machine's numerics fingerprint recorded.
fn bless_stage(
    opts: &BuildOptions,
    o: &mut Outcome,
    claims: &[ClaimRecord],
    measured: Option<&revtx_spec::profile::Fingerprint>,
) {
    if !opts.runs.profile.comparable() {
        o.diags.push(
            Diagnostic::error(
                Code::Bless,
                None,
                "the book is blessed under the portable profile only",
            )
            .hint("drop --profile native"),
        );
        return;
    }
    o.blessed = bless::bless(claims, &o.sources, &mut o.diags);
    if let Some(m) = measured {
        match numerics::record(&opts.root, m) {
            Ok(true) => o
                .run_report
                .push("numerics: recorded this machine's fingerprint in book/numerics.json".into()),
            Ok(false) => {}
            Err(e) => o.diags.push(Diagnostic::error(
                Code::Io,
                None,
                format!("cannot write book/numerics.json: {e}"),
            )),
        }
    }
}

/// Writes the site, and `book/claims.json` beside the chapter.
fn write_stage(
    opts: &BuildOptions,
    o: &mut Outcome,
    out: &std::path::Path,
    ctx: &site::SiteContext,
) {
    // A build killed while swapping the site by renames left it aside: put it back first.
    sitefiles::recover(out);
    // Checked again: the folder may have changed while the runs trained.
    let state = match outdir::check(&opts.root, &opts.runs.caches(), out) {
        Ok(s) => s,
        Err(d) => return o.diags.push(d),
    };
    if let Err(e) = site::write(&opts.root, out, &state, ctx) {
        o.diags.push(Diagnostic::error(
            Code::Io,
            None,
            format!("cannot write the site to {}: {e:#}", out.display()),
        ));
    } else if opts.seed_shift == 0 {
        // Kept in the repository so a pull request's diff shows which figures moved; a
        // shifted build's claims are the other seeds', and stay in its own site.
        let _ = site::write_if_changed(
            &opts.root.join("book").join("claims.json"),
            ctx.claims_json.as_bytes(),
        );
    }
}
