//! Tests of `src/optim.rs`.

use revtx_engine::optim::*;
use tch::{nn, Tensor};
use tch::{nn::OptimizerConfig, Kind};

/// A small model's two parameters, drawn from libtorch's seeded generator.
fn params(vs: &nn::VarStore) -> (Tensor, Tensor) {
    let root = vs.root();
    let init = nn::Init::Uniform { lo: -1.0, up: 1.0 };
    (root.var("a", &[7, 5], init), root.var("b", &[5], init))
}

fn loss((a, b): &(Tensor, Tensor)) -> Tensor {
    (a * 3.0 + b).tanh().square().sum(Kind::Float)
}

fn flat(vs: &nn::VarStore) -> Vec<f32> {
    let mut vars = vs.variables().into_iter().collect::<Vec<_>>();
    vars.sort_by(|a, b| a.0.cmp(&b.0));
    vars.iter()
        .flat_map(|(_, t)| Vec::<f32>::try_from(&t.contiguous().view([-1])).unwrap())
        .collect()
}

/// The parameters at the start, and after 20 steps of our AdamW or libtorch's.
fn trained(ours: bool) -> (Vec<f32>, Vec<f32>) {
    let _g = revtx_engine::model::TORCH_RNG.lock().unwrap();
    tch::manual_seed(5);
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let p = params(&vs);
    let start = flat(&vs);
    let (lr, wd) = (3e-2, 0.1);
    if ours {
        let mut opt = AdamW::new(&vs, lr, wd).unwrap();
        for _ in 0..20 {
            opt.zero_grad();
            loss(&p).backward();
            opt.step().unwrap();
        }
    } else {
        let mut opt = nn::AdamW {
            wd,
            ..Default::default()
        }
        .build(&vs, lr)
        .unwrap();
        for _ in 0..20 {
            opt.zero_grad();
            loss(&p).backward();
            opt.step();
        }
    }
    (start, flat(&vs))
}

/// The same formula as libtorch's AdamW: after 20 steps the two agree to float32
/// rounding (they differ only in how libtorch rounds its square root and fuses two
/// multiply-adds), and both moved far from the start.
#[test]
fn steps_as_libtorchs_adamw_does() {
    let ((start, ours), (_, theirs)) = (trained(true), trained(false));
    assert_eq!(ours.len(), 40);
    for (a, b) in ours.iter().zip(&theirs) {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
    }
    let moved = start
        .iter()
        .zip(&ours)
        .filter(|(a, b)| (*a - *b).abs() > 0.05);
    assert!(moved.count() > 20);
}

/// One element, by hand: the first step of AdamW moves each weight by about `lr`
/// against its gradient's sign, after the decay.
#[test]
fn a_first_step_moves_by_the_learning_rate() {
    let s = StepScalars::new(0.01, 0.5, 1);
    let (mut p, mut m, mut v) = ([2.0f32, -1.0], [0.0f32; 2], [0.0f32; 2]);
    step_elements(s, &mut p, &[0.3, -4.0], &mut m, &mut v);
    assert!((p[0] - (2.0 * 0.995 - 0.01)).abs() < 1e-6, "{}", p[0]);
    assert!((p[1] - (-0.995 + 0.01)).abs() < 1e-6, "{}", p[1]);
    assert_eq!(m, [0.3 * s.one_minus_beta1, -4.0 * s.one_minus_beta1]);
}
