//! `revtx-book plan`, `train --shard i/N` and `merge`: the book's training spread over
//! machines. Every run is a pure function of its cache key, so shards trained anywhere
//! (under the portable profile) merge into one cache and one build.

use super::Common;
use clap::Args;
use revtx_book::book::{self, diag, plan, runs};
use revtx_spec::entry;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    common: Common,
    /// Split the uncached runs into N shards, balanced by estimated cost.
    #[arg(long, default_value_t = 1)]
    shards: usize,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    /// Say why each run trains: the nearest cached entry and every way it differs (a
    /// config field and its two values, the seed, the engine, libtorch, the profile); for
    /// a cached run, the entry that serves it.
    #[arg(long, conflicts_with_all = ["json", "shards"])]
    why: bool,
    /// With `--why`: that run's seeds only.
    #[arg(requires = "why")]
    run: Option<String>,
}

#[derive(Args)]
pub struct TrainArgs {
    #[command(flatten)]
    common: Common,
    /// Which shard to train: `i/N`, 1-based.
    #[arg(long, value_parser = parse_shard)]
    shard: (usize, usize),
}

#[derive(Args)]
pub struct MergeArgs {
    /// The cache to merge into (created if missing).
    #[arg(long)]
    into: PathBuf,
    /// Caches (directories holding runs/) whose verified entries are copied.
    #[arg(required = true)]
    from: Vec<PathBuf>,
}

pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or("write the shard as i/N, e.g. 2/4")?;
    let (i, n): (usize, usize) = (
        i.trim()
            .parse()
            .map_err(|_| format!("`{i}` is not a shard number"))?,
        n.trim()
            .parse()
            .map_err(|_| format!("`{n}` is not a shard count"))?,
    );
    if n == 0 || i == 0 || i > n {
        return Err(format!("shard {i}/{n} does not exist: i runs from 1 to N"));
    }
    Ok((i, n))
}

fn emit(diags: &[diag::Diagnostic], sources: &diag::Sources) {
    diag::emit_stderr(diags, sources);
}

fn make_plan(
    common: &Common,
    shards: usize,
    estimate: plan::Estimate,
) -> Result<plan::Plan, ExitCode> {
    let opts = common.options(None, false);
    let mut sources = diag::Sources {
        root: opts.root.clone(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let p = plan::plan(
        &opts.root,
        &opts.runs,
        shards,
        estimate,
        &mut sources,
        &mut diags,
    );
    let errors = diags
        .iter()
        .filter(|d| d.severity == diag::Severity::Error)
        .count();
    emit(&diags, &sources);
    match p {
        Some(p) if errors == 0 => Ok(p),
        _ => Err(ExitCode::FAILURE),
    }
}

/// A text column as wide as its longest entry, and at least `least`.
fn column_width<'a>(entries: impl Iterator<Item = &'a str>, least: usize) -> usize {
    entries
        .map(|e| e.chars().count())
        .max()
        .unwrap_or(0)
        .max(least)
}

/// `revtx-book plan [--shards N] [--json]`.
pub fn plan(args: &PlanArgs) -> ExitCode {
    let p = match make_plan(&args.common, args.shards, plan::Estimate::Seconds) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    if args.why {
        return why(&args.common, &p, args.run.as_deref());
    }
    // The run column as wide as the longest name, so that no name pushes its row out.
    let w = column_width(p.runs.iter().map(|r| r.run.as_str()), 16);
    println!(
        "{:<w$} {:>4}  {:<24} {:>7} {:>9} {:>8}",
        "run", "seed", "key", "cached", "GFLOP", "est. s"
    );
    for r in &p.runs {
        println!(
            "{:<w$} {:>4}  {:<24} {:>7} {:>9.0} {:>8.0}",
            r.run,
            r.seed,
            r.key,
            if r.cached { "yes" } else { "no" },
            r.gflop,
            r.seconds
        );
    }
    // Two directives may share a run (`reference` is also seed 0 of `reference_seeds`):
    // count cache keys, as training does.
    let distinct = |cached: Option<bool>| {
        let keys: std::collections::HashSet<&str> = p
            .runs
            .iter()
            .filter(|r| cached.is_none_or(|c| r.cached == c))
            .map(|r| r.key.as_str())
            .collect();
        keys.len()
    };
    println!(
        "profile {}; speed {:.1} GFLOP/s per engine ({})",
        p.profile, p.gflops, p.calibration
    );
    println!(
        "{} of {} distinct runs to train: {:.0} s one after another; the longest single run {:.0} s",
        distinct(Some(false)),
        distinct(None),
        p.total_seconds,
        p.critical_seconds
    );
    // Each chapter's share: what an author adding runs to it sees growing.
    let cw = column_width(p.chapters.iter().map(|c| c.chapter.as_str()), 7);
    println!(
        "{:<cw$} {:>5} {:>9} {:>8} {:>11} {:>9}",
        "chapter", "runs", "to train", "est. s", "measured s", "measured"
    );
    for c in &p.chapters {
        println!(
            "{:<cw$} {:>5} {:>9} {:>8.0} {:>11.0} {:>9}",
            c.chapter,
            c.runs,
            c.to_train,
            c.estimated_seconds,
            c.measured_seconds,
            format!("{} of {}", c.measured, c.runs)
        );
    }
    if p.shards.len() > 1 {
        for s in &p.shards {
            println!(
                "shard {}/{}: {:>2} runs, {:>6.0} GFLOP, {:>5.0} s",
                s.index,
                p.shards.len(),
                s.jobs.len(),
                s.gflop,
                s.seconds
            );
        }
        // `+ 0.0`: an empty sum of floats is -0.0, which would print as "-0".
        #[allow(clippy::cast_precision_loss, reason = "a handful of shards")]
        let ideal = p.total_seconds / p.shards.len() as f64 + 0.0;
        println!(
            "slowest shard {:.0} s (ideal split {:.0} s, critical path {:.0} s)",
            p.makespan_seconds, ideal, p.critical_seconds
        );
    }
    ExitCode::SUCCESS
}

/// `revtx-book plan --why [RUN]`: each (run, seed), cached or not, and why.
fn why(common: &Common, p: &plan::Plan, only: Option<&str>) -> ExitCode {
    let opts = common.options(None, false);
    let runs: Vec<&plan::Planned> = p
        .runs
        .iter()
        .filter(|r| only.is_none_or(|id| r.run == id))
        .collect();
    if let (Some(id), true) = (only, runs.is_empty()) {
        let declared: Vec<&str> = p.runs.iter().map(|r| r.run.as_str()).collect();
        eprintln!(
            "error[unknown-run]: the book declares no run `{id}`\n  = help: declared: {}",
            declared.join(", ")
        );
        return ExitCode::FAILURE;
    }
    let entries = book::why::Entries::read(&opts.runs.caches());
    for r in runs {
        let label = format!("{} seed {}", r.run, r.seed);
        if r.cached {
            let dir = opts
                .runs
                .caches()
                .into_iter()
                .map(|c| c.join("runs").join(&r.key))
                .find(|d| d.is_dir())
                .unwrap_or_default();
            println!(
                "{label}: cached, served by {}",
                book::why::shown(&dir, &opts.root)
            );
            continue;
        }
        match entries.nearest(&r.job, opts.runs.profile) {
            None => println!("{label}: trains: the caches hold no run at all"),
            Some(n) => {
                println!(
                    "{label}: trains: the nearest cached entry, {}, differs in {}:",
                    book::why::shown(&n.dir, &opts.root),
                    n.differences.len()
                );
                for d in &n.differences {
                    println!("    {}: {} there, {} here", d.what, d.cached, d.wanted);
                }
            }
        }
    }
    ExitCode::SUCCESS
}

/// `revtx-book train --shard i/N`: trains exactly shard i's runs into the first cache.
pub fn train(args: &TrainArgs) -> ExitCode {
    let (i, n) = args.shard;
    // The same assignment as `plan` computed: it depends on FLOPs only.
    let p = match make_plan(&args.common, n, plan::Estimate::FlopsOnly) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let shard = &p.shards[i - 1];
    if shard.jobs.is_empty() {
        println!("shard {i}/{n}: nothing to train");
        return ExitCode::SUCCESS;
    }
    let opts = args.common.options(None, false);
    let mut sources = diag::Sources {
        root: opts.root.clone(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let gate = book::numerics::gate(
        &opts.root,
        &opts.runs.engine,
        opts.runs.profile,
        (opts.ignore_numerics, false),
        &mut sources,
        &mut diags,
    );
    eprintln!("{}", gate.summary);
    if !gate.proceed {
        emit(&diags, &sources);
        return ExitCode::FAILURE;
    }
    let jobs: Vec<runs::Job> = shard
        .jobs
        .iter()
        .filter_map(|sj| {
            p.runs
                .iter()
                .find(|r| r.key == sj.key)
                .map(|r| r.job.clone())
        })
        .collect();
    println!(
        "shard {i}/{n}: training {} runs ({:.0} GFLOP) into {}",
        jobs.len(),
        shard.gflop,
        opts.runs.cache_dir.display()
    );
    let started = Instant::now();
    let done = runs::run_jobs(
        jobs,
        &opts.runs.cache_dir.join("runs"),
        &opts.runs,
        &mut diags,
    );
    for (job, produced) in &done {
        println!(
            "wrote {} ({} seed {}, {:.1} s)",
            produced.dir.display(),
            job.run,
            job.seed,
            produced.result.env.train_seconds
        );
    }
    emit(&diags, &sources);
    let failed = diags
        .iter()
        .filter(|d| d.severity == diag::Severity::Error)
        .count();
    println!(
        "shard {i}/{n}: {} written, {failed} failed, in {:.1} s",
        done.len(),
        started.elapsed().as_secs_f64()
    );
    if failed > 0 || done.len() < shard.jobs.len() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `revtx-book merge --into DIR SRC...`.
pub fn merge(args: &MergeArgs) -> ExitCode {
    match entry::merge(&args.into, &args.from) {
        Ok(m) => {
            println!(
                "merged into {}: {} copied, {} already there",
                args.into.display(),
                m.copied,
                m.already
            );
            for s in &m.skipped {
                println!("skipped {} (does not verify)", s.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error[cache-conflict]: {e}");
            ExitCode::FAILURE
        }
    }
}
