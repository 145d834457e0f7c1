//! `revtx-book bench`: the engine against the PyTorch peer, side by side in one run.
//!
//! Rounds alternate engine and peer (A B A B …) so that drift in the machine's speed hits
//! both; medians and the per-round ratio are printed. With `--suite`, the experiment list
//! the peer supports is also run both ways: ours as one book build on every core, the
//! peer's one variant after another.

use revtx_book::book::{self, runs::RunOptions, BuildOptions};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Alternating rounds of engine and peer.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Intra-op threads for both.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The peer script.
    #[arg(long, default_value = "../shared/peer/reverse_torch.py")]
    peer: PathBuf,
    /// Where torch 2.13.0 for the peer is installed (scripts/setup-peer.sh).
    #[arg(long, default_value = ".bench/torch")]
    torch: PathBuf,
    /// Also time the whole experiment list both ways.
    #[arg(long)]
    suite: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn peer(args: &BenchArgs, variant: &str, threads: usize) -> Result<serde_json::Value, String> {
    // The peer merges into an existing JSON file, so give it a path that does not exist yet.
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let json = dir.path().join("peer.json");
    let out = Command::new("python3")
        .env("PYTHONPATH", &args.torch)
        .arg(&args.peer)
        .args([
            "--threads",
            &threads.to_string(),
            "--variant",
            variant,
            "--json",
        ])
        .arg(&json)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("peer failed")
            .to_string());
    }
    let all: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    all.as_object()
        .and_then(|m| m.values().next().cloned())
        .ok_or_else(|| "peer wrote no result".into())
}

fn engine(args: &BenchArgs) -> Result<serde_json::Value, String> {
    let out = Command::new(book::runs::engine_path())
        .args([
            "bench",
            "--steps",
            "1500",
            "--threads",
            &args.threads.to_string(),
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

pub fn bench(args: BenchArgs) -> ExitCode {
    let peer_ok = args.peer.exists()
        && Command::new("python3")
            .env("PYTHONPATH", &args.torch)
            .args(["-c", "import torch"])
            .status()
            .is_ok_and(|s| s.success());
    if !peer_ok {
        eprintln!("note: no peer (needs {} and torch in {}; run scripts/setup-peer.sh): engine figures only", args.peer.display(), args.torch.display());
    }
    let (mut ours, mut theirs, mut ratios, mut share, mut peak) =
        (vec![], vec![], vec![], vec![], vec![]);
    for round in 1..=args.rounds {
        let e = match engine(&args) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("error: engine bench failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        let sps = e["steps_per_second"].as_f64().unwrap_or(0.0);
        ours.push(sps);
        share.push(e["share_of_peak"].as_f64().unwrap_or(0.0));
        peak.push(e["sgemm_peak_gflops"].as_f64().unwrap_or(0.0));
        let mut line = format!(
            "round {round}: engine {sps:.1} steps/s ({:.1} GFLOP/s, sgemm peak {:.1})",
            e["training_gflops"].as_f64().unwrap_or(0.0),
            e["sgemm_peak_gflops"].as_f64().unwrap_or(0.0)
        );
        if peer_ok {
            match peer(&args, "reference", args.threads) {
                Ok(p) => {
                    let psps = p["steps"].as_f64().unwrap_or(1500.0)
                        / p["train_s"].as_f64().unwrap_or(f64::NAN);
                    theirs.push(psps);
                    ratios.push(sps / psps);
                    line += &format!("; peer {psps:.1} steps/s; ratio {:.2}", sps / psps);
                }
                Err(e) => line += &format!("; peer failed: {e}"),
            }
        }
        eprintln!("{line}");
    }
    println!(
        "reference training at {} thread(s), medians of {} rounds:",
        args.threads, args.rounds
    );
    println!(
        "  engine  {:>7.1} steps/s  ({:.1} ms/step)",
        median(ours.clone()),
        1e3 / median(ours.clone())
    );
    println!(
        "  training throughput {:.0}% of the measured single-core sgemm peak ({:.1} GFLOP/s)",
        100.0 * median(share),
        median(peak)
    );
    if !theirs.is_empty() {
        println!(
            "  peer    {:>7.1} steps/s  ({:.1} ms/step)",
            median(theirs.clone()),
            1e3 / median(theirs)
        );
        println!(
            "  ratio   {:>7.2}x (median of per-round ratios)",
            median(ratios)
        );
    }
    if args.suite {
        suite(&args, peer_ok);
    }
    ExitCode::SUCCESS
}

/// The peer's six experiments: ours as one parallel build, the peer's one after another.
fn suite(args: &BenchArgs, peer_ok: bool) {
    let variants = [
        ("reference", "reference"),
        ("noscale", "noscale"),
        ("softmax-queries", "softmax_q"),
        ("nomask", "nomask"),
        ("allpos", "allpos"),
        ("lengths-3-12", "lengths"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("book")).unwrap();
    std::fs::write(
        root.join("book/book.toml"),
        "title = \"bench\"\nauthor = \"bench\"\nchapters = [\"c.md\"]\n",
    )
    .unwrap();
    let mut md = String::from("# Suite\n\n");
    for (i, (preset, _)) in variants.iter().enumerate() {
        md += &format!("```run r{i}\nbase = \"{preset}\"\n```\n\n");
    }
    std::fs::write(root.join("book/c.md"), md).unwrap();
    let opts = BuildOptions {
        root: root.to_path_buf(),
        out: None,
        runs: RunOptions {
            cache_dir: root.join("cache"),
            jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            timeout: Duration::from_secs(3600),
            engine: book::runs::engine_path(),
            quiet: true,
            ..Default::default()
        },
        bless: false,
        live_reload: false,
        ignore_numerics: false,
    };
    let t = Instant::now();
    let o = book::build(&opts);
    let ours = t.elapsed().as_secs_f64();
    println!(
        "experiment list (6 runs): engine {ours:.1} s on {} parallel processes ({} errors)",
        opts.runs.jobs,
        o.errors()
    );
    if peer_ok {
        let t = Instant::now();
        for (_, v) in variants {
            if let Err(e) = peer(args, v, 2) {
                println!("  peer {v} failed: {e}");
            }
        }
        let theirs = t.elapsed().as_secs_f64();
        println!("experiment list: peer {theirs:.1} s one after another at 2 threads; engine takes {:.0}% of that", 100.0 * ours / theirs);
    }
}
