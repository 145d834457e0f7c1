//! Whether a config can run: every way it cannot, each at the key to change, checked
//! before anything trains (the compiler reports each at that key of the run block).

use super::{Decay, Optimizer, RunConfig, RunKind, DEFAULT_BETAS, DEFAULT_EPS};

impl RunConfig {
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
        let lr_ok = t.lr > 0.0 && t.lr.is_finite();
        need(
            lr_ok,
            "train.lr",
            "train.lr must be a positive learning rate",
        );
        need(
            !lr_ok || (t.min_lr >= 0.0 && t.min_lr <= t.lr),
            "train.min_lr",
            "train.min_lr must be between 0 and train.lr",
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
}
