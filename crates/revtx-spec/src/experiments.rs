//! Experiments as declarative configs.
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
    #[serde(default, skip_serializing_if = "Task::is_reverse")]
    pub task: Task,
    /// How many letters the alphabet has (`a`.., or digits under `add`).
    #[serde(
        default = "default_letters",
        skip_serializing_if = "is_default_letters"
    )]
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
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup: usize,
    /// How the rate falls from `lr` to `min_lr` over the steps after the warm-up.
    #[serde(default, skip_serializing_if = "Decay::is_none")]
    pub decay: Decay,
    /// Where a decay ends, at the last step.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub min_lr: f64,
    /// Weight decay, applied to all parameters: decoupled from the gradient under
    /// `adamw`, added to it (L2) under `adam` and `sgd`, as PyTorch's optimisers do.
    pub weight_decay: f64,
    /// Which update rule steps the parameters.
    #[serde(default, skip_serializing_if = "Optimizer::is_adamw")]
    pub optimizer: Optimizer,
    /// Adam's and AdamW's β₁ and β₂: the decay of the moving averages of the gradient and
    /// of its square.
    #[serde(default = "default_betas", skip_serializing_if = "is_default_betas")]
    pub betas: [f64; 2],
    /// Adam's and AdamW's ε, added to the root of the second moment.
    #[serde(default = "default_eps", skip_serializing_if = "is_default_eps")]
    pub eps: f64,
    /// SGD's momentum (0: plain SGD).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub momentum: f64,
    /// Global gradient-norm clipping: when the norm of all gradients together exceeds
    /// `clip`, every gradient is scaled by `clip / (norm + 1e-6)`. 0: off.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
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

/// The learning rate's decay after the warm-up (`train.decay`). The keys left at their
/// defaults are not written into a config, so a run that uses none of them keeps its cache
/// key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decay {
    /// `lr` to the end.
    #[default]
    None,
    /// A straight line from `lr` to `min_lr`.
    Linear,
    /// Half a cosine from `lr` to `min_lr` (Loshchilov and Hutter's, without restarts).
    Cosine,
}

impl Decay {
    pub fn is_none(&self) -> bool {
        *self == Decay::None
    }
}

/// The update rule (`train.optimizer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Adam with decoupled weight decay (Loshchilov and Hutter): the chapter's.
    #[default]
    Adamw,
    /// Adam (Kingma and Ba), weight decay added to the gradient.
    Adam,
    /// Stochastic gradient descent, with `momentum` if it is set.
    Sgd,
}

impl Optimizer {
    pub fn is_adamw(&self) -> bool {
        *self == Optimizer::Adamw
    }
}

/// PyTorch's defaults for Adam's β₁ and β₂, and ε.
pub const DEFAULT_BETAS: [f64; 2] = [0.9, 0.999];
pub const DEFAULT_EPS: f64 = 1e-8;

fn default_betas() -> [f64; 2] {
    DEFAULT_BETAS
}

fn default_eps() -> f64 {
    DEFAULT_EPS
}

fn is_default_betas(b: &[f64; 2]) -> bool {
    *b == DEFAULT_BETAS
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_default_eps(x: &f64) -> bool {
    *x == DEFAULT_EPS
}

fn default_letters() -> usize {
    DEFAULT_LETTERS
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_default_letters(n: &usize) -> bool {
    *n == DEFAULT_LETTERS
}

impl DataConfig {
    /// The task over this run's letters.
    pub fn alphabet(&self) -> Alphabet {
        Alphabet::new(self.task, self.letters)
    }
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
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
        }
    }

    /// Checks what the engine would otherwise fail on mid-run: the first of
    /// [`RunConfig::problems`], whose message names the field.
    pub fn validate(&self) -> Result<(), String> {
        match self.problems().first() {
            Some((_, msg)) => Err((*msg).to_string()),
            None => Ok(()),
        }
    }

    /// Every way this config cannot run, each with the key it is about (`model.positions`,
    /// the key whose value to change) and a message naming the fields: the compiler
    /// reports each at that key of the run block before anything trains.
    #[allow(
        clippy::too_many_lines,
        reason = "one check per key, in the order of the config's fields"
    )]
    pub fn problems(&self) -> Vec<(&'static str, &'static str)> {
        let (m, d, t, e) = (&self.model, &self.data, &self.train, &self.eval);
        let mut out = Vec::new();
        let mut need = |ok: bool, key: &'static str, msg: &'static str| {
            if !ok {
                out.push((key, msg));
            }
        };
        let alphabet = d.alphabet();
        need(
            alphabet.problem().is_none(),
            "data.letters",
            alphabet.problem().unwrap_or_default(),
        );
        need(
            m.vocab == alphabet.vocab(),
            "model.vocab",
            "model.vocab must be data.letters + 2 (the separator and the pad; 12 for the chapter's ten letters), one more under add (the plus sign)",
        );
        need(
            m.n_heads > 0 && m.d_model > 0 && m.d_model % m.n_heads == 0,
            "model.n_heads",
            "model.d_model must be a positive multiple of model.n_heads",
        );
        need(
            m.n_layers > 0 && m.d_mlp > 0,
            "model.n_layers",
            "model.n_layers and model.d_mlp must be positive",
        );
        need(
            m.position_encoding != crate::config::PositionEncoding::Rope
                || (m.n_heads > 0 && m.d_model % m.n_heads == 0 && m.d_head() % 2 == 0),
            "model.position_encoding",
            "rope turns pairs of each head's dimensions: model.d_model / model.n_heads must be even",
        );
        need(
            m.position_encoding != crate::config::PositionEncoding::Sinusoidal
                || m.d_model % 2 == 0,
            "model.position_encoding",
            "the sinusoidal table pairs a sine with a cosine: model.d_model must be even",
        );
        let lengths_ok = |lo: usize, hi: usize| lo >= 1 && lo <= hi;
        need(
            lengths_ok(d.min_len, d.max_len),
            "data.min_len",
            "data.min_len must be at least 1 and at most data.max_len",
        );
        need(
            lengths_ok(e.test_min_len, e.test_max_len)
                && lengths_ok(e.long_min_len, e.long_max_len),
            "eval.test_min_len",
            "eval lengths must be at least 1, each minimum at most its maximum",
        );
        let longest = d.max_len.max(e.test_max_len).max(e.long_max_len);
        need(
            alphabet.max_size().is_none_or(|most| longest <= most),
            "data.max_len",
            "recall's keys are distinct: no problem may have more pairs than data.letters",
        );
        need(
            d.task.sequence_len(longest) <= m.positions as usize,
            "model.positions",
            "the longest problem, the separator and its answer must fit in model.positions",
        );
        need(
            t.steps > 0 && t.batch_size > 0,
            "train.steps",
            "train.steps and train.batch_size must be positive",
        );
        need(
            t.block > 0 && t.window > 0,
            "train.block",
            "train.block and train.window must be positive",
        );
        need(
            t.threads > 0,
            "train.threads",
            "train.threads must be positive",
        );
        need(
            t.warmup <= t.steps,
            "train.warmup",
            "train.warmup must be at most train.steps",
        );
        need(
            t.lr > 0.0 && t.min_lr >= 0.0 && t.min_lr <= t.lr,
            "train.min_lr",
            "train.lr must be positive and train.min_lr between 0 and train.lr",
        );
        need(
            t.decay != Decay::None || t.min_lr == 0.0,
            "train.min_lr",
            "train.min_lr is where a decay ends: set train.decay too",
        );
        let adam = t.optimizer != Optimizer::Sgd;
        need(
            t.betas.iter().all(|b| (0.0..1.0).contains(b)),
            "train.betas",
            "train.betas must each be at least 0 and below 1",
        );
        need(
            adam || t.betas == DEFAULT_BETAS,
            "train.betas",
            "train.betas are Adam's: set train.optimizer = \"adam\" or \"adamw\", or remove them",
        );
        need(
            t.eps > 0.0 && (adam || t.eps == DEFAULT_EPS),
            "train.eps",
            "train.eps must be positive, and is Adam's: sgd has none",
        );
        need(
            (0.0..1.0).contains(&t.momentum),
            "train.momentum",
            "train.momentum must be at least 0 and below 1",
        );
        need(
            !adam || t.momentum == 0.0,
            "train.momentum",
            "train.momentum is SGD's: set train.optimizer = \"sgd\" (Adam's is train.betas)",
        );
        need(
            t.clip >= 0.0 && t.clip.is_finite(),
            "train.clip",
            "train.clip must be 0 (off) or a positive gradient norm",
        );
        need(
            t.weight_decay >= 0.0 && t.weight_decay.is_finite(),
            "train.weight_decay",
            "train.weight_decay must be at least 0",
        );
        let fits = |s: &str| {
            alphabet.problem().is_some()
                || alphabet.parse(s).is_ok_and(|p| {
                    d.task.sequence_len(d.task.size(p.len())) <= m.positions as usize
                })
        };
        need(
            fits(&e.attention_input),
            "eval.attention_input",
            "eval.attention_input must be a problem of data.task over data.letters (abc; 12+34 under add; acbdb under recall) that fits, with its answer, in model.positions",
        );
        need(
            e.decode.iter().all(|s| fits(s)),
            "eval.decode",
            "eval.decode must list problems of data.task over data.letters (abc; 12+34 under add; acbdb under recall) that fit, with their answers, in model.positions",
        );
        need(
            self.kind != RunKind::DotVariance
                || (e.variance_samples > 1 && e.variance_dims.iter().all(|&x| x > 0)),
            "eval.variance_samples",
            "eval.variance_samples must exceed 1 and eval.variance_dims be positive",
        );
        out
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
        if self.kind != RunKind::Train {
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

/// A named experiment: one change from the reference (or a probe).
pub struct Preset {
    pub name: &'static str,
    /// One line, as `run --list` shows it.
    pub about: &'static str,
    /// The change, applied to the reference config.
    pub apply: fn(&mut RunConfig),
}

/// Every preset, in the order `run --list` shows them.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "reference",
        about: "the chapter's model: 2 blocks, width 64, 2 heads, 1,500 steps",
        apply: |_| {},
    },
    Preset {
        name: "noscale",
        about: "fault: scores not divided by sqrt(d_k)",
        apply: |c| c.model.attn.scale = false,
    },
    Preset {
        name: "softmax-queries",
        about: "fault: softmax over the query axis, mask kept",
        apply: |c| c.model.attn.softmax = SoftmaxAxis::Queries,
    },
    Preset {
        name: "nomask",
        about: "fault: no causal mask, 300 steps",
        apply: |c| {
            c.model.attn.causal = false;
            c.train.steps = 300;
        },
    },
    Preset {
        name: "allpos",
        about: "fault: loss on every position, input letters included",
        apply: |c| c.data.targets = Targets::AllPositions,
    },
    Preset {
        name: "lengths-3-12",
        about: "trained on lengths 3-12 for 3,000 steps, tested on 500 strings of 9-12",
        apply: |c| {
            c.data.max_len = 12;
            c.train.steps = 3000;
            c.eval.long_size = 500;
        },
    },
    Preset {
        name: "ex1-wide",
        about: "exercise 1: width 256, scaled",
        apply: |c| widen(c, 256),
    },
    Preset {
        name: "ex1-wide-noscale",
        about: "exercise 1: width 256, unscaled",
        apply: |c| {
            widen(c, 256);
            c.model.attn.scale = false;
        },
    },
    Preset {
        name: "ex4-small",
        about: "exercise 4: 1 block, 1 head, 1,500 steps",
        apply: shrink,
    },
    Preset {
        name: "ex4-small-long",
        about: "exercise 4: 1 block, 1 head, 5,000 steps",
        apply: |c| {
            shrink(c);
            c.train.steps = 5000;
        },
    },
    Preset {
        name: "ex5-offsets",
        about: "exercise 5: training sequences start at a random offset, so every position row is trained",
        apply: |c| c.data.random_offset = true,
    },
    Preset {
        name: "worked-example",
        about: "section 1.2's worked example through the attention function",
        apply: |c| c.kind = RunKind::WorkedExample,
    },
    Preset {
        name: "dot-variance",
        about: "section 1.4: sample variance of q.k at widths 32 and 256",
        apply: |c| c.kind = RunKind::DotVariance,
    },
];

fn widen(c: &mut RunConfig, d: i64) {
    c.model.d_model = d;
    c.model.d_mlp = 4 * d;
}

fn shrink(c: &mut RunConfig) {
    c.model.n_layers = 1;
    c.model.n_heads = 1;
}

/// A run as an author writes it: a base (a preset or another run) plus overrides.
///
/// ```toml
/// base = "reference"        # optional, defaults to "reference"
/// seed = 0                  # or: seeds = [0, 1, 2, 3, 4]
/// [train]
/// steps = 300
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub base: Option<String>,
    pub seed: Option<u64>,
    pub seeds: Option<Vec<u64>>,
    /// Overrides, merged field by field into the base config.
    pub kind: Option<RunKind>,
    pub model: Option<toml::Table>,
    pub data: Option<toml::Table>,
    pub train: Option<toml::Table>,
    pub eval: Option<toml::Table>,
}

impl RunSpec {
    /// Merges the overrides into `base`. Errors name the offending field.
    pub fn apply(&self, base: &RunConfig) -> Result<RunConfig, String> {
        let mut v = serde_json::to_value(base).map_err(|e| e.to_string())?;
        if let Some(k) = self.kind {
            v["kind"] = serde_json::to_value(k).unwrap();
        }
        for (name, table) in [
            ("model", &self.model),
            ("data", &self.data),
            ("train", &self.train),
            ("eval", &self.eval),
        ] {
            if let Some(t) = table {
                let patch = serde_json::to_value(t).map_err(|e| e.to_string())?;
                merge(&mut v[name], &patch);
                // The schema is the config's type: its structs deny unknown fields.
                let checked = match name {
                    "model" => check::<ModelConfig>(&v[name]),
                    "data" => check::<DataConfig>(&v[name]),
                    "train" => check::<TrainConfig>(&v[name]),
                    _ => check::<EvalConfig>(&v[name]),
                };
                checked.map_err(|e| format!("[{name}] {e}"))?;
            }
        }
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    /// The seeds this spec asks for (default: seed 0).
    pub fn seed_list(&self) -> Vec<u64> {
        match (&self.seeds, self.seed) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => vec![s],
            (None, None) => vec![0],
        }
    }
}

/// Recursively overwrites `dst` with `patch`. Keys `dst` lacks are added: whether the
/// config has such a field is its type's to say (`check`), not its default's JSON.
fn merge(dst: &mut serde_json::Value, patch: &serde_json::Value) {
    match (dst, patch) {
        (serde_json::Value::Object(d), serde_json::Value::Object(p)) => {
            for (k, pv) in p {
                merge(d.entry(k.clone()).or_insert(serde_json::Value::Null), pv);
            }
        }
        (d, p) => *d = p.clone(),
    }
}

/// Whether `v` is a valid `T`: serde's error names an unknown field and the known ones.
fn check<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Result<(), String> {
    T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

/// Parses `"0..5"` (half-open), `"0..=4"` or `"1,3,7"` into seeds.
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let num = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|_| format!("`{x}` is not a seed"))
    };
    if let Some((a, b)) = s.split_once("..=") {
        Ok((num(a)?..=num(b)?).collect())
    } else if let Some((a, b)) = s.split_once("..") {
        Ok((num(a)?..num(b)?).collect())
    } else {
        s.split(',').map(num).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_distinct_and_each_changes_one_thing() {
        let mut seen = std::collections::BTreeSet::new();
        for p in PRESETS {
            assert!(seen.insert(p.name), "{} listed twice", p.name);
            let c = RunConfig::preset(p.name).unwrap();
            assert_eq!(
                c == RunConfig::reference(),
                p.name == "reference",
                "{}",
                p.name
            );
            c.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
        assert!(RunConfig::preset("nope").is_none());
    }

    #[test]
    fn spec_overrides_and_rejects_unknown_fields() {
        let spec: RunSpec =
            toml::from_str("base = \"reference\"\nseeds = [0, 1]\n[train]\nsteps = 30\n").unwrap();
        let c = spec.apply(&RunConfig::reference()).unwrap();
        assert_eq!(c.train.steps, 30);
        assert_eq!(spec.seed_list(), vec![0, 1]);
        let bad: RunSpec = toml::from_str("[train]\nstepz = 30\n").unwrap();
        let err = bad.apply(&RunConfig::reference()).unwrap_err();
        assert!(
            err.contains("[train]")
                && err.contains("unknown field `stepz`")
                && err.contains("`steps`"),
            "{err}"
        );
        let bad: RunSpec = toml::from_str("[model.attn]\nscal = false\n").unwrap();
        let err = bad.apply(&RunConfig::reference()).unwrap_err();
        assert!(
            err.contains("[model]") && err.contains("unknown field `scal`"),
            "{err}"
        );
        let wrong: RunSpec = toml::from_str("[train]\nsteps = \"many\"\n").unwrap();
        assert!(wrong.apply(&RunConfig::reference()).is_err());
    }

    #[test]
    fn seed_ranges() {
        assert_eq!(parse_seeds("0..5").unwrap(), vec![0, 1, 2, 3, 4]);
        assert_eq!(parse_seeds("2..=3").unwrap(), vec![2, 3]);
        assert_eq!(parse_seeds("1,4").unwrap(), vec![1, 4]);
        assert!(parse_seeds("x..2").is_err());
    }
}
