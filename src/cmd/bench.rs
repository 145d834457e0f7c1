//! `revtx-book bench`: the engine against the PyTorch peer, side by side in one run, since
//! these machines are shared and noisy. Rounds alternate the contestants (engine under the
//! book's portable profile, the same held to its AVX2 kernels, engine unpinned,
//! peer unpinned, peer under the same pins), so drift in the machine's speed hits all of
//! them; medians and per-round ratios are printed.
//!
//! `--cold` trains the book's whole run list from an empty cache and sets its time against
//! the FLOP floor (every run's FLOPs at the measured single-core sgemm peak, and at the
//! peak with MKL held to AVX2, what an AVX2-only machine of this speed could reach).

use revtx_book::book::{self, runs, runs::RunOptions, BuildOptions};
use revtx_spec::{entry, profile::Profile};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Alternating rounds.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Training steps of each engine measurement (the peer always trains 1,500).
    #[arg(long, default_value_t = 600)]
    steps: usize,
    /// Intra-op threads for both.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The peer script.
    #[arg(long, default_value = "../shared/peer/reverse_torch.py")]
    peer: PathBuf,
    /// Where torch 2.13.0 for the peer is installed (scripts/setup-peer.sh).
    #[arg(long, default_value = ".bench/torch")]
    torch: PathBuf,
    /// Also train the book's whole run list from an empty cache and compare its time with
    /// the FLOP floor.
    #[arg(long)]
    cold: bool,
    /// Parallel engines for `--cold`, at least 1 (1: the floor is one core's).
    #[arg(long, default_value_t = 1, value_parser = super::parse_jobs)]
    jobs: usize,
    /// Project root, for `--cold`.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Write the medians as a benchmark record: a file, or a directory such as
    /// `bench/records/` (named by benchmark, commit and machine). `scripts/benchmarks.py`
    /// makes BENCHMARKS.md from the records.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// The environment of the portable profile, for pinning the peer the same way.
fn pins() -> Vec<(&'static str, &'static str)> {
    Profile::Portable.env().to_vec()
}

/// One peer training run; returns its steps per second.
fn peer(args: &BenchArgs, pinned: bool) -> Result<f64, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("peer.json");
    let mut cmd = Command::new("python3");
    cmd.env("PYTHONPATH", &args.torch)
        .arg(&args.peer)
        .args([
            "--threads",
            &args.threads.to_string(),
            "--variant",
            "reference",
            "--json",
        ])
        .arg(&json);
    for (k, _) in Profile::Portable.env() {
        cmd.env_remove(k);
    }
    if pinned {
        cmd.envs(pins());
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("peer failed")
            .to_string());
    }
    let all: Value = serde_json::from_slice(&std::fs::read(&json).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let r = all
        .as_object()
        .and_then(|m| m.values().next().cloned())
        .ok_or("peer wrote no result")?;
    Ok(r["steps"].as_f64().unwrap_or(1500.0) / r["train_s"].as_f64().unwrap_or(f64::NAN))
}

/// One engine measurement (`revtx-engine bench`) under `profile`, with `env` added.
fn engine(
    args: &BenchArgs,
    profile: Profile,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<Value, String> {
    let out = Command::new(runs::engine_path())
        .envs(env.iter().copied())
        .args(["bench", "--steps", &args.steps.to_string()])
        .args([
            "--threads",
            &args.threads.to_string(),
            "--profile",
            profile.id(),
        ])
        .args(extra)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// The single-core sgemm peak: 1024³, best of five, libtorch's own choice of code path,
/// or (`avx2`) with MKL held to AVX2: the peak of the engine's AVX2 matrix-product kernel,
/// which an AVX2-only machine runs. On a machine without AVX-512 the two are the same.
fn sgemm_peak(args: &BenchArgs, avx2: bool) -> Result<f64, String> {
    let env: &[(&str, &str)] = if avx2 {
        &[("MKL_ENABLE_INSTRUCTIONS", "AVX2")]
    } else {
        &[]
    };
    let v = engine(args, Profile::Native, &["--sgemm-only"], env)?;
    v["sgemm_peak_gflops"]
        .as_f64()
        .ok_or_else(|| "no sgemm figure".into())
}

#[derive(Default)]
struct Samples {
    portable: Vec<f64>,
    /// The portable engine held to its AVX2 kernels: the same bits, eight lanes.
    portable_avx2: Vec<f64>,
    native: Vec<f64>,
    peer: Vec<f64>,
    peer_pinned: Vec<f64>,
    peak: Vec<f64>,
    peak_avx2: Vec<f64>,
    gflop_per_step: f64,
    phases: Vec<Value>,
}

pub fn bench(args: &BenchArgs) -> ExitCode {
    let peer_ok = args.peer.exists()
        && Command::new("python3")
            .env("PYTHONPATH", &args.torch)
            .args(["-c", "import torch"])
            .status()
            .is_ok_and(|s| s.success());
    if !peer_ok {
        eprintln!(
            "note: no peer (needs {} and torch in {}; run scripts/setup-peer.sh): engine figures only",
            args.peer.display(),
            args.torch.display()
        );
    }
    let mut s = Samples::default();
    for round in 1..=args.rounds {
        if let Err(e) = one_round(args, peer_ok, round, &mut s) {
            eprintln!("error: round {round}: {e}");
            return ExitCode::FAILURE;
        }
    }
    report(args, &s);
    if let Some(path) = &args.json {
        match write_record(args, &s, path) {
            Ok(p) => println!("record: {}", p.display()),
            Err(e) => {
                eprintln!("error: cannot write the record to {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if args.cold {
        return cold(args, median(s.peak.clone()), median(s.peak_avx2.clone()));
    }
    ExitCode::SUCCESS
}

fn one_round(args: &BenchArgs, peer_ok: bool, round: usize, s: &mut Samples) -> Result<(), String> {
    let (peak, peak_avx2) = (sgemm_peak(args, false)?, sgemm_peak(args, true)?);
    s.peak.push(peak);
    s.peak_avx2.push(peak_avx2);
    let mut line = format!("round {round}: sgemm peak {peak:.1} GFLOP/s ({peak_avx2:.1} at AVX2)");
    // Alternate the order from round to round.
    let engines = if round % 2 == 1 {
        [Profile::Portable, Profile::Native]
    } else {
        [Profile::Native, Profile::Portable]
    };
    for p in engines {
        if p == Profile::Portable {
            let v = engine(args, p, &["--isa", "avx2"], &[])?;
            let sps = v["steps_per_second"].as_f64().unwrap_or(f64::NAN);
            let _ = write!(line, "; engine {} (AVX2 kernels) {sps:.1} steps/s", p.id());
            s.portable_avx2.push(sps);
        }
        let v = engine(args, p, &[], &[])?;
        let sps = v["steps_per_second"].as_f64().unwrap_or(f64::NAN);
        s.gflop_per_step = v["gflop_per_step"].as_f64().unwrap_or(0.0);
        let _ = write!(line, "; engine {} {sps:.1} steps/s", p.id());
        if p == Profile::Portable {
            s.portable.push(sps);
            s.phases.push(v["phases_ms_per_step"].clone());
        } else {
            s.native.push(sps);
        }
    }
    if peer_ok {
        for pinned in [round.is_multiple_of(2), !round.is_multiple_of(2)] {
            let sps = peer(args, pinned)?;
            let _ = write!(
                line,
                "; peer{} {sps:.1} steps/s",
                if pinned { " pinned" } else { "" }
            );
            if pinned {
                s.peer_pinned.push(sps);
            } else {
                s.peer.push(sps);
            }
        }
    }
    eprintln!("{line}");
    Ok(())
}

fn report(args: &BenchArgs, s: &Samples) {
    let (portable, native, peak, peak_avx2) = (
        median(s.portable.clone()),
        median(s.native.clone()),
        median(s.peak.clone()),
        median(s.peak_avx2.clone()),
    );
    println!(
        "reference training at {} thread(s), medians of {} rounds:",
        args.threads, args.rounds
    );
    let row = |name: &str, sps: f64| {
        println!(
            "  {name:<26} {sps:>6.1} steps/s  {:>6.1} ms/step",
            1e3 / sps
        );
    };
    row("engine, portable profile", portable);
    row("  the same, AVX2 kernels", median(s.portable_avx2.clone()));
    row("engine, unpinned", native);
    if !s.peer.is_empty() {
        let (peer, pinned) = (median(s.peer.clone()), median(s.peer_pinned.clone()));
        row("PyTorch peer, unpinned", peer);
        row("PyTorch peer, pinned", pinned);
        let ratio = |a: &[f64], b: &[f64]| median(a.iter().zip(b).map(|(x, y)| x / y).collect());
        for (what, ours, theirs) in [
            ("portable engine / unpinned peer", &s.portable, &s.peer),
            ("the same, AVX2 kernels", &s.portable_avx2, &s.peer),
            ("unpinned engine / unpinned peer", &s.native, &s.peer),
            ("portable engine / pinned peer", &s.portable, &s.peer_pinned),
        ] {
            println!("  {what:<32} {:.2}x", ratio(ours, theirs));
        }
    }
    println!(
        "  the portable profile costs {:.0}% against the unpinned engine",
        100.0 * (1.0 - portable / native)
    );
    println!(
        "  {:.3} GFLOP per step: portable training at {:.1} GFLOP/s, {:.0}% of the single-core sgemm peak ({peak:.1} GFLOP/s, unpinned, 1024³)",
        s.gflop_per_step,
        s.gflop_per_step * portable,
        100.0 * s.gflop_per_step * portable / peak
    );
    println!(
        "  and {:.0}% of the sgemm peak with MKL held to AVX2, as on an AVX2-only machine ({peak_avx2:.1} GFLOP/s)",
        100.0 * s.gflop_per_step * portable / peak_avx2
    );
    if let Some(p) = s.phases.get(s.phases.len() / 2) {
        let f = |k: &str| p[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "  one portable step: data {:.2} ms, forward {:.2} ms, backward {:.2} ms, optimizer {:.2} ms",
            f("data"),
            f("forward"),
            f("backward"),
            f("optimizer")
        );
    }
}

/// Each trained run's arithmetic rate, slowest first: a run far below the others points at
/// a cost the reference bench does not see (subnormal floats were one).
fn per_run(jobs: &[runs::Job], cache: &std::path::Path) {
    let mut rows: Vec<(f64, String)> = jobs
        .iter()
        .filter_map(|j| {
            let gflop = j.config.flop() / 1e9;
            if gflop <= 0.0 {
                return None;
            }
            let dir = cache.join("runs").join(&j.key);
            let r = entry::load(&dir, &j.config, j.seed, Profile::Portable).ok()?;
            let rate = gflop / r.env.train_seconds;
            let line = format!(
                "  {:<16} s{:<3} {gflop:>7.0} GFLOP {:>7.1} s {rate:>6.1} GFLOP/s",
                j.run, j.seed, r.env.train_seconds
            );
            Some((rate, line))
        })
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("per run, slowest first:");
    for (_, line) in rows {
        println!("{line}");
    }
}

/// Trains every run of the book from an empty cache; its time against the FLOP floor.
fn cold(args: &BenchArgs, peak: f64, peak_avx2: f64) -> ExitCode {
    let Ok(dir) = tempfile::tempdir() else {
        return ExitCode::FAILURE;
    };
    let opts = BuildOptions {
        root: args.root.clone(),
        out: None,
        runs: RunOptions {
            cache_dir: dir.path().to_path_buf(),
            jobs: args.jobs,
            timeout: Duration::from_hours(2),
            engine: runs::engine_path(),
            quiet: true,
            ignore_store: true,
            ..Default::default()
        },
        bless: false,
        live_reload: false,
        ignore_numerics: false,
        deny_warnings: false,
        pdf: false,
        seed_shift: 0,
        seed_shift_runs: Vec::new(),
    };
    let started = Instant::now();
    let o = book::build(&opts);
    let seconds = started.elapsed().as_secs_f64();
    let plans = {
        let mut sources = book::diag::Sources::default();
        let mut diags = Vec::new();
        book::parse::load(&args.root, &mut sources, &mut diags)
            .map(|b| book::runs::plan(&b, &sources, &mut diags))
            .unwrap_or_default()
    };
    let mut keys = std::collections::HashSet::new();
    let jobs: Vec<_> = runs::jobs(&plans, Profile::Portable)
        .into_iter()
        .filter(|j| keys.insert(j.key.clone()))
        .collect();
    let flop: f64 = jobs.iter().map(|j| j.config.flop()).sum();
    per_run(&jobs, dir.path());
    #[allow(clippy::cast_precision_loss, reason = "a handful of engines")]
    let floor = |peak: f64| flop / 1e9 / peak / args.jobs as f64;
    println!(
        "cold build: {} runs trained in {seconds:.0} s on {} engine(s) ({} errors); FLOP floor {:.0} s ({:.1} TFLOP at {peak:.1} GFLOP/s per core); {:.2}x the floor",
        keys.len(),
        args.jobs,
        o.errors(),
        floor(peak),
        flop / 1e12,
        seconds / floor(peak)
    );
    println!(
        "  at the AVX2 peak ({peak_avx2:.1} GFLOP/s) the floor is {:.0} s: {:.2}x",
        floor(peak_avx2),
        seconds / floor(peak_avx2)
    );
    ExitCode::SUCCESS
}

/// The CPU as `/proc/cpuinfo` names it: model name, family, model, vector ISA, cores (the
/// fields of `scripts/bench_record.py`).
fn machine() -> Value {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let flags = field("flags").unwrap_or_default();
    let isa: Vec<&str> = ["avx2", "fma", "avx512f", "amx_tile"]
        .into_iter()
        .filter(|f| flags.split_whitespace().any(|x| x == *f))
        .collect();
    serde_json::json!({
        "model": field("model name").unwrap_or_else(|| "unknown".into()),
        "family": field("cpu family").and_then(|v| v.parse::<u32>().ok()),
        "model_number": field("model").and_then(|v| v.parse::<u32>().ok()),
        "isa": isa,
        "cores": std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    })
}

/// Writes the engine benchmark's record; returns its path.
fn write_record(args: &BenchArgs, s: &Samples, path: &std::path::Path) -> std::io::Result<PathBuf> {
    let git = |a: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&args.root)
            .args(a)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let commit = git(&["rev-parse", "HEAD"]);
    let dirty = !git(&["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let machine = machine();
    let fig = |name: &str, v: &[f64], unit: &str| {
        (!v.is_empty())
            .then(|| serde_json::json!({"name": name, "value": median(v.to_vec()), "unit": unit}))
    };
    let figures: Vec<Value> = [
        fig("engine, portable", &s.portable, "steps/s"),
        fig(
            "engine, portable, AVX2 kernels",
            &s.portable_avx2,
            "steps/s",
        ),
        fig("engine, unpinned", &s.native, "steps/s"),
        fig("PyTorch peer, unpinned", &s.peer, "steps/s"),
        fig("PyTorch peer, pinned", &s.peer_pinned, "steps/s"),
        fig("sgemm peak", &s.peak, "GFLOP/s"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let record = serde_json::json!({
        "benchmark": "engine",
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "commit": commit,
        "dirty": dirty,
        "date": utc_now(),
        "machine": machine,
        "figures": figures,
        "threads": args.threads,
        "rounds": args.rounds,
        "steps": args.steps,
        "gflop_per_step": s.gflop_per_step,
    });
    let file = if path.is_dir() || path.to_string_lossy().ends_with('/') {
        let model = machine["model"]
            .as_str()
            .unwrap_or("cpu")
            .replace("(R)", "")
            .replace("(TM)", "");
        let slug: Vec<String> = model
            .split_whitespace()
            .filter(|w| w.chars().all(char::is_alphanumeric))
            .take(3)
            .map(str::to_lowercase)
            .collect();
        path.join(format!(
            "engine-{}-{}.json",
            commit.get(..7).unwrap_or("nogit"),
            slug.join("-")
        ))
    } else {
        path.to_path_buf()
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&record).unwrap_or_default() + "\n",
    )?;
    Ok(file)
}

/// The time now in UTC, `2026-12-04T18:51:00Z` (from `date`, as the scripts' records).
fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
