//! The tasks (`Task`: what answer a string asks for) and their alphabet: letters `a`..`j`,
//! the separator and the pad as token ids, which positions carry a target, and strings as
//! text. Shared by the compiler and the engine.

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

/// What the model is asked to write after the separator (`data.task`). Every task reads a
/// string of letters and answers with as many letters, so the sequence layout, the
/// targets and greedy decoding are the same for all; only the answer differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// The string backwards (the chapter's).
    #[default]
    Reverse,
    /// The string as it is.
    Copy,
    /// The string's letters in ascending order.
    Sort,
}

impl Task {
    pub fn is_reverse(&self) -> bool {
        *self == Task::Reverse
    }

    /// The value as a run block writes it.
    pub fn name(self) -> &'static str {
        match self {
            Task::Reverse => "reverse",
            Task::Copy => "copy",
            Task::Sort => "sort",
        }
    }

    /// The answer to `s`, letter ids in, letter ids out.
    pub fn answer(self, s: &[u8]) -> Letters {
        match self {
            Task::Reverse => s.iter().rev().copied().collect(),
            Task::Copy => s.to_vec(),
            Task::Sort => {
                let mut v = s.to_vec();
                v.sort_unstable();
                v
            }
        }
    }
}

/// Which positions carry a training target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Targets {
    /// Only the answer: positions from the separator up to the answer's second-last letter.
    Answer,
    /// Every position whose next token is a letter or the separator (the "loss on every
    /// position" fault): the input letters are scored too. Pads are still ignored.
    AllPositions,
}

/// A string of letter ids (each in `0..N_LETTERS`).
pub type Letters = Vec<u8>;

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

/// The token ids above, written out: part of every cache key, so that a change to the
/// alphabet (which decides what a run computes) misses every cached run.
pub const SIGNATURE: &str = "letters=a-j:0-9,sep=10,pad=11,ignore=-100";
