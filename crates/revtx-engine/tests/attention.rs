//! Tests of `src/model/attention.rs`.

use revtx_engine::config::AttnOptions;
use revtx_engine::model::attention::*;
use tch::{Kind, Tensor};

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
    let _g = revtx_engine::model::TORCH_RNG.lock().unwrap();
    tch::manual_seed(5);
    let q = Tensor::randn([2, 3, 7, 8], (Kind::Float, tch::Device::Cpu));
    let (_, w) = attention(&q, &q, &q, AttnOptions::default());
    let sums = w.sum_dim_intlist(-1, false, Kind::Float);
    assert!(sums.allclose(&Tensor::ones_like(&sums), 1e-6, 1e-6, false));
    let above = w.triu(1).abs().sum(Kind::Float).double_value(&[]);
    assert_eq!(above, 0.0);
}
