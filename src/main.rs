//! `revtx-book`: builds the chapter into a site and checks every quoted figure. This file
//! declares the command line; each command lives in `cmd/`.

#![allow(
    clippy::doc_markdown,
    reason = "PyTorch, KaTeX and the like are names in prose, not code"
)]

use clap::{Parser, Subcommand};
use revtx_book::book::runs;
use revtx_spec::profile::Profile;
use std::path::PathBuf;
use std::process::ExitCode;

mod cmd;

/// Every allocation of the compiler goes to mimalloc (see Cargo.toml).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use cmd::Common;

#[derive(Parser)]
#[command(
    name = "revtx-book",
    version,
    about = "Publishes an executable textbook whose quoted figures are recomputed and checked"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a new book in DIR (default: here) that builds and checks clean at once; the
    /// theme is the binary's, and a book overrides a file by adding its own.
    Init {
        /// The folder of the new book (created if missing; nothing in it is overwritten).
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Run the experiments the book needs (cached when possible) and write the site.
    Build {
        #[command(flatten)]
        common: Common,
        /// Output directory.
        #[arg(long, default_value = revtx_book::book::outdir::BOOK_SITE)]
        out: PathBuf,
        /// Skip the print edition (the PDF), for a quicker draft.
        #[arg(long)]
        no_pdf: bool,
        /// Build the book as it reads with every run's seeds moved up by K (as `check
        /// --seed-shift K` trains them), into the `--out` given, which must not be `site`:
        /// the shifted text to read, with every insert computed. No PDF, and nothing written
        /// under book/ (its claims go into the shifted site only).
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
        seed_shift: Option<u64>,
        /// With --seed-shift: shift only these runs' seeds (the others as the book has them).
        #[arg(long = "runs", num_args = 1.., value_name = "IDS", requires = "seed_shift")]
        shift_runs: Vec<String>,
    },
    /// Run the same pipeline without writing the site; fail if a quoted figure drifted.
    Check {
        #[command(flatten)]
        common: Common,
        /// Rewrite drifted quoted figures in the source to their recomputed values.
        #[arg(long)]
        bless: bool,
        /// Train every run with its seeds moved up by K, into its own cache
        /// (`<cache>/seed-shift/`, the book's read too), and list every asserted statement
        /// that no longer holds; quoted figures are expected to differ and are counted.
        #[arg(long, value_name = "K", conflicts_with = "bless", value_parser = clap::value_parser!(u64).range(1..))]
        seed_shift: Option<u64>,
        /// With --seed-shift: shift only these runs' seeds (the others, and what reads only
        /// them, as the book has them): a shift an author can afford.
        #[arg(long = "runs", num_args = 1.., value_name = "IDS", requires = "seed_shift")]
        shift_runs: Vec<String>,
    },
    /// Build, serve on 127.0.0.1, rebuild and reload the browser on change.
    Serve {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 3000)]
        port: u16,
        /// Typeset the print edition on every rebuild too (skipped by default).
        #[arg(long)]
        pdf: bool,
    },
    /// List every run and seed the book needs, with its cache key, whether it is cached
    /// and its estimated cost; `--shards N` splits the uncached ones into N shards.
    Plan(cmd::shard::PlanArgs),
    /// Train exactly one shard's runs into the (first) cache, e.g. `--shard 2/4`.
    Train(cmd::shard::TrainArgs),
    /// Copy the verified entries of run caches into one, failing on conflicting entries.
    Merge(cmd::shard::MergeArgs),
    /// Retrain results the book keeps (book.toml's `store`) and compare them bit for bit:
    /// `--all`, `--runs IDS`, `--sample N` or `--budget SECONDS` (a rotating shard), or
    /// `--shard I/N`.
    Audit(cmd::audit::AuditArgs),
    /// What the book's store keeps; `store prune` removes the results no run uses.
    Store(cmd::audit::StoreArgs),
    /// What changed between two editions of the book (default: the last `[[editions]]`
    /// entry and the book as it is), claim by claim, with why; `--save` keeps a record.
    Changes(cmd::changes::ChangesArgs),
    /// Measure this machine's numerics fingerprint and compare it with the book's.
    Numerics {
        /// Project root (holding book/).
        #[arg(long, default_value = ".")]
        root: PathBuf,
        #[arg(long, value_enum, default_value_t = Profile::Portable)]
        profile: Profile,
    },
    /// Print what a run produced, from the cache: every path an expression can read on it
    /// and its value (per seed for an ensemble), or `--json`.
    Show(cmd::show::ShowArgs),
    /// Evaluate an expression against the cached runs, as a chapter would (`eval
    /// 'mean(copy.runs | pluck("train.test.accuracy"))'`): its value, and for an ensemble
    /// each seed's alone and left out.
    Eval(cmd::eval::EvalArgs),
    /// Time reference training against the PyTorch peer, side by side.
    Bench(cmd::bench::BenchArgs),
    /// Train one run the book declares (`run ID [--seeds 5,6]`, with build's options), or
    /// one of the engine's presets by name (see `run --list`).
    #[command(disable_help_flag = true)]
    Run {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `show` and `eval` only read and print: when their reader goes away (`| head`), they end
/// quietly as other command-line tools do, instead of panicking on a broken pipe. The
/// commands that write files keep the default, so they never stop halfway for it.
fn quiet_on_closed_pipe() {
    // SAFETY: restores the default action of one signal before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// mimalloc hands freed memory back to the system after 10 ms by default, and the next
/// allocation faults it in again, page by page, zeroed by the kernel: in a warm build, which
/// reads and drops some 150 MB of results, that zeroing was a third of the time (perf). The
/// process keeps what it freed instead; its peak size is unchanged.
fn keep_freed_memory() {
    // mimalloc's `mi_option_purge_delay` (v2 and v3 alike), set to -1: never purge.
    const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: sets one option of the allocator this binary links (see `ALLOC`), before any
    // thread is started.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

fn main() -> ExitCode {
    keep_freed_memory();
    let cli = Cli::parse();
    // Ctrl-C reaches the engine processes too; this process waits for them and exits
    // without writing anything half-done. SIGTERM is handled the same way (the engines,
    // which it does not reach, are then killed); a second signal kills the engines still
    // running and exits at once.
    let _ = ctrlc::set_handler(|| {
        if runs::INTERRUPTED.swap(true, std::sync::atomic::Ordering::SeqCst) {
            runs::stop_engines();
            std::process::exit(130);
        }
    });
    match cli.cmd {
        Cmd::Build {
            common,
            out,
            no_pdf,
            seed_shift,
            shift_runs,
        } => {
            let mut opts = common.options(Some(out), false);
            opts.pdf = !no_pdf && seed_shift.is_none();
            if let Some(k) = seed_shift {
                shifted(&mut opts, k, shift_runs);
            }
            cmd::build::report(&common, &opts, "build")
        }
        Cmd::Check {
            common,
            bless,
            seed_shift,
            shift_runs,
        } => {
            let mut opts = common.options(None, bless);
            if let Some(k) = seed_shift {
                shifted(&mut opts, k, shift_runs);
            }
            cmd::build::report(&common, &opts, "check")
        }
        Cmd::Serve { common, port, pdf } => {
            let mut opts = common.options(
                Some(PathBuf::from(revtx_book::book::outdir::BOOK_SITE)),
                false,
            );
            opts.pdf = pdf;
            cmd::serve::serve(opts, port)
        }
        Cmd::Plan(args) => cmd::shard::plan(&args),
        Cmd::Train(args) => cmd::shard::train(&args),
        Cmd::Merge(args) => cmd::shard::merge(&args),
        Cmd::Audit(args) => cmd::audit::audit(&args),
        Cmd::Store(args) => cmd::audit::store(&args),
        Cmd::Changes(args) => cmd::changes::changes(&args),
        Cmd::Bench(args) => cmd::bench::bench(&args),
        Cmd::Numerics { root, profile } => cmd::numerics::numerics(&root, profile),
        Cmd::Run { args } => run_engine(&args),
        Cmd::Show(args) => {
            quiet_on_closed_pipe();
            cmd::show::show(&args)
        }
        Cmd::Eval(args) => {
            quiet_on_closed_pipe();
            cmd::eval::eval(&args)
        }
        Cmd::Init { dir } => cmd::init::init(&dir),
    }
}

/// `--seed-shift K`: every seed moved up by `k`, trained into a cache of its own with the
/// book's read beside it (the seeds both share).
fn shifted(opts: &mut revtx_book::book::BuildOptions, k: u64, runs: Vec<String>) {
    let book_cache = opts.runs.cache_dir.clone();
    opts.runs.cache_dir = book_cache.join("seed-shift");
    opts.runs.extra_caches.insert(0, book_cache);
    opts.seed_shift = k;
    opts.seed_shift_runs = runs;
}

/// `revtx-book run ...`: the engine's own `run` command.
fn run_engine(args: &[String]) -> ExitCode {
    if let cmd::run::Route::Done(code) = cmd::run::route(args) {
        return code;
    }
    let engine = runs::engine_path();
    match std::process::Command::new(&engine)
        .arg("run")
        .args(args)
        .status()
    {
        Ok(s) => ExitCode::from(u8::try_from(s.code().unwrap_or(130)).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: cannot start the engine {}: {e}", engine.display());
            ExitCode::FAILURE
        }
    }
}
