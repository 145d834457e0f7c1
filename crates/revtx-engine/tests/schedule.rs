//! The learning-rate schedule against its formulas: the warm-up exactly, the decays
//! within an ulp of the textbook expressions (with libm's cosine, here only as the
//! reference), and no schedule as the constant rate to the bit.
#![allow(
    clippy::cast_precision_loss,
    clippy::float_cmp,
    reason = "step counts are small, and exact equality is what is tested"
)]

use revtx_engine::experiments::{Decay, RunConfig, TrainConfig};
use revtx_engine::schedule::{cos_pi, lr_at};

fn train(warmup: usize, decay: Decay, min_lr: f64) -> TrainConfig {
    let mut t = RunConfig::preset("reference").unwrap().train;
    t.steps = 100;
    (t.warmup, t.decay, t.min_lr) = (warmup, decay, min_lr);
    t
}

#[test]
fn cos_pi_matches_the_cosine() {
    for k in 0..=1000 {
        let x = f64::from(k) / 1000.0;
        let want = (std::f64::consts::PI * x).cos();
        assert!(
            (cos_pi(x) - want).abs() < 4e-16,
            "cos(π·{x}): {} vs {want}",
            cos_pi(x)
        );
    }
    assert_eq!(cos_pi(0.0), 1.0);
    assert_eq!(cos_pi(1.0), -1.0);
    assert!(cos_pi(0.5).abs() < 1e-16);
}

#[test]
fn no_schedule_is_the_constant_rate_to_the_bit() {
    let t = train(0, Decay::None, 0.0);
    assert!((1..=t.steps).all(|s| lr_at(&t, s).to_bits() == t.lr.to_bits()));
}

#[test]
fn warmup_then_each_decay_follows_its_formula() {
    let (lr, min) = (0.003, 0.0003);
    let t = train(10, Decay::Cosine, min);
    for s in 1..=10 {
        assert_eq!(lr_at(&t, s), lr * s as f64 / 10.0);
    }
    for s in 11..=100 {
        let p = (s - 10) as f64 / 90.0;
        let want = min + (lr - min) * 0.5 * (1.0 + (std::f64::consts::PI * p).cos());
        assert!((lr_at(&t, s) - want).abs() < 1e-18, "step {s}");
    }
    assert!((lr_at(&t, 100) - min).abs() < 1e-18);
    let t = train(0, Decay::Linear, min);
    assert_eq!(lr_at(&t, 100), min);
    assert!((lr_at(&t, 50) - (min + (lr - min) * 0.5)).abs() < 1e-18);
    let t = train(100, Decay::Linear, min);
    assert_eq!(lr_at(&t, 100), lr);
}
