//! The model's matrix products and its fused attention. Under the portable profile they
//! run in `kernels.cpp` and `gemm.cpp`: linear layers on the engine's own matrix product,
//! attention in one kernel of fixed order, so that no float32 product reaches MKL's or
//! oneDNN's CPU-dependent code paths. Under the native profile they are libtorch's own
//! operations. All take part in autograd.

use crate::engine::config::{AttnOptions, SoftmaxAxis};
use crate::engine::profile::{self, Profile};
use std::ffi::{c_char, c_void, CStr};
use tch::Tensor;

extern "C" {
    fn revtx_linear(x: *const c_void, w: *const c_void, b: *const c_void) -> *mut c_void;
    fn revtx_matmul(a: *const c_void, b: *const c_void) -> *mut c_void;
    fn revtx_gelu(x: *const c_void) -> *mut c_void;
    fn revtx_mlp(
        x: *const c_void,
        w1: *const c_void,
        b1: *const c_void,
        w2: *const c_void,
        b2: *const c_void,
    ) -> *mut c_void;
    fn revtx_layer_norm(
        x: *const c_void,
        w: *const c_void,
        b: *const c_void,
        eps: f64,
    ) -> *mut c_void;
    fn revtx_attention(
        qkv: *const c_void,
        heads: i64,
        scale: bool,
        causal: bool,
        over_queries: bool,
        out: *mut *mut c_void,
    ) -> i32;
    fn revtx_last_error() -> *const c_char;
    fn revtx_set_grad(param: *mut c_void, grad: *const c_void);
    fn revtx_aten_capability(buf: *mut c_char, len: usize);
    fn revtx_kernel_isa(want: *const c_char) -> *const c_char;
}

fn portable() -> bool {
    profile::current() == Profile::Portable
}

fn wrap(p: *mut c_void, what: &str) -> Tensor {
    if p.is_null() {
        // SAFETY: the shim returns a NUL-terminated thread-local string.
        let msg = unsafe { CStr::from_ptr(revtx_last_error()) };
        panic!("{what}: {}", msg.to_string_lossy());
    }
    // SAFETY: a non-null result is a heap-allocated `at::Tensor` that we now own.
    unsafe { Tensor::from_ptr(p.cast()) }
}

/// `x @ w^T + b`: x `(..., in)`, w `(out, in)`, b `(out)` → `(..., out)`.
pub fn linear(x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    if !portable() {
        return x.linear(w, Some(b));
    }
    // SAFETY: the pointers are live tch tensors for the duration of the call.
    let p = unsafe { revtx_linear(x.as_ptr().cast(), w.as_ptr().cast(), b.as_ptr().cast()) };
    wrap(p, "linear")
}

/// `a @ b` over the last two axes, with up to two matching leading axes:
/// `(..., m, k) @ (..., k, n)` → `(..., m, n)`. Float32 under the portable profile.
pub fn matmul(a: &Tensor, b: &Tensor) -> Tensor {
    if !portable() {
        return a.matmul(b);
    }
    // SAFETY: as above.
    let p = unsafe { revtx_matmul(a.as_ptr().cast(), b.as_ptr().cast()) };
    wrap(p, "matmul")
}

/// GELU, `x Φ(x)`, elementwise. Under the portable profile one pass writes the output and
/// the derivative the backward needs; erfc to a fractional error under 1.2e-7.
pub fn gelu(x: &Tensor) -> Tensor {
    if !portable() {
        return x.gelu("none");
    }
    // SAFETY: as above.
    wrap(unsafe { revtx_gelu(x.as_ptr().cast()) }, "gelu")
}

/// `linear(gelu(linear(x, w1, b1)), w2, b2)` as one node: x `(..., in)`, w1 `(hidden, in)`,
/// w2 `(out, hidden)` → `(..., out)`. The same bits as the three calls, with one pass fewer
/// over the hidden activations each way. Portable profile only.
pub fn mlp(x: &Tensor, w1: &Tensor, b1: &Tensor, w2: &Tensor, b2: &Tensor) -> Tensor {
    assert!(portable(), "the fused MLP runs under the portable profile");
    let ptr = |t: &Tensor| t.as_ptr().cast::<c_void>();
    // SAFETY: as above.
    let p = unsafe { revtx_mlp(ptr(x), ptr(w1), ptr(b1), ptr(w2), ptr(b2)) };
    wrap(p, "mlp")
}

/// Layer norm over the last axis: `(x - mean) / sqrt(var + eps) * w + b`, var biased.
pub fn layer_norm(x: &Tensor, w: &Tensor, b: &Tensor, eps: f64) -> Tensor {
    if !portable() {
        return x.layer_norm(w.size(), Some(w), Some(b), eps, false);
    }
    // SAFETY: as above.
    let p =
        unsafe { revtx_layer_norm(x.as_ptr().cast(), w.as_ptr().cast(), b.as_ptr().cast(), eps) };
    wrap(p, "layer_norm")
}

/// Whether the model runs its fused kernels (the portable profile) rather than the
/// readable libtorch code they are tested against (the native profile).
pub fn fused() -> bool {
    portable()
}

/// Attention over every head at once, straight from the qkv product: `qkv (b, t, 3d)` →
/// the output `(b, t, d)` with the heads side by side, and the weights `(b, h, t, t)`.
/// The same arithmetic as `MultiHeadAttention::reference`, in one pass; the weights are
/// not differentiable.
pub fn attention(qkv: &Tensor, heads: i64, opts: AttnOptions) -> (Tensor, Tensor) {
    let mut out = [std::ptr::null_mut::<c_void>(); 2];
    // SAFETY: `qkv` is a live tensor; on success the shim writes two owned tensors.
    let rc = unsafe {
        revtx_attention(
            qkv.as_ptr().cast(),
            heads,
            opts.scale,
            opts.causal,
            opts.softmax == SoftmaxAxis::Queries,
            out.as_mut_ptr(),
        )
    };
    if rc != 0 {
        let _ = wrap(std::ptr::null_mut(), "attention");
    }
    (wrap(out[0], "attention"), wrap(out[1], "attention"))
}

/// Makes `grad` the gradient buffer of `param`; backward passes accumulate into it.
pub fn set_grad(param: &Tensor, grad: &Tensor) {
    let mut p = param.shallow_clone();
    // SAFETY: both are live tensors; the shim assigns the gradient handle.
    unsafe { revtx_set_grad(p.as_mut_ptr().cast(), grad.as_ptr().cast()) };
}

/// The vector width of the kernels that have two, the matrix product and GELU: `"avx512"`
/// or `"avx2"`. Both compute the same bits. `Some("avx2")` holds the process to the AVX2
/// kernels, `Some("widest")` returns it to the widest this CPU has; `None` only asks.
pub fn isa(want: Option<&str>) -> &'static str {
    let want = want.map(|w| std::ffi::CString::new(w).expect("no NUL in a kernel name"));
    let ptr = want.as_ref().map_or(std::ptr::null(), |w| w.as_ptr());
    // SAFETY: `ptr` is null or a live C string; the shim returns a static string.
    let name = unsafe { CStr::from_ptr(revtx_kernel_isa(ptr)) };
    match name.to_bytes() {
        b"avx512" => "avx512",
        _ => "avx2",
    }
}

/// The kernel set ATen dispatches its CPU operations to: `DEFAULT`, `AVX2` or `AVX512`.
pub fn aten_capability() -> String {
    let mut buf = [0 as c_char; 32];
    // SAFETY: the shim writes at most `len` bytes, NUL included.
    unsafe { revtx_aten_capability(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated by the shim.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    /// Puts the calling thread in the book's floating-point mode: every book run computes
    /// with subnormal floats flushed to zero (the portable profile), so its kernels are
    /// tested so too. libtorch's worker threads take the mode of the thread that starts
    /// them, with the process's first parallel operation: the first call starts them here.
    fn book_mode() {
        static POOL: std::sync::Once = std::sync::Once::new();
        crate::engine::numerics::pin_thread(crate::engine::profile::Profile::Portable);
        POOL.call_once(|| {
            let _ = Tensor::ones([1 << 22], (Kind::Float, tch::Device::Cpu)).sum(Kind::Float);
        });
        assert!(crate::engine::numerics::flushes_subnormals());
    }

    /// What the mode changes: a product whose exact result is subnormal is zero in it, in
    /// Rust, in libtorch's kernels and in the engine's GELU (whose negative tail reaches
    /// subnormal outputs with the mode off, as the second half shows).
    #[test]
    fn the_book_mode_flushes_subnormal_results_to_zero() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        let subnormal = |v: &[f32]| {
            v.iter()
                .filter(|x| **x != 0.0 && x.abs() < f32::MIN_POSITIVE)
                .count()
        };
        let grid = || Tensor::linspace(-13.3, -12.9, 20_001, (Kind::Float, tch::Device::Cpu));
        let half = Tensor::from_slice(&[f32::MIN_POSITIVE; 64]) * 0.5;

        crate::engine::numerics::pin_thread(crate::engine::profile::Profile::Native);
        assert!(!crate::engine::numerics::flushes_subnormals());
        assert!(std::hint::black_box(f32::MIN_POSITIVE) * 0.5 != 0.0);
        let off = subnormal(&floats(&gelu(&grid())));
        assert!(
            off > 0,
            "with the mode off GELU's tail reaches no subnormal output"
        );

        book_mode();
        assert_eq!(std::hint::black_box(f32::MIN_POSITIVE) * 0.5, 0.0);
        let flushed = Tensor::from_slice(&[f32::MIN_POSITIVE; 64]) * 0.5;
        assert_eq!(subnormal(&floats(&half)), 64, "made with the mode off");
        assert_eq!(subnormal(&floats(&flushed)), 0, "libtorch's product");
        assert_eq!(floats(&flushed).iter().filter(|x| **x == 0.0).count(), 64);
        assert_eq!(
            subnormal(&floats(&gelu(&grid()))),
            0,
            "GELU in the book's mode ({off} subnormal outputs with it off)"
        );
    }

    fn close(a: &Tensor, b: &Tensor) -> bool {
        a.allclose(b, 1e-5, 1e-5, false)
    }

    /// The gradients of `sum(y * g)` with respect to `wrt` (so the gradient arriving at y
    /// is exactly g), then y itself.
    fn grads_and_output(y: &Tensor, g: &Tensor, wrt: &[&Tensor]) -> Vec<Tensor> {
        let mut v = Tensor::run_backward(&[(y * g).sum(Kind::Float)], wrt, false, false);
        v.push(y.detach());
        v
    }

    /// The fixed-order products agree with libtorch's, forward and backward, on strided
    /// (transposed, head-split) operands like attention's.
    #[test]
    fn products_match_libtorch_forward_and_backward() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(1);
        let opts = (Kind::Float, tch::Device::Cpu);
        let qkv = Tensor::randn([3, 7, 2, 3 * 8], opts); // (b, t, h, 3 d_k), split below
        let q = qkv
            .narrow(-1, 0, 8)
            .transpose(1, 2)
            .detach()
            .set_requires_grad(true);
        let k = qkv
            .narrow(-1, 8, 8)
            .transpose(1, 2)
            .detach()
            .set_requires_grad(true);
        let ours = matmul(&q, &k.transpose(-2, -1));
        let theirs = q.matmul(&k.transpose(-2, -1));
        assert!(close(&ours, &theirs));
        let g = Tensor::randn(ours.size(), opts);
        let grads = |y: &Tensor| {
            Tensor::run_backward(&[(y * &g).sum(Kind::Float)], &[&q, &k], false, false)
        };
        for (a, b) in grads(&ours).iter().zip(&grads(&theirs)) {
            assert!(close(a, b));
        }
    }

    /// The eight combinations of the attention switches.
    fn every_switch() -> impl Iterator<Item = AttnOptions> {
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
    fn fused_attention((b, t, d, h): (i64, i64, i64, i64), o: AttnOptions) -> [Tensor; 5] {
        let opts = (Kind::Float, tch::Device::Cpu);
        let qkv = (Tensor::randn([b, t, 3 * d], opts) * 2.0).set_requires_grad(true);
        let g = Tensor::randn([b, t, d], opts);
        let (y, w) = attention(&qkv, h, o);
        let dqkv = Tensor::run_backward(&[(&y * &g).sum(Kind::Float)], &[&qkv], false, false);
        [qkv, g, y, w, dqkv[0].shallow_clone()]
    }

    /// The fused kernel against `attention` run head by head in libtorch operations, for
    /// every combination of the switches: output, weights, and the gradient of qkv.
    #[test]
    fn fused_attention_matches_the_readable_function() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(3);
        let (b, t, d, h) = (3, 11, 24, 2); // d_k = 12: a whole register and a tail
        for o in every_switch() {
            let [qkv, g, y, w, dqkv] = fused_attention((b, t, d, h), o);
            let parts = qkv.split(d, -1);
            let heads = |z: &Tensor| z.view([b, t, h, d / h]).transpose(1, 2); // (b, h, t, d_k)
            let (ry, rw) = crate::engine::model::attention(
                &heads(&parts[0]),
                &heads(&parts[1]),
                &heads(&parts[2]),
                o,
            );
            let ry = ry.transpose(1, 2).reshape([b, t, d]); // (b, t, d)
            let theirs =
                Tensor::run_backward(&[(&ry * &g).sum(Kind::Float)], &[&qkv], false, false);
            assert!(close(&y, &ry), "output, switches {o:?}");
            assert!(close(&w, &rw), "weights, switches {o:?}");
            assert!(close(&dqkv, &theirs[0]), "gradient, switches {o:?}");
            if o.causal {
                assert_eq!(w.triu(1).abs().sum(Kind::Float).double_value(&[]), 0.0);
            }
        }
    }

    /// GELU against the exact function in float64 on [-6, 6], forward and derivative: at
    /// least as close as libtorch's own GELU (oneDNN's, with Abramowitz and Stegun's erf:
    /// 3.8e-7 and 2.9e-7 at worst here), and a far better relative error in the negative
    /// tail, where libtorch's is 100%. Also close to libtorch's at every point.
    #[test]
    fn gelu_is_accurate_forward_and_backward() {
        // It draws random lengths below: holding the lock keeps those draws from landing in
        // the middle of another test's seeded initialisation (it once made the causal-mask
        // test build two different models).
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        let x = Tensor::linspace(-6.0, 6.0, 240_001, (Kind::Float, tch::Device::Cpu))
            .set_requires_grad(true);
        let y = gelu(&x);
        let dy = Tensor::run_backward(&[y.sum(Kind::Float)], &[&x], false, false).remove(0);
        let xd = x.detach().to_kind(Kind::Double);
        let cdf = (&xd / 2f64.sqrt()).erf() * 0.5 + 0.5;
        let pdf = (&xd * &xd * -0.5).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let exact = &xd * &cdf;
        let worst =
            |a: &Tensor, b: &Tensor| (a.to_kind(Kind::Double) - b).abs().max().double_value(&[]);
        assert!(
            worst(&y, &exact) <= 4e-7,
            "forward off by {}",
            worst(&y, &exact)
        );
        let exact_dy = &cdf + &xd * &pdf;
        assert!(
            worst(&dy, &exact_dy) <= 3e-7,
            "derivative off by {}",
            worst(&dy, &exact_dy)
        );
        let tail = xd.lt(-3.0);
        let rel = ((y.to_kind(Kind::Double) - &exact).abs() / exact.abs())
            .masked_select(&tail)
            .max()
            .double_value(&[]);
        assert!(rel <= 1e-3, "negative tail off by {rel} relative");
        assert!(worst(&y, &x.detach().gelu("none").to_kind(Kind::Double)) <= 1e-6);
        // Lengths that leave a partial register, and the switch to the readable version.
        for n in [1, 7, 9, 17] {
            let x = Tensor::randn([n], (Kind::Float, tch::Device::Cpu));
            assert!(close(&gelu(&x), &x.gelu("none")), "length {n}");
        }
    }

    /// Layer norm against libtorch's, forward and the gradients of input, scale and shift,
    /// on widths with and without a partial register.
    #[test]
    fn layer_norm_matches_libtorch_forward_and_backward() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(4);
        let opts = (Kind::Float, tch::Device::Cpu);
        for n in [24, 12, 64] {
            let x = (Tensor::randn([3, 5, n], opts) * 3.0 + 1.0).set_requires_grad(true);
            let w = (Tensor::randn([n], opts) + 1.0).set_requires_grad(true);
            let b = Tensor::randn([n], opts).set_requires_grad(true);
            let g = Tensor::randn([3, 5, n], opts);
            let run = |y: Tensor| grads_and_output(&y, &g, &[&x, &w, &b]);
            let ours = run(layer_norm(&x, &w, &b, 1e-5));
            let theirs = run(x.layer_norm([n], Some(&w), Some(&b), 1e-5, false));
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                assert!(close(a, b), "width {n}, output {i}");
            }
        }
    }

    /// The linear layer against libtorch's, forward and backward, on 20 rows and widths
    /// that leave partial tiles and partial registers.
    #[test]
    fn linear_matches_libtorch_forward_and_backward() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(2);
        let opts = (Kind::Float, tch::Device::Cpu);
        for (inp, out) in [(16, 12), (12, 20)] {
            let x = Tensor::randn([4, 5, inp], opts).set_requires_grad(true);
            let w = Tensor::randn([out, inp], opts).set_requires_grad(true);
            let b = Tensor::randn([out], opts).set_requires_grad(true);
            let g = Tensor::randn([4, 5, out], opts);
            let run = |y: Tensor| grads_and_output(&y, &g, &[&x, &w, &b]);
            let (ours, theirs) = (run(linear(&x, &w, &b)), run(x.linear(&w, Some(&b))));
            for (a, b) in ours.iter().zip(&theirs) {
                assert!(close(a, b), "in {inp}, out {out}");
            }
        }
    }

    /// `bias + a @ b` as the chain the matrix product promises, in scalar code: each output
    /// starts at its bias and adds its products in increasing k, one fused multiply-add
    /// (one rounding) each. `a` (m, k), `b` (k, n), row-major.
    fn fma_chain(
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

    fn floats(t: &Tensor) -> Vec<f32> {
        Vec::<f32>::try_from(t.contiguous().view([-1])).expect("float32")
    }

    /// How many of two equally long lists' floats differ in any bit.
    fn differing_bits(a: &[f32], b: &[f32]) -> usize {
        a.iter()
            .zip(b)
            .filter(|(p, q)| p.to_bits() != q.to_bits())
            .count()
    }

    /// The kernel widths this CPU can run: AVX2 always, AVX-512 where it has it. Leaves the
    /// process at the widest.
    fn widths() -> Vec<&'static str> {
        match isa(Some("widest")) {
            "avx512" => vec!["avx2", "avx512"],
            _ => vec!["avx2"],
        }
    }

    fn same_bits(ours: &Tensor, chain: &[f32], what: &str) {
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

    /// Every matrix product of the linear layer (the output, the input's gradient and the
    /// weight's), in every kernel this CPU has, equals the scalar fused multiply-add chain
    /// bit for bit. The AVX2 kernel runs everywhere; the AVX-512 kernel where the CPU has it.
    /// Equal to the chain, the two are equal to each other: the same bits on every machine.
    /// Shapes: the model's (qkv of a trimmed batch, the head) and ones that leave a partial
    /// tile in each direction for both kernels (tiles of 6 x 16 and 8 x 32), with sums over
    /// more than one block of 256 products (the weight gradients over 1,088 and 300 rows).
    /// The qkv input gradient (1,088 x 192) and the forward product of 700 x 300 read a
    /// block of a larger than 512 KiB, so their tiles prefetch the next tile's rows; the
    /// latter's second block, of 44 products, is smaller and does not.
    #[test]
    fn every_gemm_kernel_computes_the_fused_multiply_add_chain_bit_for_bit() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(5);
        let opts = (Kind::Float, tch::Device::Cpu);
        let kernels = widths();
        let widest = *kernels.last().expect("AVX2 at least");
        for (rows, inp, out) in [
            (1088, 64, 192),
            (1088, 64, 12),
            (300, 45, 33),
            (7, 1, 5),
            (50, 96, 17),
            (700, 300, 40),
        ] {
            let x = Tensor::randn([rows, inp], opts);
            let w = Tensor::randn([out, inp], opts) * 0.1;
            let b = Tensor::randn([out], opts);
            let g = Tensor::randn([rows, out], opts);
            let (xs, ws, bs, gs) = (floats(&x), floats(&w), floats(&b), floats(&g));
            let wt = floats(&w.transpose(0, 1));
            let gt = floats(&g.transpose(0, 1));
            let (r, i, o) = (rows as usize, inp as usize, out as usize);
            let y_chain = fma_chain(&xs, &wt, Some(&bs), r, i, o);
            let gx_chain = fma_chain(&gs, &ws, None, r, o, i);
            let gw_chain = fma_chain(&gt, &xs, None, o, r, i);
            for k in &kernels {
                assert_eq!(isa(Some(k)), *k);
                let xv = x.detach().set_requires_grad(true);
                let wv = w.detach().set_requires_grad(true);
                let bv = b.detach().set_requires_grad(true);
                let v = grads_and_output(&linear(&xv, &wv, &bv), &g, &[&xv, &wv]);
                let at = format!("{k}, {rows} x {inp} -> {out}");
                same_bits(&v[2], &y_chain, &format!("output, {at}"));
                same_bits(&v[0], &gx_chain, &format!("input gradient, {at}"));
                same_bits(&v[1], &gw_chain, &format!("weight gradient, {at}"));
            }
        }
        assert_eq!(isa(Some("widest")), widest);
    }

    /// The fused MLP gives the bits of its three parts called one by one (linear, GELU,
    /// linear), output and every gradient, in every kernel width: its GELU in place and its
    /// product with GELU's derivative inside the matrix product change no bit. Shapes: the
    /// model's, and ones with partial tiles in both directions and sums over more than one
    /// block of 256 products (in 300, out 270).
    #[test]
    fn fused_mlp_computes_the_bits_of_its_parts() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(7);
        let opts = (Kind::Float, tch::Device::Cpu);
        let widest = *widths().last().expect("AVX2 at least");
        for (lead, inp, hidden, out) in [
            (vec![17, 64], 64, 256, 64),
            (vec![3, 7], 300, 45, 270),
            (vec![50], 13, 33, 5),
        ] {
            let x = Tensor::randn([&lead[..], &[inp]].concat(), opts);
            let w1 = Tensor::randn([hidden, inp], opts) * 0.2;
            let b1 = Tensor::randn([hidden], opts);
            let w2 = Tensor::randn([out, hidden], opts) * 0.2;
            let b2 = Tensor::randn([out], opts);
            let g = Tensor::randn([&lead[..], &[out]].concat(), opts);
            for k in widths() {
                assert_eq!(isa(Some(k)), k);
                let run = |fused: bool| {
                    let leaves =
                        [&x, &w1, &b1, &w2, &b2].map(|t| t.detach().set_requires_grad(true));
                    let [x, w1, b1, w2, b2] = &leaves;
                    let y = if fused {
                        mlp(x, w1, b1, w2, b2)
                    } else {
                        linear(&gelu(&linear(x, w1, b1)), w2, b2)
                    };
                    grads_and_output(&y, &g, &[x, w1, b1, w2, b2])
                };
                let (ours, parts) = (run(true), run(false));
                let names = ["x's gradient", "w1's", "b1's", "w2's", "b2's", "output"];
                for ((a, b), what) in ours.iter().zip(&parts).zip(names) {
                    assert_eq!(a.size(), b.size(), "{what}");
                    let bad = differing_bits(&floats(a), &floats(b));
                    assert_eq!(bad, 0, "{what}, {k}, {lead:?} x {inp} -> {hidden} -> {out}");
                }
            }
        }
        assert_eq!(isa(Some("widest")), widest);
    }

    /// The fused attention's order of operations, written out one float at a time (see
    /// `kernels.cpp`): the kernel must give these bits, whatever it does to go faster.
    mod attention_order {
        /// Eight lanes' sum: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)).
        fn tree(lane: &[f32; 8]) -> f32 {
            ((lane[0] + lane[4]) + (lane[2] + lane[6]))
                + ((lane[1] + lane[5]) + (lane[3] + lane[7]))
        }

        /// `a · b`: lane l sums coordinates l, l + 8, ... in order, the eight lanes meet in
        /// the tree ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), then the tail one by one.
        pub fn dot(a: &[f32], b: &[f32]) -> f32 {
            let whole = a.len() / 8 * 8;
            let mut lane = [0f32; 8];
            for p in 0..whole {
                lane[p % 8] += a[p] * b[p];
            }
            let mut s = tree(&lane);
            for p in whole..a.len() {
                s += a[p] * b[p];
            }
            s
        }

        /// e^x: Cody-Waite reduction by ln 2, a degree-5 polynomial, zero below -87.
        pub fn exp(x: f32) -> f32 {
            if x < -87.0 {
                return 0.0;
            }
            let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
            let mut r = x - n * 0.693_359_4;
            r -= n * -2.121_944_4e-4;
            let z = r * r;
            let mut p = 1.987_569_1e-4f32;
            for c in [
                1.398_199_9e-3,
                8.333_452e-3,
                4.166_579_6e-2,
                0.166_666_65,
                0.5,
            ] {
                p = p * r + c;
            }
            let y = p * z + r + 1.0;
            y * f32::from_bits(((n as i32 + 127) << 23) as u32)
        }

        /// Softmax of a row: the maximum, the exponentials, their sum in eight lanes (lane
        /// l adds entries l, l + 8, ...) meeting in `dot`'s tree, one division each.
        pub fn softmax_row(x: &mut [f32]) {
            let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut lane = [0f32; 8];
            for (p, v) in x.iter_mut().enumerate() {
                *v = exp(*v - m);
                lane[p % 8] += *v;
            }
            let sum = tree(&lane);
            for v in x.iter_mut() {
                *v /= sum;
            }
        }

        /// Softmax over queries (the fault): the sum in increasing order.
        pub fn softmax_plain(x: &mut [f32]) {
            let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for v in x.iter_mut() {
                *v = exp(*v - m);
            }
            let sum = x.iter().fold(0f32, |s, v| s + v);
            for v in x.iter_mut() {
                *v /= sum;
            }
        }

        /// `sum over r in rows of coef(r) * row(r)`, in increasing r from zero.
        pub fn weighted(
            rows: impl Iterator<Item = usize>,
            coef: impl Fn(usize) -> f32,
            row: impl Fn(usize) -> Vec<f32>,
            n: usize,
        ) -> Vec<f32> {
            let mut out = vec![0f32; n];
            for r in rows {
                let (c, x) = (coef(r), row(r));
                for (o, v) in out.iter_mut().zip(&x) {
                    *o += c * v;
                }
            }
            out
        }
    }

    /// Output, weights and the gradient of qkv of one (b, t, 3d) input, one head at a time
    /// in `attention_order`'s operations: the kernel's documented order, float by float.
    fn attention_in_order(
        qkv: &[f32],
        dy: &[f32],
        (b, t, d, h): (usize, usize, usize, usize),
        o: AttnOptions,
    ) -> [Vec<f32>; 3] {
        use attention_order::*;
        let (dk, rs) = (d / h, 3 * d);
        let root = (dk as f32).sqrt();
        let seen = |i: usize| if o.causal { i + 1 } else { t };
        let first = |j: usize| if o.causal { j } else { 0 };
        let over_queries = o.softmax == SoftmaxAxis::Queries;
        let (mut y, mut w) = (vec![0f32; b * t * d], vec![0f32; b * h * t * t]);
        let mut dqkv = vec![0f32; b * t * rs];
        for z in 0..b {
            for hh in 0..h {
                // row r of q (part 0), k (1), v (2) or dy (3) of this head
                let row = |part: usize, r: usize| -> Vec<f32> {
                    let at = match part {
                        3 => (z * t + r) * d + hh * dk,
                        _ => (z * t + r) * rs + part * d + hh * dk,
                    };
                    (if part == 3 { dy } else { qkv })[at..at + dk].to_vec()
                };
                let mut wz = vec![0f32; t * t]; // (queries, keys)
                for i in 0..t {
                    for j in 0..seen(i) {
                        let s = dot(&row(0, i), &row(1, j));
                        wz[i * t + j] = if o.scale { s / root } else { s };
                    }
                    if !over_queries {
                        softmax_row(&mut wz[i * t..i * t + seen(i)]);
                    }
                }
                if over_queries {
                    for j in 0..t {
                        let mut col: Vec<f32> = (first(j)..t).map(|i| wz[i * t + j]).collect();
                        softmax_plain(&mut col);
                        for (i, v) in (first(j)..t).zip(col) {
                            wz[i * t + j] = v;
                        }
                    }
                }
                for i in 0..t {
                    let yi = weighted(0..seen(i), |r| wz[i * t + r], |r| row(2, r), dk);
                    let at = (z * t + i) * d + hh * dk;
                    y[at..at + dk].copy_from_slice(&yi);
                }
                // The backward: dv, then dw, through the softmax and the scale, dq and dk.
                let mut put = |part: usize, r: usize, v: Vec<f32>| {
                    let at = (z * t + r) * rs + part * d + hh * dk;
                    dqkv[at..at + dk].copy_from_slice(&v);
                };
                for j in 0..t {
                    put(
                        2,
                        j,
                        weighted(first(j)..t, |i| wz[i * t + j], |i| row(3, i), dk),
                    );
                }
                let mut ds = vec![0f32; t * t];
                for i in 0..t {
                    for j in 0..seen(i) {
                        ds[i * t + j] = dot(&row(3, i), &row(2, j));
                    }
                }
                // Each softmax group's sum of w dw: a query's row, or a key's column (the fault).
                let group_sum = |u: usize| {
                    if over_queries {
                        (first(u)..t).fold(0f32, |r, i| r + wz[i * t + u] * ds[i * t + u])
                    } else {
                        (0..seen(u)).fold(0f32, |r, j| r + wz[u * t + j] * ds[u * t + j])
                    }
                };
                let rsum: Vec<f32> = (0..t).map(group_sum).collect();
                for i in 0..t {
                    for j in 0..seen(i) {
                        let r = rsum[if over_queries { j } else { i }];
                        ds[i * t + j] = wz[i * t + j] * (ds[i * t + j] - r);
                        if o.scale {
                            ds[i * t + j] /= root;
                        }
                    }
                }
                for i in 0..t {
                    put(
                        0,
                        i,
                        weighted(0..seen(i), |j| ds[i * t + j], |j| row(1, j), dk),
                    );
                }
                for j in 0..t {
                    put(
                        1,
                        j,
                        weighted(first(j)..t, |i| ds[i * t + j], |i| row(0, i), dk),
                    );
                }
                w[(z * h + hh) * t * t..][..t * t].copy_from_slice(&wz);
            }
        }
        [y, w, dqkv]
    }

    /// The fused attention computes `attention_in_order` bit for bit: output, weights and
    /// the gradient, for every combination of the switches. Shapes: the chapter's head
    /// width (32) over an odd number of tokens, a width with a tail of four (12), and fewer
    /// tokens than a group of eight keys.
    #[test]
    fn fused_attention_computes_its_documented_order_bit_for_bit() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(7);
        for (b, t, d, h) in [(2, 13, 64, 2), (2, 11, 24, 2), (1, 5, 16, 2)] {
            for o in every_switch() {
                let [qkv, g, y, w, dqkv] = fused_attention((b, t, d, h), o);
                let shape = (b as usize, t as usize, d as usize, h as usize);
                let want = attention_in_order(&floats(&qkv), &floats(&g), shape, o);
                let at = format!("{shape:?}, switches {o:?}");
                same_bits(&y, &want[0], &format!("output, {at}"));
                same_bits(&w, &want[1], &format!("weights, {at}"));
                same_bits(&dqkv, &want[2], &format!("gradient, {at}"));
            }
        }
    }

    /// GELU in sixteen lanes gives GELU in eight lanes bit for bit, output and derivative:
    /// on a grid over [-20, 20] (the whole curve, both tails and the exponential's cut at
    /// -87), on random values, on lengths that leave a partial register in either width,
    /// and on zeros, infinities and the largest floats. Where the CPU has no AVX-512 the
    /// two runs are the same kernel, and this test compares it with itself.
    #[test]
    fn gelu_in_either_width_computes_the_same_bits() {
        let _g = crate::engine::model::TORCH_RNG.lock().unwrap();
        book_mode();
        tch::manual_seed(6);
        let opts = (Kind::Float, tch::Device::Cpu);
        let widest = *widths().last().expect("AVX2 at least");
        let special = Tensor::from_slice(&[
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            1e-30,
            -1e-30,
        ]);
        let inputs = [
            Tensor::linspace(-20.0, 20.0, 400_001, opts),
            Tensor::randn([1088, 256], opts) * 3.0,
            Tensor::randn([37], opts),
            Tensor::randn([5], opts),
            special,
        ];
        for x in &inputs {
            let run = |which: &str| {
                assert_eq!(
                    isa(Some(which)),
                    if which == "avx2" { "avx2" } else { widest }
                );
                let xv = x.detach().set_requires_grad(true);
                let y = gelu(&xv);
                let dy =
                    Tensor::run_backward(&[y.sum(Kind::Float)], &[&xv], false, false).remove(0);
                (floats(&y), floats(&dy))
            };
            let (narrow, wide) = (run("avx2"), run("widest"));
            assert_eq!(
                differing_bits(&narrow.0, &wide.0),
                0,
                "outputs of {} values",
                x.numel()
            );
            assert_eq!(
                differing_bits(&narrow.1, &wide.1),
                0,
                "derivatives of {} values",
                x.numel()
            );
        }
        assert_eq!(isa(Some("widest")), widest);
    }
}
