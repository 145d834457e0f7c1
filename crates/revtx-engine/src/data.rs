//! The tasks' data: strings of letters, their encoding as token sequences, and targets.
//!
//! A sequence is the problem's prompt (a string of letters, in the chapter), a separator,
//! then the task's answer (the string reversed, in the chapter), padded to a fixed length.
//! The model is trained to predict the next token from the separator on; every other
//! position gets the ignore label. The tasks and alphabets are `revtx_spec::task`.

use crate::rng::Rng;

pub use revtx_spec::task::*;

/// `n` problems with sizes uniform in `lo..=hi`, drawn by [`draw`].
pub fn sample_problems(
    rng: &mut Rng,
    alphabet: Alphabet,
    n: usize,
    lo: usize,
    hi: usize,
) -> Vec<Letters> {
    (0..n)
        .map(|_| {
            let size = rng.range(lo, hi);
            draw(rng, alphabet, size)
        })
        .collect()
}

/// One problem of size `n`: its symbols uniform over the letters, except that recall's
/// keys are distinct (a partial shuffle of the letters) and its query one of them.
pub fn draw(rng: &mut Rng, a: Alphabet, n: usize) -> Letters {
    let letter = |rng: &mut Rng| rng.range(0, a.letters - 1) as u8;
    match a.task {
        Task::Recall => {
            let mut keys: Vec<u8> = (0..a.letters as u8).collect();
            for i in 0..n {
                let j = rng.range(i, a.letters - 1);
                keys.swap(i, j);
            }
            let mut s = Vec::with_capacity(2 * n + 1);
            for &k in &keys[..n] {
                s.push(k);
                s.push(letter(rng));
            }
            s.push(keys[rng.range(0, n - 1)]);
            s
        }
        task => (0..task.symbols(n)).map(|_| letter(rng)).collect(),
    }
}

/// Encodes one problem as `(input, target)` rows of `seq_len` tokens, starting at `offset`
/// (positions before it hold pads; offset 0 is the chapter's task).
///
/// ```text
/// position:  0 .. P-1   P     P+1 .. P+A    P+A+1 ..
/// input:     prompt     |     answer        . . .
/// target:    _ .. _     a0    a1 .. _       _ _ _      (target[t] = input[t+1])
/// ```
pub fn encode(
    s: &[u8],
    alphabet: Alphabet,
    seq_len: usize,
    targets: Targets,
    offset: usize,
) -> (Vec<i64>, Vec<i64>) {
    let (prompt, answer) = (alphabet.prompt(s), alphabet.answer(s));
    let p = prompt.len();
    let total = p + 1 + answer.len();
    assert!(
        offset + total <= seq_len,
        "a problem of {total} tokens at offset {offset} does not fit in {seq_len} positions"
    );
    let mut x = vec![alphabet.pad(); seq_len];
    x[offset..offset + p].copy_from_slice(&prompt);
    x[offset + p] = alphabet.sep();
    for (i, &a) in answer.iter().enumerate() {
        x[offset + p + 1 + i] = i64::from(a);
    }
    let first = match targets {
        Targets::Answer => offset + p,
        Targets::AllPositions => offset,
    };
    let mut y = vec![IGNORE; seq_len];
    // The answer's last token has no next token to predict.
    let last = offset + total - 1;
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
    /// The pad token, which fills each row after its answer.
    pub pad: i64,
}

/// Draws one training batch. With `random_offset`, each sequence starts at a uniformly
/// drawn offset among those that fit (exercise 5); otherwise at position 0.
pub fn training_batch(
    rng: &mut Rng,
    size: usize,
    (lo, hi): (usize, usize),
    alphabet: Alphabet,
    seq_len: usize,
    targets: Targets,
    random_offset: bool,
) -> Batch {
    let strings = sample_problems(rng, alphabet, size, lo, hi);
    let (mut x, mut y) = (
        Vec::with_capacity(size * seq_len),
        Vec::with_capacity(size * seq_len),
    );
    for s in &strings {
        let offset = if random_offset {
            let n = alphabet.task.size(s.len());
            rng.range(0, seq_len - alphabet.task.sequence_len(n))
        } else {
            0
        };
        let (xs, ys) = encode(s, alphabet, seq_len, targets, offset);
        x.extend(xs);
        y.extend(ys);
    }
    Batch {
        strings,
        x,
        y,
        seq_len,
        pad: alphabet.pad(),
    }
}
