//! `revtx-book build` and `check`: the whole pipeline, then its diagnostics, the bless
//! report, the summary line and (with `--timings`) the time of every stage.

use super::Common;
use revtx_book::book::{self, diag, BuildOptions};
use std::process::ExitCode;
use std::time::Instant;

/// Runs a build or check and prints its diagnostics, summary and timings.
pub fn report(common: &Common, opts: &BuildOptions, what: &str) -> ExitCode {
    let started = Instant::now();
    let outcome = book::build(opts);
    if !common.quiet {
        for line in &outcome.run_report {
            eprintln!("run {line}");
        }
    }
    diag::emit_stderr(&outcome.diags, &outcome.sources);
    for e in &outcome.blessed {
        eprintln!(
            "blessed {}:{}\n  - {}\n  + {}",
            e.file, e.line, e.old, e.new
        );
    }
    let c = outcome.counts;
    let drifted = outcome
        .claims
        .iter()
        .filter(|c| c.verdict == book::claims::Verdict::Drift)
        .count();
    if common.timings {
        for (stage, d) in &outcome.timings {
            eprintln!("timing {stage:<7} {:>8.1} ms", d.as_secs_f64() * 1e3);
        }
        eprintln!(
            "timing total   {:>8.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let errors = outcome.errors();
    if !outcome.allowed.is_empty() {
        let counts: Vec<String> = outcome
            .allowed
            .iter()
            .map(|(c, n)| format!("{n} {c}"))
            .collect();
        eprintln!(
            "{what}: allowed by book.toml's [lints] and [lints-for], not shown one by one: {}",
            counts.join(", ")
        );
    }
    eprintln!(
        "{what}: {} checked ({drifted} drifted), {} asserted, {} literal, {} inserted, {} unbound; {} figures, {} tables, {} equations, {} listings; {} error{} in {:.2} s",
        c.checked,
        c.asserted,
        c.literal,
        c.inserted,
        c.unbound,
        c.figures,
        c.tables,
        c.equations,
        c.listings,
        errors,
        if errors == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64()
    );
    // A refused output folder is a usage error, like a bad flag: exit 2, nothing touched.
    if outcome
        .diags
        .iter()
        .any(|d| d.code == book::codes::Code::OutDir)
    {
        ExitCode::from(2)
    } else if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
