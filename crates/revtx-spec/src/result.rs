//! What a run produces. Plain serde types with no libtorch, so the book compiler can read
//! results from the cache without loading libtorch.

use crate::experiments::RunConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bumped whenever the layout of a result changes; part of the run-cache key. 3: one of
/// `train`, `worked` or `variance` (`RunOutput`), where 2 wrote all three, two as null.
/// 4: the learning rate of every step (`train.lr`). 5: the gradient norm of every step
/// (`train.grad_norm`); `train.positions` only for a learned position table.
pub const RESULT_FORMAT: u32 = 5;

/// The result of one run at one seed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(try_from = "RunResultFields")]
pub struct RunResult {
    pub format: u32,
    pub config: RunConfig,
    pub seed: u64,
    /// Trainable parameters.
    pub params: i64,
    /// What the run computed, by its kind; written as one field named for the kind.
    #[serde(flatten)]
    pub output: RunOutput,
    /// Machine-dependent facts: excluded from determinism comparisons.
    pub env: RunEnv,
}

/// A result as it is read: the same JSON, with the output's three possible fields named
/// one by one. Reading through `#[serde(flatten)]` buffered every field it did not name
/// (the whole `train` object, losses and all) in a generic tree and parsed it twice; a
/// warm build reads some 200 results.
#[derive(Deserialize)]
struct RunResultFields {
    format: u32,
    config: RunConfig,
    seed: u64,
    params: i64,
    #[serde(default)]
    train: Option<Box<TrainResult>>,
    #[serde(default)]
    worked: Option<WorkedExample>,
    #[serde(default)]
    variance: Option<Vec<DotVariance>>,
    #[serde(default)]
    ablated: Option<Box<Ablated>>,
    env: RunEnv,
}

impl TryFrom<RunResultFields> for RunResult {
    type Error = &'static str;

    fn try_from(r: RunResultFields) -> Result<Self, Self::Error> {
        let output = match (r.train, r.worked, r.variance, r.ablated) {
            (Some(t), None, None, None) => RunOutput::Train(t),
            (None, Some(w), None, None) => RunOutput::Worked(w),
            (None, None, Some(v), None) => RunOutput::Variance(v),
            (None, None, None, Some(a)) => RunOutput::Ablated(a),
            _ => {
                return Err(
                    "a result holds exactly one of `train`, `worked`, `variance` and `ablated`",
                )
            }
        };
        Ok(RunResult {
            format: r.format,
            config: r.config,
            seed: r.seed,
            params: r.params,
            output,
            env: r.env,
        })
    }
}

/// What a run computed: one per `RunKind`, so a result cannot hold two or none.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum RunOutput {
    /// A training run: its losses, evaluations and probes of the trained model.
    #[serde(rename = "train")]
    Train(Box<TrainResult>),
    /// Section 1.2's worked example (probe `worked-example`).
    #[serde(rename = "worked")]
    Worked(WorkedExample),
    /// Section 1.4's variance check (probe `dot-variance`).
    #[serde(rename = "variance")]
    Variance(Vec<DotVariance>),
    /// An intervening run (`config.intervene`): the trained model's evaluations with each
    /// target switched off. A variant added without a new format: no earlier result
    /// changed, and an intervening run's key is of its own kind (`entry::intervention_key`).
    #[serde(rename = "ablated")]
    Ablated(Box<Ablated>),
}

impl RunResult {
    /// The training run's results; `None` for a probe.
    pub fn train(&self) -> Option<&TrainResult> {
        match &self.output {
            RunOutput::Train(t) => Some(t),
            _ => None,
        }
    }

    /// The worked example's numbers; `None` for other runs.
    pub fn worked(&self) -> Option<&WorkedExample> {
        match &self.output {
            RunOutput::Worked(w) => Some(w),
            _ => None,
        }
    }

    /// The variance check's rows; `None` for other runs.
    pub fn variance(&self) -> Option<&[DotVariance]> {
        match &self.output {
            RunOutput::Variance(v) => Some(v),
            _ => None,
        }
    }

    /// An intervening run's evaluations; `None` for other runs.
    pub fn ablated(&self) -> Option<&Ablated> {
        match &self.output {
            RunOutput::Ablated(a) => Some(a),
            _ => None,
        }
    }
}

/// What an intervening run measured: the trained model as it is, then with each target
/// switched off, on the trained run's own test and long sets. The model is the same
/// weights throughout, so every ablated score is paired with `baseline` string by string.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Ablated {
    /// The trained model untouched: the intervening run checks that it decodes every
    /// string as the trained run's own result says, before it switches anything off.
    pub baseline: Scored,
    /// One evaluation per target, in the order the run block lists them, by the target as
    /// written (`b0.h1`, `b0.h0+b0.h1`).
    pub targets: Targets,
    /// Activation patching, when the run asks for it (`intervene.patch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patched: Option<Patched>,
    /// What training changed in the learned position table, when the run asks for it
    /// (`intervene.table_change`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_change: Option<TableChange>,
}

/// The learned position table's change in training: for each row `p`, `Δp` = the trained
/// row less the row the model was initialised with (the engine's `model::init` at the
/// run's seed, drawn again). Cosines and norms are computed in `f64`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TableChange {
    pub rows: usize,
    /// `|Δp|` and the initial row's length `|p₀|`, row by row.
    pub change_norm: Vec<f64>,
    pub initial_norm: Vec<f64>,
    /// The cosine between `Δp` and `Δ(p+1)`, for p from 0 to rows − 2.
    pub neighbour: Vec<f64>,
    /// The cosine between the changes of every two rows, `rows × rows`.
    pub cos: Vec<Vec<f64>>,
}

/// What activation patching measured. For each string, the logit difference
/// `LD = logit(clean letter) − logit(corrupted letter)` at `query`, where the model writes
/// the answer letter the corrupted input letter decides; `clean` and `corrupt` are their
/// means over the strings, run as they are. `restored[c][p]` is the share of the gap the
/// patch of component `c` at position `p` (from the clean run into the corrupted one)
/// closes: `(mean LD patched − corrupt) / (clean − corrupt)`; 1 restores the clean answer's
/// margin, 0 changes nothing. Positions run from 0 to `query` (later ones cannot act).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Patched {
    /// The corrupted letter's position in the sequence (its index in the string).
    pub corrupted: usize,
    /// The position whose prediction is measured.
    pub query: usize,
    /// The sequence's tokens at each position for the first string, clean, as letters and
    /// `|` (for a figure's axis).
    pub tokens: Vec<String>,
    pub clean: f64,
    pub corrupt: f64,
    /// How many strings the clean model answers right at `query` (its top letter is the
    /// clean one), and how many the corrupted run gives the corrupted letter.
    pub clean_right: usize,
    pub corrupt_flipped: usize,
    pub strings: usize,
    /// The components in order (`Patch::components`), each with one value per position.
    pub components: Vec<String>,
    pub restored: BTreeMap<String, Vec<f64>>,
}

/// Targets and their scores, in the block's order; a map in JSON and in expressions
/// (`run.ablated.targets["b0.h1"].test.accuracy`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Targets(pub Vec<(String, Scored)>);

impl Serialize for Targets {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Targets {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Targets;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map from targets to their scores")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Targets, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Scored>()? {
                    out.push((k, v));
                }
                Ok(Targets(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// One model's greedy decodes scored on the test set and the long set.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Scored {
    pub test: Score,
    pub long: Score,
}

/// Exact match of greedy answers: the inputs are the trained run's (`train.test.inputs`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Score {
    pub correct: usize,
    pub total: usize,
    /// correct / total, as a fraction.
    pub accuracy: f64,
    /// One entry per problem size present, in increasing size.
    pub by_length: Vec<LengthEval>,
    /// Wrong answer tokens at each answer position (index 0 is the first answer token),
    /// over every string whose answer reaches that position.
    pub wrong_at: Vec<usize>,
    /// The model's greedy output for each input, in order.
    pub outputs: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TrainResult {
    /// Loss at every step (index 0 is step 1).
    pub losses: Vec<f64>,
    /// The learning rate every step used (index 0 is step 1), after warm-up and decay.
    #[serde(default)]
    pub lr: Vec<f64>,
    /// The norm of all gradients together at every step, before any clipping (index 0 is
    /// step 1): squares summed in f64 in a fixed order (`optim::norm`), then the root.
    #[serde(default)]
    pub grad_norm: Vec<f64>,
    /// Mean loss over each block of `train.block` steps.
    pub block_means: Vec<f64>,
    /// Running mean over `train.window` steps, one value per step from step `window` on.
    pub running_mean: Vec<f64>,
    /// First 1-indexed step at which the running mean falls below the threshold.
    pub first_below: Option<usize>,
    /// First 1-indexed step at which the raw loss falls below the threshold.
    pub first_raw_below: Option<usize>,
    /// Mean loss over the last block.
    pub last_block_mean: f64,
    pub first_loss: f64,
    pub final_loss: f64,
    /// Exact match on strings of the training lengths.
    pub test: Eval,
    /// Exact match on the long-string set.
    pub long: Eval,
    /// Greedy decodes of the named strings, keyed by input.
    pub decodes: std::collections::BTreeMap<String, String>,
    pub attention: AttentionMap,
    /// The learned position table before and after training; absent under the other
    /// position encodings, which train no table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub positions: Option<PositionTable>,
    pub data: DataStats,
    /// Two training examples as the model sees them (the first two of the first batch).
    pub examples: Vec<Example>,
    /// How peaked attention is, before the first update and after the last.
    pub saturation: Saturation,
}

/// Attention's sharpness on the test strings (teacher-forced), per layer, over every
/// head, query row with at least two visible keys, and visible key.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Saturation {
    pub initial: AttnStats,
    #[serde(rename = "final")]
    pub last: AttnStats,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AttnStats {
    /// Standard deviation of the raw scores q.k, before any division, per layer.
    pub score_sd: Vec<f64>,
    /// Mean over rows of the largest weight, per layer.
    pub max_weight: Vec<f64>,
    /// Mean row entropy in nats, per layer, and what uniform rows would give.
    pub entropy: Vec<f64>,
    pub uniform_entropy: f64,
}

/// Exact-match accuracy of greedy decoding.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Eval {
    pub correct: usize,
    pub total: usize,
    /// correct / total, as a fraction.
    pub accuracy: f64,
    /// One entry per string length present, in increasing length.
    pub by_length: Vec<LengthEval>,
    /// Test strings that never appeared in training, and how many of them were right.
    pub unseen: usize,
    pub unseen_correct: usize,
    /// A few wrong answers, for the reader: `input → output`.
    pub misses: Vec<String>,
    /// Every input of the set and the model's greedy output for it, in order.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LengthEval {
    pub len: usize,
    pub correct: usize,
    pub total: usize,
    pub accuracy: f64,
}

/// Attention weights for one named input, teacher-forced with its true reversal.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AttentionMap {
    pub input: String,
    /// Display tokens of the sequence, e.g. `["f", "g", ..., "|", ...]`.
    pub tokens: Vec<String>,
    /// `weights[layer][head][query][key]`.
    pub weights: Vec<Vec<Vec<Vec<f64>>>>,
    /// `strongest[layer][head]`: for each row from the separator to the second-last
    /// output position, the key with the largest weight.
    pub strongest: Vec<Vec<Vec<Strongest>>>,
    /// Smallest and largest of those strongest weights in the last layer, over all heads.
    pub last_layer_min: f64,
    pub last_layer_max: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Strongest {
    pub query: usize,
    pub query_token: String,
    pub key: usize,
    pub key_token: String,
    pub weight: f64,
}

/// The learned position table before and after training.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PositionTable {
    pub rows: usize,
    pub norm_before: Vec<f64>,
    pub norm_after: Vec<f64>,
    /// Whether each row ever received a non-zero gradient.
    pub trained: Vec<bool>,
    /// Count of rows that got a gradient, and the first row that never did.
    pub trained_rows: usize,
    pub first_untrained: Option<usize>,
    /// Mean percentage by which the untrained rows' norms shrank (weight decay alone).
    pub untrained_shrink_pct: Option<f64>,
}

/// Sizes of the training set.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DataStats {
    pub examples_seen: usize,
    pub distinct_strings: usize,
    /// One entry per training length.
    pub coverage: Vec<Coverage>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Coverage {
    pub len: usize,
    /// All possible strings of this length (10^len).
    pub possible: f64,
    /// Distinct strings of this length seen in training.
    pub seen: usize,
    /// seen / possible.
    pub share: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Example {
    pub string: String,
    pub input: String,
    pub target: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WorkedExample {
    pub query: Vec<f64>,
    pub keys: Vec<Vec<f64>>,
    pub values: Vec<Vec<f64>>,
    pub sqrt_d: f64,
    pub scores: Vec<f64>,
    pub weights: Vec<f64>,
    pub output: Vec<f64>,
    /// The same example with its scores multiplied by sqrt(d_k), as if the division were
    /// left out at head width d_k.
    pub sharpening: Vec<Sharpening>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Sharpening {
    pub d_k: i64,
    pub factor: f64,
    pub weights: Vec<f64>,
    pub max_weight: f64,
    /// Entropy of the weights, in nats (ln 4 = 1.386 for four equal weights).
    pub entropy: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DotVariance {
    pub dim: i64,
    pub samples: i64,
    /// Sample variance of q·k for unit-variance entries (theory: dim).
    pub variance: f64,
    /// Sample variance of q·k/√dim (theory: 1).
    pub scaled_variance: f64,
    pub sqrt_dim: f64,
}

/// Facts about where and how long a run ran. Not part of determinism checks, except the
/// profile, which is also part of the cache key.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunEnv {
    /// The numeric profile the run computed under (`portable-avx2-v2`, `native`).
    pub profile: String,
    pub threads: usize,
    pub libtorch: String,
    /// The CPU's model name, vendor and vector extensions.
    pub cpu: String,
    pub vendor: String,
    pub isa: String,
    pub code_fingerprint: String,
    pub train_seconds: f64,
    pub eval_seconds: f64,
    pub steps_per_second: f64,
    /// Where the training time went, summed over the steps.
    #[serde(default)]
    pub phases: StepPhases,
    pub started_unix: u64,
}

/// Seconds a run's training loop spent in each phase of its steps.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepPhases {
    /// Drawing the batch and making its tensors.
    pub data: f64,
    /// The forward pass and the loss.
    pub forward: f64,
    /// Backpropagation (and noting which position rows got a gradient).
    pub backward: f64,
    /// The AdamW step.
    pub optimizer: f64,
}

/// Mean and sample standard deviation.
pub fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let m = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variance_result() -> RunResult {
        RunResult {
            format: RESULT_FORMAT,
            config: RunConfig::reference(),
            seed: 3,
            params: 7,
            output: RunOutput::Variance(vec![DotVariance {
                dim: 32,
                samples: 10,
                variance: 31.5,
                scaled_variance: 0.984_375,
                sqrt_dim: 32f64.sqrt(),
            }]),
            env: RunEnv {
                profile: "portable-avx2-v2".into(),
                threads: 1,
                libtorch: "2.13.0".into(),
                cpu: "a cpu".into(),
                vendor: "a vendor".into(),
                isa: "avx2 fma".into(),
                code_fingerprint: "0123456789abcdef".into(),
                train_seconds: 0.5,
                eval_seconds: 0.25,
                steps_per_second: 2.0,
                phases: StepPhases::default(),
                started_unix: 1,
            },
        }
    }

    /// A result reads back as it was written, its output still one field named for its
    /// kind; a result with two outputs, or none, does not read.
    #[test]
    fn a_result_reads_back_and_holds_one_output() {
        let r = variance_result();
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"variance\":[{"), "{text}");
        assert_eq!(serde_json::from_str::<RunResult>(&text).unwrap(), r);
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let variance = v["variance"].take();
        v.as_object_mut().unwrap().remove("variance");
        let none = serde_json::from_value::<RunResult>(v.clone()).unwrap_err();
        assert!(none.to_string().contains("exactly one"), "{none}");
        v["variance"] = variance.clone();
        v["worked"] = serde_json::json!(null);
        assert_eq!(serde_json::from_value::<RunResult>(v.clone()).unwrap(), r);
        v["train"] = serde_json::json!({});
        assert!(serde_json::from_value::<RunResult>(v).is_err());
    }
}
