//! Runs: resolve run directives into jobs, serve them from the cache, and execute the rest
//! in parallel, one `revtx-engine` process per (run, seed) at one thread each.
//!
//! Cache layout: `.revtx-cache/runs/<key>/`, in the format of `engine::entry`. The key
//! hashes the canonical config, the seed, the engine's code fingerprint, the libtorch
//! version, the result format and the numeric profile, so editing `src/engine` re-runs
//! everything while editing prose re-runs nothing. An entry that does not verify is re-run,
//! never trusted.

use super::diag::{Diagnostic, Span};
use super::parse::{Book, Directive};
use crate::engine::entry::{self, ExecRequest};
use crate::engine::experiments::RunConfig;
use crate::engine::profile::Profile;
use crate::engine::result::RunResult;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wait_timeout::ChildExt;

/// Set by the Ctrl-C handler: running engines get the signal too and stop; the build then
/// ends without touching the site or the cache.
pub static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The engine processes this build has running. A second Ctrl-C or SIGTERM exits at once
/// (`stop_engines`, then exit 130) instead of waiting for them, and must not leave them
/// training on their own, orphaned, until their time budget runs out.
static ENGINES: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Kills every engine process this build started that is still running.
pub fn stop_engines() {
    for pid in ENGINES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        if let Ok(pid) = libc::pid_t::try_from(*pid) {
            // SAFETY: signals a child this process started and has not yet waited for.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Holds an engine's pid in `ENGINES` while it runs.
struct Running(u32);

impl Running {
    fn new(pid: u32) -> Self {
        ENGINES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(pid);
        Running(pid)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        ENGINES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// A run declared in the book.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub id: String,
    pub config: RunConfig,
    pub seeds: Vec<u64>,
    pub span: Span,
}

/// One (run, seed) to produce.
#[derive(Clone, Debug)]
pub struct Job {
    pub run: String,
    pub seed: u64,
    pub config: RunConfig,
    pub key: String,
    pub span: Span,
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
}

/// A finished (run, seed).
#[derive(Clone, Debug)]
pub struct Produced {
    pub result: RunResult,
    /// The cache entry holding `result.json` and `weights.safetensors`.
    pub dir: PathBuf,
    pub cached: bool,
}

/// All results of a build, by run id then seed order.
#[derive(Default)]
pub struct Results {
    pub plans: Vec<RunPlan>,
    pub by_run: BTreeMap<String, Vec<Produced>>,
    /// One line per job: cached, or why it ran.
    pub report: Vec<String>,
}

impl Results {
    /// The ids of the runs the book declares, in order.
    pub fn declared(&self) -> Vec<&str> {
        self.plans.iter().map(|p| p.id.as_str()).collect()
    }
}

/// Resolves the run directives of every chapter, in order. A run's `base` is a preset
/// or an earlier run of the book.
pub fn plan(book: &Book, diags: &mut Vec<Diagnostic>) -> Vec<RunPlan> {
    let mut plans: Vec<RunPlan> = Vec::new();
    for ch in &book.chapters {
        for d in ch.directives() {
            let Directive::Run { id, spec } = &d.node else {
                continue;
            };
            let base_name = spec.base.clone().unwrap_or_else(|| {
                if RunConfig::preset(id).is_some() {
                    id.clone()
                } else {
                    "reference".into()
                }
            });
            let base = plans
                .iter()
                .find(|p| p.id == base_name)
                .map(|p| p.config.clone())
                .or_else(|| RunConfig::preset(&base_name));
            let Some(base) = base else {
                let known: Vec<&str> = crate::engine::experiments::PRESETS
                    .iter()
                    .map(|p| p.0)
                    .collect();
                diags.push(
                    Diagnostic::error(
                        "unknown-base",
                        Some(d.span.clone()),
                        format!("unknown base run `{base_name}`"),
                    )
                    .hint(format!(
                        "a base is an earlier run of the book or one of: {}",
                        known.join(", ")
                    )),
                );
                continue;
            };
            if spec.seeds.as_ref().is_some_and(Vec::is_empty) {
                diags.push(
                    Diagnostic::error(
                        "no-seeds",
                        Some(d.span.clone()),
                        format!("run `{id}` has no seeds"),
                    )
                    .hint("list at least one, e.g. `seeds = [0, 1, 2]`, or write `seed = 0`"),
                );
                continue;
            }
            match spec.apply(&base) {
                Ok(config) => {
                    if spec.seed.is_some() && spec.seeds.is_some() {
                        diags.push(
                            Diagnostic::error(
                                "run",
                                Some(d.span.clone()),
                                format!("run `{id}` gives both `seed` and `seeds`"),
                            )
                            .hint("keep one"),
                        );
                    }
                    plans.push(RunPlan {
                        id: id.clone(),
                        config,
                        seeds: spec.seed_list(),
                        span: d.span.clone(),
                    });
                }
                Err(e) => diags.push(
                    Diagnostic::error("run", Some(d.span.clone()), format!("invalid run `{id}`"))
                        .label(e),
                ),
            }
        }
    }
    plans
}

/// Loads the verified cache entry of a job.
pub fn load_entry(dir: &Path, job: &Job, profile: Profile) -> Result<RunResult, String> {
    entry::load(dir, &job.config, job.seed, profile)
}

/// The stamp of a key's files in every cache: inode, size and modification time of each
/// of the entry's files (`None` where one is missing).
type Stamp = Vec<Option<(u64, u64, i64, i64)>>;

fn stamp(caches: &[PathBuf], key: &str) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for cache in caches {
        let dir = cache.join("runs").join(key);
        for f in [
            entry::RESULT_FILE,
            entry::WEIGHTS_FILE,
            entry::CHECKSUM_FILE,
        ] {
            out.push(
                std::fs::metadata(dir.join(f))
                    .ok()
                    .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec())),
            );
        }
    }
    out
}

/// Cache entries this process has read and verified, by key, with the stamp of their files
/// then. `serve` rebuilds after every edit: an entry whose files are as they were is not
/// read and hashed again (the chapter's are 28 MB). Entries are written by renaming a
/// whole directory into place, so a rewritten entry has new inodes; any change of a file's
/// inode, size or time reads and verifies it afresh.
type Verified = std::collections::HashMap<(Vec<PathBuf>, String), (Stamp, PathBuf, RunResult)>;
static VERIFIED: std::sync::LazyLock<Mutex<Verified>> = std::sync::LazyLock::new(Mutex::default);

/// `entry::find`, remembered for the life of the process when `remember_verified` is set
/// (see `VERIFIED`).
fn find_remembered(
    caches: &[PathBuf],
    key: &str,
    job: &Job,
    opts: &RunOptions,
) -> Result<(PathBuf, RunResult), entry::FindError> {
    if !opts.remember_verified {
        return entry::find(caches, key, &job.config, job.seed, opts.profile);
    }
    let id = (caches.to_vec(), key.to_string());
    let now = stamp(caches, key);
    if let Some((seen, dir, result)) = VERIFIED.lock().unwrap().get(&id) {
        if *seen == now && result.config == job.config && result.seed == job.seed {
            return Ok((dir.clone(), result.clone()));
        }
    }
    let found = entry::find(caches, key, &job.config, job.seed, opts.profile)?;
    // Stamped before reading: a file changed while it was read shows up next time.
    VERIFIED
        .lock()
        .unwrap()
        .insert(id, (now, found.0.clone(), found.1.clone()));
    Ok(found)
}

/// What the caches already hold, and what must train (with the reason).
pub struct Resolved {
    pub done: Vec<(Job, Produced)>,
    pub todo: Vec<(Job, String)>,
    /// One line per cached job.
    pub report: Vec<String>,
    /// Two caches disagree about a key: loud errors, one per key.
    pub conflicts: Vec<(Job, entry::Conflict)>,
}

impl RunOptions {
    /// Every cache to read, the writable one first.
    pub fn caches(&self) -> Vec<PathBuf> {
        std::iter::once(self.cache_dir.clone())
            .chain(self.extra_caches.iter().cloned())
            .collect()
    }
}

/// The jobs of every planned (run, seed), with their cache keys.
pub fn jobs(plans: &[RunPlan], profile: Profile) -> Vec<Job> {
    plans
        .iter()
        .flat_map(|p| {
            p.seeds.iter().map(|&seed| Job {
                run: p.id.clone(),
                seed,
                config: p.config.clone(),
                key: entry::key(&p.config, seed, profile),
                span: p.span.clone(),
            })
        })
        .collect()
}

/// Looks every planned (run, seed) up in the caches. Jobs that share a cache key (one
/// config and seed declared under two run ids) are decided together: cached for all, or
/// trained once for all.
pub fn resolve(plans: &[RunPlan], opts: &RunOptions) -> Resolved {
    let caches = opts.caches();
    let mut r = Resolved {
        done: Vec::new(),
        todo: Vec::new(),
        report: Vec::new(),
        conflicts: Vec::new(),
    };
    let all = jobs(plans, opts.profile);
    let mut keys: Vec<&str> = Vec::new();
    for job in &all {
        if !keys.contains(&job.key.as_str()) {
            keys.push(&job.key);
        }
    }
    for key in keys {
        let same: Vec<&Job> = all.iter().filter(|j| j.key == key).collect();
        let first = same[0];
        let forced = opts.rerun_all || same.iter().any(|j| opts.rerun.contains(&j.run));
        let found = if forced {
            Err(entry::FindError::Invalid("--rerun asked for it".into()))
        } else {
            find_remembered(&caches, key, first, opts)
        };
        match found {
            Ok((dir, result)) => {
                for job in same {
                    r.report
                        .push(format!("{} seed {}: cached", job.run, job.seed));
                    let produced = Produced {
                        result: result.clone(),
                        dir: dir.clone(),
                        cached: true,
                    };
                    r.done.push((job.clone(), produced));
                }
            }
            Err(entry::FindError::Invalid(why)) => {
                r.todo
                    .extend(same.into_iter().map(|j| (j.clone(), why.clone())));
            }
            Err(entry::FindError::Conflict(c)) => r.conflicts.push((first.clone(), c)),
        }
    }
    r
}

/// One diagnostic per conflicting key: the caches were filled under different numerics.
pub fn conflict_diagnostics(resolved: &Resolved) -> Vec<Diagnostic> {
    resolved
        .conflicts
        .iter()
        .map(|(job, c)| {
            Diagnostic::error(
                "cache-conflict",
                Some(job.span.clone()),
                format!(
                    "run `{}` seed {}: two run caches hold different results under one key",
                    job.run, job.seed
                ),
            )
            .note(c.to_string())
            .hint("a run is a pure function of its key, so the numeric profiles (or platforms) of the caches differ; delete the entry that came from the machine whose `revtx-book numerics` does not match the book")
        })
        .collect()
}

/// Trains what `resolve` left to do (unless offline) and gathers every result by run.
pub fn execute(
    plans: Vec<RunPlan>,
    resolved: Resolved,
    opts: &RunOptions,
    diags: &mut Vec<Diagnostic>,
) -> Results {
    let Resolved {
        mut done,
        mut todo,
        report,
        ..
    } = resolved;
    let mut results = Results {
        report,
        ..Default::default()
    };
    if opts.offline && !todo.is_empty() {
        for (job, why) in &todo {
            diags.push(
                Diagnostic::error(
                    "offline",
                    Some(job.span.clone()),
                    format!(
                        "run `{}` seed {} is not cached and --offline forbids training",
                        job.run, job.seed
                    ),
                )
                .label(why.clone())
                .hint("build without --offline/--frozen to train it"),
            );
        }
        todo.clear();
    }
    // One engine process per cache key: a job whose key an earlier job trains shares
    // its result.
    let mut unique: Vec<Job> = Vec::new();
    for (job, why) in &todo {
        if let Some(u) = unique.iter().find(|u| u.key == job.key) {
            results.report.push(format!(
                "{} seed {}: same run as {} seed {}",
                job.run, job.seed, u.run, u.seed
            ));
        } else {
            results
                .report
                .push(format!("{} seed {}: ran ({why})", job.run, job.seed));
            unique.push(job.clone());
        }
    }
    let runs_dir = opts.cache_dir.join("runs");
    let ran = run_jobs(unique, &runs_dir, opts, diags);
    for (job, _) in &todo {
        if let Some((_, produced)) = ran.iter().find(|(j, _)| j.key == job.key) {
            done.push((job.clone(), produced.clone()));
        }
    }
    for p in &plans {
        let mut v: Vec<Produced> = Vec::new();
        for &seed in &p.seeds {
            if let Some((_, prod)) = done.iter().find(|(j, _)| j.run == p.id && j.seed == seed) {
                v.push(prod.clone());
            }
        }
        if v.len() == p.seeds.len() {
            results.by_run.insert(p.id.clone(), v);
        }
    }
    results.plans = plans;
    results
}

/// What the workers of [`run_jobs`] report.
type Outcomes = Vec<Result<(Job, Produced), Diagnostic>>;

/// Runs jobs on a pool of `opts.jobs` engine processes, one per job (callers give each
/// cache key once); the most expensive runs (by [`RunConfig::flop`]) start first.
///
/// # Panics
/// If a worker thread panicked while holding the queue (a bug, not bad input).
pub fn run_jobs(
    mut jobs: Vec<Job>,
    runs_dir: &Path,
    opts: &RunOptions,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(Job, Produced)> {
    if jobs.is_empty() {
        return vec![];
    }
    let _ = std::fs::create_dir_all(runs_dir);
    sweep_stale_requests(runs_dir, STALE_REQUEST);
    jobs.sort_by(|a, b| {
        b.config
            .flop()
            .total_cmp(&a.config.flop())
            .then_with(|| a.key.cmp(&b.key))
    });
    let queue = Arc::new(Mutex::new(std::collections::VecDeque::from(jobs)));
    let out: Arc<Mutex<Outcomes>> = Arc::new(Mutex::new(Vec::new()));
    let workers = opts.jobs.max(1);
    std::thread::scope(|s| {
        for _ in 0..workers {
            let (queue, out) = (queue.clone(), out.clone());
            s.spawn(move || loop {
                // After Ctrl-C only the runs in progress report; the rest never start.
                if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Some(job) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let r = run_one(&job, runs_dir, opts);
                out.lock().unwrap().push(r.map(|p| (job, p)));
            });
        }
    });
    let mut done = Vec::new();
    for r in Arc::try_unwrap(out).unwrap().into_inner().unwrap() {
        match r {
            Ok(x) => done.push(x),
            Err(d) => diags.push(d),
        }
    }
    done
}

/// Each engine's request is written to a directory of its own in the runs directory,
/// named with this prefix, and removed when the engine ends.
const REQUEST_PREFIX: &str = ".spec-";

/// Age past which a request directory is a leftover: an engine reads its request as it
/// starts, so after this long no process needs it, a concurrent build's included.
const STALE_REQUEST: Duration = Duration::from_mins(10);

/// The prefix of the directory an engine writes its entry into before renaming it into
/// place (`entry::write`): it exists for the few milliseconds of the write.
const PARTIAL_ENTRY_PREFIX: &str = ".tmp-run-";

/// Removes the request directories and half-written entries that a build killed outright
/// (`SIGKILL`, a lost machine) left behind; nothing else in the runs directory is touched.
fn sweep_stale_requests(runs_dir: &Path, older_than: Duration) {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let request = name.starts_with(REQUEST_PREFIX) || name.starts_with(PARTIAL_ENTRY_PREFIX);
        let age = e.metadata().and_then(|m| m.modified()).ok();
        let age = age.and_then(|t| t.elapsed().ok());
        if request && age.is_some_and(|a| a > older_than) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Runs one job in a child engine process with a time budget.
#[allow(clippy::result_large_err)] // one per run; boxing buys nothing here
fn run_one(job: &Job, runs_dir: &Path, opts: &RunOptions) -> Result<Produced, Diagnostic> {
    let fail = |msg: String| {
        Diagnostic::error(
            "run-failed",
            Some(job.span.clone()),
            format!("run `{}` seed {} failed", job.run, job.seed),
        )
        .label(msg)
    };
    let tmp = tempfile::Builder::new()
        .prefix(REQUEST_PREFIX)
        .tempdir_in(runs_dir)
        .map_err(|e| fail(format!("temp dir: {e}")))?;
    let spec_path = tmp.path().join("request.json");
    let request = ExecRequest {
        config: job.config.clone(),
        seed: job.seed,
        profile: opts.profile,
        label: format!("{} s{}", job.run, job.seed),
    };
    let text = serde_json::to_string(&request).map_err(|e| fail(e.to_string()))?;
    std::fs::write(&spec_path, text).map_err(|e| fail(e.to_string()))?;
    let dir = runs_dir.join(&job.key);
    let started = Instant::now();
    let mut child = Command::new(&opts.engine)
        .args(["exec", "--request"])
        .arg(&spec_path)
        .arg("--out")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            fail(format!(
                "cannot start the engine {}: {e}",
                opts.engine.display()
            ))
        })?;
    let _running = Running::new(child.id());
    let stderr = child.stderr.take().unwrap();
    let quiet = opts.quiet;
    let tail: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let t2 = tail.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !quiet {
                eprintln!("  {line}");
            }
            let mut t = t2.lock().unwrap();
            t.push(line);
            if t.len() > 5 {
                t.remove(0);
            }
        }
    });
    let status = loop {
        // Short waits, so that Ctrl-C is noticed while a long run trains.
        let left = opts.timeout.saturating_sub(started.elapsed());
        match child.wait_timeout(left.min(Duration::from_millis(100))) {
            Ok(Some(st)) => break st,
            Ok(None) if started.elapsed() >= opts.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return Err(fail(format!(
                    "exceeded its time budget of {} s and was stopped",
                    opts.timeout.as_secs()
                ))
                .hint("raise it with --run-timeout, or shorten the run"));
            }
            Ok(None) if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) => {
                // The engine got the same SIGINT; give it a moment to stop on its own.
                if child
                    .wait_timeout(Duration::from_millis(200))
                    .ok()
                    .flatten()
                    .is_none()
                {
                    let _ = child.kill();
                }
                let _ = child.wait();
                let _ = reader.join();
                return Err(fail("interrupted".into()));
            }
            Ok(None) => {}
            Err(e) => return Err(fail(e.to_string())),
        }
    };
    let _ = reader.join();
    if !status.success() {
        let tail = tail.lock().unwrap().join("\n");
        return Err(fail(format!("the engine exited with {status}")).note(tail));
    }
    let result = load_entry(&dir, job, opts.profile).map_err(fail)?;
    Ok(Produced {
        result,
        dir,
        cached: false,
    })
}

/// Where the engine binary is: `$REVTX_ENGINE`, else next to this executable.
pub fn engine_path() -> PathBuf {
    if let Some(p) = std::env::var_os("REVTX_ENGINE") {
        return PathBuf::from(p);
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("revtx-engine")))
        .unwrap_or_else(|| PathBuf::from("revtx-engine"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets a directory's modification time to `ago` before now.
    fn age(dir: &Path, ago: Duration) {
        let f = std::fs::File::open(dir).unwrap();
        f.set_modified(std::time::SystemTime::now() - ago).unwrap();
    }

    /// A killed build's request directories go once they are old; a fresh one (a
    /// concurrent build's engine may be starting) and cache entries of any age stay.
    #[test]
    fn stale_request_directories_are_swept_and_nothing_else() {
        let runs = tempfile::tempdir().unwrap();
        let (old, fresh, entry) = (".spec-old", ".spec-fresh", "0123456789abcdef01234567");
        let partial = ".tmp-run-abc";
        for name in [old, fresh, entry, partial] {
            std::fs::create_dir(runs.path().join(name)).unwrap();
            std::fs::write(runs.path().join(name).join("request.json"), "{}").unwrap();
        }
        age(&runs.path().join(old), Duration::from_hours(1));
        age(&runs.path().join(entry), Duration::from_hours(1));
        age(&runs.path().join(partial), Duration::from_hours(1));
        sweep_stale_requests(runs.path(), STALE_REQUEST);
        assert!(!runs.path().join(old).exists(), "a stale request stayed");
        assert!(
            !runs.path().join(partial).exists(),
            "a stale half-written entry stayed"
        );
        assert!(
            runs.path().join(fresh).exists(),
            "a fresh request was removed"
        );
        assert!(
            runs.path().join(entry).exists(),
            "a cache entry was removed"
        );
    }
}
