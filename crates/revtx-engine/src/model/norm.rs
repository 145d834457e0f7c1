//! The norms a block can use (`NormKind`): the chapter's layer norm (its kernel is
//! `kernels::layer_norm`) or an RMS norm, composed of ATen's multiplications, additions
//! and divisions and one mean over the last axis (which the portable profile pins to AVX2
//! on every machine), with a square root of our own: ATen's goes through MKL, whose last
//! bit varies by CPU.

use super::LayerNorm;
use crate::config::{ModelConfig, NormKind};
use tch::{nn, nn::Module, Kind, Tensor};

/// RMS norm's epsilon: layer norm's.
const RMS_EPS: f64 = 1e-5;

/// `x / √(mean(x²) + ε) · w` over the last axis, with a learned scale `w` (one at the
/// start) and no shift (Zhang and Sennrich).
#[derive(Debug)]
pub struct RmsNorm {
    pub ws: Tensor,
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> Tensor {
        let mean_square = (x * x).mean_dim([-1i64].as_slice(), true, Kind::Float);
        x / sqrt(&(mean_square + RMS_EPS)) * &self.ws
    }
}

/// `√a` elementwise with its derivative: each root taken in Rust (`sqrtss`, correctly
/// rounded), then made differentiable as `r + (a - a₀) / 2r`, where `a₀` is `a` detached:
/// the difference is exactly zero, so the value is `r` to the bit, and the derivative is
/// `1 / 2r`, the root's.
pub fn sqrt(a: &Tensor) -> Tensor {
    let a0 = a.detach().contiguous();
    let values = Vec::<f32>::try_from(&a0.view([-1])).expect("a float32 CPU tensor");
    let roots: Vec<f32> = values.into_iter().map(f32::sqrt).collect();
    let r = Tensor::from_slice(&roots).view(a0.size().as_slice());
    &r + (a - &a0) / (&r * 2.0)
}

/// A norm of either kind.
#[derive(Debug)]
pub enum Norm {
    Layer(LayerNorm),
    Rms(RmsNorm),
}

impl Module for Norm {
    fn forward(&self, x: &Tensor) -> Tensor {
        match self {
            Norm::Layer(n) => n.forward(x),
            Norm::Rms(n) => n.forward(x),
        }
    }
}

/// A norm of `cfg`'s kind over `d_model`, initialised as PyTorch's are (scale one, shift
/// zero); the variables are named `weight` (and `bias`), as `nn.LayerNorm`'s.
pub fn new(vs: nn::Path, cfg: &ModelConfig) -> Norm {
    let d = cfg.d_model;
    match cfg.norm_kind {
        NormKind::Layer => Norm::Layer(super::layer_norm(vs, d)),
        NormKind::Rms => Norm::Rms(RmsNorm {
            ws: vs.var("weight", &[d], nn::Init::Const(1.0)),
        }),
    }
}
