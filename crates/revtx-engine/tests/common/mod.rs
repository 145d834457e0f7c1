//! Helpers the kernel tests share: the book's floating-point mode, products written
//! out as chains of scalar operations, and bitwise comparison.
#![allow(dead_code)]

use revtx_engine::config::{AttnOptions, SoftmaxAxis};
use revtx_engine::model::kernels::*;
use revtx_engine::profile::Isa;
use tch::Kind;
use tch::Tensor;

/// Puts the calling thread in the book's floating-point mode: every book run computes
/// with subnormal floats flushed to zero (the portable profile), so its kernels are
/// tested so too. libtorch's worker threads take the mode of the thread that starts
/// them, with the process's first parallel operation: the first call starts them here.
pub fn book_mode() {
    static POOL: std::sync::Once = std::sync::Once::new();
    revtx_engine::numerics::pin_thread(revtx_engine::profile::Profile::Portable);
    POOL.call_once(|| {
        let _ = Tensor::ones([1 << 22], (Kind::Float, tch::Device::Cpu)).sum(Kind::Float);
    });
    assert!(revtx_engine::numerics::flushes_subnormals());
}

pub fn close(a: &Tensor, b: &Tensor) -> bool {
    a.allclose(b, 1e-5, 1e-5, false)
}

/// The gradients of `sum(y * g)` with respect to `wrt` (so the gradient arriving at y
/// is exactly g), then y itself.
pub fn grads_and_output(y: &Tensor, g: &Tensor, wrt: &[&Tensor]) -> Vec<Tensor> {
    let mut v = Tensor::run_backward(&[(y * g).sum(Kind::Float)], wrt, false, false);
    v.push(y.detach());
    v
}

/// The eight combinations of the attention switches.
pub fn every_switch() -> impl Iterator<Item = AttnOptions> {
    (0..8).map(|bits| AttnOptions {
        scale: bits & 1 != 0,
        causal: bits & 2 != 0,
        softmax: if bits & 4 != 0 {
            SoftmaxAxis::Queries
        } else {
            SoftmaxAxis::Keys
        },
    })
}

/// The fused kernel on a random qkv `(b, t, 3d)` with `h` heads: qkv, a random g
/// `(b, t, d)`, the output y, the weights, and the gradient of `sum(y * g)` for qkv.
pub fn fused_attention((b, t, d, h): (i64, i64, i64, i64), o: AttnOptions) -> [Tensor; 5] {
    let opts = (Kind::Float, tch::Device::Cpu);
    let qkv = (Tensor::randn([b, t, 3 * d], opts) * 2.0).set_requires_grad(true);
    let g = Tensor::randn([b, t, d], opts);
    let (y, w) = attention(&qkv, h, o);
    let dqkv = Tensor::run_backward(&[(&y * &g).sum(Kind::Float)], &[&qkv], false, false);
    [qkv, g, y, w, dqkv[0].shallow_clone()]
}

/// `bias + a @ b` as the chain the matrix product promises, in scalar code: each output
/// starts at its bias and adds its products in increasing k, one fused multiply-add
/// (one rounding) each. `a` (m, k), `b` (k, n), row-major.
pub fn fma_chain(
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = bias.map_or(0.0, |b| b[j]);
            for p in 0..k {
                acc = a[i * k + p].mul_add(b[p * n + j], acc);
            }
            c[i * n + j] = acc;
        }
    }
    c
}

pub fn floats(t: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.contiguous().view([-1])).expect("float32")
}

/// How many of two equally long lists' floats differ in any bit.
pub fn differing_bits(a: &[f32], b: &[f32]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(p, q)| p.to_bits() != q.to_bits())
        .count()
}

/// The kernel widths this CPU can run: AVX2 always, AVX-512 where it has it. Leaves the
/// process at the widest.
pub fn widths() -> Vec<Isa> {
    match use_isa(None) {
        Isa::Avx512 => vec![Isa::Avx2, Isa::Avx512],
        Isa::Avx2 => vec![Isa::Avx2],
    }
}

pub fn same_bits(ours: &Tensor, chain: &[f32], what: &str) {
    let ours = floats(ours);
    assert_eq!(ours.len(), chain.len(), "{what}: length");
    let bad = differing_bits(&ours, chain);
    assert_eq!(
        bad,
        0,
        "{what}: {bad} of {} outputs differ from the chain",
        ours.len()
    );
}
