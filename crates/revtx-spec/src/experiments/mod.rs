//! Experiments as declarative configs: what a run is, every value of it written out.
//!
//! Two types, kept apart on purpose:
//! - [`RunConfig`] is the complete internal description of one training run. Its canonical
//!   JSON is part of the run-cache key and is recorded in every result.
//! - [`RunSpec`] is the file format an author writes (TOML in a `run` block, or JSON on
//!   the command line): a named base plus any overrides. [`RunSpec::resolve`] turns it
//!   into a `RunConfig` and rejects unknown fields.

use crate::config::{ModelConfig, SoftmaxAxis};
use crate::task::{Alphabet, Targets, Task, DEFAULT_LETTERS};
use serde::{Deserialize, Serialize};

pub mod intervene;
mod presets;
mod problems;
mod spec;
#[cfg(test)]
pub(crate) mod tests;

pub use presets::{Preset, PRESETS};
pub use spec::{parse_seeds, RunSpec};

/// Everything one run needs, apart from its seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// What the run computes: a training run, or one of the small probes.
    pub kind: RunKind,
    /// Shape of the model.
    pub model: ModelConfig,
    /// Training data.
    pub data: DataConfig,
    /// Optimisation.
    pub train: TrainConfig,
    /// What is measured after training.
    pub eval: EvalConfig,
    /// A run that retrains nothing: the trained run `from`'s weights, evaluated with parts
    /// of the model switched off (`revtx-intervene`). Absent from a training run's JSON, so
    /// that no training run's key changed when it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervene: Option<intervene::Intervene>,
}

/// Kinds of experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// Train the model and evaluate it.
    Train,
    /// Section 1.2's worked example, through the real `attention` function.
    WorkedExample,
    /// Sample variance of dot products of random unit-variance vectors (section 1.4).
    DotVariance,
}

/// The training strings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// What problem each sequence poses, and what the model answers it with.
    pub task: Task,
    /// How many letters the alphabet has (`a`.., or digits under `add`).
    pub letters: usize,
    /// Smallest training problem: letters of a string, digits of each number under `add`,
    /// pairs under `recall`.
    pub min_len: usize,
    /// Largest training problem, in the same unit.
    pub max_len: usize,
    /// Which positions are scored by the loss.
    pub targets: Targets,
    /// Start each training sequence at a random offset (exercise 5's one-line change).
    pub random_offset: bool,
}

/// The optimiser and the schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Optimisation steps.
    pub steps: usize,
    /// Fresh examples per step.
    pub batch_size: usize,
    /// AdamW's peak learning rate: every step's, unless `warmup` or `decay` say otherwise.
    pub lr: f64,
    /// Steps of linear warm-up: step `k` of them (from 1) uses `lr · k / warmup`. 0: none.
    pub warmup: usize,
    /// How the rate falls from `lr` to `min_lr` over the steps after the warm-up.
    pub decay: Decay,
    /// Where a decay ends, at the last step.
    pub min_lr: f64,
    /// Weight decay, applied to all parameters: decoupled from the gradient under
    /// `adamw`, added to it (L2) under `adam` and `sgd`, as PyTorch's optimisers do.
    pub weight_decay: f64,
    /// Which update rule steps the parameters.
    pub optimizer: Optimizer,
    /// Adam's and AdamW's β₁ and β₂: the decay of the moving averages of the gradient and
    /// of its square.
    pub betas: [f64; 2],
    /// Adam's and AdamW's ε, added to the root of the second moment.
    pub eps: f64,
    /// SGD's momentum (0: plain SGD).
    pub momentum: f64,
    /// Global gradient-norm clipping: when the norm of all gradients together exceeds
    /// `clip`, every gradient is scaled by `clip / (norm + 1e-6)`. 0: off.
    pub clip: f64,
    /// libtorch intra-op threads. Fixed per run so results are reproducible.
    pub threads: usize,
    /// Steps per block when averaging the loss (the chapter's 250).
    pub block: usize,
    /// Window of the running mean used for "first step below the threshold".
    pub window: usize,
    /// The threshold itself (0.01).
    pub threshold: f64,
}

crate::choice! {
    /// The learning rate's decay after the warm-up (`train.decay`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Decay {
        /// `lr` to the end.
        #[default]
        None = "none",
        /// A straight line from `lr` to `min_lr`.
        Linear = "linear",
        /// Half a cosine from `lr` to `min_lr` (Loshchilov and Hutter's, without restarts).
        Cosine = "cosine",
    }
}

impl Decay {
    pub fn is_none(&self) -> bool {
        *self == Decay::None
    }
}

crate::choice! {
    /// The update rule (`train.optimizer`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Optimizer {
        /// Adam with decoupled weight decay (Loshchilov and Hutter): the chapter's.
        #[default]
        Adamw = "adamw",
        /// Adam (Kingma and Ba), weight decay added to the gradient.
        Adam = "adam",
        /// Stochastic gradient descent, with `momentum` if it is set.
        Sgd = "sgd",
    }
}

impl Optimizer {
    pub fn is_adamw(&self) -> bool {
        *self == Optimizer::Adamw
    }
}

/// PyTorch's defaults for Adam's β₁ and β₂, and ε.
pub const DEFAULT_BETAS: [f64; 2] = [0.9, 0.999];
pub const DEFAULT_EPS: f64 = 1e-8;

impl DataConfig {
    /// The task over this run's letters.
    pub fn alphabet(&self) -> Alphabet {
        Alphabet::new(self.task, self.letters)
    }
}

/// Evaluation after training.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// Seed of the test sets, separate from the training seed.
    pub test_seed: u64,
    /// Strings in the test set of training lengths.
    pub test_size: usize,
    /// Length range of that test set.
    pub test_min_len: usize,
    pub test_max_len: usize,
    /// Strings in the long-string set.
    pub long_size: usize,
    /// Length range of the long-string set.
    pub long_min_len: usize,
    pub long_max_len: usize,
    /// Named strings to decode greedily.
    pub decode: Vec<String>,
    /// The input whose attention weights are recorded.
    pub attention_input: String,
    /// For `dot-variance`: the widths to measure and the samples per width.
    pub variance_dims: Vec<i64>,
    pub variance_samples: i64,
}

impl RunConfig {
    /// The chapter's reference run.
    pub fn reference() -> Self {
        RunConfig {
            kind: RunKind::Train,
            model: ModelConfig::chapter(),
            data: DataConfig {
                task: Task::Reverse,
                letters: DEFAULT_LETTERS,
                min_len: 3,
                max_len: 8,
                targets: Targets::Answer,
                random_offset: false,
            },
            train: TrainConfig {
                steps: 1500,
                batch_size: 64,
                lr: 0.003,
                warmup: 0,
                decay: Decay::None,
                min_lr: 0.0,
                weight_decay: 0.01,
                optimizer: Optimizer::Adamw,
                betas: DEFAULT_BETAS,
                eps: DEFAULT_EPS,
                momentum: 0.0,
                clip: 0.0,
                threads: 1,
                block: 250,
                window: 25,
                threshold: 0.01,
            },
            eval: EvalConfig {
                test_seed: 1_000_003,
                test_size: 500,
                test_min_len: 3,
                test_max_len: 8,
                long_size: 200,
                long_min_len: 9,
                long_max_len: 12,
                decode: vec!["abcdefghij".into()],
                attention_input: "fgcabe".into(),
                variance_dims: vec![32, 256],
                variance_samples: 100_000,
            },
            intervene: None,
        }
    }

    /// What of this run the page's widget (`static/widget/`) cannot run, in words, or
    /// `None`: the model's choices it does not run ([`ModelConfig::widget_cannot_run`]),
    /// a task it does not run (it runs those that answer a string of letters with as many
    /// letters), or other letters than a-j.
    pub fn widget_cannot_run(&self) -> Option<String> {
        let d = &self.data;
        let what: Vec<String> = [
            self.model.widget_cannot_run(),
            match d.task {
                Task::Reverse | Task::Copy | Task::Sort => None,
                Task::Add | Task::Recall => Some(format!("task = \"{}\"", d.task.name())),
            },
            (d.letters != DEFAULT_LETTERS).then(|| format!("letters = {}", d.letters)),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!what.is_empty()).then(|| what.join(", "))
    }

    /// Columns a training batch runs at: the engine cuts each batch after its last real
    /// token when the mask allows it (causal, softmax over keys), and strings at a random
    /// offset may reach the last position.
    pub fn trained_width(&self) -> usize {
        let m = &self.model;
        let all = m.positions as usize;
        let trimmed = m.attn.causal && m.attn.softmax == SoftmaxAxis::Keys;
        if trimmed && !self.data.random_offset {
            self.data.task.sequence_len(self.data.max_len).min(all)
        } else {
            all
        }
    }

    /// Floating-point operations of one training step (forward and backward): six per
    /// weight of every linear layer and token, and the two attention products, 4·t²·d per
    /// sequence and layer forward, three times that with the backward pass. Probes: 0.
    pub fn flop_per_step(&self) -> f64 {
        if self.kind != RunKind::Train || self.intervene.is_some() {
            return 0.0;
        }
        let m = &self.model;
        let t = self.trained_width() as f64;
        let b = self.train.batch_size as f64;
        let (d, mlp) = (m.d_model as f64, m.d_mlp as f64);
        let weights =
            m.n_layers as f64 * (3.0 * d * d + d * d + 2.0 * d * mlp) + d * m.vocab as f64;
        let attention = 3.0 * 4.0 * b * t * t * d * m.n_layers as f64;
        6.0 * weights * b * t + attention
    }

    /// Floating-point operations of the whole training run.
    pub fn flop(&self) -> f64 {
        self.flop_per_step() * self.train.steps as f64
    }

    /// The named experiment's config: the reference with the preset's change.
    pub fn preset(name: &str) -> Option<Self> {
        let p = PRESETS.iter().find(|p| p.name == name)?;
        let mut c = Self::reference();
        (p.apply)(&mut c);
        Some(c)
    }
}
