//! The tasks' data: strings of letters, their encoding as token sequences, and targets.
//!
//! A sequence is the string, a separator, then the task's answer (the string reversed, in
//! the chapter), padded to a fixed length. The model is trained to predict the next token
//! from the separator on; every other position gets the ignore label. The alphabet and
//! the tasks themselves are `revtx_spec::task`.

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
/// input:     string     |     answer        . . .
/// target:    _ .. _     a0    a1 .. _       _ _ _      (target[t] = input[t+1])
/// ```
pub fn encode(
    s: &[u8],
    task: Task,
    seq_len: usize,
    targets: Targets,
    offset: usize,
) -> (Vec<i64>, Vec<i64>) {
    let l = s.len();
    assert!(
        offset + 2 * l < seq_len,
        "string of {l} letters at offset {offset} does not fit in {seq_len} positions"
    );
    let mut x = vec![PAD; seq_len];
    for (i, (&c, a)) in s.iter().zip(task.answer(s)).enumerate() {
        x[offset + i] = c as i64;
        x[offset + l + 1 + i] = a as i64;
    }
    x[offset + l] = SEP;
    let first = match targets {
        Targets::Answer => offset + l,
        Targets::AllPositions => offset,
    };
    let mut y = vec![IGNORE; seq_len];
    // The answer's last letter sits at offset + 2L and has no next token to predict.
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
    (lo, hi): (usize, usize),
    task: Task,
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
        let (xs, ys) = encode(s, task, seq_len, targets, offset);
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
