//! The tasks (`Task`: what problem a sequence poses and what answer it asks for) and their
//! alphabets (`Alphabet`: a task over `letters` symbols, its tokens, problems and text).
//! Shared by the compiler and the engine, and part of the engine's fingerprint.

use serde::{Deserialize, Serialize};

/// The chapter's alphabet: letters `a`..`j`, token ids 0..=9.
pub const N_LETTERS: usize = 10;
/// The chapter's separator between a string and its answer (shown as `|`).
pub const SEP: i64 = 10;
/// The chapter's padding after the answer (shown as `.`).
pub const PAD: i64 = 11;
/// The chapter's vocabulary size: ten letters, the separator and the pad.
pub const VOCAB: i64 = 12;
/// Target label that the loss ignores (shown as `_`).
pub const IGNORE: i64 = -100;
/// `data.letters` unless a run says otherwise: the chapter's ten.
pub const DEFAULT_LETTERS: usize = 10;
/// The most letters an alphabet may have: `a`..`z` (digits `0`..`9` under `add`).
pub const MAX_LETTERS: usize = 26;

crate::choice! {
    /// What a sequence asks for (`data.task`). A problem of size `n` is drawn as symbols of
    /// the alphabet, written as a prompt, then the separator, then the answer the model must
    /// write; only the answer's tokens carry targets.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Task {
        /// `n` letters, answered backwards (the chapter's).
        #[default]
        Reverse = "reverse",
        /// `n` letters, answered as they are.
        Copy = "copy",
        /// `n` letters, answered in ascending order.
        Sort = "sort",
        /// Two numbers of `n` digits in base `letters` (most significant digit first, leading
        /// zeros kept), written `a+b=`; the answer is their sum's `n + 1` digits, least
        /// significant first, so that each digit depends only on digits already read and the
        /// carry out of the digit just written.
        Add = "add",
        /// Associative recall: `n` pairs `k v` with distinct keys, then a query key; the answer
        /// is the query's value, one letter.
        Recall = "recall",
    }
}

impl Task {
    pub fn is_reverse(&self) -> bool {
        *self == Task::Reverse
    }

    /// Symbols drawn for a problem of size `n`.
    pub fn symbols(self, n: usize) -> usize {
        match self {
            Task::Reverse | Task::Copy | Task::Sort => n,
            Task::Add => 2 * n,
            Task::Recall => 2 * n + 1,
        }
    }

    /// The size of a problem drawn as `symbols` symbols (the inverse of [`Task::symbols`]).
    pub fn size(self, symbols: usize) -> usize {
        match self {
            Task::Reverse | Task::Copy | Task::Sort => symbols,
            Task::Add | Task::Recall => symbols / 2,
        }
    }

    /// Tokens of the prompt of a problem of size `n` (before the separator).
    pub fn prompt_len(self, n: usize) -> usize {
        match self {
            Task::Reverse | Task::Copy | Task::Sort => n,
            Task::Add | Task::Recall => 2 * n + 1,
        }
    }

    /// Tokens of the answer of a problem of size `n`.
    pub fn answer_len(self, n: usize) -> usize {
        match self {
            Task::Reverse | Task::Copy | Task::Sort => n,
            Task::Add => n + 1,
            Task::Recall => 1,
        }
    }

    /// Tokens a problem of size `n` occupies: prompt, separator, answer.
    pub fn sequence_len(self, n: usize) -> usize {
        self.prompt_len(n) + 1 + self.answer_len(n)
    }
}

/// A task over an alphabet of `letters` symbols (token ids `0..letters`), followed by the
/// separator, the pad and, under `add`, the plus sign. With ten letters the separator and
/// the pad are the chapter's [`SEP`] and [`PAD`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alphabet {
    pub task: Task,
    pub letters: usize,
}

#[allow(
    clippy::cast_possible_wrap,
    clippy::cast_possible_truncation,
    reason = "an alphabet has at most MAX_LETTERS letters and problems a few dozen symbols"
)]
impl Alphabet {
    /// The chapter's: reversal over `a`..`j`.
    pub const CHAPTER: Alphabet = Alphabet {
        task: Task::Reverse,
        letters: N_LETTERS,
    };

    pub fn new(task: Task, letters: usize) -> Self {
        Alphabet { task, letters }
    }

    pub fn sep(&self) -> i64 {
        self.letters as i64
    }

    pub fn pad(&self) -> i64 {
        self.letters as i64 + 1
    }

    /// The plus sign between the two numbers of `add`.
    pub fn plus(&self) -> Option<i64> {
        (self.task == Task::Add).then_some(self.letters as i64 + 2)
    }

    /// Tokens the model reads and writes: the letters, the separator, the pad, and the
    /// plus sign under `add` (the chapter's: 12).
    pub fn vocab(&self) -> i64 {
        self.letters as i64 + 2 + i64::from(self.task == Task::Add)
    }

    /// Why this alphabet cannot pose its task, if it cannot.
    pub fn problem(&self) -> Option<&'static str> {
        match self.task {
            Task::Add if !(2..=10).contains(&self.letters) => Some(
                "add writes its numbers in base data.letters, with digits 0-9: data.letters must be from 2 to 10",
            ),
            _ if !(2..=MAX_LETTERS).contains(&self.letters) => {
                Some("data.letters must be from 2 to 26 (a to z)")
            }
            _ => None,
        }
    }

    /// The largest problem size the alphabet can pose: recall's keys are distinct.
    pub fn max_size(&self) -> Option<usize> {
        (self.task == Task::Recall).then_some(self.letters)
    }

    /// The prompt of problem `s` as tokens (`add` puts the plus sign between its numbers).
    pub fn prompt(&self, s: &[u8]) -> Vec<i64> {
        let ids = s.iter().map(|&c| i64::from(c));
        match self.plus() {
            Some(plus) => {
                let (a, b) = s.split_at(s.len() / 2);
                let ids = |x: &[u8]| x.iter().map(|&c| i64::from(c)).collect::<Vec<_>>();
                [ids(a), vec![plus], ids(b)].concat()
            }
            None => ids.collect(),
        }
    }

    /// The answer to problem `s`, as letter ids.
    pub fn answer(&self, s: &[u8]) -> Letters {
        match self.task {
            Task::Reverse => s.iter().rev().copied().collect(),
            Task::Copy => s.to_vec(),
            Task::Sort => {
                let mut v = s.to_vec();
                v.sort_unstable();
                v
            }
            Task::Add => {
                let (a, b) = s.split_at(s.len() / 2);
                let base = self.letters as u8;
                let mut carry = 0;
                let mut out: Letters = a
                    .iter()
                    .rev()
                    .zip(b.iter().rev())
                    .map(|(&x, &y)| {
                        let d = x + y + carry;
                        carry = d / base;
                        d % base
                    })
                    .collect();
                out.push(carry);
                out
            }
            Task::Recall => {
                let (pairs, query) = s.split_at(s.len() - 1);
                let value = pairs
                    .chunks(2)
                    .find(|kv| kv[0] == query[0])
                    .map_or(0, |kv| kv[1]);
                vec![value]
            }
        }
    }

    /// A token's character: letters (`a`.., or digits under `add`), `|` for the separator
    /// (`=` under `add`), `.` for the pad, `+`, and `_` for anything else.
    pub fn char(&self, t: i64) -> char {
        let add = self.task == Task::Add;
        match t {
            t if (0..self.letters as i64).contains(&t) => {
                (if add { b'0' } else { b'a' } + t as u8) as char
            }
            t if t == self.sep() => {
                if add {
                    '='
                } else {
                    '|'
                }
            }
            t if t == self.pad() => '.',
            t if Some(t) == self.plus() => '+',
            _ => '_',
        }
    }

    /// Tokens as text, one character each.
    pub fn text(&self, t: &[i64]) -> String {
        t.iter().map(|&t| self.char(t)).collect()
    }

    /// A row of tokens as the chapter prints it: characters separated by spaces.
    pub fn render_row(&self, row: &[i64]) -> String {
        row.iter()
            .map(|&t| self.char(t).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A problem as the text a run block writes it: its prompt (`abc`, `12+34`, `acbdb`).
    pub fn problem_text(&self, s: &[u8]) -> String {
        self.text(&self.prompt(s))
    }

    /// Letters as text (an answer, or a problem's symbols).
    pub fn letters_text(&self, s: &[u8]) -> String {
        s.iter().map(|&c| self.char(i64::from(c))).collect()
    }

    /// Parses a problem written as its prompt, checking that it is one this task poses.
    pub fn parse(&self, text: &str) -> Result<Letters, String> {
        let letter = |ch: char| {
            (0..self.letters as i64)
                .find(|&t| self.char(t) == ch)
                .map(|t| t as u8)
        };
        let letters = |s: &str| -> Result<Letters, String> {
            s.chars()
                .map(|ch| {
                    letter(ch).ok_or_else(|| {
                        format!(
                            "'{ch}' is not one of the {} letters {}..{}",
                            self.letters,
                            self.char(0),
                            self.char(self.letters as i64 - 1)
                        )
                    })
                })
                .collect()
        };
        let s = match self.task {
            Task::Reverse | Task::Copy | Task::Sort => letters(text)?,
            Task::Add => {
                let (a, b) = text
                    .split_once('+')
                    .ok_or("an addition is written as two numbers around '+', e.g. 12+34")?;
                if a.len() != b.len() {
                    return Err("the two numbers of an addition have as many digits each".into());
                }
                [letters(a)?, letters(b)?].concat()
            }
            Task::Recall => {
                let s = letters(text)?;
                if s.len() % 2 == 0 {
                    return Err("a recall is pairs of key and value, then one key".into());
                }
                let (pairs, query) = s.split_at(s.len() - 1);
                let keys: Vec<u8> = pairs.iter().step_by(2).copied().collect();
                let distinct = keys.iter().enumerate().all(|(i, k)| !keys[..i].contains(k));
                if !distinct || !keys.contains(&query[0]) {
                    return Err("a recall's keys are distinct and its query is one of them".into());
                }
                s
            }
        };
        if s.is_empty() {
            return Err("a problem has at least one letter".into());
        }
        Ok(s)
    }

    /// How many different problems of size `n` there are.
    pub fn possible(&self, n: usize) -> f64 {
        let l = self.letters as f64;
        match self.task {
            Task::Reverse | Task::Copy | Task::Sort => l.powi(n as i32),
            Task::Add => l.powi(2 * n as i32),
            // Ordered distinct keys, any values, one of the keys queried.
            Task::Recall => {
                (0..n).map(|i| l - i as f64).product::<f64>() * l.powi(n as i32) * n as f64
            }
        }
    }
}

/// Which positions carry a training target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Targets {
    /// Only the answer: positions from the separator up to the answer's second-last token.
    Answer,
    /// Every position whose next token is part of the problem, the separator or the
    /// answer (the "loss on every position" fault): the input is scored too. Pads are still
    /// ignored.
    AllPositions,
}

/// A problem's symbols, as letter ids (each in `0..letters`).
pub type Letters = Vec<u8>;

/// A chapter token id to its character (the chapter's alphabet).
pub fn token_char(t: i64) -> char {
    Alphabet::CHAPTER.char(t)
}

/// A row of the chapter's tokens as the chapter prints it.
pub fn render_row(row: &[i64]) -> String {
    Alphabet::CHAPTER.render_row(row)
}

/// Parses `"abc"` into the chapter's letter ids; `None` if a character is not a–j.
pub fn parse_letters(s: &str) -> Option<Letters> {
    s.bytes()
        .map(|b| (b'a'..=b'j').contains(&b).then(|| b - b'a'))
        .collect()
}

pub fn letters_to_string(s: &[u8]) -> String {
    Alphabet::CHAPTER.letters_text(s)
}

/// The chapter's tokens to text, letters only, with `|` and `.` for the specials.
pub fn tokens_to_string(t: &[i64]) -> String {
    Alphabet::CHAPTER.text(t)
}

/// The token ids above, written out: part of every cache key, so that a change to the
/// alphabet (which decides what a run computes) misses every cached run. A run's own
/// task and letters are in its config, which is in its key too.
pub const SIGNATURE: &str = "letters=a-j:0-9,sep=10,pad=11,ignore=-100";
