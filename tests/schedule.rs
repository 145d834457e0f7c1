//! A run block's learning-rate schedule (`warmup`, `decay`, `min_lr` under `[train]`) is
//! the one its steps used: the engine records every step's rate in `train.lr`, and it is
//! the schedule's formula, step by step; a run without one keeps its constant rate to the
//! bit, and expressions read the rates.

#![allow(
    clippy::cast_precision_loss,
    clippy::float_cmp,
    reason = "step counts are small, and a constant rate is tested to the bit"
)]

mod common;
use common::*;

const WARM: &str = "```run warm\nbase = \"reference\"\n[train]\nsteps = 40\nblock = 10\nwarmup = 10\ndecay = \"cosine\"\nmin_lr = 0.0003\n[eval]\ntest_size = 24\nlong_size = 8\n```";

/// Every run result in the project's cache: (steps, the `train` object).
fn trained(p: &Project) -> Vec<(u64, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p.root().join(".revtx-cache/runs")).unwrap() {
        let f = e.unwrap().path().join("result.json");
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let r: serde_json::Value = serde_json::from_str(&text).unwrap();
        let steps = r["config"]["train"]["steps"].as_u64().unwrap();
        out.push((steps, r["train"].clone()));
    }
    out.sort_by_key(|(s, _)| *s);
    out
}

#[test]
fn each_step_uses_the_rate_its_schedule_gives() {
    let chapter = format!(
        "# S\n\n{WARM}\n\n{TINY_RUN}\n\nThe first step's rate is [0.0003]{{=warm.train.lr[0]}}, the last [0.00030]{{=warm.train.lr[39]}}.\n"
    );
    let p = Project::new(&chapter);
    let o = p.check();
    assert_eq!(o.errors(), 0, "{:?}", located(&o));
    assert_eq!(o.counts.checked, 2);
    let runs = trained(&p);
    assert_eq!(runs.len(), 2, "the tiny run and the warm one");
    let rates = |t: &serde_json::Value| -> Vec<f64> {
        t["lr"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    // The tiny run: no schedule, the preset's rate at every one of its 30 steps, exactly.
    let tiny = rates(&runs[0].1);
    assert_eq!(tiny.len(), 30);
    assert!(tiny.iter().all(|&r| r == 0.003), "{tiny:?}");
    // The warm run: 10 steps up from 0, then half a cosine down to min_lr.
    let warm = rates(&runs[1].1);
    assert_eq!(warm.len(), 40);
    let (lr, min) = (0.003, 0.0003);
    for (k, &r) in warm.iter().enumerate() {
        let step = k + 1;
        let want = if step <= 10 {
            lr * step as f64 / 10.0
        } else {
            let progress = (step - 10) as f64 / 30.0;
            min + (lr - min) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
        };
        assert!((r - want).abs() < 1e-15, "step {step}: {r} against {want}");
    }
    assert!(
        warm[..10].windows(2).all(|w| w[0] < w[1]),
        "the warm-up rises"
    );
    assert!(
        warm[10..].windows(2).all(|w| w[0] >= w[1]),
        "the decay falls"
    );
}
