//! Tests of `src/train.rs`.

use revtx_engine::data::{self, IGNORE};
use revtx_engine::experiments::RunConfig;
use revtx_engine::model::{self};
use revtx_engine::rng::Rng;
use revtx_engine::train::*;
use tch::{Reduction, Tensor};

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
    assert_eq!(a.train(), b.train());
    let other = run(&c, 8, &mut Quiet).unwrap().result;
    assert_ne!(a.train().unwrap().losses, other.train().unwrap().losses);
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
        run(&c0, 0, &mut Quiet)
            .unwrap()
            .result
            .train()
            .unwrap()
            .clone()
    };
    let after = run(&c, 0, &mut Quiet)
        .unwrap()
        .result
        .train()
        .unwrap()
        .clone();
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
            .train()
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
    let cfg = revtx_engine::model::ModelConfig::chapter();
    let (_vs, m) = model::init(&cfg, 1);
    let mut rng = Rng::new(2);
    let b = data::training_batch(
        &mut rng,
        8,
        (3, 5),
        data::Alphabet::CHAPTER,
        25,
        data::Targets::Answer,
        false,
    );
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
