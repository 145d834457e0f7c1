//! The command line: one file per command. Each turns its arguments into the library's
//! options, runs a stage of `book` (or the engine binary) and reports; nothing else.

pub mod audit;
pub mod bench;
pub mod build;
pub mod changes;
pub mod eval;
pub mod init;
pub mod numerics;
pub mod run;
pub mod serve;
pub mod shard;
pub mod show;

use clap::Args;
use revtx_book::book::{runs, BuildOptions};
use revtx_spec::profile::Profile;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// Options shared by every command that builds the book.
#[derive(Args, Clone)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent command-line switches, not a state machine"
)]
pub struct Common {
    /// Project root (holding book/, templates/, static/).
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Fail instead of training when a run is not cached.
    #[arg(long, alias = "frozen")]
    pub offline: bool,
    /// Re-run these runs (all runs when given without ids).
    #[arg(long, num_args = 0.., value_name = "IDS")]
    pub rerun: Option<Vec<String>>,
    /// Parallel training processes, at least 1 (default: one per core).
    #[arg(long, value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Time budget of one run, in seconds.
    #[arg(long, default_value_t = 3600)]
    pub run_timeout: u64,
    /// Run cache directory; repeat to read several (the first one receives new runs;
    /// entries under one key must agree bit for bit).
    #[arg(long, default_value = ".revtx-cache")]
    pub cache: Vec<PathBuf>,
    /// Print per-stage timings.
    #[arg(long)]
    pub timings: bool,
    /// Hide the engine's progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Numeric profile of the runs: `portable` (bit-identical on every x86-64 CPU with
    /// AVX2 and FMA; what the book is checked under) or `native` (quick local drafts,
    /// cached separately, never compared against the book).
    #[arg(long, value_enum, default_value_t = Profile::Portable)]
    pub profile: Profile,
    /// Train even if this machine's numerics fingerprint differs from the one recorded in
    /// book/numerics.json; figures that differ are then reported as not comparable.
    #[arg(long)]
    pub ignore_numerics: bool,
    /// Make every warning about the text an error (e.g. unbound numbers), like
    /// `deny_warnings = true` in book/book.toml.
    #[arg(long)]
    pub deny_warnings: bool,
}

/// A book read and its runs planned, for the commands that read runs without building:
/// `show`, `eval`, `run`.
pub struct Planned {
    pub sources: revtx_book::book::diag::Sources,
    pub book: revtx_book::book::parse::Book,
    pub plans: Vec<runs::RunPlan>,
    /// What reading and planning reported (not printed yet).
    pub diags: Vec<revtx_book::book::diag::Diagnostic>,
}

/// Reads the book at `root` and plans its runs; `None` when it cannot be read, its
/// diagnostics printed.
pub fn planned(root: &std::path::Path) -> Option<Planned> {
    use revtx_book::book::{diag, parse};
    let mut sources = diag::Sources {
        root: root.to_path_buf(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let Some(book) = parse::load(root, &mut sources, &mut diags) else {
        diag::emit_stderr(&diags, &sources);
        return None;
    };
    let plans = runs::plan(&book, &sources, &mut diags);
    Some(Planned {
        sources,
        book,
        plans,
        diags,
    })
}

/// `--jobs N`: a count of engine processes, so at least one.
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("0 engine processes would train nothing: give at least 1 (leave --jobs out for one per core)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a number of processes")),
    }
}

impl Common {
    /// Library options for a build writing to `out` (none: check only).
    pub fn options(&self, out: Option<PathBuf>, bless: bool) -> BuildOptions {
        let root = self.root.clone();
        let under_root = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                root.join(p)
            }
        };
        let mut caches = self.cache.iter().map(under_root);
        let cache_dir = caches.next().unwrap_or_else(|| root.join(".revtx-cache"));
        BuildOptions {
            out: out.map(|o| under_root(&o)),
            runs: runs::RunOptions {
                cache_dir,
                extra_caches: caches.collect(),
                offline: self.offline,
                rerun_all: self.rerun.as_ref().is_some_and(Vec::is_empty),
                rerun: self
                    .rerun
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .collect::<BTreeSet<_>>(),
                jobs: self.jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
                }),
                timeout: Duration::from_secs(self.run_timeout),
                engine: runs::engine_path(),
                quiet: self.quiet,
                profile: self.profile,
                remember_verified: false,
                // The book names its store (book.toml's `store`); the build reads it.
                store: None,
                store_write: false,
                ignore_store: false,
            },
            root,
            bless,
            live_reload: false,
            ignore_numerics: self.ignore_numerics,
            deny_warnings: self.deny_warnings,
            pdf: false,
            seed_shift: 0,
            seed_shift_runs: Vec::new(),
        }
    }
}
