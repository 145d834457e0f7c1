//! Interventions on a trained model: what is switched off, written as the author writes it
//! (`"b0.h1"`, `"b1.attn"`, `"b0.mlp"`, `"pos"`, several joined by `+`) and checked against
//! the model's shape. A run that intervenes retrains nothing: `revtx-intervene` evaluates the
//! trained run's weights with each target switched off in turn, and (`patch`) patches
//! each component's output from a clean run into a corrupted one.

use crate::config::{ModelConfig, PositionEncoding};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What an intervening run does to its trained run, and how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intervene {
    /// The run whose trained weights are read (its config is this run's, less `intervene`).
    pub from: String,
    /// How a switched-off component's output is replaced.
    pub mode: AblateMode,
    /// The targets, each evaluated on its own (a target of several parts switches them
    /// off together). Written as strings: `b0.h1`, `b1.attn`, `b0.mlp`, `b0.h0+b0.h1`.
    pub ablate: Vec<Target>,
    /// Activation patching, when the block asks for it (absent from the JSON otherwise, so
    /// that no ablation's key changed when patching came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<Patch>,
    /// Measure what training changed in the learned position table: each row's trained
    /// value less its initial one (absent from the JSON when false, as `patch`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub table_change: bool,
}

/// Activation patching on one letter: `strings` strings of `length` letters, each run clean
/// and corrupted (see [`Corruption`]); then the corrupted run again with one component's
/// output at one position taken from the clean run, for every component and position.
/// What is measured is the logit difference between the clean answer letter and the one
/// the corruption would put there, where the model writes that letter. Every value is
/// written out in the run's key, defaults included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    pub length: usize,
    pub letter: usize,
    pub strings: usize,
    /// The seed of the strings and their corruptions (`revtx_engine::rng`).
    pub seed: u64,
    /// What the corruption changes (read as `letter` from results written before it was
    /// a key, which all corrupted a letter).
    #[serde(default)]
    pub corrupt: Corruption,
}

/// What a patching run's corrupted strings change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Corruption {
    /// The letter at `letter` is replaced by another: the answer letter it decides changes.
    #[default]
    Letter,
    /// The letters stay and their places change: the position signal of `letter` and of
    /// the letter after it are swapped (two rows of a position table), so each is read
    /// where the other sits. Only for positions added from a table (learned, sinusoidal).
    Place,
}

impl Corruption {
    pub const NAMES: &'static [&'static str] = &["letter", "place"];
}

impl Patch {
    /// `strings` when the block leaves it out.
    pub const STRINGS: usize = 100;
    /// `seed` when the block leaves it out.
    pub const SEED: u64 = 0;
    /// The keys of a `patch` table.
    pub const KEYS: &'static [&'static str] = &["length", "letter", "strings", "seed", "corrupt"];

    /// Which answer letter the input letter at `letter` decides, for the tasks whose
    /// answers are their letters in an order fixed by position: copying (the same index)
    /// and reversal (the mirror one). `None` for the others.
    pub fn answer_index(task: crate::task::Task, length: usize, letter: usize) -> Option<usize> {
        use crate::task::Task;
        match task {
            Task::Copy => Some(letter),
            Task::Reverse => Some(length - 1 - letter),
            Task::Sort | Task::Add | Task::Recall => None,
        }
    }

    /// The sequence position whose prediction is that answer letter: the separator's for
    /// the first, else the answer letter before it (the prompt is `length` letters).
    pub fn query(task: crate::task::Task, length: usize, letter: usize) -> Option<usize> {
        Self::answer_index(task, length, letter).map(|j| length + j)
    }

    /// The components a patching map has, in its order: the residual stream entering each
    /// block (`resid.b0` is the embeddings), each head's output before the block's output
    /// projection, and each MLP's output.
    pub fn components(m: &ModelConfig) -> Vec<String> {
        let mut out = Vec::new();
        for b in 0..m.n_layers {
            out.push(format!("resid.b{b}"));
            out.extend((0..m.n_heads).map(|h| format!("b{b}.h{h}")));
            out.push(format!("b{b}.mlp"));
        }
        out
    }
}

/// How an ablated component's output is replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AblateMode {
    /// By zero: a head's values, a sublayer's output projection and its bias set to 0, so
    /// that nothing of it reaches the residual stream.
    Zero,
    /// By its mean output over the trained run's test strings (teacher-forced, every
    /// position): the same weights set to 0, and the bias that then stands alone set to
    /// that mean, so that the part adds the same vector at every position.
    Mean,
}

impl AblateMode {
    pub const NAMES: &'static [&'static str] = &["zero", "mean"];
}

/// One component of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Part {
    /// Head `head` of block `block`'s attention.
    Head { block: i64, head: i64 },
    /// Block `block`'s attention sublayer, all heads and its output bias.
    Attn { block: i64 },
    /// Block `block`'s MLP sublayer.
    Mlp { block: i64 },
    /// The learned position table, every row: the model reads its tokens with no position
    /// added (written `pos`).
    Pos,
}

impl Part {
    /// The block it is in; `None` for the position table.
    pub fn block(self) -> Option<i64> {
        match self {
            Part::Head { block, .. } | Part::Attn { block } | Part::Mlp { block } => Some(block),
            Part::Pos => None,
        }
    }

    /// Why the model has no such part, or `None` when it has.
    pub fn missing_in(self, m: &ModelConfig) -> Option<String> {
        if self == Part::Pos {
            return (m.position_encoding != PositionEncoding::Learned).then(|| {
                format!(
                    "the model's positions are `{}`, not a learned table",
                    m.position_encoding.name()
                )
            });
        }
        let blocks = m.n_layers;
        if self.block().is_some_and(|b| b >= blocks) {
            return Some(format!(
                "the model has {blocks} block{} (b0 to b{})",
                if blocks == 1 { "" } else { "s" },
                blocks - 1
            ));
        }
        match self {
            Part::Head { head, .. } if head >= m.n_heads => Some(format!(
                "the model has {} head{} per block (h0 to h{})",
                m.n_heads,
                if m.n_heads == 1 { "" } else { "s" },
                m.n_heads - 1
            )),
            _ => None,
        }
    }

    fn parse(s: &str) -> Result<Part, String> {
        let bad = || {
            format!("`{s}` is not a component: write `b<block>.h<head>`, `b<block>.attn`, `b<block>.mlp` (counting from 0) or `pos`")
        };
        if s == "pos" {
            return Ok(Part::Pos);
        }
        let (b, rest) = s.split_once('.').ok_or_else(bad)?;
        let block = number(b.strip_prefix('b').ok_or_else(bad)?).ok_or_else(bad)?;
        match rest {
            "attn" => Ok(Part::Attn { block }),
            "mlp" => Ok(Part::Mlp { block }),
            _ => {
                let head = number(rest.strip_prefix('h').ok_or_else(bad)?).ok_or_else(bad)?;
                Ok(Part::Head { block, head })
            }
        }
    }
}

/// A count written in decimal digits, with no sign and no leading zero.
fn number(s: &str) -> Option<i64> {
    let plain =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    plain.then(|| s.parse().ok()).flatten()
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Head { block, head } => write!(f, "b{block}.h{head}"),
            Part::Attn { block } => write!(f, "b{block}.attn"),
            Part::Mlp { block } => write!(f, "b{block}.mlp"),
            Part::Pos => f.write_str("pos"),
        }
    }
}

/// Where a target is switched off: at every position, or (written `@input`, `@answer`)
/// only at the positions of the input's letters, or only at the separator and the answer
/// letters fed back, the positions from which the answer letters are predicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum At {
    All,
    Input,
    Answer,
}

impl At {
    /// The positions, of a sequence of `tokens` whose prompt is `prompt` tokens long.
    pub fn positions(self, prompt: usize, tokens: usize) -> std::ops::Range<usize> {
        match self {
            At::All => 0..tokens,
            At::Input => 0..prompt.min(tokens),
            At::Answer => prompt.min(tokens)..tokens,
        }
    }
}

/// What one evaluation switches off: one or more parts, together, at the positions `at`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target {
    pub parts: Vec<Part>,
    pub at: At,
}

impl Target {
    /// Parts switched off at every position.
    pub fn all(parts: Vec<Part>) -> Target {
        Target { parts, at: At::All }
    }

    /// Reads `b0.h1`, `b1.mlp`, `b0.h0+b0.h1`, or any of them restricted to positions:
    /// `b0.h1@input`, `b0.h1@answer`.
    pub fn parse(s: &str) -> Result<Target, String> {
        let (written, at) = match s.split_once('@') {
            None => (s, At::All),
            Some((w, "input")) => (w, At::Input),
            Some((w, "answer")) => (w, At::Answer),
            Some((_, other)) => {
                return Err(format!(
                    "`@{other}` is not a place: write `@input` (the input's letters) or `@answer` (the separator and the answer letters)"
                ))
            }
        };
        let parts = written
            .split('+')
            .map(|p| Part::parse(p.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        for (k, p) in parts.iter().enumerate() {
            if parts[..k].contains(p) {
                return Err(format!("`{p}` is named twice in `{s}`"));
            }
        }
        if at != At::All && parts.contains(&Part::Pos) {
            return Err(format!(
                "`pos` is switched off at every position or not at all, not `{s}`"
            ));
        }
        Ok(Target { parts, at })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, p) in self.parts.iter().enumerate() {
            if k > 0 {
                f.write_str("+")?;
            }
            write!(f, "{p}")?;
        }
        match self.at {
            At::All => Ok(()),
            At::Input => f.write_str("@input"),
            At::Answer => f.write_str("@answer"),
        }
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Target::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Every head of the model, one target each, block by block: what `ablate = "each-head"`
/// stands for.
pub fn each_head(m: &ModelConfig) -> Vec<Target> {
    (0..m.n_layers)
        .flat_map(|block| {
            (0..m.n_heads).map(move |head| Target::all(vec![Part::Head { block, head }]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_and_write_back() {
        for s in [
            "b0.h1",
            "b1.attn",
            "b0.mlp",
            "b0.h0+b1.h1",
            "b12.h10",
            "pos",
            "pos+b1.mlp",
            "b0.h1@input",
            "b0.h0+b1.h1@answer",
        ] {
            assert_eq!(Target::parse(s).unwrap().to_string(), s);
        }
        for bad in [
            "b0",
            "h1",
            "b0.h",
            "b-1.h0",
            "b01.h0",
            "b0.head1",
            "b0.h0+",
            "b0.h1+b0.h1",
            "b0.h1@keys",
            "b0.h1@",
            "pos@input",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    /// The two places split the positions between them, at every length.
    #[test]
    fn input_and_answer_split_the_positions() {
        for (prompt, tokens) in [(8, 9), (8, 17), (3, 2)] {
            let (i, a) = (
                At::Input.positions(prompt, tokens),
                At::Answer.positions(prompt, tokens),
            );
            assert_eq!((i.start, i.end, a.end), (0, a.start, tokens));
            assert_eq!(At::All.positions(prompt, tokens), 0..tokens);
        }
    }

    #[test]
    fn parts_are_checked_against_the_model() {
        let m = ModelConfig::chapter();
        assert!(Part::Head { block: 1, head: 1 }.missing_in(&m).is_none());
        let why = Part::Head { block: 0, head: 2 }.missing_in(&m).unwrap();
        assert!(why.contains("2 heads per block (h0 to h1)"), "{why}");
        let why = Part::Mlp { block: 2 }.missing_in(&m).unwrap();
        assert!(why.contains("2 blocks (b0 to b1)"), "{why}");
        assert_eq!(each_head(&m).len(), 4);
        assert!(Part::Pos.missing_in(&m).is_none());
        let rope = ModelConfig {
            position_encoding: PositionEncoding::Rope,
            ..m
        };
        let why = Part::Pos.missing_in(&rope).unwrap();
        assert!(why.contains("`rope`, not a learned table"), "{why}");
    }
}
