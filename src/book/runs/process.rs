//! One engine process per job: its request written, its time budget kept, its output
//! relayed, Ctrl-C passed on, and what a killed build left behind swept away.

use super::{load_entry, Job, Produced, RunOptions};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use revtx_spec::entry::{self, ExecRequest};
use std::collections::BTreeSet;
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

/// Each engine's request is written to a directory of its own in the runs directory,
/// named with this prefix, and removed when the engine ends.
const REQUEST_PREFIX: &str = ".spec-";

/// Age past which a request directory is a leftover: an engine reads its request as it
/// starts, so after this long no process needs it, a concurrent build's included.
pub(super) const STALE_REQUEST: Duration = Duration::from_mins(10);

/// The prefix of the directory an engine writes its entry into before renaming it into
/// place (`entry::write`): it exists for the few milliseconds of the write.
const PARTIAL_ENTRY_PREFIX: &str = entry::PARTIAL_PREFIX;

/// Removes the request directories and half-written entries that a build killed outright
/// (`SIGKILL`, a lost machine) left behind; nothing else in the runs directory is touched.
pub(super) fn sweep_stale_requests(runs_dir: &Path, older_than: Duration) {
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
pub(super) fn run_one(
    job: &Job,
    runs_dir: &Path,
    opts: &RunOptions,
) -> Result<Produced, Diagnostic> {
    let fail = |msg: String| {
        Diagnostic::error(
            Code::RunFailed,
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
    let (program, request) = request(job, opts).map_err(fail)?;
    let text = serde_json::to_string(&request).map_err(|e| fail(e.to_string()))?;
    std::fs::write(&spec_path, text).map_err(|e| fail(e.to_string()))?;
    let dir = runs_dir.join(&job.key);
    let started = Instant::now();
    let mut child = Command::new(&program)
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
                program.display()
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
        result: result.into(),
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

/// The program that computes `job` (the engine, or `revtx-intervene` for an intervening
/// run) and its request.
fn request(job: &Job, opts: &RunOptions) -> Result<(PathBuf, ExecRequest), String> {
    let trained = trained_entry(job, opts)?;
    let (program, code) = match &trained {
        None => (opts.engine.clone(), crate::ENGINE.code),
        Some(_) => (intervene_path(&opts.engine), crate::INTERVENE),
    };
    let request = ExecRequest {
        config: job.config.clone(),
        seed: job.seed,
        profile: opts.profile,
        label: format!("{} s{}", job.run, job.seed),
        engine: code.to_string(),
        trained,
    };
    Ok((program, request))
}

/// An intervening run's trained entry, with weights, from any cache (the build trained or
/// unpacked it before any intervention ran); `None` for any other run.
fn trained_entry(job: &Job, opts: &RunOptions) -> Result<Option<PathBuf>, String> {
    let Some(key) = &job.trained else {
        return Ok(None);
    };
    opts.caches()
        .iter()
        .map(|c| c.join("runs").join(key))
        .find(|d| entry::has_weights(d))
        .map(Some)
        .ok_or_else(|| {
            format!(
                "the trained run `{}` at seed {} has no entry with weights",
                job.config
                    .intervene
                    .as_ref()
                    .map_or("", |iv| iv.from.as_str()),
                job.seed
            )
        })
}

/// Where `revtx-intervene` is: `$REVTX_INTERVENE`, else beside the engine (both are
/// binaries of the workspace, built and installed together).
pub fn intervene_path(engine: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("REVTX_INTERVENE") {
        return PathBuf::from(p);
    }
    engine.with_file_name("revtx-intervene")
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
