//! Interventions on a trained model: its weights read from the trained run's cache entry,
//! evaluated as they are and then with each target switched off. Nothing is retrained.
//!
//! - [`switch_off`]: what "off" means for each part, as edits of the weights that restore;
//! - [`score`]: greedy decodes scored on the trained run's own test and long sets;
//! - [`run`]: one request, from the trained entry to the intervening run's result;
//! - `open` and `patch`: activation patching, on the engine's forward pass opened up;
//! - `restrict`: a part zeroed at some positions only (`@input`, `@answer`), by a hook.
//!
//! Zero-ablation edits weights, not activations: a head's value rows (and their biases) set
//! to zero make every value vector of that head zero, so its output is exactly zero at
//! every position, whatever its attention weights; a sublayer's last projection and its bias
//! set to zero make the sublayer add exactly nothing to the residual stream. The forward pass
//! is the engine's own (`revtx_engine::eval::greedy`), so no new arithmetic enters, and
//! the result is as machine-independent as the engine's.

pub mod change;
pub mod mean;
pub mod open;
pub mod patch;
pub mod restrict;

use anyhow::{bail, ensure, Context, Result};
use revtx_engine::data::{self, Alphabet, Letters};
use revtx_engine::entry::{self, ExecRequest};
use revtx_engine::experiments::intervene::{AblateMode, At, Part, Target};
use revtx_engine::experiments::{RunConfig, RunKind};
use revtx_engine::model::{self, Transformer};
use revtx_engine::result::{Ablated, LengthEval, RunOutput, RunResult, Score, Scored, Targets};
use revtx_engine::rng::Rng;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::Path;
use tch::nn;

/// Identity of this crate's code (`revtx_spec::fingerprint::intervene`), computed by
/// build.rs: part of every intervening run's key.
pub const CODE_FINGERPRINT: &str = env!("REVTX_INTERVENE_FINGERPRINT");

// ANCHOR: edits
/// What an edited tensor is given: zero, or (mean ablation) the part's mean output, in
/// the tensor that adds a constant (a bias, or every row of the position table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    Zero,
    Mean,
}

/// The weights a part's switching off edits: (variable name, first row, rows, fill);
/// `None` rows means the whole tensor. Weights are stored `(out, in)`, so rows are outputs.
fn edits(part: Part, d_model: i64, d_head: i64) -> Vec<(String, i64, Option<i64>, Fill)> {
    let weight_and_bias = |at: String, first: i64, rows: Option<i64>| {
        vec![
            (format!("{at}.weight"), first, rows, Fill::Zero),
            (format!("{at}.bias"), first, rows, Fill::Mean),
        ]
    };
    match part {
        // qkv's outputs are q, k and v side by side, each heads side by side: head h's
        // values are rows 2·d + h·d_head .. + d_head.
        Part::Head { block, head } => weight_and_bias(
            format!("blocks.{block}.attn.qkv"),
            2 * d_model + head * d_head,
            Some(d_head),
        ),
        Part::Attn { block } => weight_and_bias(format!("blocks.{block}.attn.out"), 0, None),
        Part::Mlp { block } => weight_and_bias(format!("blocks.{block}.mlp.down"), 0, None),
        // A learned table's every row: each token enters with no position added (zero),
        // or with the mean position's vector (mean).
        Part::Pos => vec![("pos.weight".into(), 0, None, Fill::Mean)],
    }
}
// ANCHOR_END: edits

/// What a switched-off part gives: zero, or its mean output over a batch (`mean::means`).
/// With every value weight of a head zero and its value biases the head's mean output,
/// each value vector is that mean, so the head's output is the mean at every position
/// (to the rounding of its attention weights' sum); a sublayer whose last projection is
/// zero adds its bias, the mean, everywhere.
#[derive(Clone, Copy, Debug)]
pub enum Replace<'m> {
    Zero,
    Mean(&'m mean::Means),
}

/// Runs `f` with `target`'s parts switched off in `vs` (as `replace` says), then puts
/// every edited weight back as it was, bit for bit.
pub fn switch_off<T>(
    vs: &nn::VarStore,
    cfg: &RunConfig,
    target: &Target,
    replace: Replace,
    f: impl FnOnce() -> T,
) -> Result<T> {
    ensure!(
        target.at == At::All,
        "`{target}` is switched off at some positions only, which no weight edit can do (`restrict`)"
    );
    let vars = vs.variables();
    let (d, dh) = (cfg.model.d_model, cfg.model.d_head());
    let mut saved = Vec::new();
    for &part in &target.parts {
        if let Some(why) = part.missing_in(&cfg.model) {
            bail!("`{part}`: {why}");
        }
        for (name, first, rows, fill) in edits(part, d, dh) {
            let t = vars
                .get(&name)
                .with_context(|| format!("the trained model has no `{name}`"))?;
            let rows = rows.unwrap_or(t.size()[0]);
            let mut view = t.narrow(0, first, rows);
            saved.push((view.shallow_clone(), view.copy()));
            match (fill, replace) {
                (Fill::Mean, Replace::Mean(means)) => {
                    let m = means
                        .0
                        .get(&part)
                        .with_context(|| format!("no mean output of `{part}`"))?;
                    // A bias takes the vector; the table takes it in every row.
                    tch::no_grad(|| view.copy_(&m.expand_as(&view)));
                }
                _ => tch::no_grad(|| {
                    let _ = view.zero_();
                }),
            }
        }
    }
    let out = f();
    // Restored in reverse, so that a weight edited twice gets its first copy back.
    for (mut view, copy) in saved.into_iter().rev() {
        tch::no_grad(|| view.copy_(&copy));
    }
    Ok(out)
}

/// Exact match of `outs` (greedy answers, token ids) against the task's answers to `set`.
pub fn score(alphabet: Alphabet, set: &[Letters], outs: &[Vec<i64>]) -> Score {
    let mut by_len: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut wrong_at: Vec<usize> = Vec::new();
    for (s, o) in set.iter().zip(outs) {
        let want: Vec<i64> = alphabet.answer(s).iter().map(|&c| i64::from(c)).collect();
        let e = by_len.entry(alphabet.task.size(s.len())).or_default();
        e.0 += usize::from(*o == want);
        e.1 += 1;
        if wrong_at.len() < want.len() {
            wrong_at.resize(want.len(), 0);
        }
        for (k, w) in want.iter().enumerate() {
            wrong_at[k] += usize::from(o.get(k) != Some(w));
        }
    }
    let correct = by_len.values().map(|v| v.0).sum();
    Score {
        correct,
        total: set.len(),
        accuracy: correct as f64 / set.len().max(1) as f64,
        by_length: by_len
            .into_iter()
            .map(|(len, (c, n))| LengthEval {
                len,
                correct: c,
                total: n,
                accuracy: c as f64 / n as f64,
            })
            .collect(),
        wrong_at,
        outputs: outs.iter().map(|o| alphabet.text(o)).collect(),
    }
}

/// The trained run's test and long sets, drawn as the engine draws them (`train::summarise`).
pub fn eval_sets(cfg: &RunConfig) -> (Vec<Letters>, Vec<Letters>) {
    let (d, e) = (&cfg.data, &cfg.eval);
    let alphabet = d.alphabet();
    let mut rng = Rng::new(e.test_seed);
    let test = data::sample_problems(
        &mut rng,
        alphabet,
        e.test_size,
        e.test_min_len,
        e.test_max_len,
    );
    let long = data::sample_problems(
        &mut rng,
        alphabet,
        e.long_size,
        e.long_min_len,
        e.long_max_len,
    );
    (test, long)
}

/// The model scored on both sets, as it stands in `vs` now.
fn scored(model: &Transformer, alphabet: Alphabet, test: &[Letters], long: &[Letters]) -> Scored {
    tch::no_grad(|| Scored {
        test: score(
            alphabet,
            test,
            &revtx_engine::eval::greedy(model, alphabet, test),
        ),
        long: score(
            alphabet,
            long,
            &revtx_engine::eval::greedy(model, alphabet, long),
        ),
    })
}

/// The trained model of `cfg` (less its intervention) at `seed`, its weights read from
/// `weights`.
pub fn trained_model(
    cfg: &RunConfig,
    seed: u64,
    weights: &Path,
) -> Result<(nn::VarStore, Transformer)> {
    let (mut vs, model) = model::init(&cfg.model, seed);
    vs.load(weights)
        .with_context(|| format!("reading the trained weights {}", weights.display()))?;
    Ok((vs, model))
}

/// Mean ablation's values, from the untouched model on its own test strings; none for
/// zero ablation.
fn means_for(
    iv: &revtx_engine::experiments::intervene::Intervene,
    model: &Transformer,
    vs: &nn::VarStore,
    cfg: &RunConfig,
    test: &[Letters],
) -> Result<Option<mean::Means>> {
    Ok(match iv.mode {
        AblateMode::Zero => None,
        AblateMode::Mean => {
            let parts: BTreeSet<Part> = iv
                .ablate
                .iter()
                .flat_map(|t| t.parts.iter().copied())
                .collect();
            let parts: Vec<Part> = parts.into_iter().collect();
            let alphabet = cfg.data.alphabet();
            Some(mean::means(
                model,
                &vs.variables(),
                &cfg.model,
                alphabet,
                test,
                &parts,
            )?)
        }
    })
}

/// What training changed in the learned position table, when the run asks (see `change`),
/// checked against the trained run's record of the table it started from.
fn table_change_for(
    iv: &revtx_engine::experiments::intervene::Intervene,
    vs: &nn::VarStore,
    cfg: &RunConfig,
    seed: u64,
    tr: &revtx_engine::result::TrainResult,
) -> Result<Option<revtx_engine::result::TableChange>> {
    if !iv.table_change {
        return Ok(None);
    }
    {
        let trained = vs
            .variables()
            .get("pos.weight")
            .map(tch::Tensor::shallow_clone)
            .context("the model has no learned position table")?;
        let c = change::table_change(&change::initial_table(&cfg.model, seed)?, &trained);
        // The table drawn again must be the one training started from: its rows' lengths
        // as the trained run recorded them before its first step. The engine squares in
        // f32 before summing in f64, so the two agree to f32's precision (about 1e-8 of a
        // row's length here), far below the difference another draw would make.
        let recorded = tr
            .positions
            .as_ref()
            .map(|p| p.norm_before.clone())
            .unwrap_or_default();
        ensure!(
            recorded.len() == c.initial_norm.len()
                && recorded
                    .iter()
                    .zip(&c.initial_norm)
                    .all(|(a, b)| (a - b).abs() <= 1e-6 * a.abs().max(1.0)),
            "the initial position table drawn again from seed {} is not the one `{}` recorded before training (row lengths {:?}, recorded {:?})",
            seed,
            iv.from,
            &c.initial_norm[..c.initial_norm.len().min(3)],
            &recorded[..recorded.len().min(3)]
        );
        Ok(Some(c))
    }
}

/// Every target of `iv` evaluated in turn: those at every position by weight edits
/// (`switch_off`), those at some positions only on the opened model, which is first
/// checked against the engine's decodes of the untouched model (`restrict`).
fn ablations<S: std::hash::BuildHasher>(
    iv: &revtx_engine::experiments::intervene::Intervene,
    cfg: &RunConfig,
    vs: &nn::VarStore,
    model: &Transformer,
    vars: &std::collections::HashMap<String, tch::Tensor, S>,
    (test, long): (&[Letters], &[Letters]),
    baseline: &Scored,
) -> Result<Targets> {
    let alphabet = cfg.data.alphabet();
    let means = means_for(iv, model, vs, cfg, test)?;
    let replace = means.as_ref().map_or(Replace::Zero, Replace::Mean);
    let restricted = iv.ablate.iter().any(|t| t.at != At::All);
    ensure!(
        !restricted || iv.mode == AblateMode::Zero,
        "mean ablation replaces a part at every position: a target restricted to some is zeroed"
    );
    let opened = restricted
        .then(|| open::Open::new(model, vars, &cfg.model))
        .transpose()?;
    let checked = opened
        .as_ref()
        .map(|o| {
            restrict::Checked::new(
                o,
                cfg.model.d_head(),
                alphabet,
                [("test", test), ("long", long)],
                baseline,
            )
        })
        .transpose()?;
    let mut targets = Vec::with_capacity(iv.ablate.len());
    for target in &iv.ablate {
        let s = match (&checked, target.at) {
            (Some(c), At::Input | At::Answer) => c.scored(alphabet, target, test, long)?,
            _ => switch_off(vs, cfg, target, replace, || {
                scored(model, alphabet, test, long)
            })?,
        };
        targets.push((target.to_string(), s));
    }
    Ok(Targets(targets))
}

/// One intervening run: the trained entry read and verified, the model rebuilt from its
/// weights and checked against the trained run's own decodes, then each target evaluated.
pub fn run(req: &ExecRequest) -> Result<RunResult> {
    let cfg = &req.config;
    let Some(iv) = &cfg.intervene else {
        bail!("the request has no intervention: `revtx-engine` runs it")
    };
    ensure!(
        cfg.kind == RunKind::Train,
        "only a training run's weights can be intervened on"
    );
    let trained_dir = req
        .trained
        .as_deref()
        .context("the request names no trained entry")?;
    let trained_cfg = RunConfig {
        intervene: None,
        ..cfg.clone()
    };
    let trained = entry::load(trained_dir, &trained_cfg, req.seed, req.profile)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("the trained run `{}` at seed {}", iv.from, req.seed))?;
    ensure!(
        trained.env.code_fingerprint == revtx_engine::CODE_FINGERPRINT,
        "the trained run was computed by engine code {}, and this binary links {}: build both from the same tree (`make build`)",
        trained.env.code_fingerprint,
        revtx_engine::CODE_FINGERPRINT
    );
    let Some(tr) = trained.train() else {
        bail!("the run `{}` trained nothing", iv.from)
    };
    let weights = trained_dir.join(entry::WEIGHTS_FILE);
    ensure!(
        entry::has_weights(trained_dir),
        "the trained run `{}` at seed {} was kept without its weights",
        iv.from,
        req.seed
    );
    tch::set_num_threads(cfg.train.threads as i32);
    revtx_engine::numerics::pin_thread(revtx_engine::numerics::current());
    let started = std::time::Instant::now();
    let mut env = revtx_engine::run_env(cfg.train.threads);

    let alphabet = cfg.data.alphabet();
    let (test, long) = eval_sets(cfg);
    let (vs, model) = trained_model(cfg, req.seed, &weights)?;
    let baseline = scored(&model, alphabet, &test, &long);
    // The weights must be the trained run's, read right: every decode as it recorded.
    for (set, mine, recorded) in [
        ("test", &baseline.test.outputs, &tr.test.outputs),
        ("long", &baseline.long.outputs, &tr.long.outputs),
    ] {
        if let Some(k) =
            (0..mine.len().max(recorded.len())).find(|&k| mine.get(k) != recorded.get(k))
        {
            bail!(
                "the trained model read back decodes {set} string {k} as {:?}, and its run recorded {:?}",
                mine.get(k),
                recorded.get(k)
            );
        }
    }
    let vars = vs.variables();
    let targets = ablations(iv, cfg, &vs, &model, &vars, (&test, &long), &baseline)?;
    let patched = iv
        .patch
        .as_ref()
        .map(|p| patch::run(&model, &vars, cfg, p))
        .transpose()?;
    let table_change = table_change_for(iv, &vs, cfg, req.seed, tr)?;
    env.train_seconds = 0.0;
    env.eval_seconds = started.elapsed().as_secs_f64();
    env.code_fingerprint = format!(
        "{}+intervene-{CODE_FINGERPRINT}",
        revtx_engine::CODE_FINGERPRINT
    );
    Ok(RunResult {
        format: revtx_engine::result::RESULT_FORMAT,
        config: cfg.clone(),
        seed: req.seed,
        params: model::parameter_count(&vs),
        output: RunOutput::Ablated(Box::new(Ablated {
            baseline,
            targets,
            patched,
            table_change,
        })),
        env,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside, exactly the target's rows are zero; after, every weight is back, bit for bit.
    #[test]
    fn switching_off_zeroes_the_rows_and_restores_them() {
        let cfg = RunConfig::reference();
        let (vs, _model) = model::init(&cfg.model, 3);
        let before: Vec<(String, tch::Tensor)> = vs
            .variables()
            .into_iter()
            .map(|(k, t)| (k, t.copy()))
            .collect();
        let target = Target::parse("b1.h1+b0.mlp+b0.h1").unwrap();
        let (d, dh) = (cfg.model.d_model, cfg.model.d_head());
        switch_off(&vs, &cfg, &target, Replace::Zero, || {
            let vars = vs.variables();
            let qkv = &vars["blocks.1.attn.qkv.weight"];
            let zero = |t: &tch::Tensor| t.abs().sum(tch::Kind::Double).double_value(&[]) == 0.0;
            assert!(zero(&qkv.narrow(0, 2 * d + dh, dh)), "b1.h1's values");
            assert!(
                !zero(&qkv.narrow(0, 2 * d, dh)),
                "b1.h0's values are not b1.h1's"
            );
            assert!(!zero(&qkv.narrow(0, 0, 2 * d)), "queries and keys stay");
            assert!(zero(&vars["blocks.1.attn.qkv.bias"].narrow(
                0,
                2 * d + dh,
                dh
            )));
            assert!(
                zero(&vars["blocks.0.mlp.down.weight"]) && zero(&vars["blocks.0.mlp.down.bias"])
            );
            assert!(!zero(&vars["blocks.1.mlp.down.weight"]));
        })
        .unwrap();
        let after = vs.variables();
        for (k, t) in &before {
            assert!(t.equal(&after[k]), "{k} was not restored");
        }
        let missing = Target::parse("b0.h2").unwrap();
        assert!(switch_off(&vs, &cfg, &missing, Replace::Zero, || ()).is_err());
    }

    /// A score counts each answer position's wrong tokens and each length's right answers.
    #[test]
    fn a_score_counts_by_length_and_position() {
        let cfg = RunConfig::reference();
        let a = cfg.data.alphabet();
        let set: Vec<Letters> = ["abc", "abcd"]
            .iter()
            .map(|s| a.parse(s).unwrap())
            .collect();
        let right: Vec<Vec<i64>> = set
            .iter()
            .map(|s| a.answer(s).iter().map(|&c| i64::from(c)).collect())
            .collect();
        let mut outs = right.clone();
        outs[1][2] = outs[1][1];
        let s = score(a, &set, &outs);
        assert_eq!((s.correct, s.total), (1, 2));
        assert_eq!(s.wrong_at, vec![0, 0, 1, 0]);
        assert_eq!(s.by_length.len(), 2);
        assert_eq!(s.outputs[0], "cba");
    }
}
