//! The norms a block can use (`NormKind`): the chapter's layer norm (its kernel is
//! `kernels::layer_norm`) or an RMS norm, composed of ATen's elementwise operations and
//! one mean over the last axis, which the portable profile pins to AVX2 on every machine.

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
        let mean_square = x.square().mean_dim([-1i64].as_slice(), true, Kind::Float);
        x / (mean_square + RMS_EPS).sqrt() * &self.ws
    }
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
