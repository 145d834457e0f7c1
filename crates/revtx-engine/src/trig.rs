//! Sines, cosines and exponentials of our own, in plain f64: only additions,
//! multiplications and divisions in a fixed order (Rust never fuses them), so every
//! machine computes the same bits, where libm's differ between libraries and vendors.
//! Used by the schedule's cosine and by the fixed and rotary position encodings.

use std::f64::consts::{LN_2, PI};

/// `cos(π·x)` for `x` in [0, 1], within a few units in the last place: by symmetry on
/// [0, ½], where the Taylor series of cos at `π·x` ≤ π/2 has converged to f64 by its 14th
/// term.
pub fn cos_pi(x: f64) -> f64 {
    let x = x.clamp(0.0, 1.0);
    let (x, sign) = if x > 0.5 { (1.0 - x, -1.0) } else { (x, 1.0) };
    let a = PI * x;
    let a2 = a * a;
    // 1 - a²/2! + a⁴/4! - …, summed from the smallest term (Horner's scheme).
    let mut sum = 0.0;
    for k in (1..=14u32).rev() {
        let n = f64::from(2 * k);
        sum = 1.0 - a2 / (n * (n - 1.0)) * sum;
    }
    sign * sum
}

/// `cos(π·x)` for any finite `x`: folded into [0, 1] by the period 2 and the symmetry
/// about 0 and 1 (the fold is exact: `floor` and subtraction of small integers).
pub fn cos_pi_any(x: f64) -> f64 {
    let x = x.abs();
    let x = x - 2.0 * (x / 2.0).floor(); // [0, 2)
    cos_pi(if x > 1.0 { 2.0 - x } else { x })
}

/// `sin(π·x)` for any finite `x`: `cos(π·(x - ½))`.
pub fn sin_pi_any(x: f64) -> f64 {
    cos_pi_any(x - 0.5)
}

/// `(sin a, cos a)` of an angle in radians.
pub fn sin_cos(a: f64) -> (f64, f64) {
    let x = a / PI;
    (sin_pi_any(x), cos_pi_any(x))
}

/// `ln 2` in two parts (fdlibm's): the high part has 32 trailing zero bits, so `k` times it
/// is exact for any `k` below 2^20.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `e^y` for `y` in [-700, 700]: `y = k·ln 2 + r` with |r| ≤ ln 2 / 2 (Cody and Waite's
/// reduction, ln 2 in two parts), the Taylor series of `e^r` to 20 terms, and `2^k` put
/// into the exponent bits exactly.
pub fn exp(y: f64) -> f64 {
    let y = y.clamp(-700.0, 700.0);
    let k = (y / LN_2).round();
    let r = (y - k * LN2_HI) - k * LN2_LO;
    let mut sum = 1.0;
    for n in (1..=20u32).rev() {
        sum = 1.0 + r / f64::from(n) * sum;
    }
    // 2^k as its bits: exponent 1023 + k, mantissa zero.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "k is an integer in [-1010, 1010]"
    )]
    let two_k = f64::from_bits(((1023 + k as i64) as u64) << 52);
    sum * two_k
}

/// `2^x`: `2^k·e^(f·ln 2)` with `k = ⌊x⌋` and `f = x - k` (both exact), so a whole `x`
/// gives its power of two exactly.
pub fn exp2(x: f64) -> f64 {
    let k = x.floor();
    let f = x - k;
    #[allow(
        clippy::cast_possible_truncation,
        reason = "k is a whole number in [-1000, 1000]"
    )]
    let two_k = f64::from_bits(((1023 + k.clamp(-1000.0, 1000.0) as i64) as u64) << 52);
    if f == 0.0 {
        two_k
    } else {
        two_k * exp(f * LN_2)
    }
}

/// `ln 10000`, written out, so that no logarithm is computed at all (a test holds it to
/// libm's).
pub const LN_10000: f64 = 9.210_340_371_976_184;

/// The angular frequency of pair `i` of `width` dimensions, `10000^(-2i/width)`, as the
/// sinusoidal and rotary encodings both use it.
#[allow(
    clippy::cast_precision_loss,
    reason = "widths and indices are small integers"
)]
pub fn frequency(i: i64, width: i64) -> f64 {
    exp(-((2 * i) as f64) / width as f64 * LN_10000)
}
