//! The reversal task: strings of letters, their encoding as token sequences, and targets.
//!
//! A sequence is the string, a separator, then the string reversed, padded to a fixed
//! length. The model is trained to predict the next token from the separator on; every
//! other position gets the ignore label. The alphabet itself is `revtx_spec::task`.

use crate::rng::Rng;

pub use revtx_spec::task::*;

/// `n` strings with lengths uniform in `lo..=hi` and letters uniform over a–j.
pub fn sample_strings(rng: &mut Rng, n: usize, lo: usize, hi: usize) -> Vec<Letters> {
    (0..n)
        .map(|_| {
            let len = rng.range(lo, hi);
            (0..len)
                .map(|_| rng.range(0, N_LETTERS - 1) as u8)
                .collect()
        })
        .collect()
}

/// Encodes one string as `(input, target)` rows of `seq_len` tokens, starting at `offset`
/// (positions before it hold pads; offset 0 is the chapter's task).
///
/// ```text
/// position:  0 .. L-1   L     L+1 .. 2L     2L+1 ..
/// input:     string     |     reversed      . . .
/// target:    _ .. _     r0    r1 .. _       _ _ _      (target[t] = input[t+1])
/// ```
pub fn encode(s: &[u8], seq_len: usize, targets: Targets, offset: usize) -> (Vec<i64>, Vec<i64>) {
    let l = s.len();
    assert!(
        offset + 2 * l < seq_len,
        "string of {l} letters at offset {offset} does not fit in {seq_len} positions"
    );
    let mut x = vec![PAD; seq_len];
    for (i, &c) in s.iter().enumerate() {
        x[offset + i] = c as i64;
        x[offset + 2 * l - i] = c as i64;
    }
    x[offset + l] = SEP;
    let first = match targets {
        Targets::Answer => offset + l,
        Targets::AllPositions => offset,
    };
    let mut y = vec![IGNORE; seq_len];
    // The last reversed letter sits at offset + 2L and has no next token to predict.
    let last = offset + 2 * l;
    y[first..last].copy_from_slice(&x[first + 1..last + 1]);
    (x, y)
}

/// A batch of encoded sequences, row-major `[rows, seq_len]`.
#[derive(Clone, Debug)]
pub struct Batch {
    pub strings: Vec<Letters>,
    pub x: Vec<i64>,
    pub y: Vec<i64>,
    pub seq_len: usize,
}

/// Draws one training batch. With `random_offset`, each sequence starts at a uniformly
/// drawn offset among those that fit (exercise 5); otherwise at position 0.
pub fn training_batch(
    rng: &mut Rng,
    size: usize,
    lo: usize,
    hi: usize,
    seq_len: usize,
    targets: Targets,
    random_offset: bool,
) -> Batch {
    let strings = sample_strings(rng, size, lo, hi);
    let (mut x, mut y) = (
        Vec::with_capacity(size * seq_len),
        Vec::with_capacity(size * seq_len),
    );
    for s in &strings {
        let offset = if random_offset {
            rng.range(0, seq_len - 1 - 2 * s.len())
        } else {
            0
        };
        let (xs, ys) = encode(s, seq_len, targets, offset);
        x.extend(xs);
        y.extend(ys);
    }
    Batch {
        strings,
        x,
        y,
        seq_len,
    }
}
