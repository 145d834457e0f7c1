//! The training engine: runs experiments with libtorch.
//!
//! `revtx-book run` and the book build call this binary, one process per run, so runs
//! execute in parallel, a crash stays inside its run, and the compiler never loads libtorch.
//! Every command first enters its numeric profile, before libtorch does any work.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use engine::entry::{self, ExecRequest};
use engine::experiments::{parse_seeds, RunConfig, PRESETS};
use engine::model::kernels;
use engine::profile::{Isa, Platform, Profile};
use engine::result::{mean_std, RunResult};
use engine::train::{self, Progress, RunError};
use engine::{numerics, CODE_FINGERPRINT};
use revtx_engine as engine;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Every allocation in this process goes to mimalloc, libtorch's included: the crate's
/// `override` feature replaces `malloc` and `free` themselves. A training step allocates
/// and frees the same few hundred tensors each time, and glibc's allocator spent about 4%
/// of a step on that (`perf`). It changes no result: libtorch asks for the same 64-byte
/// alignment either way, and `revtx-engine numerics` prints the same digests. mimalloc 2,
/// not 3 (the crate's `v2` feature): version 3 backs large blocks with fresh transparent
/// huge pages, which the kernel zeroes, and doubled the time of a run's evaluation.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Keeps freed memory in the process instead of handing it back to the kernel after
/// mimalloc's default 10 ms: every step would otherwise fault the same pages in again
/// (`perf stat -e page-faults`, 1,200 steps: 36,600 faults and growing with the steps;
/// with this, 18,000 whatever the length). `mi_option_purge_delay` is 15 in
/// `mi_option_e` of the mimalloc that Cargo.lock pins.
fn keep_freed_memory() {
    // SAFETY: sets one of mimalloc's global options; any value is valid.
    unsafe { mi_option_set(15, -1) };
}

#[derive(Parser)]
#[command(
    name = "revtx-engine",
    about = "Trains and evaluates the chapter's experiments"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a named experiment and print its result.
    Run(RunArgs),
    /// Measure single-core sgemm peak and reference training throughput (prints JSON).
    Bench {
        /// Training steps per measured run.
        #[arg(long, default_value_t = 300)]
        steps: usize,
        /// Intra-op threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Numeric profile: `portable` (the book's) or `native` (libtorch's own choice).
        #[arg(long, value_enum, default_value_t = Profile::Portable)]
        profile: Profile,
        /// Only measure the sgemm peak (1024³, best of five).
        #[arg(long)]
        sgemm_only: bool,
        /// The vector width of the kernels that have two (the matrix product, GELU):
        /// `widest` (what builds run) or `avx2` (the same bits in eight lanes: what an
        /// AVX2-only machine runs).
        #[arg(long, value_enum, default_value_t = Width::Widest)]
        isa: Width,
    },
    /// Run one request (JSON, see `ExecRequest`) and write its cache entry into OUT.
    Exec {
        #[arg(long)]
        request: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Print this machine's numerics fingerprint under a profile (JSON).
    Numerics {
        #[arg(long, value_enum, default_value_t = Profile::Portable)]
        profile: Profile,
        /// Run MKL in this branch instead of the profile's (AUTO, COMPATIBLE, SSE4_2, ...):
        /// digests that do not change with it prove that no result passes through MKL.
        #[arg(long)]
        mkl_cbwr: Option<String>,
        /// The kernels' vector width, as for `bench`: digests that do not change with it
        /// show that an AVX2-only machine computes what this one does.
        #[arg(long, value_enum, default_value_t = Width::Widest)]
        isa: Width,
    },
}

/// `--isa`: the kernels' width a command runs at.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Width {
    /// The widest this CPU has: what builds run.
    Widest,
    /// Eight lanes: what an AVX2-only machine runs, the same bits.
    Avx2,
}

impl Width {
    fn isa(self) -> Option<Isa> {
        match self {
            Width::Widest => None,
            Width::Avx2 => Some(Isa::Avx2),
        }
    }
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Experiment name (see --list).
    experiment: Option<String>,
    /// List the experiments.
    #[arg(long)]
    list: bool,
    /// Seed of the run.
    #[arg(long, default_value_t = 0, conflicts_with = "seeds")]
    seed: u64,
    /// Several seeds, e.g. `0..5` or `1,2,3`: reports mean and spread.
    #[arg(long)]
    seeds: Option<String>,
    /// Override the number of training steps.
    #[arg(long)]
    steps: Option<usize>,
    /// Print the whole result as JSON.
    #[arg(long)]
    json: bool,
    /// Save the trained weights (safetensors) here.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Numeric profile: `portable` (the book's) or `native` (libtorch's own choice).
    #[arg(long, value_enum, default_value_t = Profile::Portable)]
    profile: Profile,
}

fn main() {
    keep_freed_memory();
    let cli = Cli::parse();
    // The profile is entered first: libtorch reads its settings on first use.
    let profile = match &cli.cmd {
        Cmd::Run(a) => Ok(a.profile),
        Cmd::Bench { profile, .. } | Cmd::Numerics { profile, .. } => Ok(*profile),
        Cmd::Exec { request, .. } => read_request(request).map(|r| r.profile),
    };
    let entered = profile.and_then(|p| {
        if p == Profile::Portable {
            if let Some(why) = Platform::this().unsupported(p) {
                bail!("{why}");
            }
        }
        match &cli.cmd {
            Cmd::Numerics {
                mkl_cbwr: Some(branch),
                ..
            } => numerics::enter_with_mkl_branch(p, branch),
            _ => numerics::enter(p),
        }
        .map_err(anyhow::Error::msg)
    });
    if let Err(e) = entered {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let res = match cli.cmd {
        Cmd::Run(a) => run_cmd(a, &stop),
        Cmd::Exec { request, out } => exec(&request, &out, &stop),
        Cmd::Bench {
            steps,
            threads,
            profile,
            sgemm_only,
            isa,
        } => {
            kernels::use_isa(isa.isa());
            bench(steps, threads, profile, sgemm_only)
        }
        Cmd::Numerics { profile, isa, .. } => {
            kernels::use_isa(isa.isa());
            let f = numerics::probe(profile);
            println!("{}", serde_json::to_string(&f).unwrap_or_default());
            Ok(())
        }
    };
    if let Err(e) = res {
        let interrupted = e
            .downcast_ref::<RunError>()
            .is_some_and(|e| matches!(e, RunError::Interrupted(_)));
        eprintln!("error: {e:#}");
        std::process::exit(if interrupted { 130 } else { 1 });
    }
}

/// Progress: a bar on a terminal, otherwise a line every so often.
struct Reporter {
    label: String,
    bar: Option<indicatif::ProgressBar>,
    stop: Arc<AtomicBool>,
    started: Instant,
    every: usize,
}

impl Reporter {
    fn new(label: &str, steps: usize, stop: Arc<AtomicBool>) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(steps as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix} [{bar:30}] {pos}/{len} loss {msg} {per_sec} eta {eta}",
                )
                .unwrap()
                .progress_chars("=> "),
            );
            b.set_prefix(label.to_string());
            b
        });
        Reporter {
            label: label.into(),
            bar,
            stop,
            started: Instant::now(),
            every: (steps / 10).max(1),
        }
    }
}

impl Progress for Reporter {
    fn step(&mut self, step: usize, total: usize, loss: f64) -> bool {
        match &self.bar {
            Some(b) => {
                b.set_position(step as u64);
                b.set_message(format!("{loss:.4}"));
                if step == total {
                    b.finish_and_clear();
                }
            }
            None if step.is_multiple_of(self.every) || step == total => {
                let rate = step as f64 / self.started.elapsed().as_secs_f64();
                let eta = (total - step) as f64 / rate;
                eprintln!(
                    "{}: step {step}/{total} loss {loss:.4} {rate:.1} steps/s eta {eta:.0}s",
                    self.label
                );
            }
            None => {}
        }
        !self.stop.load(Ordering::SeqCst)
    }
}

fn run_cmd(a: RunArgs, stop: &Arc<AtomicBool>) -> Result<()> {
    if a.list || a.experiment.is_none() {
        println!("experiments:");
        for engine::experiments::Preset { name, about, .. } in PRESETS {
            println!("  {name:<18} {about}");
        }
        return Ok(());
    }
    let name = a.experiment.unwrap();
    let Some(mut cfg) = RunConfig::preset(&name) else {
        bail!("unknown experiment `{name}`; `revtx-book run --list` shows them");
    };
    if let Some(s) = a.steps {
        cfg.train.steps = s;
    }
    let seeds = match &a.seeds {
        Some(s) => parse_seeds(s).map_err(anyhow::Error::msg)?,
        None => vec![a.seed],
    };
    let mut results = Vec::new();
    for &seed in &seeds {
        let mut rep = Reporter::new(&format!("{name} s{seed}"), cfg.train.steps, stop.clone());
        let fin = train::run(&cfg, seed, &mut rep)?;
        if let (Some(path), Some(vs)) = (&a.save, &fin.weights) {
            vs.save(path)
                .with_context(|| format!("saving weights to {}", path.display()))?;
        }
        if a.json {
            println!("{}", serde_json::to_string(&fin.result)?);
        } else {
            print_summary(&fin.result);
        }
        results.push(fin.result);
    }
    if results.len() > 1 && !a.json {
        print_spread(&results);
    }
    Ok(())
}

fn print_summary(r: &RunResult) {
    println!(
        "== {} seed {} ({} parameters)",
        kind_name(r),
        r.seed,
        r.params
    );
    if let Some(w) = r.worked() {
        println!(
            "scores {:?}\nweights {:?}\noutput {:?}",
            w.scores, w.weights, w.output
        );
    }
    if let Some(v) = r.variance() {
        for d in v {
            println!(
                "d={} var(q.k)={:.2} var(q.k/sqrt d)={:.3}",
                d.dim, d.variance, d.scaled_variance
            );
        }
    }
    if let Some(t) = r.train() {
        let bm: Vec<String> = t.block_means.iter().map(|x| format!("{x:.4}")).collect();
        println!("block means: {}", bm.join(" "));
        println!(
            "first step with {}-step mean below {}: {:?}",
            r.config.train.window, r.config.train.threshold, t.first_below
        );
        println!("last block mean {:.4}", t.last_block_mean);
        for (label, e) in [("test", &t.test), ("long", &t.long)] {
            let by: Vec<String> = e
                .by_length
                .iter()
                .map(|l| format!("{}:{}/{}", l.len, l.correct, l.total))
                .collect();
            println!(
                "{label}: {}/{} ({:.1}%) unseen {}/{} | {}",
                e.correct,
                e.total,
                100.0 * e.accuracy,
                e.unseen_correct,
                e.unseen,
                by.join(" ")
            );
        }
        for (k, v) in &t.decodes {
            println!("decode {k} -> {v}");
        }
        println!(
            "distinct training strings {} of {} seen",
            t.data.distinct_strings, t.data.examples_seen
        );
        if let Some(p) = &t.positions {
            println!("position rows trained {}/{}", p.trained_rows, p.rows);
        }
        println!(
            "{:.1} s training, {:.1} steps/s, {} thread(s)",
            r.env.train_seconds, r.env.steps_per_second, r.env.threads
        );
    }
}

fn kind_name(r: &RunResult) -> String {
    serde_json::to_value(r.config.kind)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn print_spread(rs: &[RunResult]) {
    let trains: Vec<_> = rs.iter().filter_map(|r| r.train()).collect();
    if trains.is_empty() {
        return;
    }
    let stat = |name: &str, xs: Vec<f64>| {
        let (m, s) = mean_std(&xs);
        let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        println!("{name:<28} mean {m:.4}  sd {s:.4}  min {lo:.4}  max {hi:.4}");
    };
    println!("== over {} seeds", rs.len());
    stat(
        "test accuracy",
        trains.iter().map(|t| t.test.accuracy).collect(),
    );
    stat(
        "long accuracy",
        trains.iter().map(|t| t.long.accuracy).collect(),
    );
    stat(
        "last block mean loss",
        trains.iter().map(|t| t.last_block_mean).collect(),
    );
    let firsts: Vec<f64> = trains
        .iter()
        .filter_map(|t| t.first_below.map(|s| s as f64))
        .collect();
    println!(
        "first step below threshold reached in {}/{} seeds",
        firsts.len(),
        trains.len()
    );
    if !firsts.is_empty() {
        stat("first step below threshold", firsts);
    }
}

fn read_request(path: &Path) -> Result<ExecRequest> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).context("parsing the run request")
}

/// Runs one request and writes its cache entry into `out` (see `entry::write`).
fn exec(request: &Path, out: &Path, stop: &Arc<AtomicBool>) -> Result<()> {
    let req = read_request(request)?;
    if req.engine != CODE_FINGERPRINT {
        bail!(
            "this engine's code is {CODE_FINGERPRINT}, but the compiler keyed the run on {}: \
             build both from the same tree (`make build`)",
            req.engine
        );
    }
    let mut rep = Reporter::new(&req.label, req.config.train.steps, stop.clone());
    rep.bar = None; // the parent process owns the terminal
    rep.every = (req.config.train.steps / 4).max(1);
    let fin = train::run(&req.config, req.seed, &mut rep)?;
    entry::write(out, |dir| {
        if let Some(vs) = &fin.weights {
            vs.save(dir.join(entry::WEIGHTS_FILE))
                .map_err(std::io::Error::other)?;
        }
        std::fs::write(
            dir.join(entry::RESULT_FILE),
            serde_json::to_vec(&fin.result).map_err(std::io::Error::other)?,
        )
    })
    .with_context(|| format!("writing the cache entry {}", out.display()))
}

/// Throughput of the reference training loop, and the sgemm peak it is measured against.
fn bench(steps: usize, threads: usize, profile: Profile, sgemm_only: bool) -> Result<()> {
    use tch::{Kind, Tensor};
    tch::set_num_threads(threads as i32);
    // sgemm peak: best of several 1024³ products.
    let n = 1024i64;
    let a = Tensor::randn([n, n], (Kind::Float, tch::Device::Cpu));
    let b = Tensor::randn([n, n], (Kind::Float, tch::Device::Cpu));
    let _ = a.matmul(&b);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        let c = a.matmul(&b);
        let _ = c.double_value(&[0, 0]);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let sgemm_gflops = 2.0 * (n as f64).powi(3) / best / 1e9;
    if sgemm_only {
        println!(
            "{}",
            serde_json::json!({ "sgemm_peak_gflops": sgemm_gflops, "profile": profile.id() })
        );
        return Ok(());
    }

    let mut cfg = RunConfig::reference();
    cfg.train.steps = steps;
    cfg.train.threads = threads;
    cfg.eval.test_size = 1;
    cfg.eval.long_size = 1;
    let fin = train::run(&cfg, 0, &mut train::Quiet)?;
    let env = &fin.result.env;
    let sps = env.steps_per_second;
    // FLOPs actually executed per step (the engine trims trailing pads: a batch of
    // lengths 3..8 runs at 2*8+1 = 17 columns); see `RunConfig::flop_per_step`.
    let gflop_per_step = cfg.flop_per_step() / 1e9;
    let p = env.phases;
    let report = serde_json::json!({
        "profile": profile.id(),
        "engine": CODE_FINGERPRINT,
        "isa": kernels::isa().as_str(),
        "threads": threads,
        "steps": steps,
        "steps_per_second": sps,
        "ms_per_step": 1e3 / sps,
        "gflop_per_step": gflop_per_step,
        "training_gflops": gflop_per_step * sps,
        "sgemm_peak_gflops": sgemm_gflops,
        "share_of_peak": gflop_per_step * sps / sgemm_gflops,
        "phases_ms_per_step": {
            "data": 1e3 * p.data / steps as f64,
            "forward": 1e3 * p.forward / steps as f64,
            "backward": 1e3 * p.backward / steps as f64,
            "optimizer": 1e3 * p.optimizer / steps as f64,
        },
    });
    println!("{report}");
    Ok(())
}
