//! Trains what the caches lack, a few engine processes at a time, longest first, and
//! gathers every result by run.

use super::process::{run_one, sweep_stale_requests, STALE_REQUEST};
use super::{Job, Produced, Resolved, Results, RunOptions, RunPlan, INTERRUPTED};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::store::Store;
use std::path::Path;
use std::sync::{Arc, Mutex};

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
                    Code::Offline,
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
    // Interventions read trained weights: they run once every training run has.
    let (intervening, training): (Vec<Job>, Vec<Job>) =
        unique.into_iter().partition(|j| j.trained.is_some());
    let mut ran = run_jobs(training, &runs_dir, opts, diags);
    ran.extend(run_jobs(intervening, &runs_dir, opts, diags));
    for (job, _) in &todo {
        if let Some((_, produced)) = ran.iter().find(|(j, _)| j.key == job.key) {
            done.push((job.clone(), produced.clone()));
        }
    }
    if let Some(store) = opts.store.as_ref().filter(|_| opts.store_write) {
        keep(store, &done, &mut results.report, diags);
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

/// Writes into the store every result it lacks, with its weights where something reads
/// them (and without them where nothing does any more).
fn keep(
    store: &Store,
    done: &[(Job, Produced)],
    report: &mut Vec<String>,
    diags: &mut Vec<Diagnostic>,
) {
    let mut seen = std::collections::HashSet::new();
    let (mut kept, mut bytes) = (0, 0);
    for (job, produced) in done {
        if !seen.insert(job.key.as_str()) {
            continue;
        }
        let weights = done.iter().any(|(j, _)| j.key == job.key && j.weights);
        if store.has_weights(&job.key) == Some(weights) {
            continue;
        }
        match store.put(&job.key, &produced.dir, weights) {
            Ok(n) => {
                kept += 1;
                bytes += n;
            }
            Err(e) => diags.push(
                Diagnostic::error(
                    Code::Io,
                    Some(job.span.clone()),
                    format!(
                        "run `{}` seed {}: cannot keep its result in the store",
                        job.run, job.seed
                    ),
                )
                .label(e.to_string()),
            ),
        }
    }
    if kept > 0 {
        report.push(format!(
            "store: kept {kept} result(s), {bytes} bytes, in {}",
            store.dir.display()
        ));
    }
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
    let workers = workers(opts.jobs, jobs.len());
    let queue = Arc::new(Mutex::new(std::collections::VecDeque::from(jobs)));
    let out: Arc<Mutex<Outcomes>> = Arc::new(Mutex::new(Vec::new()));
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

/// How many workers train `n` jobs when `--jobs` asks for `asked`: never more than there
/// are jobs (`--jobs 1000000` would start a million threads), never none.
fn workers(asked: usize, n: usize) -> usize {
    asked.min(n).max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn workers_are_capped_at_the_jobs() {
        assert_eq!(super::workers(1_000_000, 3), 3);
        assert_eq!(super::workers(2, 33), 2);
        assert_eq!(super::workers(0, 5), 1);
        assert_eq!(super::workers(4, 0), 1);
    }
}
