//! The learning rate of every step: a linear warm-up, then a decay to `min_lr` (none,
//! linear or cosine). Plain f64 arithmetic in a fixed order, and a cosine of our own rather
//! than libm's, so every machine computes the same rate to the last bit.

use crate::experiments::{Decay, TrainConfig};

/// The rate of step `step` (counted from 1, at most `t.steps`).
pub fn lr_at(t: &TrainConfig, step: usize) -> f64 {
    if step <= t.warmup {
        return t.lr * step as f64 / t.warmup as f64;
    }
    // After the warm-up: how far through the rest, from just above 0 to 1 at the last step.
    let progress = (step - t.warmup) as f64 / (t.steps - t.warmup) as f64;
    let span = t.lr - t.min_lr;
    match t.decay {
        Decay::None => t.lr,
        Decay::Linear => t.min_lr + span * (1.0 - progress),
        Decay::Cosine => t.min_lr + span * 0.5 * (1.0 + cos_pi(progress)),
    }
}

/// `cos(π·x)` for `x` in [0, 1], within a few units in the last place: by symmetry on
/// [0, ½], where the Taylor series of cos at `π·x` ≤ π/2 has converged to f64 by its 14th
/// term. Only multiplications, divisions and additions, in a fixed order.
pub fn cos_pi(x: f64) -> f64 {
    let x = x.clamp(0.0, 1.0);
    let (x, sign) = if x > 0.5 { (1.0 - x, -1.0) } else { (x, 1.0) };
    let a = std::f64::consts::PI * x;
    let a2 = a * a;
    // 1 - a²/2! + a⁴/4! - …, summed from the smallest term (Horner's scheme).
    let mut sum = 0.0;
    for k in (1..=14u32).rev() {
        let n = f64::from(2 * k);
        sum = 1.0 - a2 / (n * (n - 1.0)) * sum;
    }
    sign * sum
}
