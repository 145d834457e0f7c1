//! What the run caches already hold: every job looked up by its key, entries verified,
//! jobs that share a key decided together, and conflicts between caches reported.

use super::{jobs, Job, Produced, RunOptions, RunPlan};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::store::{Store, StoreError};
use revtx_spec::entry::{self};
use revtx_spec::profile::Profile;
use revtx_spec::result::RunResult;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
type Verified =
    std::collections::HashMap<(Vec<PathBuf>, String), (Stamp, PathBuf, std::sync::Arc<RunResult>)>;
static VERIFIED: std::sync::LazyLock<Mutex<Verified>> = std::sync::LazyLock::new(Mutex::default);

/// `entry::find`, remembered for the life of the process when `remember_verified` is set
/// (see `VERIFIED`).
fn find_remembered(
    caches: &[PathBuf],
    key: &str,
    job: &Job,
    opts: &RunOptions,
) -> Result<(PathBuf, std::sync::Arc<RunResult>), entry::FindError> {
    if !opts.remember_verified {
        return entry::find(caches, key, &job.config, job.seed, opts.profile)
            .map(|(dir, r)| (dir, r.into()));
    }
    let id = (caches.to_vec(), key.to_string());
    let now = stamp(caches, key);
    if let Some((seen, dir, result)) = VERIFIED.lock().unwrap().get(&id) {
        if *seen == now && result.config == job.config && result.seed == job.seed {
            return Ok((dir.clone(), std::sync::Arc::clone(result)));
        }
    }
    let found = entry::find(caches, key, &job.config, job.seed, opts.profile)
        .map(|(dir, r)| (dir, std::sync::Arc::new(r)))?;
    // Stamped before reading: a file changed while it was read shows up next time.
    VERIFIED
        .lock()
        .unwrap()
        .insert(id, (now, found.0.clone(), std::sync::Arc::clone(&found.1)));
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
    /// Stored results that do not verify: refused unread, one error per key.
    pub corrupt: Vec<(Job, String)>,
    /// How many entries came from the store (unpacked into the cache).
    pub from_store: usize,
}

impl RunOptions {
    /// Every cache to read, the writable one first.
    pub fn caches(&self) -> Vec<PathBuf> {
        std::iter::once(self.cache_dir.clone())
            .chain(self.extra_caches.iter().cloned())
            .collect()
    }
}

/// What looking a key up found.
enum Looked {
    Found(PathBuf, std::sync::Arc<RunResult>, bool),
    Missing(String),
    Conflict(entry::Conflict),
    Corrupt(String),
}

/// Looks every planned (run, seed) up in the caches, then in the store (unpacking what it
/// holds into the cache). Jobs that share a cache key (one config and seed declared under
/// two run ids) are decided together: cached for all, or trained once for all. An entry
/// without weights does not do for a job whose weights something reads.
pub fn resolve(plans: &[RunPlan], opts: &RunOptions) -> Resolved {
    let caches = opts.caches();
    let mut r = Resolved {
        done: Vec::new(),
        todo: Vec::new(),
        report: Vec::new(),
        conflicts: Vec::new(),
        corrupt: Vec::new(),
        from_store: 0,
    };
    let all = jobs(plans, opts.profile);
    let mut keys: Vec<&str> = Vec::new();
    for job in &all {
        if !keys.contains(&job.key.as_str()) {
            keys.push(&job.key);
        }
    }
    let stored = opts.store.as_ref().map(Store::keys).unwrap_or_default();
    // Reading and verifying an entry (its result parsed, its weights hashed) is most of a
    // warm build's time with the runs: the keys are looked up on every core.
    let looked_up = lookup_all(&keys, |key| {
        let same: Vec<&Job> = all.iter().filter(|j| j.key == key).collect();
        let first = same[0];
        let forced = opts.rerun_all || same.iter().any(|j| opts.rerun.contains(&j.run));
        if forced {
            return Looked::Missing("--rerun asked for it".into());
        }
        let why = match find_remembered(&caches, key, first, opts) {
            Ok((dir, result)) => return Looked::Found(dir, result, false),
            Err(entry::FindError::Conflict(c)) => return Looked::Conflict(c),
            Err(entry::FindError::Invalid(why)) => why,
        };
        let Some(store) = opts.store.as_ref().filter(|_| stored.contains(key)) else {
            return Looked::Missing(why);
        };
        let runs = opts.cache_dir.join("runs");
        match store.unpack(key, &runs) {
            Ok(dir) => match load_entry(&dir, first, opts.profile) {
                Ok(result) => Looked::Found(dir, std::sync::Arc::new(result), true),
                Err(e) => Looked::Corrupt(format!(
                    "{}: it verifies but is not this run's result ({e})",
                    store.path(key).display()
                )),
            },
            Err(StoreError::Corrupt(e)) => Looked::Corrupt(e),
            Err(e) => Looked::Missing(e.to_string()),
        }
    });
    for (key, found) in keys.into_iter().zip(looked_up) {
        let same: Vec<&Job> = all.iter().filter(|j| j.key == key).collect();
        let first = same[0];
        match found {
            Looked::Found(dir, _, _)
                if same.iter().any(|j| j.weights) && !entry::has_weights(&dir) =>
            {
                // Kept without weights, and something now reads them: train it again. The
                // weightless entry goes, or the new one would be kept out as a duplicate.
                if dir.starts_with(&opts.cache_dir) {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                let why =
                    "its weights are read (a widget, figure or table), and its entry keeps none";
                r.todo
                    .extend(same.into_iter().map(|j| (j.clone(), why.to_string())));
            }
            Looked::Found(dir, result, from_store) => {
                r.from_store += usize::from(from_store);
                for job in same {
                    let whence = if from_store {
                        "from the store"
                    } else {
                        "cached"
                    };
                    r.report
                        .push(format!("{} seed {}: {whence}", job.run, job.seed));
                    let produced = Produced {
                        result: std::sync::Arc::clone(&result),
                        dir: dir.clone(),
                        cached: true,
                    };
                    r.done.push((job.clone(), produced));
                }
            }
            Looked::Missing(why) => {
                r.todo
                    .extend(same.into_iter().map(|j| (j.clone(), why.clone())));
            }
            Looked::Conflict(c) => r.conflicts.push((first.clone(), c)),
            Looked::Corrupt(why) => r.corrupt.push((first.clone(), why)),
        }
    }
    r
}

/// `find(key)` for every key, on as many threads as the machine has cores, in the keys'
/// order.
fn lookup_all<T: Send>(keys: &[&str], find: impl Fn(&str) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(keys.len())
        .max(1);
    if threads == 1 {
        return keys.iter().map(|k| find(k)).collect();
    }
    let chunk = keys.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = keys
            .chunks(chunk)
            .map(|part| s.spawn(|| part.iter().map(|k| find(k)).collect::<Vec<T>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a cache lookup thread panicked"))
            .collect()
    })
}

/// One error per stored result that does not verify: refused unread, never trained over.
pub fn corrupt_diagnostics(resolved: &Resolved) -> Vec<Diagnostic> {
    resolved
        .corrupt
        .iter()
        .map(|(job, why)| {
            Diagnostic::error(
                Code::StoreCorrupt,
                Some(job.span.clone()),
                format!("run `{}` seed {}: its stored result is refused", job.run, job.seed),
            )
            .note(why.clone())
            .hint("restore the file from git (`git checkout -- <file>`), or delete it to train the run again")
        })
        .collect()
}

/// One diagnostic per conflicting key: the caches were filled under different numerics.
pub fn conflict_diagnostics(resolved: &Resolved) -> Vec<Diagnostic> {
    resolved
        .conflicts
        .iter()
        .map(|(job, c)| {
            Diagnostic::error(
                Code::CacheConflict,
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
