//! `revtx-book audit`: retrains entries of the book's store and compares them bit for bit;
//! `revtx-book store [prune]`: what the store keeps, and the results no run uses removed.

use super::Common;
use clap::Args;
use revtx_book::book::audit::{self, Select, Verdict};
use revtx_book::book::{diag, parse, runs};
use std::collections::BTreeSet;
use std::process::ExitCode;

#[derive(Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent command-line switches, not a state machine"
)]
pub struct AuditArgs {
    #[command(flatten)]
    common: Common,
    /// Audit every stored entry.
    #[arg(long, conflicts_with_all = ["runs", "sample", "budget", "shard"])]
    all: bool,
    /// Audit every stored seed of these runs.
    #[arg(long, num_args = 1.., value_name = "IDS", conflicts_with_all = ["sample", "budget", "shard"])]
    runs: Vec<String>,
    /// Audit about N entries: the store split into shards of about N (by recorded training
    /// time), this round's shard; every entry is audited within as many rounds as there
    /// are shards.
    #[arg(long, value_name = "N", conflicts_with_all = ["budget", "shard"], value_parser = clap::value_parser!(u64).range(1..))]
    sample: Option<u64>,
    /// Audit about SECONDS of training (on --jobs cores, as the entries recorded it): the
    /// store split into shards of that cost, this round's shard. An entry that alone recorded
    /// more is named and left to --all or --shard.
    #[arg(long, value_name = "SECONDS", conflicts_with = "shard")]
    budget: Option<f64>,
    /// Audit shard I of N of the store (as `pages.yml` does, one shard per job).
    #[arg(long, value_parser = super::shard::parse_shard)]
    shard: Option<(usize, usize)>,
    /// The rotation's round (default: the number of commits in the project's git
    /// history, so that each commit audits the next shard).
    #[arg(long)]
    round: Option<u64>,
}

/// `revtx-book audit`.
pub fn audit(args: &AuditArgs) -> ExitCode {
    let select = if let Some(n) = args.sample {
        Select::Sample(usize::try_from(n).unwrap_or(usize::MAX))
    } else if let Some(s) = args.budget {
        if !(s.is_finite() && s > 0.0) {
            eprintln!("error: --budget takes a number of seconds above zero, not {s}");
            return ExitCode::FAILURE;
        }
        Select::Budget(s)
    } else if let Some((index, of)) = args.shard {
        Select::Shard { index, of }
    } else if !args.runs.is_empty() {
        Select::Runs(args.runs.clone())
    } else if args.all {
        Select::All
    } else {
        eprintln!("error: say what to audit: --all, --runs IDS, --sample N, --budget SECONDS or --shard I/N");
        return ExitCode::FAILURE;
    };
    let opts = args.common.options(None, false);
    let round = match args.round {
        Some(r) => (r, "--round".to_string()),
        None => git_round(&opts.root),
    };
    let mut sources = diag::Sources {
        root: opts.root.clone(),
        ..Default::default()
    };
    let r = audit::audit(&opts.root, &opts.runs, &select, &round, &mut sources);
    if !r.numerics.is_empty() {
        eprintln!("{}", r.numerics);
    }
    let (index, of) = r.shard;
    let chosen = match (&select, &r.round) {
        (Select::All, _) => "every stored entry".to_string(),
        (Select::Runs(ids), _) => format!("the stored seeds of {}", ids.join(", ")),
        (_, Some((n, whence))) => format!(
            "shard {index} of {of} (round {n}, from {whence}); every entry{} is audited within {of} consecutive rounds",
            if r.over_budget.is_empty() { "" } else { " but those named below" }
        ),
        _ => format!("shard {index} of {of}"),
    };
    println!(
        "audit: {} of {} stored entries, {chosen}; they recorded {:.0} s of training",
        r.audited.len(),
        r.stored,
        audit::recorded_total(&r.audited).as_secs_f64()
    );
    if !r.over_budget.is_empty() {
        let names: Vec<String> = r
            .over_budget
            .iter()
            .map(|(run, seed, s)| format!("{run} seed {seed} ({s:.0} s)"))
            .collect();
        println!(
            "audit: {} stored entries each recorded more training than the budget and are left to `audit --all` or `--shard` (the weekly Pages audit): {}",
            names.len(),
            names.join(", ")
        );
    }
    for a in &r.audited {
        let verdict = match &a.verdict {
            Verdict::Same => "same, bit for bit".to_string(),
            Verdict::Differs { field, .. } => format!("DIFFERS at `{field}`"),
            Verdict::NotRetrained => "not retrained".to_string(),
        };
        println!("  {} seed {} ({}): {verdict}", a.run, a.seed, a.key);
    }
    diag::emit_stderr(&r.diags, &sources);
    let same = r
        .audited
        .iter()
        .filter(|a| a.verdict == Verdict::Same)
        .count();
    println!(
        "audit: {same} of {} retrained as stored in {:.1} s",
        r.audited.len(),
        r.seconds
    );
    if r.failed() || same != r.audited.len() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The number of commits in the project's git history (its round in the rotation).
fn git_round(root: &std::path::Path) -> (u64, String) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-list", "--count", "HEAD"])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .map_or((0, "no git history".into()), |n| {
                (n, "the commits in git".into())
            }),
        _ => (0, "no git history".into()),
    }
}

#[derive(Args)]
pub struct StoreArgs {
    #[command(flatten)]
    common: Common,
    /// `prune`: remove the stored results no run of the book uses.
    #[arg(value_enum)]
    action: Option<StoreAction>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StoreAction {
    /// Remove the stored results no run of the book uses (and nothing else).
    Prune,
}

/// `revtx-book store [prune]`.
pub fn store(args: &StoreArgs) -> ExitCode {
    let opts = args.common.options(None, false);
    let mut sources = diag::Sources {
        root: opts.root.clone(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let book = parse::load(&opts.root, &mut sources, &mut diags);
    let plans = book
        .as_ref()
        .map(|b| runs::plan(b, &sources, &mut diags))
        .unwrap_or_default();
    let errors = diags
        .iter()
        .filter(|d| d.severity == diag::Severity::Error)
        .count();
    diag::emit_stderr(&diags, &sources);
    let Some(book) = book.filter(|_| errors == 0) else {
        return ExitCode::FAILURE;
    };
    let Some((store, _)) = &book.store else {
        eprintln!("error: this book keeps no results: name a folder in book/book.toml, e.g. `store = \"results\"`");
        return ExitCode::FAILURE;
    };
    let used: BTreeSet<String> = runs::jobs(&plans, opts.runs.profile)
        .into_iter()
        .map(|j| j.key)
        .collect();
    let kept = store.keys();
    let unused: BTreeSet<String> = kept.difference(&used).cloned().collect();
    let weights = kept
        .iter()
        .filter(|k| store.has_weights(k) == Some(true))
        .count();
    println!(
        "store {}: {} results ({} with weights), {} bytes; the book's runs need {} keys, {} of them not stored; {} unused",
        store.dir.display(),
        kept.len(),
        weights,
        store.bytes(),
        used.len(),
        used.difference(&kept).count(),
        unused.len()
    );
    if matches!(args.action, Some(StoreAction::Prune)) {
        match store.remove(&unused) {
            Ok(freed) => println!(
                "store: removed {} unused results, {freed} bytes",
                unused.len()
            ),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        for k in &unused {
            println!("  unused: {k}");
        }
    }
    ExitCode::SUCCESS
}
