//! Scaled dot-product attention as one standalone function, with a switch for each fault
//! the chapter studies. The chapter includes this file's `attention` anchor verbatim.

use super::kernels::matmul;
pub use crate::engine::config::{AttnOptions, SoftmaxAxis};
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rounded(t: &Tensor, places: i32) -> Vec<f64> {
        let p = 10f64.powi(places);
        Vec::<f64>::try_from(t.to_kind(Kind::Double).flatten(0, -1))
            .unwrap()
            .iter()
            .map(|x| (x * p).round() / p)
            .collect()
    }

    /// Section 1.2's worked example: query (1, 2) over four 2-d keys and values.
    #[test]
    fn worked_example() {
        let q = Tensor::from_slice(&[1.0f32, 2.0]).view([1, 2]);
        let k = Tensor::from_slice(&[0.0f32, 0.0, 1.0, 2.0, 1.0, 0.0, 0.0, 1.0]).view([4, 2]);
        let v = Tensor::from_slice(&[0.0f32, 0.0, 2.0, 1.0, 0.0, 1.0, 1.0, 0.0]).view([4, 2]);
        let opts = AttnOptions {
            causal: false,
            ..Default::default()
        };
        let (out, w) = attention(&q, &k, &v, opts);
        assert_eq!(rounded(&w, 2), vec![0.02, 0.83, 0.05, 0.10]);
        assert_eq!(rounded(&out, 2), vec![1.75, 0.88]);
    }

    #[test]
    fn rows_sum_to_one_and_mask_is_exact_zero() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        tch::manual_seed(5);
        let q = Tensor::randn([2, 3, 7, 8], (Kind::Float, tch::Device::Cpu));
        let (_, w) = attention(&q, &q, &q, AttnOptions::default());
        let sums = w.sum_dim_intlist(-1, false, Kind::Float);
        assert!(sums.allclose(&Tensor::ones_like(&sums), 1e-6, 1e-6, false));
        let above = w.triu(1).abs().sum(Kind::Float).double_value(&[]);
        assert_eq!(above, 0.0);
    }
}
