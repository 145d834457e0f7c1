//! `revtx-book run ID [--seeds S,…] [--root DIR]`: trains one run the book declares (not
//! only the engine's presets) into the book's cache, at its own seeds or the ones given;
//! `show` then prints what it produced. `--list` and a preset's name outside a book are
//! the engine's own `run`.

use clap::{CommandFactory, Parser};
use revtx_book::book::{diag, numerics, runs};
use revtx_spec::experiments::{RunConfig, PRESETS};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `run ID` with the options of a build: a declared run to train.
#[derive(Parser)]
#[command(
    name = "revtx-book run",
    about = "Train one run the book declares, into the book's cache (at its own seeds, or --seeds)",
    after_help = "Without a book at --root, or with --list, `run` is the engine's: `revtx-book run --list` \
                  lists its presets, and `revtx-book run PRESET [--seed N | --seeds 0..5] [--steps N] [--json]` \
                  trains one and prints its result."
)]
struct Request {
    #[command(flatten)]
    common: super::Common,
    /// Train at these seeds instead of the run's own (`--seeds 5,6,7`), each once.
    #[arg(long, value_delimiter = ',', value_parser = seed)]
    seeds: Option<Vec<u64>>,
    /// The run, as the book declares it.
    id: String,
}

/// One seed of `--seeds`.
fn seed(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a seed (seeds are whole numbers from 0)"))
}

/// What `run` does with its arguments.
pub enum Route {
    /// Hand them to the engine's `run` (its presets, `--list`).
    Engine,
    /// Done here, with this exit code.
    Done(ExitCode),
}

/// The value of `--root` in `args`, if given.
fn root_arg(args: &[String]) -> Option<PathBuf> {
    args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--root=")
            .map(PathBuf::from)
            .or_else(|| (a == "--root").then(|| args.get(i + 1).map(PathBuf::from))?)
    })
}

/// Routes `run`'s arguments: help, the engine's `run`, or a run the book declares.
pub fn route(args: &[String]) -> Route {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{}", Request::command().render_long_help());
        return Route::Done(ExitCode::SUCCESS);
    }
    // Nothing asked, or the list: the engine's presets.
    if args.is_empty() || args.iter().any(|a| a == "--list") {
        return Route::Engine;
    }
    let given_root = root_arg(args);
    let root = given_root.clone().unwrap_or_else(|| PathBuf::from("."));
    let book_here = root.join("book/book.toml").is_file();
    let req = match Request::try_parse_from(
        std::iter::once("run".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(req) => req,
        Err(e) => {
            // Outside a book, or a preset with the engine's options (`--seed`, `--steps`,
            // `--seeds 0..5`): the engine's `run`, which says what it cannot take.
            let preset = args
                .iter()
                .find(|a| !a.starts_with('-'))
                .is_some_and(|a| RunConfig::preset(a).is_some());
            if !book_here && given_root.is_none() || preset {
                return Route::Engine;
            }
            let _ = e.print();
            return Route::Done(ExitCode::from(2));
        }
    };
    if !book_here {
        if given_root.is_none() && RunConfig::preset(&req.id).is_some() {
            return Route::Engine;
        }
        eprintln!(
            "error: there is no book at {} (no book/book.toml there), so no run `{}` to train",
            root.display(),
            req.id
        );
        eprintln!("  = hint: give --root the project's folder; `revtx-book run --list` lists the engine's presets");
        return Route::Done(ExitCode::from(2));
    }
    if let Some(seeds) = &req.seeds {
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = seeds.iter().find(|s| !seen.insert(**s)) {
            eprintln!("error: --seeds lists seed {twice} twice: each seed is one training");
            eprintln!(
                "  = hint: list each seed once, e.g. `--seeds {}`",
                seen.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            );
            return Route::Done(ExitCode::from(2));
        }
    }
    train(req, &root, given_root.is_some())
}

/// Trains `req`'s run of the book at `root`; a preset the book does not declare is the
/// engine's, unless `--root` was given (which the engine has no use for).
fn train(req: Request, root: &Path, root_given: bool) -> Route {
    let opts = req.common.options(None, false);
    let Some(super::Planned {
        mut sources,
        plans,
        mut diags,
        ..
    }) = super::planned(&opts.root)
    else {
        return Route::Done(ExitCode::FAILURE);
    };
    let declared: Vec<String> = plans.iter().map(|p| p.id.clone()).collect();
    let Some(mut plan) = plans.into_iter().find(|p| p.id == req.id) else {
        if RunConfig::preset(&req.id).is_some() && !root_given {
            return Route::Engine;
        }
        eprintln!(
            "error: the book at {} declares no run `{}`",
            root.display(),
            req.id
        );
        eprintln!(
            "  = the book's runs: {}",
            if declared.is_empty() {
                "none".into()
            } else {
                declared.join(", ")
            }
        );
        eprintln!(
            "  = the engine's presets: {}",
            PRESETS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Route::Done(ExitCode::from(2));
    };
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
            return Route::Done(ExitCode::FAILURE);
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
            return Route::Done(ExitCode::FAILURE);
        }
    }
    println!("`revtx-book show {}` prints what it produced", req.id);
    Route::Done(ExitCode::SUCCESS)
}
