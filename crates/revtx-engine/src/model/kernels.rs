//! The model's matrix products and its fused attention. Under the portable profile they
//! run in the C++ kernels of `kernels/` (see `kernels/kernels.h`): linear layers on the engine's own matrix product,
//! attention in one kernel of fixed order, so that no float32 product reaches MKL's or
//! oneDNN's CPU-dependent code paths. Under the native profile they are libtorch's own
//! operations. All take part in autograd.

use crate::config::{Activation, AttnOptions, SoftmaxAxis};
use crate::profile::{Isa, Profile};
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
        opts: *const FfiAttention,
        out: *mut *mut c_void,
    ) -> i32;
    fn revtx_last_error() -> *const c_char;
    fn revtx_set_grad(param: *mut c_void, grad: *const c_void);
    fn revtx_aten_capability(buf: *mut c_char, len: usize);
    fn revtx_kernel_isa(want: *const c_char) -> *const c_char;
}

/// The attention's switches as they cross to C++: `AttnOpts` in `kernels/attention.h`,
/// field for field. The node saves it whole for the backward.
#[repr(C)]
struct FfiAttention {
    scale: bool,
    causal: bool,
    over_queries: bool,
}

impl From<AttnOptions> for FfiAttention {
    fn from(o: AttnOptions) -> Self {
        FfiAttention {
            scale: o.scale,
            causal: o.causal,
            over_queries: o.softmax == SoftmaxAxis::Queries,
        }
    }
}

fn portable() -> bool {
    crate::numerics::current() == Profile::Portable
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
/// the derivative the backward needs; erfc to an absolute error under 2.2e-8 (`kernels/gelu.cpp`).
pub fn gelu(x: &Tensor) -> Tensor {
    if !portable() {
        return x.gelu("none");
    }
    // SAFETY: as above.
    wrap(unsafe { revtx_gelu(x.as_ptr().cast()) }, "gelu")
}

/// The MLP's nonlinearity `a` of `x`, elementwise (see each function).
pub fn activation(a: Activation, x: &Tensor) -> Tensor {
    match a {
        Activation::Gelu => gelu(x),
        Activation::Relu => relu(x),
    }
}

/// ReLU, `max(x, 0)`, elementwise, as a selection and nothing else: `x` where `x > 0`, else
/// `+0` (so `-0` and every negative give `+0`, as libtorch's `relu` does). Its gradient,
/// autograd's of the selection, is the incoming gradient where `x > 0` and `+0` elsewhere
/// (where libtorch's threshold backward gives `+0` too). No arithmetic, so no rounding and
/// the same bits on every machine and vector width.
pub fn relu(x: &Tensor) -> Tensor {
    x.where_self(&x.gt(0.0), &x.zeros_like())
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
    let opts = FfiAttention::from(opts);
    // SAFETY: `qkv` and `opts` are live for the call; on success the shim writes two owned
    // tensors.
    let rc = unsafe {
        revtx_attention(
            qkv.as_ptr().cast(),
            heads,
            &raw const opts,
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

/// Moves this process to the kernels of width `want` (`None`: the widest this CPU has;
/// AVX-512 only where the CPU has it) and returns the width now in use. Both widths compute
/// the same bits; the tests and `bench --isa avx2` hold a process to AVX2.
pub fn use_isa(want: Option<Isa>) -> Isa {
    let name = want.map_or("widest", Isa::as_str);
    let want = std::ffi::CString::new(name).expect("no NUL in a kernel name");
    // SAFETY: `want` is a live C string; the shim returns a static string.
    parse_isa(unsafe { CStr::from_ptr(revtx_kernel_isa(want.as_ptr())) })
}

/// The width of the kernels that have two, as this process runs them now.
pub fn isa() -> Isa {
    // SAFETY: null asks without changing anything; the shim returns a static string.
    parse_isa(unsafe { CStr::from_ptr(revtx_kernel_isa(std::ptr::null())) })
}

fn parse_isa(name: &CStr) -> Isa {
    match name.to_bytes() {
        b"avx512" => Isa::Avx512,
        _ => Isa::Avx2,
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
