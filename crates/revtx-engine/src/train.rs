//! One function runs an experiment: `(config, seed) -> RunResult`. This file holds the
//! training loop and the summary of its losses; evaluation and the probes live beside it.

use crate::data::{self, IGNORE};
use crate::eval;
use crate::experiments::{RunConfig, RunKind, TrainConfig};
use crate::model::{self, SoftmaxAxis};
use crate::optim;
use crate::probes;
use crate::result::{
    AttnStats, Coverage, DataStats, Example, PositionTable, RunOutput, RunResult, Saturation,
    StepPhases, TrainResult, RESULT_FORMAT,
};
use crate::rng::Rng;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;
use tch::{nn, Kind, Reduction, Tensor};

/// Why a run did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("interrupted at step {0}")]
    Interrupted(usize),
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
    #[error("{0}")]
    Config(String),
}

/// Observes a training run; return `false` from `step` to stop it.
pub trait Progress {
    fn step(&mut self, step: usize, total: usize, loss: f64) -> bool;
}

/// No progress reporting.
pub struct Quiet;
impl Progress for Quiet {
    fn step(&mut self, _: usize, _: usize, _: f64) -> bool {
        true
    }
}

/// Everything a finished run leaves: the result, and the trained weights if it trained.
pub struct Finished {
    pub result: RunResult,
    pub weights: Option<nn::VarStore>,
}

/// Runs one experiment at one seed, under the numeric profile the process entered.
pub fn run(cfg: &RunConfig, seed: u64, progress: &mut dyn Progress) -> Result<Finished, RunError> {
    cfg.validate().map_err(RunError::Config)?;
    tch::set_num_threads(cfg.train.threads as i32);
    crate::numerics::pin_thread(crate::numerics::current());
    let started = Instant::now();
    let mut env = crate::run_env(cfg.train.threads);
    let mut params = 0;
    let mut weights = None;
    let output = match cfg.kind {
        RunKind::WorkedExample => RunOutput::Worked(probes::worked_example()),
        RunKind::DotVariance => {
            let e = &cfg.eval;
            RunOutput::Variance(probes::dot_variance(
                &e.variance_dims,
                e.variance_samples,
                seed,
            ))
        }
        RunKind::Train => {
            let trained = train(cfg, seed, progress)?;
            env.train_seconds = trained.seconds;
            env.phases = trained.phases;
            env.steps_per_second = cfg.train.steps as f64 / trained.seconds;
            let clock = Instant::now();
            params = model::parameter_count(&trained.vs);
            let summary = summarise(cfg, &trained);
            env.eval_seconds = clock.elapsed().as_secs_f64();
            weights = Some(trained.vs);
            RunOutput::Train(Box::new(summary))
        }
    };
    let mut result = RunResult {
        format: RESULT_FORMAT,
        config: cfg.clone(),
        seed,
        params,
        output,
        env,
    };
    if cfg.kind != RunKind::Train {
        result.env.train_seconds = started.elapsed().as_secs_f64();
    }
    Ok(Finished { result, weights })
}

/// A trained model and what its training loop observed.
struct Trained {
    vs: nn::VarStore,
    model: model::Transformer,
    losses: Vec<f64>,
    /// The learning rate of every step.
    lrs: Vec<f64>,
    /// The norm of all gradients at every step, before clipping.
    grad_norms: Vec<f64>,
    /// The distinct training problems, and their count by size.
    seen: HashSet<data::Letters>,
    seen_by_len: Vec<usize>,
    /// Whether each position row ever received a gradient (a learned table only).
    trained_rows: Option<Vec<bool>>,
    norm_before: Vec<f64>,
    examples: Vec<Example>,
    /// Attention's sharpness before the first update.
    initial_attention: AttnStats,
    seconds: f64,
    phases: StepPhases,
}

/// Wall-clock time since the last lap, for the per-phase totals of a step.
struct Lap(Instant);

impl Lap {
    fn start() -> Self {
        Lap(Instant::now())
    }
    fn next(&mut self) -> f64 {
        let now = Instant::now();
        let s = now.duration_since(self.0).as_secs_f64();
        self.0 = now;
        s
    }
}

/// The training loop: fresh batches, the optimiser at the schedule's rate (gradients
/// clipped if asked), one loss, rate and gradient norm per step.
fn train(cfg: &RunConfig, seed: u64, progress: &mut dyn Progress) -> Result<Trained, RunError> {
    let (m, d, t) = (&cfg.model, &cfg.data, &cfg.train);
    let seq_len = m.positions as usize;
    let alphabet = d.alphabet();
    let (vs, model) = model::init(m, seed);
    let initial_attention = tch::no_grad(|| {
        eval::attention_stats(&model, alphabet, &probe_strings(cfg), m.attn.causal)
    });
    let mut opt = optim::Optim::of(&vs, t)?;
    let pos_table = model.pos.learned().map(Tensor::shallow_clone);
    let norm_before = pos_table.as_ref().map(row_norms).unwrap_or_default();

    // Under a causal mask with the softmax over keys, trailing pads cannot influence any
    // earlier position and carry no target, so each batch is cut after its last real token.
    // That changes no loss and no gradient, and saves about a third of the work.
    let trim = m.attn.causal && m.attn.softmax == SoftmaxAxis::Keys;
    let mut rng = Rng::new(seed ^ 0x5EED_DA7A);
    let mut seen: HashSet<data::Letters> = HashSet::new();
    let mut seen_by_len = vec![0usize; d.max_len + 1];
    let mut trained = Tensor::zeros([m.positions], (Kind::Bool, tch::Device::Cpu));
    let mut losses = Vec::with_capacity(t.steps);
    let mut lrs = Vec::with_capacity(t.steps);
    let mut grad_norms = Vec::with_capacity(t.steps);
    let mut examples = Vec::new();

    let clock = Instant::now();
    let mut phases = StepPhases::default();
    for step in 0..t.steps {
        let mut lap = Lap::start();
        let batch = data::training_batch(
            &mut rng,
            t.batch_size,
            (d.min_len, d.max_len),
            alphabet,
            seq_len,
            d.targets,
            d.random_offset,
        );
        if step == 0 {
            examples = (0..2.min(t.batch_size))
                .map(|r| example(alphabet, &batch, r))
                .collect();
        }
        for s in &batch.strings {
            if seen.insert(s.clone()) {
                seen_by_len[d.task.size(s.len())] += 1;
            }
        }
        let width = if trim { used_width(&batch) } else { seq_len } as i64;
        let rows = t.batch_size as i64;
        let x = Tensor::from_slice(&batch.x)
            .view([rows, seq_len as i64])
            .narrow(1, 0, width);
        let y = Tensor::from_slice(&batch.y)
            .view([rows, seq_len as i64])
            .narrow(1, 0, width);
        phases.data += lap.next();
        // ANCHOR: step
        let (logits, _) = model.forward(&x); // (batch, width, vocab)
        let loss = logits.view([-1, m.vocab]).cross_entropy_loss::<Tensor>(
            &y.reshape([-1]),
            None,
            Reduction::Mean,
            IGNORE,
            0.0,
        );
        phases.forward += lap.next();
        opt.zero_grad();
        loss.backward();
        if let Some(table) = &pos_table {
            trained = trained.logical_or(&rows_with_gradient(table));
        }
        let norm = opt.grad_norm();
        grad_norms.push(norm);
        opt.clip(norm, t.clip);
        phases.backward += lap.next();
        let lr = crate::schedule::lr_at(t, step + 1);
        opt.set_lr(lr);
        lrs.push(lr);
        opt.step()?;
        // ANCHOR_END: step
        phases.optimizer += lap.next();
        let l = loss.double_value(&[]);
        losses.push(l);
        if !progress.step(step + 1, t.steps, l) {
            return Err(RunError::Interrupted(step + 1));
        }
    }
    Ok(Trained {
        seconds: clock.elapsed().as_secs_f64(),
        phases,
        trained_rows: match pos_table {
            Some(_) => Some(Vec::<bool>::try_from(&trained)?),
            None => None,
        },
        vs,
        model,
        losses,
        lrs,
        grad_norms,
        seen,
        seen_by_len,
        norm_before,
        examples,
        initial_attention,
    })
}

/// The problems attention's sharpness is measured on: the first 64 of the test set.
fn probe_strings(cfg: &RunConfig) -> Vec<data::Letters> {
    let e = &cfg.eval;
    let mut rng = Rng::new(e.test_seed);
    data::sample_problems(
        &mut rng,
        cfg.data.alphabet(),
        e.test_size.min(64),
        e.test_min_len,
        e.test_max_len,
    )
}

/// Everything the chapter reads about a trained model: its losses summarised, its
/// accuracy, its decodes and attention, its position table and its data.
fn summarise(cfg: &RunConfig, tr: &Trained) -> TrainResult {
    let (d, e, t) = (&cfg.data, &cfg.eval, &cfg.train);
    let mut test_rng = Rng::new(e.test_seed);
    let alphabet = d.alphabet();
    let sample = |rng: &mut Rng, n, lo, hi| data::sample_problems(rng, alphabet, n, lo, hi);
    let test_set = sample(&mut test_rng, e.test_size, e.test_min_len, e.test_max_len);
    let long_set = sample(&mut test_rng, e.long_size, e.long_min_len, e.long_max_len);
    let (test, long, decodes, attention, last_attention) = tch::no_grad(|| {
        let named: Vec<data::Letters> = e
            .decode
            .iter()
            .filter_map(|s| alphabet.parse(s).ok())
            .collect();
        let outs = eval::greedy(&tr.model, alphabet, &named);
        let decodes: BTreeMap<String, String> = e
            .decode
            .iter()
            .cloned()
            .zip(outs.iter().map(|o| alphabet.text(o)))
            .collect();
        (
            eval::exact_match(&tr.model, alphabet, &test_set, &tr.seen),
            eval::exact_match(&tr.model, alphabet, &long_set, &tr.seen),
            decodes,
            eval::attention_map(&tr.model, alphabet, &e.attention_input),
            eval::attention_stats(
                &tr.model,
                alphabet,
                &probe_strings(cfg),
                cfg.model.attn.causal,
            ),
        )
    });

    let positions = tr
        .model
        .pos
        .learned()
        .zip(tr.trained_rows.as_ref())
        .map(|(table, trained)| {
            let norm_after = row_norms(table);
            let untrained: Vec<usize> = (0..trained.len()).filter(|&i| !trained[i]).collect();
            let untrained_shrink_pct = (!untrained.is_empty()).then(|| {
                untrained
                    .iter()
                    .map(|&i| 100.0 * (1.0 - norm_after[i] / tr.norm_before[i]))
                    .sum::<f64>()
                    / untrained.len() as f64
            });
            PositionTable {
                rows: trained.len(),
                trained_rows: trained.iter().filter(|&&b| b).count(),
                first_untrained: untrained.first().copied(),
                norm_before: tr.norm_before.clone(),
                norm_after,
                trained: trained.clone(),
                untrained_shrink_pct,
            }
        });
    let coverage = (d.min_len..=d.max_len)
        .map(|len| {
            let possible = alphabet.possible(len);
            Coverage {
                len,
                possible,
                seen: tr.seen_by_len[len],
                share: tr.seen_by_len[len] as f64 / possible,
            }
        })
        .collect();
    let losses = LossSummary::of(&tr.losses, t);
    TrainResult {
        lr: tr.lrs.clone(),
        grad_norm: tr.grad_norms.clone(),
        last_block_mean: losses.last_block_mean,
        first_loss: tr.losses[0],
        final_loss: *tr.losses.last().unwrap_or(&f64::NAN),
        block_means: losses.block_means,
        running_mean: losses.running_mean,
        first_below: losses.first_below,
        first_raw_below: losses.first_raw_below,
        losses: tr.losses.clone(),
        test,
        long,
        decodes,
        attention,
        positions,
        data: DataStats {
            examples_seen: t.steps * t.batch_size,
            distinct_strings: tr.seen.len(),
            coverage,
        },
        examples: tr.examples.clone(),
        saturation: Saturation {
            initial: tr.initial_attention.clone(),
            last: last_attention,
        },
    }
}

/// The loss curve read the chapter's way: block means, a running mean, and the first step
/// at which that mean falls below the threshold.
struct LossSummary {
    block_means: Vec<f64>,
    running_mean: Vec<f64>,
    first_below: Option<usize>,
    first_raw_below: Option<usize>,
    last_block_mean: f64,
}

impl LossSummary {
    fn of(losses: &[f64], t: &TrainConfig) -> Self {
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        let window = t.window.min(losses.len());
        let running_mean: Vec<f64> = losses.windows(window).map(mean).collect();
        LossSummary {
            block_means: losses.chunks(t.block).map(mean).collect(),
            first_below: running_mean
                .iter()
                .position(|&v| v < t.threshold)
                .map(|i| i + window),
            first_raw_below: losses.iter().position(|&v| v < t.threshold).map(|i| i + 1),
            last_block_mean: mean(&losses[losses.len().saturating_sub(t.block)..]),
            running_mean,
        }
    }
}

/// Columns up to and including the last non-pad token of any row.
pub fn used_width(b: &data::Batch) -> usize {
    let rows = b.x.len() / b.seq_len;
    (0..rows)
        .map(|r| {
            let row = &b.x[r * b.seq_len..(r + 1) * b.seq_len];
            row.iter().rposition(|&t| t != b.pad).map_or(1, |p| p + 1)
        })
        .max()
        .unwrap_or(b.seq_len)
}

fn example(alphabet: data::Alphabet, b: &data::Batch, r: usize) -> Example {
    let row = |v: &[i64]| alphabet.render_row(&v[r * b.seq_len..(r + 1) * b.seq_len]);
    Example {
        string: alphabet.problem_text(&b.strings[r]),
        input: row(&b.x),
        target: row(&b.y),
    }
}

/// Which rows of `table` got a nonzero gradient in the last backward pass.
fn rows_with_gradient(table: &Tensor) -> Tensor {
    table
        .grad()
        .abs()
        .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
        .gt(0.0)
}

fn row_norms(t: &Tensor) -> Vec<f64> {
    let squares = tch::no_grad(|| {
        t.square()
            .sum_dim_intlist([1i64].as_slice(), false, Kind::Double)
    });
    crate::eval::in_rust(&squares, f64::sqrt)
}
