//! `revtx-book`: builds the chapter into a site and checks every quoted figure.

use clap::{Args, Parser, Subcommand};
use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
use revtx_book::book::{self, diag, runs, BuildOptions};
use revtx_book::engine::profile::Profile;
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod bench;
mod serve;

#[derive(Parser)]
#[command(
    name = "revtx-book",
    version,
    about = "Publishes an executable textbook chapter whose quoted figures are recomputed and checked"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the experiments the book needs (cached when possible) and write the site.
    Build {
        #[command(flatten)]
        common: Common,
        /// Output directory.
        #[arg(long, default_value = "site")]
        out: PathBuf,
    },
    /// Run the same pipeline without writing the site; fail if a quoted figure drifted.
    Check {
        #[command(flatten)]
        common: Common,
        /// Rewrite drifted quoted figures in the source to their recomputed values.
        #[arg(long)]
        bless: bool,
    },
    /// Build, serve on 127.0.0.1, rebuild and reload the browser on change.
    Serve {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Measure this machine's numerics fingerprint and compare it with the book's.
    Numerics {
        /// Project root (holding book/).
        #[arg(long, default_value = ".")]
        root: PathBuf,
        #[arg(long, default_value = "portable", value_parser = parse_profile)]
        profile: Profile,
    },
    /// Time reference training against the PyTorch peer, side by side.
    Bench(bench::BenchArgs),
    /// Run one experiment by name (see `run --list`); forwards to the engine.
    #[command(disable_help_flag = true)]
    Run {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Args, Clone)]
struct Common {
    /// Project root (holding book/, templates/, static/).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Fail instead of training when a run is not cached.
    #[arg(long, alias = "frozen")]
    offline: bool,
    /// Re-run these runs (all runs when given without ids).
    #[arg(long, num_args = 0.., value_name = "IDS")]
    rerun: Option<Vec<String>>,
    /// Parallel training processes (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Time budget of one run, in seconds.
    #[arg(long, default_value_t = 3600)]
    run_timeout: u64,
    /// Run cache directory.
    #[arg(long, default_value = ".revtx-cache")]
    cache: PathBuf,
    /// Print per-stage timings.
    #[arg(long)]
    timings: bool,
    /// Hide the engine's progress lines.
    #[arg(long, short)]
    quiet: bool,
    /// Numeric profile of the runs: `portable` (bit-identical on every x86-64 CPU with
    /// AVX2 and FMA; what the book is checked under) or `native` (quick local drafts,
    /// cached separately, never compared against the book).
    #[arg(long, default_value = "portable", value_parser = parse_profile)]
    profile: Profile,
    /// Train even if this machine's numerics fingerprint differs from the one recorded in
    /// book/numerics.json; figures that differ are then reported as not comparable.
    #[arg(long)]
    ignore_numerics: bool,
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::parse(s).ok_or_else(|| format!("unknown profile `{s}` (portable, native)"))
}

impl Common {
    fn options(&self, out: Option<PathBuf>, bless: bool) -> BuildOptions {
        let root = self.root.clone();
        let cache_dir = if self.cache.is_absolute() {
            self.cache.clone()
        } else {
            root.join(&self.cache)
        };
        BuildOptions {
            out: out.map(|o| if o.is_absolute() { o } else { root.join(o) }),
            runs: runs::RunOptions {
                cache_dir,
                offline: self.offline,
                rerun_all: self.rerun.as_ref().is_some_and(|r| r.is_empty()),
                rerun: self
                    .rerun
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .collect::<BTreeSet<_>>(),
                jobs: self.jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1)
                }),
                timeout: Duration::from_secs(self.run_timeout),
                engine: runs::engine_path(),
                quiet: self.quiet,
                profile: self.profile,
            },
            root,
            bless,
            live_reload: false,
            ignore_numerics: self.ignore_numerics,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Ctrl-C reaches the engine processes too; this process waits for them and exits
    // without writing anything half-done.
    let _ = ctrlc::set_handler(|| {
        if runs::INTERRUPTED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    match cli.cmd {
        Cmd::Build { common, out } => report(&common, &common.options(Some(out), false), "build"),
        Cmd::Check { common, bless } => report(&common, &common.options(None, bless), "check"),
        Cmd::Serve { common, port } => {
            serve::serve(common.options(Some(PathBuf::from("site")), false), port)
        }
        Cmd::Bench(args) => bench::bench(args),
        Cmd::Numerics { root, profile } => numerics(&root, profile),
        Cmd::Run { args } => {
            let engine = runs::engine_path();
            match std::process::Command::new(&engine)
                .arg("run")
                .args(&args)
                .status()
            {
                Ok(s) => ExitCode::from(s.code().unwrap_or(130) as u8),
                Err(e) => {
                    eprintln!("error: cannot start the engine {}: {e}", engine.display());
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// `revtx-book numerics`: this machine's fingerprint against the book's, one line per
/// probed operation; fails if they differ.
fn numerics(root: &std::path::Path, profile: Profile) -> ExitCode {
    let here = match book::numerics::measure(&runs::engine_path(), profile) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("profile   {}", here.profile);
    println!("machine   {}", here.platform.describe());
    println!(
        "libtorch  {} (ATen {}, MKL {}), engine {}",
        here.libtorch, here.aten, here.mkl, here.engine
    );
    let mut sources = diag::Sources::default();
    let book = book::numerics::recorded(root, &mut sources)
        .ok()
        .flatten()
        .map(|(f, _)| f);
    if let Some(b) = &book {
        println!("book      {} (engine {})", b.platform.describe(), b.engine);
    }
    for (op, d) in &here.digests {
        let verdict = match book.as_ref().and_then(|b| b.digests.get(op)) {
            Some(r) if r == d => "same",
            Some(_) => "DIFFERS",
            None => "not recorded",
        };
        println!("  {op:<24} {d}  {verdict}");
    }
    println!("probe     {:.2} s", here.seconds);
    match book {
        Some(b) if b.differences(&here).is_empty() => {
            println!("numerics: same bits as the machine that blessed the book");
            ExitCode::SUCCESS
        }
        Some(b) => {
            println!(
                "numerics: {} operations differ from the book's fingerprint",
                b.differences(&here).len()
            );
            ExitCode::FAILURE
        }
        None => {
            println!("numerics: the book records no fingerprint (book/numerics.json)");
            ExitCode::SUCCESS
        }
    }
}

/// Runs a build or check and prints its diagnostics, summary and timings.
fn report(common: &Common, opts: &BuildOptions, what: &str) -> ExitCode {
    let started = Instant::now();
    let outcome = book::build(opts);
    let color = if std::io::stderr().is_terminal() {
        ColorChoice::Auto
    } else {
        ColorChoice::Never
    };
    let mut err = StandardStream::stderr(color);
    if !common.quiet {
        for line in &outcome.run_report {
            eprintln!("run {line}");
        }
    }
    diag::emit(&outcome.diags, &outcome.sources, &mut err);
    for (file, line, old, new) in &outcome.blessed {
        eprintln!("blessed {file}:{line}\n  - {old}\n  + {new}");
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
    eprintln!(
        "{what}: {} checked figures ({drifted} drifted), {} inserted, {} figures, {} tables, {} equations, {} listings; {} error{} in {:.2} s",
        c.checked,
        c.inserted,
        c.figures,
        c.tables,
        c.equations,
        c.listings,
        errors,
        if errors == 1 { "" } else { "s" },
        started.elapsed().as_secs_f64()
    );
    if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
