//! Planning a book's training for one machine or many: every (run, seed) with its cache
//! key, whether a cache holds it, its estimated cost, and shards balanced by that cost.
//!
//! Cost is FLOPs (`RunConfig::flop`) divided by a speed measured on this engine: the
//! median GFLOP/s of the cached training runs, or, with none cached, a short engine bench.

use super::diag::{Diagnostic, Sources};
use super::parse;
use super::runs::{self, Job, RunOptions};
use serde::Serialize;
use std::path::Path;

/// One (run, seed) of the book.
#[derive(Clone, Debug, Serialize)]
pub struct Planned {
    pub run: String,
    pub seed: u64,
    pub key: String,
    pub cached: bool,
    /// Floating-point operations of its training (0 for probes).
    pub gflop: f64,
    /// Estimated training seconds on one core of this machine.
    pub seconds: f64,
    #[serde(skip)]
    pub job: Job,
}

/// A shard: the uncached jobs one machine trains.
#[derive(Clone, Debug, Serialize)]
pub struct Shard {
    /// 1-based, as in `--shard 2/4`.
    pub index: usize,
    pub jobs: Vec<ShardJob>,
    /// What the assignment balances: FLOPs, the same on every machine.
    pub gflop: f64,
    /// Estimated seconds on this machine.
    pub seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ShardJob {
    pub run: String,
    pub seed: u64,
    pub key: String,
    pub seconds: f64,
}

/// One chapter's training: the distinct (config, seed)s it declares (a key shared with an
/// earlier chapter counts there), their estimated cost on this machine, and what the cached
/// ones took when they were trained.
#[derive(Clone, Debug, Serialize)]
pub struct ChapterCost {
    /// The chapter's file name.
    pub chapter: String,
    pub runs: usize,
    pub to_train: usize,
    /// All of its runs, one after another, on one core of this machine.
    pub estimated_seconds: f64,
    /// The training seconds the cached ones recorded, and how many of its runs that covers.
    pub measured_seconds: f64,
    pub measured: usize,
}

/// The whole plan.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub profile: String,
    /// GFLOP/s one engine process trains at here, and where that figure comes from.
    pub gflops: f64,
    pub calibration: String,
    pub runs: Vec<Planned>,
    pub shards: Vec<Shard>,
    /// Seconds to train everything uncached one run after another.
    pub total_seconds: f64,
    /// The longest single uncached run: no number of shards finishes sooner.
    pub critical_seconds: f64,
    /// The slowest shard's total.
    pub makespan_seconds: f64,
    /// Each chapter's share, in book order.
    pub chapters: Vec<ChapterCost>,
}

/// Whether a plan estimates seconds. The assignment to shards never needs it (it balances
/// FLOPs), so a train job skips the calibration, which may run an engine bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimate {
    Seconds,
    FlopsOnly,
}

/// Plans the book at `opts.root`: parse, plan the runs, look them up in the caches,
/// estimate and (for `shards > 0`) balance.
pub fn plan(
    root: &Path,
    opts: &RunOptions,
    shards: usize,
    estimate: Estimate,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Option<Plan> {
    let book = parse::load(root, sources, diags)?;
    let plans = runs::plan(&book, sources, diags);
    // What the store keeps counts as cached: a build takes it from there.
    let mut opts = opts.clone();
    opts.store = book.store.as_ref().map(|(s, _)| s.clone());
    let opts = &opts;
    let resolved = runs::resolve(&plans, opts);
    if !resolved.conflicts.is_empty() {
        diags.extend(runs::conflict_diagnostics(&resolved));
        return None;
    }
    let cached: std::collections::HashSet<&str> =
        resolved.done.iter().map(|(j, _)| j.key.as_str()).collect();
    let measured: std::collections::HashMap<&str, f64> = resolved
        .done
        .iter()
        .map(|(j, p)| (j.key.as_str(), p.result.env.train_seconds))
        .collect();
    let (gflops, calibration) = match estimate {
        Estimate::Seconds => calibrate(&resolved, &opts.engine),
        Estimate::FlopsOnly => (f64::NAN, "not estimated".into()),
    };
    let mut out: Vec<Planned> = runs::jobs(&plans, opts.profile)
        .into_iter()
        .map(|job| {
            let gflop = job.config.flop() / 1e9;
            Planned {
                run: job.run.clone(),
                seed: job.seed,
                key: job.key.clone(),
                cached: cached.contains(job.key.as_str()),
                seconds: gflop / gflops,
                gflop,
                job,
            }
        })
        .collect();
    // A job planned twice (one config and seed under two run ids) trains once.
    let mut seen = std::collections::HashSet::new();
    let todo: Vec<&Planned> = out
        .iter()
        .filter(|p| !p.cached && seen.insert(p.key.clone()))
        .collect();
    // A fold from +0.0, not `sum()`, whose empty sum is -0.0 ("-0 s" for a cached plan).
    let total_seconds = todo.iter().map(|p| p.seconds).fold(0.0, |a, b| a + b);
    let critical_seconds = todo.iter().map(|p| p.seconds).fold(0.0, f64::max);
    let shards = balance(&todo, shards.max(1));
    let makespan_seconds = shards.iter().map(|s| s.seconds).fold(0.0, f64::max);
    out.sort_by_key(|p| (p.job.span.range.start, p.seed));
    let chapters = chapter_costs(&book, sources, &out, &measured);
    Some(Plan {
        profile: opts.profile.id().into(),
        gflops,
        calibration,
        runs: out,
        shards,
        total_seconds,
        critical_seconds,
        makespan_seconds,
        chapters,
    })
}

/// Each chapter's runs and their costs, in book order; a key counts once, in the first
/// chapter that declares it.
fn chapter_costs(
    book: &parse::Book,
    sources: &Sources,
    runs: &[Planned],
    measured: &std::collections::HashMap<&str, f64>,
) -> Vec<ChapterCost> {
    let mut seen = std::collections::HashSet::new();
    book.chapters
        .iter()
        .map(|ch| {
            let mut c = ChapterCost {
                chapter: sources
                    .path(ch.file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                runs: 0,
                to_train: 0,
                estimated_seconds: 0.0,
                measured_seconds: 0.0,
                measured: 0,
            };
            let here = runs
                .iter()
                .filter(|p| p.job.span.file == ch.file && seen.insert(p.key.clone()));
            for p in here {
                c.runs += 1;
                c.to_train += usize::from(!p.cached);
                c.estimated_seconds += p.seconds;
                if let Some(s) = measured.get(p.key.as_str()) {
                    c.measured_seconds += s;
                    c.measured += 1;
                }
            }
            c
        })
        .collect()
}

/// Longest first, each to the least loaded shard (ties: the lowest index). It balances
/// FLOPs, not this machine's seconds: every train job recomputes the plan on its own
/// runner, and all of them must arrive at the same assignment.
fn balance(todo: &[&Planned], n: usize) -> Vec<Shard> {
    let mut shards: Vec<Shard> = (1..=n)
        .map(|index| Shard {
            index,
            jobs: Vec::new(),
            gflop: 0.0,
            seconds: 0.0,
        })
        .collect();
    let mut order: Vec<&&Planned> = todo.iter().collect();
    order.sort_by(|a, b| b.gflop.total_cmp(&a.gflop).then(a.key.cmp(&b.key)));
    for p in order {
        let s = shards
            .iter_mut()
            .min_by(|a, b| a.gflop.total_cmp(&b.gflop).then(a.index.cmp(&b.index)))
            .expect("at least one shard");
        s.gflop += p.gflop;
        s.seconds += p.seconds;
        s.jobs.push(ShardJob {
            run: p.run.clone(),
            seed: p.seed,
            key: p.key.clone(),
            seconds: p.seconds,
        });
    }
    shards
}

/// GFLOP/s of one engine process here: the median over cached training runs, else a
/// 40-step engine bench, else a fixed guess (said so).
fn calibrate(resolved: &runs::Resolved, engine: &Path) -> (f64, String) {
    let mut rates: Vec<f64> = resolved
        .done
        .iter()
        .filter(|(j, p)| j.config.flop() > 0.0 && p.result.env.train_seconds > 0.0)
        .map(|(j, p)| j.config.flop() / 1e9 / p.result.env.train_seconds)
        .collect();
    if !rates.is_empty() {
        rates.sort_by(f64::total_cmp);
        let n = rates.len();
        return (rates[n / 2], format!("median of {n} cached training runs"));
    }
    let bench = std::process::Command::new(engine)
        .args(["bench", "--steps", "40"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|v| v["training_gflops"].as_f64());
    match bench {
        Some(g) if g > 0.0 => (g, "a 40-step engine bench on this machine".into()),
        _ => (
            20.0,
            "a fixed guess (no cached run, and the engine bench failed)".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(key: &str, seconds: f64) -> Planned {
        let config = revtx_spec::experiments::RunConfig::reference();
        Planned {
            run: key.into(),
            seed: 0,
            key: key.into(),
            cached: false,
            gflop: seconds * 30.0,
            seconds,
            job: Job {
                run: key.into(),
                seed: 0,
                config,
                key: key.into(),
                span: super::super::diag::Span {
                    file: 0,
                    range: 0..0,
                },
                weights: false,
                trained: None,
            },
        }
    }

    #[test]
    fn longest_first_to_the_least_loaded() {
        let ps: Vec<Planned> = [("a", 10.0), ("b", 7.0), ("c", 6.0), ("d", 5.0), ("e", 2.0)]
            .iter()
            .map(|(k, s)| planned(k, *s))
            .collect();
        let refs: Vec<&Planned> = ps.iter().collect();
        let s = balance(&refs, 2);
        assert_eq!(
            s[0].jobs.iter().map(|j| j.key.as_str()).collect::<Vec<_>>(),
            ["a", "d"]
        );
        assert_eq!(
            s[1].jobs.iter().map(|j| j.key.as_str()).collect::<Vec<_>>(),
            ["b", "c", "e"]
        );
        assert_eq!((s[0].seconds, s[1].seconds), (15.0, 15.0));
        assert_eq!((s[0].gflop, s[1].gflop), (450.0, 450.0));
        // Another runner's calibration (here, twice as fast) assigns the same runs.
        let faster: Vec<Planned> = ps
            .iter()
            .map(|p| Planned {
                seconds: p.seconds / 2.0,
                ..p.clone()
            })
            .collect();
        let f = balance(&faster.iter().collect::<Vec<_>>(), 2);
        let keys = |s: &[Shard]| -> Vec<Vec<String>> {
            s.iter()
                .map(|s| s.jobs.iter().map(|j| j.key.clone()).collect())
                .collect()
        };
        assert_eq!(keys(&s), keys(&f));
        let empty = balance(&refs[..0], 3);
        assert!(empty.iter().all(|s| s.jobs.is_empty()));
    }
}
