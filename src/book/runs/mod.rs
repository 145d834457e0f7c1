//! Runs: resolve run directives into jobs, serve them from the cache, and execute the rest
//! in parallel, one `revtx-engine` process per (run, seed) at one thread each.
//!
//! - `resolve`: run directives → plans → jobs with their cache keys;
//! - `cache`: what the caches already hold (`resolve`), and their conflicts;
//! - `pool`: trains the rest, a few engines at a time (`execute`);
//! - `process`: one engine process, supervised (time budget, Ctrl-C, leftovers).
//!
//! Cache layout: `.revtx-cache/runs/<key>/`, in the format of `revtx_spec::entry`. The key
//! hashes the canonical config, the seed, the engine's code fingerprint (the
//! `crates/revtx-engine` sources), the libtorch version, the result format and the numeric
//! profile, so editing the engine re-runs everything while editing prose re-runs nothing.
//! An entry that does not verify is re-run, never trusted.

mod cache;
mod pool;
mod process;
mod resolve;

pub use cache::{conflict_diagnostics, corrupt_diagnostics, load_entry, resolve, Resolved};
pub use pool::{execute, run_jobs};
pub use process::{engine_path, stop_engines, INTERRUPTED};
pub use resolve::{jobs, plan};

use super::diag::Span;
use revtx_spec::experiments::RunConfig;
use revtx_spec::profile::Profile;
use revtx_spec::result::RunResult;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// A run declared in the book.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub id: String,
    pub config: RunConfig,
    pub seeds: Vec<u64>,
    pub span: Span,
    /// Which seeds' weights something in the book reads (the store keeps only those).
    pub weights: Option<crate::book::store::WeightsRead>,
    /// What the run block declares it varies against another run (`contrast`).
    pub contrast: Option<crate::book::contrast::Contrast>,
}

/// One (run, seed) to produce.
#[derive(Clone, Debug)]
pub struct Job {
    pub run: String,
    pub seed: u64,
    pub config: RunConfig,
    pub key: String,
    pub span: Span,
    /// Something in the book reads this seed's weights: an entry without them will not do.
    pub weights: bool,
    /// For an intervening run: the cache key of the trained run whose weights it reads
    /// (`revtx-intervene` runs it, after every training run of the build).
    pub trained: Option<String>,
}

/// Options of the run stage.
#[derive(Clone, Debug, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "four independent switches of the command line and of serve, not a state"
)]
pub struct RunOptions {
    /// The run cache: where runs are looked up first and new ones are written.
    pub cache_dir: PathBuf,
    /// More run caches to read (merged views: CI shards, a colleague's cache). Entries
    /// must verify, and two entries with one key must hold the same bits.
    pub extra_caches: Vec<PathBuf>,
    /// Fail instead of training.
    pub offline: bool,
    /// Run these ids again even if cached (empty set + `rerun_all` = everything).
    pub rerun: BTreeSet<String>,
    pub rerun_all: bool,
    /// Parallel engine processes.
    pub jobs: usize,
    /// Wall-clock budget of one run.
    pub timeout: Duration,
    /// The engine binary.
    pub engine: PathBuf,
    pub quiet: bool,
    /// The numeric profile every run computes under.
    pub profile: Profile,
    /// Remember verified cache entries across builds in this process while their files
    /// are unchanged (see `VERIFIED`): for `serve`, which rebuilds after every edit. A
    /// single build reads each entry once anyway.
    pub remember_verified: bool,
    /// The results kept with the book (book.toml's `store`): read after the caches, before
    /// anything trains.
    pub store: Option<crate::book::store::Store>,
    /// Write into `store` what it lacks (not for a seed-shifted build, nor for results a
    /// numeric profile keys on this machine).
    pub store_write: bool,
    /// Read no store, whatever the book names: what trains from nothing (the cold bench,
    /// the audit) must not find its results there.
    pub ignore_store: bool,
}

/// A finished (run, seed).
#[derive(Clone, Debug)]
pub struct Produced {
    /// Shared: runs declared with one configuration and seed share one result.
    pub result: std::sync::Arc<RunResult>,
    /// The cache entry holding `result.json` and `weights.safetensors`.
    pub dir: PathBuf,
    pub cached: bool,
}

impl Produced {
    /// The checksum its entry keeps ([`entry_checksum`]).
    pub fn checksum(&self) -> Option<String> {
        entry_checksum(&self.dir)
    }
}

/// The checksum a cache entry keeps (which loading the entry verified): what its result
/// holds, not only where it is, since an entry can be written again under its key. None
/// where it has none, or one that is not a digest.
pub fn entry_checksum(dir: &std::path::Path) -> Option<String> {
    let sum = std::fs::read_to_string(dir.join(revtx_spec::entry::CHECKSUM_FILE)).ok()?;
    let sum = sum.trim();
    (!sum.is_empty() && sum.bytes().all(|c| c.is_ascii_alphanumeric())).then(|| sum.to_string())
}

/// All results of a build, by run id then seed order.
#[derive(Default)]
pub struct Results {
    pub plans: Vec<RunPlan>,
    pub by_run: BTreeMap<String, Vec<Produced>>,
    /// One line per job: cached, or why it ran.
    pub report: Vec<String>,
    /// Each run as expressions see it, converted once on first use and shared by every
    /// claim, insert and table of both renderers (`expr::run_values`).
    pub values: std::sync::OnceLock<std::sync::Arc<BTreeMap<String, minijinja::Value>>>,
}

impl Results {
    /// The ids of the runs the book declares, in order.
    pub fn declared(&self) -> Vec<&str> {
        self.plans.iter().map(|p| p.id.as_str()).collect()
    }
}
