//! `revtx-book show RUN [PATH]`: what a run the book declares produced, read from the
//! cache (nothing trains): a table of every value an expression can name on it (one column
//! per seed for an ensemble), or the results as JSON.

use super::Common;
use clap::Args;
use revtx_book::book::{diag, runs};
use serde_json::Value;
use std::process::ExitCode;

#[derive(Args)]
pub struct ShowArgs {
    #[command(flatten)]
    common: Common,
    /// The run, as the book declares it (`reference`, `reference_seeds`).
    run: String,
    /// Only the values under this path (`train.test`, `config.train`).
    path: Option<String>,
    /// The result itself as JSON (a list, one per seed, for an ensemble).
    #[arg(long)]
    json: bool,
}

/// Lists longer than this are shown by their length and first and last values.
const LONG_LIST: usize = 8;

pub fn show(args: &ShowArgs) -> ExitCode {
    let opts = args.common.options(None, false);
    let Some(super::Planned {
        sources,
        plans,
        mut diags,
        ..
    }) = super::planned(&opts.root)
    else {
        return ExitCode::FAILURE;
    };
    let Some(plan) = plans.iter().find(|p| p.id == args.run) else {
        let declared: Vec<&str> = plans.iter().map(|p| p.id.as_str()).collect();
        diags.push(diag::Diagnostic::unknown_run(
            "`show`", &args.run, None, &declared,
        ));
        diag::emit_stderr(&diags, &sources);
        return ExitCode::FAILURE;
    };
    let resolved = runs::resolve(std::slice::from_ref(plan), &opts.runs);
    if let Some((job, why)) = resolved.todo.first() {
        eprintln!(
            "error[not-cached]: run `{}` seed {} is not in the cache ({why})\n  = help: `revtx-book run {}` trains it (or `build`, `check`)",
            job.run, job.seed, job.run
        );
        return ExitCode::FAILURE;
    }
    let mut done: Vec<&(runs::Job, runs::Produced)> = resolved.done.iter().collect();
    done.sort_by_key(|(j, _)| plan.seeds.iter().position(|&s| s == j.seed));
    let results: Vec<Value> = done
        .iter()
        .map(|(_, p)| {
            let mut v = serde_json::to_value(&*p.result).unwrap_or_default();
            revtx_book::book::weights::add_table(&mut v, &p.dir);
            v
        })
        .collect();
    let under = |v: &Value| -> Option<Value> {
        match &args.path {
            None => Some(v.clone()),
            Some(p) => v.pointer(&format!("/{}", p.replace('.', "/"))).cloned(),
        }
    };
    let picked: Vec<Value> = results.iter().filter_map(under).collect();
    if picked.len() != results.len() {
        eprintln!(
            "error[show]: run `{}` has no `{}`\n  = help: `revtx-book show {}` lists every path",
            args.run,
            args.path.as_deref().unwrap_or_default(),
            args.run
        );
        return ExitCode::FAILURE;
    }
    let ensemble = plan.seeds.len() > 1;
    if args.json {
        let v = if ensemble {
            Value::Array(picked)
        } else {
            picked.into_iter().next().unwrap_or_default()
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    let names: Vec<String> = done
        .iter()
        .map(|(job, p)| {
            eprintln!(
                "{} seed {}: {}",
                job.run,
                job.seed,
                revtx_book::book::why::shown(&p.dir, &opts.root)
            );
            format!("seed {}", job.seed)
        })
        .collect();
    if ensemble {
        println!(
            "`{0}` is an ensemble of {1} seeds: an expression reads `{0}.seeds`, and a value of every seed as `{0}.runs | pluck('PATH')`.",
            args.run,
            plan.seeds.len()
        );
    } else {
        println!(
            "`{0}` is one run: an expression reads `{0}.PATH`.",
            args.run
        );
    }
    print_table(&picked, args.path.as_deref().unwrap_or(""), &names);
    ExitCode::SUCCESS
}

/// One row per path under `prefix`, one column per result.
fn print_table(results: &[Value], prefix: &str, names: &[String]) {
    use std::fmt::Write;
    let rows: Vec<Vec<(String, String)>> = results
        .iter()
        .map(|v| {
            let mut out = Vec::new();
            leaves(v, prefix, &mut out);
            out
        })
        .collect();
    let width = rows[0]
        .iter()
        .map(|(k, _)| k.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut header = format!("{:<width$}", "PATH");
    for name in names {
        let _ = write!(header, "  {name:<14}");
    }
    println!("{}", header.trim_end());
    for (i, (path, _)) in rows[0].iter().enumerate() {
        let mut line = format!("{path:<width$}");
        for r in &rows {
            let cell = r.get(i).map_or("", |(_, v)| v.as_str());
            let _ = write!(line, "  {cell:<14}");
        }
        println!("{}", line.trim_end());
    }
}

/// Every leaf under `v` with its dotted path. A short list of objects is opened item by
/// item (`train.test.by_length[0].accuracy`); a list of numbers or strings longer than
/// `LONG_LIST` is shown by its length and its ends (its items are `PATH[i]`).
fn leaves(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(x, &join(k), out);
            }
        }
        Value::Array(xs) if xs.iter().any(|x| x.is_object() || x.is_array()) => {
            if xs.len() <= 2 * LONG_LIST {
                for (i, x) in xs.iter().enumerate() {
                    leaves(x, &format!("{at}[{i}]"), out);
                }
            } else {
                out.push((format!("{at}[i]"), format!("{} items", xs.len())));
            }
        }
        Value::Array(xs) if xs.len() > LONG_LIST => {
            let ends = match (xs.first(), xs.last()) {
                (Some(a), Some(b)) => format!(": {a} … {b}"),
                _ => String::new(),
            };
            out.push((format!("{at}[i]"), format!("{} items{ends}", xs.len())));
        }
        Value::String(s) => out.push((at.to_string(), s.clone())),
        other => out.push((at.to_string(), other.to_string())),
    }
}
