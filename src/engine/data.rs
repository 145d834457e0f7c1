//! The reversal task: strings of letters, their encoding as token sequences, and targets.
//!
//! A sequence is the string, a separator, then the string reversed, padded to a fixed
//! length. The model is trained to predict the next token from the separator on; every
//! other position gets the ignore label. This module is plain Rust (no libtorch), so the
//! book compiler can use it too.

use crate::engine::rng::Rng;
use serde::{Deserialize, Serialize};

/// Letters are `a`..`j`, token ids 0..=9.
pub const N_LETTERS: usize = 10;
/// The separator between a string and its reversal (shown as `|`).
pub const SEP: i64 = 10;
/// Padding after the reversal (shown as `.`).
pub const PAD: i64 = 11;
/// Vocabulary size: ten letters, the separator and the pad.
pub const VOCAB: i64 = 12;
/// Target label that the loss ignores (shown as `_`).
pub const IGNORE: i64 = -100;

/// Which positions carry a training target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Targets {
    /// Only the answer: positions from the separator up to the second-last reversed letter.
    Answer,
    /// Every position whose next token is a letter or the separator (the "loss on every
    /// position" fault): the input letters are scored too. Pads are still ignored.
    AllPositions,
}

/// A string of letter ids (each in `0..N_LETTERS`).
pub type Letters = Vec<u8>;

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

/// Token id to its display character: letters, `|` for the separator, `.` for pad.
pub fn token_char(t: i64) -> char {
    match t {
        0..=9 => (b'a' + t as u8) as char,
        SEP => '|',
        PAD => '.',
        _ => '_',
    }
}

/// A row of tokens as the chapter prints it: characters separated by spaces.
pub fn render_row(row: &[i64]) -> String {
    row.iter()
        .map(|&t| token_char(t).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `"abc"` into letter ids; `None` if a character is not a–j.
pub fn parse_letters(s: &str) -> Option<Letters> {
    s.bytes()
        .map(|b| (b'a'..=b'j').contains(&b).then(|| b - b'a'))
        .collect()
}

pub fn letters_to_string(s: &[u8]) -> String {
    s.iter().map(|&c| (b'a' + c) as char).collect()
}

/// Tokens to text, letters only, with `|` and `.` for the specials.
pub fn tokens_to_string(t: &[i64]) -> String {
    t.iter().map(|&t| token_char(t)).collect()
}

/// A key for a string, unique for strings of up to 18 letters (base 11 with a leading 1).
pub fn string_key(s: &[u8]) -> u64 {
    s.iter().fold(1u64, |k, &c| k * 11 + c as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chapter's two printed training examples, as the data code renders them.
    #[test]
    fn chapter_examples_encode_exactly() {
        let cases = [
            (
                "gfcdaaab",
                "g f c d a a a b | b a a a d c f g . . . . . . . .",
                "_ _ _ _ _ _ _ _ b a a a d c f g _ _ _ _ _ _ _ _ _",
            ),
            (
                "gjfgjhg",
                "g j f g j h g | g h j g f j g . . . . . . . . . .",
                "_ _ _ _ _ _ _ g h j g f j g _ _ _ _ _ _ _ _ _ _ _",
            ),
        ];
        for (s, input, target) in cases {
            let (x, y) = encode(&parse_letters(s).unwrap(), 25, Targets::Answer, 0);
            assert_eq!(render_row(&x), input);
            assert_eq!(render_row(&y), target);
        }
    }

    #[test]
    fn all_positions_scores_input_letters_but_not_pads() {
        let (x, y) = encode(&parse_letters("abc").unwrap(), 10, Targets::AllPositions, 0);
        assert_eq!(render_row(&x), "a b c | c b a . . .");
        assert_eq!(render_row(&y), "b c | c b a _ _ _ _");
    }

    #[test]
    fn offset_shifts_sequence_and_targets() {
        let (x, y) = encode(&parse_letters("ab").unwrap(), 9, Targets::Answer, 3);
        assert_eq!(render_row(&x), ". . . a b | b a .");
        assert_eq!(render_row(&y), "_ _ _ _ _ b a _ _");
    }

    #[test]
    fn random_offsets_always_fit() {
        let mut rng = Rng::new(1);
        let b = training_batch(&mut rng, 200, 3, 8, 25, Targets::Answer, true);
        assert_eq!(b.x.len(), 200 * 25);
        let y = &b.y;
        let targeted_max = (0..200)
            .flat_map(|r| (0..25).filter(move |&t| y[r * 25 + t] != IGNORE))
            .max()
            .unwrap();
        assert!(
            targeted_max > 16,
            "offsets should reach positions the plain task never targets"
        );
    }
}
