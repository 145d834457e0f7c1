//! Scaled dot-product attention as one standalone function, with a switch for each fault
//! the chapter studies. The chapter includes this file's `attention` anchor verbatim.

use super::kernels::matmul;
pub use crate::config::{AttnOptions, SoftmaxAxis};
use tch::{Kind, Tensor};

// ANCHOR: attention
/// Attention over the last two axes of `q`, `k`, `v`, each shaped `(..., tokens, d_k)`.
/// Returns the output `(..., tokens, d_k)` and the weights `(..., queries, keys)`.
pub fn attention(q: &Tensor, k: &Tensor, v: &Tensor, opts: AttnOptions) -> (Tensor, Tensor) {
    let d_k = *q.size().last().unwrap() as f64;
    let mut scores = matmul(q, &k.transpose(-2, -1)); // (..., queries, keys)
    if opts.scale {
        scores /= d_k.sqrt();
    }
    if opts.causal {
        let t = scores.size()[scores.dim() - 1];
        // true above the diagonal: key j comes after query i
        let later = Tensor::ones([t, t], (Kind::Bool, q.device())).triu(1);
        scores = scores.masked_fill(&later, f64::NEG_INFINITY); // before the softmax
    }
    let axis = match opts.softmax {
        SoftmaxAxis::Keys => -1,    // each query's weights sum to one
        SoftmaxAxis::Queries => -2, // the fault: each key's weights sum to one
    };
    let weights = scores.softmax(axis, scores.kind());
    (matmul(&weights, v), weights)
}
// ANCHOR_END: attention

/// `attention` with `bias` added to the scores after the division and before the mask:
/// ALiBi's linear biases, `(heads, tokens, tokens)` against scores `(batch, heads, tokens,
/// tokens)`. The same operations otherwise, one by one (there is no fused kernel for it).
pub fn biased_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    bias: &Tensor,
    opts: AttnOptions,
) -> (Tensor, Tensor) {
    let d_k = *q.size().last().unwrap() as f64;
    let mut scores = matmul(q, &k.transpose(-2, -1));
    if opts.scale {
        scores /= d_k.sqrt();
    }
    scores += bias;
    if opts.causal {
        let t = scores.size()[scores.dim() - 1];
        let later = Tensor::ones([t, t], (Kind::Bool, q.device())).triu(1);
        scores = scores.masked_fill(&later, f64::NEG_INFINITY);
    }
    let axis = match opts.softmax {
        SoftmaxAxis::Keys => -1,
        SoftmaxAxis::Queries => -2,
    };
    let weights = scores.softmax(axis, scores.kind());
    (matmul(&weights, v), weights)
}
