//! The learning rate of every step: a linear warm-up, then a decay to `min_lr` (none,
//! linear or cosine). Plain f64 arithmetic in a fixed order, and a cosine of our own (`trig`)
//! rather than libm's, so every machine computes the same rate to the last bit.

use crate::experiments::{Decay, TrainConfig};
pub use crate::trig::cos_pi;

// ANCHOR: schedule
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
// ANCHOR_END: schedule
