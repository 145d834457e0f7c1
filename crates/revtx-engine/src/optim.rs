//! AdamW over one flat buffer, written out. Every parameter of the model becomes a view
//! into one tensor and every gradient a view into another, and one loop steps them all.
//!
//! The loop is ours rather than libtorch's `torch::optim::AdamW` because libtorch takes the
//! square root through MKL's vector library, whose result depends on the processor: under
//! `MKL_CBWR=COMPATIBLE`, one float32 root in seven on an AVX-512 Xeon is not the correctly
//! rounded one, and an AMD EPYC's roots differ from those again. Here every operation is
//! one IEEE-754 multiply, add, divide or square root, each rounded once, in the order
//! written: the same bits on any machine. The formula is libtorch's, term for term (a test
//! holds the two together).

use tch::{nn, TchError, Tensor};

/// β₁, β₂ and ε of PyTorch's AdamW defaults.
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPS: f64 = 1e-8;

pub struct AdamW {
    /// Every trainable number, in parameter-name order; the model's parameters view it.
    params: Tensor,
    /// Their gradients, viewed the same way; autograd accumulates into the views.
    grads: Tensor,
    /// The moving averages of the gradient and of its square.
    m: Vec<f32>,
    v: Vec<f32>,
    lr: f64,
    weight_decay: f64,
    steps: i32,
}

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
    /// The scalars of step `t` (counted from 1).
    pub fn new(lr: f64, weight_decay: f64, t: i32) -> Self {
        StepScalars {
            decay: (1.0 - lr * weight_decay) as f32,
            beta1: BETA1 as f32,
            one_minus_beta1: (1.0 - BETA1) as f32,
            beta2: BETA2 as f32,
            one_minus_beta2: (1.0 - BETA2) as f32,
            root_correction2: (1.0 - BETA2.powi(t)).sqrt() as f32,
            eps: EPS as f32,
            neg_step: (-(lr / (1.0 - BETA1.powi(t)))) as f32,
        }
    }
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

impl AdamW {
    /// Moves every trainable variable of `vs` into the flat buffers (values unchanged).
    pub fn new(vs: &nn::VarStore, lr: f64, weight_decay: f64) -> Result<Self, TchError> {
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
                "AdamW steps float32 CPU parameters, not {:?} on {:?}",
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
        Ok(AdamW {
            params,
            grads,
            m: vec![0.0; n],
            v: vec![0.0; n],
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

    pub fn step(&mut self) -> Result<(), TchError> {
        self.steps += 1;
        let s = StepScalars::new(self.lr, self.weight_decay, self.steps);
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
        step_elements(s, p, g, &mut self.m, &mut self.v);
        Ok(())
    }

    /// How many numbers are optimised.
    pub fn numel(&self) -> usize {
        self.params.numel()
    }
}
