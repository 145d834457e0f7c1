//! `revtx-book run ID [--seeds S,…] [--root DIR]`: trains one run the book declares (not
//! only the engine's presets) into the book's cache, at its own seeds or the ones given;
//! `show` then prints what it produced. Anything else is the engine's own `run`.

use clap::Parser;
use revtx_book::book::{diag, numerics, parse, runs};
use std::process::ExitCode;

/// `run ID` with the options of a build: a declared run to train.
#[derive(Parser)]
#[command(name = "revtx-book run")]
struct Request {
    #[command(flatten)]
    common: super::Common,
    /// Train at these seeds instead of the run's own (`--seeds 5,6,7`).
    #[arg(long, value_delimiter = ',')]
    seeds: Option<Vec<u64>>,
    /// The run, as the book declares it.
    id: String,
}

/// `Some(exit code)` when `args` name a run the book at `--root` (default `.`) declares;
/// `None` to hand the arguments to the engine (its presets, `--list`).
pub fn declared(args: &[String]) -> Option<ExitCode> {
    let req =
        Request::try_parse_from(std::iter::once("run".to_string()).chain(args.iter().cloned()))
            .ok()?;
    if !req.common.root.join("book/book.toml").is_file() {
        return None;
    }
    let opts = req.common.options(None, false);
    let mut sources = diag::Sources {
        root: opts.root.clone(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let book = parse::load(&opts.root, &mut sources, &mut diags)?;
    let plans = runs::plan(&book, &sources, &mut diags);
    let mut plan = plans.into_iter().find(|p| p.id == req.id)?;
    if let Some(seeds) = req.seeds {
        plan.seeds = seeds;
    }
    let resolved = runs::resolve(std::slice::from_ref(&plan), &opts.runs);
    for (job, p) in &resolved.done {
        println!(
            "{} seed {}: cached, {}",
            job.run,
            job.seed,
            revtx_book::book::why::shown(&p.dir, &opts.root)
        );
    }
    let todo: Vec<runs::Job> = resolved.todo.into_iter().map(|(j, _)| j).collect();
    if !todo.is_empty() {
        let gate = numerics::gate(
            &opts.root,
            &opts.runs.engine,
            opts.runs.profile,
            (false, false),
            &mut sources,
            &mut diags,
        );
        eprintln!("{}", gate.summary);
        if !gate.proceed {
            diag::emit_stderr(&diags, &sources);
            return Some(ExitCode::FAILURE);
        }
        let wanted = todo.len();
        let done = runs::run_jobs(
            todo,
            &opts.runs.cache_dir.join("runs"),
            &opts.runs,
            &mut diags,
        );
        for (job, p) in &done {
            println!(
                "{} seed {}: trained in {:.1} s, {}",
                job.run,
                job.seed,
                p.result.env.train_seconds,
                revtx_book::book::why::shown(&p.dir, &opts.root)
            );
        }
        diag::emit_stderr(&diags, &sources);
        if done.len() < wanted {
            return Some(ExitCode::FAILURE);
        }
    }
    println!("`revtx-book show {}` prints what it produced", req.id);
    Some(ExitCode::SUCCESS)
}
