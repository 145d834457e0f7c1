//! `revtx-book eval 'EXPR'`: an expression's value against the runs the cache and the store
//! hold (nothing trains), with the diagnostics a chapter would get; for an expression that
//! reads an ensemble, its value with each seed alone and with each left out.

use super::Common;
use clap::Args;
use revtx_book::book::{diag, expr, loso, runs};
use std::process::ExitCode;

#[derive(Args)]
pub struct EvalArgs {
    #[command(flatten)]
    common: Common,
    /// The expression, as a chapter writes it inside `{=…}` (`mean(reference_seeds.runs |
    /// pluck('train.test.accuracy'))`).
    expr: String,
}

pub fn eval(args: &EvalArgs) -> ExitCode {
    let mut opts = args.common.options(None, false);
    opts.runs.offline = true;
    let Some(super::Planned {
        mut sources,
        book,
        plans,
        mut diags,
    }) = super::planned(&opts.root)
    else {
        return ExitCode::FAILURE;
    };
    if diags.iter().any(|d| d.severity == diag::Severity::Error) {
        diag::emit_stderr(&diags, &sources);
        return ExitCode::FAILURE;
    }
    if let Some((store, _)) = &book.store {
        opts.runs.store = Some(store.clone());
    }
    let resolved = runs::resolve(&plans, &opts.runs);
    // Only a run the expression names must be there; the others may be missing.
    let named: Vec<&str> = expr::words(&args.expr).collect();
    let missing: Vec<String> = resolved
        .todo
        .iter()
        .filter(|(j, _)| named.contains(&j.run.as_str()))
        .map(|(j, _)| format!("{} seed {}", j.run, j.seed))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "error[offline]: not in the cache or the store: {}\n  = help: `revtx-book check` (or `run ID`) trains them",
            missing.join(", ")
        );
        return ExitCode::FAILURE;
    }
    let mut run_diags = Vec::new();
    let results = runs::execute(plans, resolved, &opts.runs, &mut run_diags);
    let env = expr::book_environment(&book);
    let ctx = expr::context(&results);
    // The command line is its own source: a diagnostic points into the expression.
    let file = sources.add("<eval>".into(), args.expr.clone());
    let span = diag::Span {
        file,
        range: 0..args.expr.len(),
    };
    let value = match expr::evaluate_or_report(&env, &ctx, &results, &args.expr, &span) {
        Ok(v) => v,
        Err(d) => {
            diags.extend(d);
            diag::emit_stderr(&diags, &sources);
            return ExitCode::FAILURE;
        }
    };
    let full = expr::as_full_text(&value);
    println!("{full}");
    let values = expr::run_values(&results);
    let mut lines = Vec::new();
    for (label, left) in [
        ("alone", loso::alone(&env, values, &args.expr)),
        ("left out", loso::evaluations(&env, values, &args.expr)),
    ] {
        for l in left {
            let v = l
                .value
                .as_ref()
                .map_or_else(|e| format!("cannot be evaluated ({e})"), expr::as_full_text);
            lines.push((format!("  {} seed {} {label}: ", l.run, l.seed), v));
        }
    }
    if !lines.is_empty() && lines.iter().all(|(_, v)| *v == full) {
        println!("  (the same with any seed of its ensembles alone or left out)");
    } else {
        for (at, v) in lines {
            println!("{at}{v}");
        }
    }
    ExitCode::SUCCESS
}
