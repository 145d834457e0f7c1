//! The chapter's two small probes, each a run kind of its own: section 1.2's worked
//! example through the real `attention`, and section 1.4's variance of dot products.

use crate::model::{attention, kernels, AttnOptions, TORCH_RNG};
use crate::result::{DotVariance, Sharpening, WorkedExample};
use tch::{Kind, Tensor};

/// Section 1.2: the query (1, 2) against four 2-d keys, through `attention`.
pub fn worked_example() -> WorkedExample {
    let query = vec![1.0, 2.0];
    let keys = vec![
        vec![0.0, 0.0],
        vec![1.0, 2.0],
        vec![1.0, 0.0],
        vec![0.0, 1.0],
    ];
    let values = vec![
        vec![0.0, 0.0],
        vec![2.0, 1.0],
        vec![0.0, 1.0],
        vec![1.0, 0.0],
    ];
    let t = |rows: &[Vec<f64>]| {
        let flat: Vec<f32> = rows.concat().iter().map(|&x| x as f32).collect();
        Tensor::from_slice(&flat).view([rows.len() as i64, 2])
    };
    let (q, k, v) = (t(std::slice::from_ref(&query)), t(&keys), t(&values));
    let opts = AttnOptions {
        causal: false,
        ..Default::default()
    };
    let (out, w) = attention(&q, &k, &v, opts);
    let sqrt_d = 2f64.sqrt();
    let scores = list(&(kernels::matmul(&q, &k.transpose(0, 1)) / sqrt_d));
    // Without the division, scores grow like sqrt(d_k): the same example at d_k = 4, 16,
    // 64, 256 behaves as if its scores were multiplied by 2, 4, 8, 16.
    let sharpening = [1i64, 4, 16, 64, 256]
        .iter()
        .map(|&d_k| {
            let factor = (d_k as f64).sqrt();
            let (_, w) = attention(&(&q * factor), &k, &v, opts);
            let weights = list(&w);
            Sharpening {
                d_k,
                factor,
                max_weight: weights.iter().copied().fold(0.0, f64::max),
                entropy: -weights
                    .iter()
                    .filter(|&&p| p > 0.0)
                    .map(|p| p * p.ln())
                    .sum::<f64>(),
                weights,
            }
        })
        .collect();
    WorkedExample {
        scores,
        weights: list(&w),
        output: list(&out),
        query,
        keys,
        values,
        sqrt_d,
        sharpening,
    }
}

fn list(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(t.to_kind(Kind::Double).view([-1])).unwrap_or_default()
}

/// Section 1.4: sample variance of q·k for random unit-variance vectors, per width.
pub fn dot_variance(dims: &[i64], samples: i64, seed: u64) -> Vec<DotVariance> {
    let _guard = TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    tch::manual_seed(seed as i64);
    dims.iter()
        .map(|&dim| {
            let opts = (Kind::Double, tch::Device::Cpu);
            let q = Tensor::randn([samples, dim], opts);
            let k = Tensor::randn([samples, dim], opts);
            let dots = (q * k).sum_dim_intlist([1i64].as_slice(), false, Kind::Double); // (samples,)
            let variance = dots.var(true).double_value(&[]);
            let sqrt_dim = (dim as f64).sqrt();
            DotVariance {
                dim,
                samples,
                variance,
                scaled_variance: variance / (dim as f64),
                sqrt_dim,
            }
        })
        .collect()
}
