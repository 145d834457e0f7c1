//! The optimisers (AdamW, Adam, SGD) over one flat buffer, written out, with the global
//! gradient norm and its clipping. Every parameter of the model becomes a view into one
//! tensor and every gradient a view into another, and one loop steps them all.
//!
//! The loops are ours rather than libtorch's `torch::optim` because libtorch takes the
//! square root through MKL's vector library, whose result depends on the processor: under
//! `MKL_CBWR=COMPATIBLE`, one float32 root in seven on an AVX-512 Xeon is not the correctly
//! rounded one, and an AMD EPYC's roots differ from those again. Here every operation is
//! one IEEE-754 multiply, add, divide or square root, each rounded once, in the order
//! written: the same bits on any machine. The formulas are PyTorch's, term for term (tests
//! hold each to libtorch's optimiser).

use crate::experiments::{Optimizer, TrainConfig, DEFAULT_BETAS, DEFAULT_EPS};
use tch::{nn, TchError, Tensor};

/// The update rule and its constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rule {
    /// Adam; `decoupled`: AdamW's weight decay (the parameter shrinks by `1 - lr·wd`),
    /// otherwise Adam's (`wd·p` is added to the gradient).
    Adam {
        betas: [f64; 2],
        eps: f64,
        decoupled: bool,
    },
    /// SGD with momentum (`0`: none); weight decay added to the gradient.
    Sgd { momentum: f64 },
}

impl Rule {
    /// The chapter's: AdamW with PyTorch's β and ε.
    pub const ADAMW: Rule = Rule::Adam {
        betas: DEFAULT_BETAS,
        eps: DEFAULT_EPS,
        decoupled: true,
    };

    /// The rule `train` names.
    pub fn of(t: &TrainConfig) -> Self {
        match t.optimizer {
            Optimizer::Adamw | Optimizer::Adam => Rule::Adam {
                betas: t.betas,
                eps: t.eps,
                decoupled: t.optimizer == Optimizer::Adamw,
            },
            Optimizer::Sgd => Rule::Sgd {
                momentum: t.momentum,
            },
        }
    }
}

/// The optimiser of a run: the rule, its state, and the flat buffers it steps.
pub struct Optim {
    /// Every trainable number, in parameter-name order; the model's parameters view it.
    params: Tensor,
    /// Their gradients, viewed the same way; autograd accumulates into the views.
    grads: Tensor,
    /// Adam's moving averages of the gradient and of its square; SGD's momentum buffer in
    /// `m` (`v` empty).
    m: Vec<f32>,
    v: Vec<f32>,
    rule: Rule,
    lr: f64,
    weight_decay: f64,
    steps: i32,
}

/// The chapter's optimiser, by its old name.
pub type AdamW = Optim;

/// The scalars of one step, each computed in f64 and rounded to f32 once, as libtorch
/// rounds a double scalar to the tensor's type.
#[derive(Clone, Copy, Debug)]
pub struct StepScalars {
    /// `1 - lr·wd`: the decoupled weight decay.
    pub decay: f32,
    pub beta1: f32,
    pub one_minus_beta1: f32,
    pub beta2: f32,
    pub one_minus_beta2: f32,
    /// `√(1 - β₂ᵗ)`: the second moment's bias correction, under the root.
    pub root_correction2: f32,
    pub eps: f32,
    /// `-lr / (1 - β₁ᵗ)`: the step along `m / denominator`.
    pub neg_step: f32,
}

impl StepScalars {
    /// The scalars of AdamW's step `t` (counted from 1) with PyTorch's β and ε.
    pub fn new(lr: f64, weight_decay: f64, t: i32) -> Self {
        Self::adam(lr, weight_decay, DEFAULT_BETAS, DEFAULT_EPS, t)
    }

    /// The scalars of step `t` with the given β and ε; `decay` is AdamW's.
    pub fn adam(lr: f64, weight_decay: f64, [beta1, beta2]: [f64; 2], eps: f64, t: i32) -> Self {
        StepScalars {
            decay: (1.0 - lr * weight_decay) as f32,
            beta1: beta1 as f32,
            one_minus_beta1: (1.0 - beta1) as f32,
            beta2: beta2 as f32,
            one_minus_beta2: (1.0 - beta2) as f32,
            root_correction2: (1.0 - beta2.powi(t)).sqrt() as f32,
            eps: eps as f32,
            neg_step: (-(lr / (1.0 - beta1.powi(t)))) as f32,
        }
    }
}

/// One Adam step of every element, in place, with Adam's weight decay `l2` (`wd·p` added
/// to the gradient first, as PyTorch's `Adam` does; the decoupled `decay` is not applied).
pub fn adam_elements(
    s: StepScalars,
    l2: f32,
    p: &mut [f32],
    g: &[f32],
    m: &mut [f32],
    v: &mut [f32],
) {
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        let g = g + l2 * *p;
        *m = *m * s.beta1 + s.one_minus_beta1 * g;
        *v = *v * s.beta2 + s.one_minus_beta2 * g * g;
        let denom = v.sqrt() / s.root_correction2 + s.eps;
        *p += s.neg_step * *m / denom;
    }
}

/// One SGD step of every element, PyTorch's way: `g + wd·p`, then with momentum `μ` the
/// buffer `b ← μ·b + g` (on the first step `b ← g`) steps in place of `g`, and
/// `p ← p - lr·g`. `neg_lr` is `-lr`, `l2` is `wd`, both rounded to float32.
pub fn sgd_elements(
    neg_lr: f32,
    l2: f32,
    momentum: Option<(f32, bool)>,
    p: &mut [f32],
    g: &[f32],
    buf: &mut [f32],
) {
    for ((p, &g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
        let g = g + l2 * *p;
        let g = match momentum {
            None => g,
            Some((_, true)) => {
                *b = g;
                g
            }
            Some((mu, false)) => {
                *b = mu * *b + g;
                *b
            }
        };
        *p += neg_lr * g;
    }
}

/// Lanes of the norm's sum: element `i` is added to lane `i % LANES`.
const LANES: usize = 8;

/// The Euclidean norm of `g`: each square in f64 added to lane `i % 8` in index order, the
/// eight lanes then summed in order, then the root (correctly rounded). A fixed order, so
/// the same bits everywhere; eight lanes so that the compiler may hold them in vector
/// registers (it may not reorder one running sum), which makes the norm of the chapter's
/// 103,244 gradients about a tenth of what one sum costs.
pub fn norm(g: &[f32]) -> f64 {
    sum_of_squares(g, 1.0).sqrt()
}

/// Σ (x·f)² over `g` in the lanes' order, each product `x·f` rounded to float32 first
/// (`f` = 1 is exact: the plain squares).
#[allow(clippy::float_cmp, reason = "1.0 exactly means unscaled")]
fn sum_of_squares(g: &[f32], f: f32) -> f64 {
    let square = |x: f32| {
        let x = f64::from(if f == 1.0 { x } else { x * f });
        x * x
    };
    let mut lanes = [0.0f64; LANES];
    let chunks = g.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (lane, &x) in lanes.iter_mut().zip(c) {
            *lane += square(x);
        }
    }
    for (lane, &x) in lanes.iter_mut().zip(tail) {
        *lane += square(x);
    }
    lanes.iter().fold(0.0, |sum, &lane| sum + lane)
}

/// The factor every gradient `g` is scaled by when their `norm` exceeds `clip`: PyTorch's
/// `clip_grad_norm_` uses `clip / (norm + 1e-6)`; here that factor is rounded down to a
/// float32, and lowered one float32 step at a time while rounding the products would
/// still leave a norm above `clip`, so a clipped gradient's norm never exceeds the clip.
/// `None` when there is nothing to clip (`clip` 0 is off).
pub fn clip_factor(g: &[f32], norm: f64, clip: f64) -> Option<f32> {
    let want = clip / (norm + 1e-6);
    if clip <= 0.0 || want >= 1.0 {
        return None;
    }
    let mut f = want as f32;
    if f64::from(f) > want {
        f = f.next_down();
    }
    while scaled_norm(g, f) > clip {
        f = f.next_down();
    }
    Some(f)
}

/// The norm of `g` after each element is multiplied by `f` in float32 (as `norm` sums).
pub fn scaled_norm(g: &[f32], f: f32) -> f64 {
    sum_of_squares(g, f).sqrt()
}

/// One AdamW step of every element, in place. Rust rounds each operation once and never
/// fuses a multiply into an add, so this is the definition, not an approximation of it.
pub fn step_elements(s: StepScalars, p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32]) {
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        *p *= s.decay;
        *m = *m * s.beta1 + s.one_minus_beta1 * g;
        *v = *v * s.beta2 + s.one_minus_beta2 * g * g;
        let denom = v.sqrt() / s.root_correction2 + s.eps;
        *p += s.neg_step * *m / denom;
    }
}

impl Optim {
    /// The chapter's AdamW with PyTorch's β and ε.
    pub fn new(vs: &nn::VarStore, lr: f64, weight_decay: f64) -> Result<Self, TchError> {
        Self::with_rule(vs, Rule::ADAMW, lr, weight_decay)
    }

    /// The optimiser `train` asks for, at its peak rate.
    pub fn of(vs: &nn::VarStore, t: &TrainConfig) -> Result<Self, TchError> {
        Self::with_rule(vs, Rule::of(t), t.lr, t.weight_decay)
    }

    /// Moves every trainable variable of `vs` into the flat buffers (values unchanged).
    pub fn with_rule(
        vs: &nn::VarStore,
        rule: Rule,
        lr: f64,
        weight_decay: f64,
    ) -> Result<Self, TchError> {
        let mut vars: Vec<(String, Tensor)> = vs
            .variables()
            .into_iter()
            .filter(|(_, t)| t.requires_grad())
            .collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        let params = tch::no_grad(|| {
            let parts: Vec<Tensor> = vars.iter().map(|(_, t)| t.detach().view([-1])).collect();
            Tensor::cat(&parts, 0)
        });
        // Checked before any variable is rebound to the buffer, so a refusal changes nothing.
        if params.kind() != tch::Kind::Float || params.device() != tch::Device::Cpu {
            return Err(TchError::Kind(format!(
                "the optimiser steps float32 CPU parameters, not {:?} on {:?}",
                params.kind(),
                params.device()
            )));
        }
        let grads = params.zeros_like();
        let mut offset = 0;
        for (_, t) in &mut vars {
            let n = t.numel() as i64;
            let shape = t.size();
            t.set_data(&params.narrow(0, offset, n).view(shape.as_slice()));
            crate::model::kernels::set_grad(t, &grads.narrow(0, offset, n).view(shape.as_slice()));
            offset += n;
        }
        let n = params.numel();
        let second = if matches!(rule, Rule::Adam { .. }) {
            n
        } else {
            0
        };
        Ok(Optim {
            params,
            grads,
            m: vec![0.0; n],
            v: vec![0.0; second],
            rule,
            lr,
            weight_decay,
            steps: 0,
        })
    }

    /// The learning rate of the next steps (the schedule's, step by step).
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    /// Zeroes the gradients in place (the views must stay views).
    pub fn zero_grad(&mut self) {
        let _ = self.grads.zero_();
    }

    /// The gradients as one slice.
    fn grad_slice(&mut self) -> &mut [f32] {
        let n = self.m.len();
        // SAFETY: `grads` is a contiguous float32 CPU tensor of `n` elements, allocated in
        // `new` and owned here for our lifetime; nothing else reads or writes it while we
        // hold `&mut self` between a backward pass and the step (autograd is idle).
        unsafe { std::slice::from_raw_parts_mut(self.grads.data_ptr().cast::<f32>(), n) }
    }

    /// The norm of all gradients together (see `norm`).
    pub fn grad_norm(&mut self) -> f64 {
        norm(self.grad_slice())
    }

    /// Scales every gradient by `clip_factor` if there is one.
    pub fn clip(&mut self, norm: f64, clip: f64) {
        if clip <= 0.0 {
            return;
        }
        let g = self.grad_slice();
        if let Some(f) = clip_factor(g, norm, clip) {
            for g in g {
                *g *= f;
            }
        }
    }

    pub fn step(&mut self) -> Result<(), TchError> {
        self.steps += 1;
        let n = self.m.len();
        // SAFETY: `params` and `grads` are contiguous float32 CPU tensors of `n` elements,
        // allocated in `new` and owned here for our lifetime; they are distinct buffers, and
        // nothing else reads or writes them while this step runs (autograd is idle).
        let (p, g) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.params.data_ptr().cast::<f32>(), n),
                std::slice::from_raw_parts(self.grads.data_ptr().cast::<f32>(), n),
            )
        };
        match self.rule {
            Rule::Adam {
                betas,
                eps,
                decoupled,
            } => {
                let s = StepScalars::adam(self.lr, self.weight_decay, betas, eps, self.steps);
                if decoupled {
                    step_elements(s, p, g, &mut self.m, &mut self.v);
                } else {
                    let l2 = self.weight_decay as f32;
                    adam_elements(s, l2, p, g, &mut self.m, &mut self.v);
                }
            }
            Rule::Sgd { momentum } => {
                let mu = (momentum > 0.0).then_some((momentum as f32, self.steps == 1));
                let (neg_lr, l2) = (-self.lr as f32, self.weight_decay as f32);
                sgd_elements(neg_lr, l2, mu, p, g, &mut self.m);
            }
        }
        Ok(())
    }

    /// How many numbers are optimised.
    pub fn numel(&self) -> usize {
        self.params.numel()
    }
}
