//! Tests of `src/optim.rs`: each rule against libtorch's optimiser, the norm and the clip.

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

/// 20 steps of our `rule`, or of libtorch's optimiser built by `theirs`.
fn steps_of(rule: Rule, theirs: Option<&dyn Fn(&nn::VarStore) -> nn::Optimizer>) -> Vec<f32> {
    let _g = revtx_engine::model::TORCH_RNG.lock().unwrap();
    tch::manual_seed(5);
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let p = params(&vs);
    let (lr, wd) = (3e-2, 0.1);
    match theirs {
        None => {
            let mut opt = Optim::with_rule(&vs, rule, lr, wd).unwrap();
            for _ in 0..20 {
                opt.zero_grad();
                loss(&p).backward();
                opt.step().unwrap();
            }
        }
        Some(build) => {
            let mut opt = build(&vs);
            for _ in 0..20 {
                opt.zero_grad();
                loss(&p).backward();
                opt.step();
            }
        }
    }
    flat(&vs)
}

fn agree(ours: &[f32], theirs: &[f32], what: &str) {
    assert_eq!(ours.len(), 40);
    for (a, b) in ours.iter().zip(theirs) {
        assert!(
            (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
            "{what}: {a} vs {b}"
        );
    }
}

#[test]
fn adam_steps_as_libtorchs_adam_does() {
    let rule = Rule::Adam {
        betas: [0.8, 0.99],
        eps: 1e-6,
        decoupled: false,
    };
    let theirs = |vs: &nn::VarStore| {
        nn::Adam {
            beta1: 0.8,
            beta2: 0.99,
            wd: 0.1,
            eps: 1e-6,
            amsgrad: false,
        }
        .build(vs, 3e-2)
        .unwrap()
    };
    let ours = steps_of(rule, None);
    agree(&ours, &steps_of(rule, Some(&theirs)), "adam");
    // Coupled and decoupled decay are different rules: AdamW lands elsewhere.
    let adamw = steps_of(Rule::ADAMW, None);
    assert!(ours.iter().zip(&adamw).any(|(a, b)| (a - b).abs() > 1e-3));
}

#[test]
fn sgd_steps_as_libtorchs_sgd_does() {
    for momentum in [0.0, 0.9] {
        let theirs = |vs: &nn::VarStore| {
            nn::Sgd {
                momentum,
                dampening: 0.0,
                wd: 0.1,
                nesterov: false,
            }
            .build(vs, 3e-2)
            .unwrap()
        };
        let rule = Rule::Sgd { momentum };
        agree(
            &steps_of(rule, None),
            &steps_of(rule, Some(&theirs)),
            &format!("sgd, momentum {momentum}"),
        );
    }
}

/// Clipping as PyTorch's `clip_grad_norm_` defines it: a norm over the limit is brought
/// to just under it (never over: rounding the products to float32 could), a norm under
/// it is left alone, and 0 is off.
#[test]
fn a_clipped_gradient_never_exceeds_the_clip() {
    let mut over = 0;
    for salt in 0..50 {
        let g: Vec<f32> = (0..1000)
            .map(|i| ((i * 37 + salt * 11) % 101) as f32 / 7.0 - 7.1)
            .collect();
        let n = norm(&g);
        let want = g.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        assert!((n - want).abs() < 1e-12 * want, "{n} vs {want}");
        // The eight sums by index, then those in order: the definition, to the bit.
        let mut lanes = [0.0f64; 8];
        for (i, &x) in g.iter().enumerate() {
            lanes[i % 8] += f64::from(x) * f64::from(x);
        }
        assert_eq!(n, lanes.iter().fold(0.0, |s, &l| s + l).sqrt());
        for clip in [0.5, 1.0, 10.0, n / 2.0, n * 0.999_999] {
            let f = clip_factor(&g, n, clip).expect("over the limit");
            let clipped: Vec<f32> = g.iter().map(|&x| x * f).collect();
            let after = norm(&clipped);
            assert_eq!(after, scaled_norm(&g, f));
            assert!(after <= clip, "{after} > {clip}");
            assert!(after > clip * (1.0 - 1e-6), "{after} well under {clip}");
            // How often PyTorch's factor, rounded to nearest, would have gone over.
            let nearest = (clip / (n + 1e-6)) as f32;
            over += usize::from(scaled_norm(&g, nearest) > clip);
        }
        assert_eq!(clip_factor(&g, n, 2.0 * n), None, "under the limit");
        assert_eq!(clip_factor(&g, n, 0.0), None, "off");
    }
    assert!(over > 0, "the rounding this guards against never happened");
}
