//! One function runs an experiment: `(config, seed) -> RunResult`.
//!
//! Training, evaluation and the probes live here; they are the only code besides
//! `model` that touches libtorch.

use crate::data::{self, Letters, IGNORE, SEP};
use crate::experiments::{RunConfig, RunKind};
use crate::model::{self, attention, AttnOptions, SoftmaxAxis, Transformer, TORCH_RNG};
use crate::result::*;
use crate::rng::Rng;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;
use tch::{nn, nn::OptimizerConfig, Kind, Reduction, Tensor};

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

/// Runs one experiment at one seed.
pub fn run(cfg: &RunConfig, seed: u64, progress: &mut dyn Progress) -> Result<Finished, RunError> {
    tch::set_num_threads(cfg.train.threads as i32);
    let started = Instant::now();
    let mut env = RunEnv {
        threads: cfg.train.threads,
        libtorch: env!("REVTX_LIBTORCH_VERSION").to_string(),
        cpu: cpu_model(),
        code_fingerprint: env!("REVTX_CODE_FINGERPRINT").to_string(),
        train_seconds: 0.0,
        eval_seconds: 0.0,
        steps_per_second: 0.0,
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    };
    let mut result = RunResult {
        format: RESULT_FORMAT,
        config: cfg.clone(),
        seed,
        params: 0,
        train: None,
        worked: None,
        variance: None,
        env: env.clone(),
    };
    match cfg.kind {
        RunKind::WorkedExample => {
            result.worked = Some(worked_example());
            result.env.train_seconds = started.elapsed().as_secs_f64();
            Ok(Finished {
                result,
                weights: None,
            })
        }
        RunKind::DotVariance => {
            result.variance = Some(dot_variance(
                &cfg.eval.variance_dims,
                cfg.eval.variance_samples,
                seed,
            ));
            result.env.train_seconds = started.elapsed().as_secs_f64();
            Ok(Finished {
                result,
                weights: None,
            })
        }
        RunKind::Train => {
            let (train, vs, timing) = train_and_evaluate(cfg, seed, progress)?;
            result.params = model::parameter_count(&vs);
            result.train = Some(train);
            (env.train_seconds, env.eval_seconds) = timing;
            env.steps_per_second = cfg.train.steps as f64 / env.train_seconds;
            result.env = env;
            Ok(Finished {
                result,
                weights: Some(vs),
            })
        }
    }
}

fn validate(cfg: &RunConfig) -> Result<(), RunError> {
    let m = &cfg.model;
    let d = &cfg.data;
    let e = &cfg.eval;
    let need = |ok: bool, msg: &str| {
        if ok {
            Ok(())
        } else {
            Err(RunError::Config(msg.to_string()))
        }
    };
    need(
        m.n_heads > 0 && m.d_model % m.n_heads == 0,
        "model.d_model must be a multiple of model.n_heads",
    )?;
    need(
        d.min_len >= 1 && d.min_len <= d.max_len,
        "data.min_len must be at least 1 and at most data.max_len",
    )?;
    let longest = d.max_len.max(e.test_max_len).max(e.long_max_len);
    need(
        2 * longest < m.positions as usize,
        "the longest string and its reversal must fit in model.positions",
    )?;
    need(
        cfg.train.steps > 0 && cfg.train.batch_size > 0,
        "train.steps and train.batch_size must be positive",
    )?;
    need(cfg.train.threads > 0, "train.threads must be positive")?;
    need(
        data::parse_letters(&e.attention_input).is_some(),
        "eval.attention_input must be letters a-j",
    )?;
    need(
        e.decode.iter().all(|s| data::parse_letters(s).is_some()),
        "eval.decode strings must be letters a-j",
    )?;
    Ok(())
}

/// Trains, then evaluates. Returns the result, the weights and (train, eval) seconds.
fn train_and_evaluate(
    cfg: &RunConfig,
    seed: u64,
    progress: &mut dyn Progress,
) -> Result<(TrainResult, nn::VarStore, (f64, f64)), RunError> {
    validate(cfg)?;
    let (m, d, t) = (&cfg.model, &cfg.data, &cfg.train);
    let seq_len = m.positions as usize;
    let (vs, model) = model::init(m, seed);
    let pos_table = model.pos.ws.shallow_clone();
    let norm_before = row_norms(&pos_table);
    let mut opt = nn::AdamW {
        wd: t.weight_decay,
        ..Default::default()
    }
    .build(&vs, t.lr)?;

    // Under a causal mask with the softmax over keys, trailing pads cannot influence any
    // earlier position and carry no target, so each batch is cut after its last real token.
    // That changes no loss and no gradient, and saves about a third of the work.
    let trim = m.attn.causal && m.attn.softmax == SoftmaxAxis::Keys;
    let mut rng = Rng::new(seed ^ 0x5EED_DA7A);
    let mut seen: HashSet<u64> = HashSet::new();
    let mut seen_by_len = vec![0usize; d.max_len + 1];
    let mut trained = Tensor::zeros([m.positions], (Kind::Bool, tch::Device::Cpu));
    let mut losses = Vec::with_capacity(t.steps);
    let mut examples = Vec::new();

    let clock = Instant::now();
    for step in 0..t.steps {
        let batch = data::training_batch(
            &mut rng,
            t.batch_size,
            d.min_len,
            d.max_len,
            seq_len,
            d.targets,
            d.random_offset,
        );
        if step == 0 {
            examples = (0..2.min(t.batch_size))
                .map(|r| example(&batch, r))
                .collect();
        }
        for s in &batch.strings {
            if seen.insert(data::string_key(s)) {
                seen_by_len[s.len()] += 1;
            }
        }
        let width = if trim { used_width(&batch) } else { seq_len };
        let x = Tensor::from_slice(&batch.x)
            .view([t.batch_size as i64, seq_len as i64])
            .narrow(1, 0, width as i64);
        let y = Tensor::from_slice(&batch.y)
            .view([t.batch_size as i64, seq_len as i64])
            .narrow(1, 0, width as i64);
        let (logits, _) = model.forward(&x); // (batch, width, vocab)
        let loss = logits.view([-1, m.vocab]).cross_entropy_loss::<Tensor>(
            &y.reshape([-1]),
            None,
            Reduction::Mean,
            IGNORE,
            0.0,
        );
        opt.zero_grad();
        loss.backward();
        let grad_rows = pos_table
            .grad()
            .abs()
            .sum_dim_intlist([1i64].as_slice(), false, Kind::Float)
            .gt(0.0);
        trained = trained.logical_or(&grad_rows);
        opt.step();
        let l = loss.double_value(&[]);
        losses.push(l);
        if !progress.step(step + 1, t.steps, l) {
            return Err(RunError::Interrupted(step + 1));
        }
    }
    let train_seconds = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let e = &cfg.eval;
    let mut test_rng = Rng::new(e.test_seed);
    let test_set = data::sample_strings(&mut test_rng, e.test_size, e.test_min_len, e.test_max_len);
    let long_set = data::sample_strings(&mut test_rng, e.long_size, e.long_min_len, e.long_max_len);
    let (test, long, decodes, attention) = tch::no_grad(|| {
        let test = evaluate(&model, &test_set, &seen);
        let long = evaluate(&model, &long_set, &seen);
        let named: Vec<Letters> = e
            .decode
            .iter()
            .map(|s| data::parse_letters(s).unwrap())
            .collect();
        let outs = greedy(&model, &named);
        let decodes: BTreeMap<String, String> = e
            .decode
            .iter()
            .cloned()
            .zip(outs.iter().map(|o| data::tokens_to_string(o)))
            .collect();
        (
            test,
            long,
            decodes,
            attention_map(&model, &e.attention_input),
        )
    });
    let eval_seconds = clock.elapsed().as_secs_f64();

    let norm_after = row_norms(&pos_table);
    let trained: Vec<bool> = Vec::<bool>::try_from(&trained)?;
    let untrained: Vec<usize> = (0..trained.len()).filter(|&i| !trained[i]).collect();
    let untrained_shrink_pct = (!untrained.is_empty()).then(|| {
        untrained
            .iter()
            .map(|&i| 100.0 * (1.0 - norm_after[i] / norm_before[i]))
            .sum::<f64>()
            / untrained.len() as f64
    });
    let positions = PositionTable {
        rows: trained.len(),
        trained_rows: trained.iter().filter(|&&b| b).count(),
        first_untrained: untrained.first().copied(),
        norm_before,
        norm_after,
        trained,
        untrained_shrink_pct,
    };
    let coverage = (d.min_len..=d.max_len)
        .map(|len| {
            let possible = 10f64.powi(len as i32);
            Coverage {
                len,
                possible,
                seen: seen_by_len[len],
                share: seen_by_len[len] as f64 / possible,
            }
        })
        .collect();
    let data = DataStats {
        examples_seen: t.steps * t.batch_size,
        distinct_strings: seen.len(),
        coverage,
    };
    let train = summarise_losses(
        losses, t, test, long, decodes, attention, positions, data, examples,
    );
    Ok((train, vs, (train_seconds, eval_seconds)))
}

#[allow(clippy::too_many_arguments)]
fn summarise_losses(
    losses: Vec<f64>,
    t: &crate::experiments::TrainConfig,
    test: Eval,
    long: Eval,
    decodes: BTreeMap<String, String>,
    attention: AttentionMap,
    positions: PositionTable,
    data: DataStats,
    examples: Vec<Example>,
) -> TrainResult {
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let block_means: Vec<f64> = losses.chunks(t.block).map(mean).collect();
    let running_mean: Vec<f64> = losses
        .windows(t.window.min(losses.len()))
        .map(mean)
        .collect();
    let first_below = running_mean
        .iter()
        .position(|&v| v < t.threshold)
        .map(|i| i + t.window.min(losses.len()));
    let first_raw_below = losses.iter().position(|&v| v < t.threshold).map(|i| i + 1);
    TrainResult {
        last_block_mean: mean(&losses[losses.len().saturating_sub(t.block)..]),
        first_loss: losses[0],
        final_loss: *losses.last().unwrap(),
        block_means,
        running_mean,
        first_below,
        first_raw_below,
        losses,
        test,
        long,
        decodes,
        attention,
        positions,
        data,
        examples,
    }
}

/// Columns up to and including the last non-pad token of any row.
fn used_width(b: &data::Batch) -> usize {
    let rows = b.x.len() / b.seq_len;
    (0..rows)
        .map(|r| {
            let row = &b.x[r * b.seq_len..(r + 1) * b.seq_len];
            row.iter()
                .rposition(|&t| t != data::PAD)
                .map_or(1, |p| p + 1)
        })
        .max()
        .unwrap_or(b.seq_len)
}

fn example(b: &data::Batch, r: usize) -> Example {
    let row = |v: &[i64]| data::render_row(&v[r * b.seq_len..(r + 1) * b.seq_len]);
    Example {
        string: data::letters_to_string(&b.strings[r]),
        input: row(&b.x),
        target: row(&b.y),
    }
}

fn row_norms(t: &Tensor) -> Vec<f64> {
    let n = tch::no_grad(|| {
        t.square()
            .sum_dim_intlist([1i64].as_slice(), false, Kind::Double)
            .sqrt()
    });
    Vec::<f64>::try_from(&n).unwrap()
}

/// Greedy decoding: the letters and the separator in, then the argmax appended, once per
/// letter. Strings are batched by length. Returns the generated tokens of each string.
pub fn greedy(model: &Transformer, strings: &[Letters]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new(); strings.len()];
    let mut lengths: Vec<usize> = strings.iter().map(|s| s.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    for n in lengths {
        let ids: Vec<usize> = (0..strings.len())
            .filter(|&i| strings[i].len() == n)
            .collect();
        let flat: Vec<i64> = ids
            .iter()
            .flat_map(|&i| strings[i].iter().map(|&c| c as i64).chain([SEP]))
            .collect();
        let mut x = Tensor::from_slice(&flat).view([ids.len() as i64, n as i64 + 1]);
        for _ in 0..n {
            let (logits, _) = model.forward(&x); // (count, tokens, vocab)
            let next = logits.select(1, -1).argmax(-1, true); // (count, 1)
            x = Tensor::cat(&[x, next], 1);
        }
        let gen = x.narrow(1, n as i64 + 1, n as i64).contiguous();
        let gen: Vec<i64> = Vec::<i64>::try_from(gen.view([-1])).unwrap();
        for (row, &i) in ids.iter().enumerate() {
            out[i] = gen[row * n..(row + 1) * n].to_vec();
        }
    }
    out
}

/// Exact match of greedy reversals, by length, with the unseen-string count.
pub fn evaluate(model: &Transformer, set: &[Letters], seen: &HashSet<u64>) -> Eval {
    let outs = greedy(model, set);
    let mut by_len: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let (mut unseen, mut unseen_correct, mut misses) = (0, 0, Vec::new());
    for (s, o) in set.iter().zip(&outs) {
        let want: Vec<i64> = s.iter().rev().map(|&c| c as i64).collect();
        let ok = *o == want;
        let e = by_len.entry(s.len()).or_default();
        e.0 += ok as usize;
        e.1 += 1;
        if !seen.contains(&data::string_key(s)) {
            unseen += 1;
            unseen_correct += ok as usize;
        }
        if !ok && misses.len() < 8 {
            misses.push(format!(
                "{} → {}",
                data::letters_to_string(s),
                data::tokens_to_string(o)
            ));
        }
    }
    let correct = by_len.values().map(|v| v.0).sum();
    let total = set.len();
    Eval {
        correct,
        total,
        accuracy: correct as f64 / total.max(1) as f64,
        by_length: by_len
            .into_iter()
            .map(|(len, (c, n))| LengthEval {
                len,
                correct: c,
                total: n,
                accuracy: c as f64 / n as f64,
            })
            .collect(),
        unseen,
        unseen_correct,
        misses,
    }
}

/// The weights of every layer and head for `input` followed by its true reversal.
fn attention_map(model: &Transformer, input: &str) -> AttentionMap {
    let s = data::parse_letters(input).unwrap();
    let l = s.len();
    let (x, _) = data::encode(&s, 2 * l + 1 + 1, data::Targets::Answer, 0);
    let tokens: Vec<i64> = x[..2 * l + 1].to_vec();
    let (_, ws) = model.forward(&Tensor::from_slice(&tokens).view([1, -1]));
    let names: Vec<String> = tokens
        .iter()
        .map(|&t| data::token_char(t).to_string())
        .collect();
    let weights: Vec<Vec<Vec<Vec<f64>>>> = ws
        .iter()
        .map(|w| {
            let w = w.squeeze_dim(0).to_kind(Kind::Double); // (heads, tokens, tokens)
            let (h, t, _) = w.size3().unwrap();
            let flat = Vec::<f64>::try_from(w.contiguous().view([-1])).unwrap();
            (0..h as usize)
                .map(|hi| {
                    (0..t as usize)
                        .map(|q| flat[(hi * t as usize + q) * t as usize..][..t as usize].to_vec())
                        .collect()
                })
                .collect()
        })
        .collect();
    let strongest: Vec<Vec<Vec<Strongest>>> = weights
        .iter()
        .map(|layer| {
            layer
                .iter()
                .map(|head| {
                    (l..2 * l)
                        .map(|q| {
                            let (key, &weight) = head[q]
                                .iter()
                                .enumerate()
                                .max_by(|a, b| a.1.total_cmp(b.1))
                                .unwrap();
                            Strongest {
                                query: q,
                                query_token: names[q].clone(),
                                key,
                                key_token: names[key].clone(),
                                weight,
                            }
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let last: Vec<f64> = strongest
        .last()
        .map(|heads| heads.iter().flatten().map(|s| s.weight).collect())
        .unwrap_or_default();
    AttentionMap {
        input: input.to_string(),
        tokens: names,
        weights,
        strongest,
        last_layer_min: last.iter().copied().fold(f64::INFINITY, f64::min),
        last_layer_max: last.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

/// Section 1.2: the query (1, 2) against four 2-d keys, through `attention`.
pub fn worked_example() -> WorkedExample {
    let query = vec![1.0, 2.0];
    let keys = vec![
        vec![0.0, 0.0],
        vec![1.0, 2.0],
        vec![1.0, 0.0],
        vec![0.0, 1.0],
    ];
    let values = vec![
        vec![0.0, 0.0],
        vec![2.0, 1.0],
        vec![0.0, 1.0],
        vec![1.0, 0.0],
    ];
    let t = |rows: &[Vec<f64>]| Tensor::from_slice(&rows.concat()).view([rows.len() as i64, 2]);
    let (q, k, v) = (t(std::slice::from_ref(&query)), t(&keys), t(&values));
    let opts = AttnOptions {
        causal: false,
        ..Default::default()
    };
    let (out, w) = attention(&q, &k, &v, opts);
    let sqrt_d = 2f64.sqrt();
    let scores = Vec::<f64>::try_from(q.matmul(&k.transpose(0, 1)).view([-1]) / sqrt_d).unwrap();
    WorkedExample {
        scores,
        weights: Vec::<f64>::try_from(w.view([-1])).unwrap(),
        output: Vec::<f64>::try_from(out.view([-1])).unwrap(),
        query,
        keys,
        values,
        sqrt_d,
    }
}

/// Section 1.4: sample variance of q·k for random unit-variance vectors, per width.
pub fn dot_variance(dims: &[i64], samples: i64, seed: u64) -> Vec<DotVariance> {
    let _guard = TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    tch::manual_seed(seed as i64);
    dims.iter()
        .map(|&dim| {
            let opts = (Kind::Double, tch::Device::Cpu);
            let q = Tensor::randn([samples, dim], opts);
            let k = Tensor::randn([samples, dim], opts);
            let dots = (q * k).sum_dim_intlist([1i64].as_slice(), false, Kind::Double); // (samples,)
            let variance = dots.var(true).double_value(&[]);
            let sqrt_dim = (dim as f64).sqrt();
            DotVariance {
                dim,
                samples,
                variance,
                scaled_variance: variance / (dim as f64),
                sqrt_dim,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> RunConfig {
        let mut c = RunConfig::reference();
        c.train.steps = 60;
        c.train.block = 20;
        c.eval.test_size = 40;
        c.eval.long_size = 10;
        c
    }

    #[test]
    fn seeded_runs_are_identical() {
        let c = tiny();
        let a = run(&c, 7, &mut Quiet).unwrap().result;
        let b = run(&c, 7, &mut Quiet).unwrap().result;
        assert_eq!(a.train, b.train);
        let other = run(&c, 8, &mut Quiet).unwrap().result;
        assert_ne!(a.train.unwrap().losses, other.train.unwrap().losses);
    }

    /// On easy data (3-letter strings) a short real run learns: loss falls, accuracy rises.
    #[test]
    fn short_run_on_easy_data_learns() {
        let mut c = tiny();
        c.data.max_len = 3;
        c.eval.test_max_len = 3;
        c.train.steps = 250;
        c.train.block = 50;
        let before = {
            let mut c0 = c.clone();
            c0.train.steps = 1;
            run(&c0, 0, &mut Quiet).unwrap().result.train.unwrap()
        };
        let after = run(&c, 0, &mut Quiet).unwrap().result.train.unwrap();
        assert!(
            after.last_block_mean < 0.5 * after.block_means[0],
            "{:?}",
            after.block_means
        );
        assert!(
            after.test.accuracy > before.test.accuracy + 0.3,
            "{} vs {}",
            after.test.accuracy,
            before.test.accuracy
        );
    }

    /// Initialised like PyTorch, the untrained model is evenly unsure: its first loss is
    /// close to ln 12, the cost of a uniform guess over the vocabulary.
    #[test]
    fn untrained_loss_is_near_ln_vocab() {
        let mut c = tiny();
        c.train.steps = 1;
        c.train.block = 1;
        for seed in 0..3 {
            let first = run(&c, seed, &mut Quiet)
                .unwrap()
                .result
                .train
                .unwrap()
                .first_loss;
            assert!(
                (first - 12f64.ln()).abs() < 0.25,
                "seed {seed}: first loss {first}"
            );
        }
    }

    #[test]
    fn trimming_trailing_pads_changes_nothing() {
        // Same model, same batch: the loss over 25 columns and over the used columns agree.
        let cfg = crate::model::ModelConfig::chapter();
        let (_vs, m) = model::init(&cfg, 1);
        let mut rng = Rng::new(2);
        let b = data::training_batch(&mut rng, 8, 3, 5, 25, data::Targets::Answer, false);
        let loss = |w: i64| {
            let x = Tensor::from_slice(&b.x).view([8, 25]).narrow(1, 0, w);
            let y = Tensor::from_slice(&b.y).view([8, 25]).narrow(1, 0, w);
            let (l, _) = m.forward(&x);
            l.view([-1, 12])
                .cross_entropy_loss::<Tensor>(&y.reshape([-1]), None, Reduction::Mean, IGNORE, 0.0)
                .double_value(&[])
        };
        let w = used_width(&b) as i64;
        assert!(w <= 11);
        assert!((loss(25) - loss(w)).abs() < 1e-6);
    }

    #[test]
    fn worked_example_and_variance_probe() {
        let w = worked_example();
        let r2 = |x: f64| (x * 100.0).round() / 100.0;
        assert_eq!(
            w.scores.iter().map(|&s| r2(s)).collect::<Vec<_>>(),
            vec![0.0, 3.54, 0.71, 1.41]
        );
        let v = dot_variance(&[32], 20_000, 0);
        assert!((v[0].variance - 32.0).abs() < 2.0, "{}", v[0].variance);
        assert!((v[0].scaled_variance - 1.0).abs() < 0.07);
    }
}
