//! Entering a numeric profile, and the numerics fingerprint: digests of the operations a
//! training step uses, on fixed inputs, and of a few real training steps. Two machines
//! with the same fingerprint compute the same bits; the book records the fingerprint of
//! the machine that blessed it, and the compiler compares before it trains anything.

use crate::experiments::RunConfig;
use crate::model::{self, kernels};
use crate::profile::{Fingerprint, Platform, Profile};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use tch::{nn, Kind, Tensor};

static NATIVE: AtomicBool = AtomicBool::new(false);

/// The profile this process runs under (see `enter`); portable unless entered.
pub fn current() -> Profile {
    if NATIVE.load(Ordering::Relaxed) {
        Profile::Native
    } else {
        Profile::Portable
    }
}

fn set_current(p: Profile) {
    NATIVE.store(p == Profile::Native, Ordering::Relaxed);
}

extern "C" {
    /// MKL's `mkl_cbwr_get`: with option 1 (the branch), 1 = off, 2 = AUTO, 3 = COMPATIBLE.
    fn mkl_serv_cbwr_get(option: i32) -> i32;
}

/// Enters `profile` for this process: sets its environment, then checks that libtorch
/// took it. Call before anything else touches libtorch.
pub fn enter(profile: Profile) -> Result<(), String> {
    keep_freed_memory();
    for (k, v) in profile.env() {
        std::env::set_var(k, v);
    }
    set_current(profile);
    // Before libtorch starts a thread: new threads inherit the floating-point state.
    pin_thread(profile);
    if profile != Profile::Portable {
        return Ok(());
    }
    let capability = kernels::aten_capability();
    let branch = mkl_branch();
    if !flushes_subnormals() {
        return Err("the portable profile flushes subnormal floats to zero, but this thread's MXCSR does not (something reset it)".into());
    }
    if capability != "AVX2" || branch != "COMPATIBLE" {
        return Err(format!(
            "libtorch did not take the portable profile: ATen dispatches to {capability} (want AVX2), \
             MKL runs its {branch} branch (want COMPATIBLE); {}",
            Platform::this()
                .unsupported(profile)
                .unwrap_or_else(|| "was libtorch used before the profile was set?".into())
        ));
    }
    Ok(())
}

/// Enters `profile` but runs MKL in `branch`, for the proof that nothing passes through
/// MKL: the fingerprint must not change with the branch.
pub fn enter_with_mkl_branch(profile: Profile, branch: &str) -> Result<(), String> {
    keep_freed_memory();
    for (k, v) in profile.env() {
        std::env::set_var(k, if *k == "MKL_CBWR" { branch } else { v });
    }
    set_current(profile);
    Ok(())
}

/// MXCSR's flush-to-zero (bit 15: subnormal results become zero) and denormals-are-zero
/// (bit 6: subnormal inputs read as zero) bits.
#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 0x8040;

#[cfg(target_arch = "x86_64")]
fn mxcsr() -> u32 {
    let mut csr = 0u32;
    // SAFETY: stores the SSE control register into a local.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &raw mut csr, options(nostack, preserves_flags));
    }
    csr
}

/// Sets the calling thread's handling of subnormal floats to `profile`'s. Every vector
/// instruction reads it (ATen's kernels, the engine's own, oneDNN's JIT code), and threads
/// started afterwards inherit it. `enter` and every run call it.
pub fn pin_thread(profile: Profile) {
    #[cfg(target_arch = "x86_64")]
    {
        let old = mxcsr();
        let csr = if profile.flushes_subnormals() {
            old | FTZ_DAZ
        } else {
            old & !FTZ_DAZ
        };
        // SAFETY: loads the SSE control register with only the FTZ and DAZ bits changed.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &raw const csr, options(nostack, readonly, preserves_flags));
        }
    }
}

/// Whether the calling thread flushes subnormal floats to zero.
pub fn flushes_subnormals() -> bool {
    #[cfg(target_arch = "x86_64")]
    return mxcsr() & FTZ_DAZ == FTZ_DAZ;
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// A training step allocates and frees the same few hundred tensors every time. glibc
/// would hand the large ones back to the kernel and fault them in again on the next step
/// (four hundred thousand page faults in 300 steps); keeping freed memory in the heap
/// makes a step about a tenth faster. Changes no result. (The engine binary replaces
/// glibc's allocator with mimalloc, where this is moot; it still serves the tests.)
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only adjusts the allocator's thresholds.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, 256 << 20);
    }
}

/// The branch MKL runs: `off`, `AUTO`, `COMPATIBLE`, or a number.
pub fn mkl_branch() -> String {
    // SAFETY: a plain query of MKL's global setting.
    match unsafe { mkl_serv_cbwr_get(1) } {
        1 => "off".into(),
        2 => "AUTO".into(),
        3 => "COMPATIBLE".into(),
        n => n.to_string(),
    }
}

/// Deterministic float32 values from integer arithmetic only (no RNG, no libm).
fn fixed(shape: &[i64], salt: i64) -> Tensor {
    let n: i64 = shape.iter().product();
    let i = Tensor::arange(n, (Kind::Int64, tch::Device::Cpu));
    let v = (i * 2_654_435_761i64 + salt * 40_503)
        .remainder(65_521)
        .to_kind(Kind::Float);
    (v / 65_521.0 - 0.5).view(shape)
}

/// blake3 of a tensor's float32 bits, 16 hex digits.
pub fn digest(t: &Tensor) -> String {
    let t = t.detach().to_kind(Kind::Float).contiguous().view([-1]);
    let v: Vec<f32> = Vec::<f32>::try_from(&t).unwrap_or_default();
    let mut h = blake3::Hasher::new();
    for x in v {
        h.update(&x.to_bits().to_le_bytes());
    }
    h.finalize().to_hex()[..16].to_string()
}

/// Layer norm and GELU as the model runs them, forward and backward, into `d`.
fn norm_and_gelu(d: &mut BTreeMap<String, String>) {
    {
        let x = (fixed(&[1088, 64], 8) * 3.0).set_requires_grad(true);
        let ln = model::LayerNorm {
            ws: (fixed(&[64], 14) + 1.0).set_requires_grad(true),
            bs: fixed(&[64], 15).set_requires_grad(true),
        };
        let y = x.apply(&ln);
        (&y * fixed(&[1088, 64], 16)).sum(Kind::Float).backward();
        d.insert("layer_norm".into(), digest(&y));
        let grads = [x.grad().view([-1]), ln.ws.grad(), ln.bs.grad()];
        d.insert("layer_norm_grad".into(), digest(&Tensor::cat(&grads, 0)));
    }
    {
        let x = (fixed(&[1088, 256], 9) * 4.0).set_requires_grad(true);
        let y = kernels::gelu(&x);
        (&y * fixed(&[1088, 256], 17)).sum(Kind::Float).backward();
        d.insert("gelu".into(), digest(&y));
        d.insert("gelu_grad".into(), digest(&x.grad()));
    }
}

/// Subnormal floats into and out of ATen, the linear layer and the engine's GELU: all zero
/// when the thread flushes them, so a thread that does not gives another digest.
fn subnormals(d: &mut BTreeMap<String, String>) {
    // The 4,095 positive float32 subnormals whose bits are multiples of 2^11, then the
    // smallest normal float (bits 2^23): 4,096 values.
    let bits: Vec<f32> = (1..=4096u32).map(|i| f32::from_bits(i << 11)).collect();
    let tiny = Tensor::from_slice(&bits).view([64, 64]);
    let w = fixed(&[32, 64], 19) * 2f64.powi(100);
    let parts = [
        (&tiny * 2f64.powi(60)).view([-1]),
        tiny.apply(&model::Linear::from_parts(w, fixed(&[32], 20) * 1e-30))
            .view([-1]),
        // GELU(x) for x below -13 is a subnormal.
        kernels::gelu(&(fixed(&[64, 64], 21) * 2.0 - 13.5)).view([-1]),
    ];
    d.insert("subnormals".into(), digest(&Tensor::cat(&parts, 0)));
}

/// The operations of the run keys beyond the chapter's: the fixed position tables (their
/// sines, cosines and exponentials are `trig`'s), rotary positions, ReLU, RMS norm and
/// ALiBi's biased attention, forward and backward; Adam, SGD with momentum, and the
/// gradient norm with clipping.
fn vocabulary(d: &mut BTreeMap<String, String>) {
    use crate::optim::{Optim, Rule};
    d.insert(
        "sinusoidal".into(),
        digest(&model::position::sinusoidal_table(25, 64)),
    );
    {
        let qkv = (fixed(&[64, 17, 192], 22) * 4.0).set_requires_grad(true);
        let y = model::position::Rope::new(25, 32).rotate_qkv(&qkv, 2);
        (&y * fixed(&[64, 17, 192], 23)).sum(Kind::Float).backward();
        d.insert("rope".into(), digest(&y));
        d.insert("rope_grad".into(), digest(&qkv.grad()));
    }
    // Every activation beyond GELU (probed above with the layer norm), by its name.
    for &a in crate::config::Activation::ALL
        .iter()
        .filter(|a| !a.is_gelu())
    {
        let x = (fixed(&[1088, 256], 24) * 4.0).set_requires_grad(true);
        let y = kernels::activation(a, &x);
        (&y * fixed(&[1088, 256], 25)).sum(Kind::Float).backward();
        d.insert(a.name().into(), digest(&y));
        d.insert(format!("{}_grad", a.name()), digest(&x.grad()));
    }
    {
        let x = (fixed(&[1088, 64], 28) * 3.0).set_requires_grad(true);
        let cfg = crate::config::ModelConfig {
            norm_kind: crate::config::NormKind::Rms,
            ..crate::config::ModelConfig::chapter()
        };
        let norm = model::norm::new(nn::VarStore::new(tch::Device::Cpu).root(), &cfg);
        let y = x.apply(&norm);
        (&y * fixed(&[1088, 64], 29)).sum(Kind::Float).backward();
        d.insert("rms_norm".into(), digest(&y));
        d.insert("rms_norm_grad".into(), digest(&x.grad()));
    }
    {
        let (q, k, v) = (
            fixed(&[64, 2, 17, 32], 30).set_requires_grad(true),
            fixed(&[64, 2, 17, 32], 31).set_requires_grad(true),
            fixed(&[64, 2, 17, 32], 32).set_requires_grad(true),
        );
        let bias = model::position::alibi_bias(2, 17);
        let (y, w) = model::attention::biased_attention(
            &(&q * 8.0),
            &k,
            &v,
            &bias,
            model::AttnOptions::default(),
        );
        (&y * fixed(&[64, 2, 17, 32], 33))
            .sum(Kind::Float)
            .backward();
        d.insert(
            "alibi".into(),
            digest(&Tensor::cat(&[y.view([-1]), w.view([-1])], 0)),
        );
        let grads = [
            q.grad().view([-1]),
            k.grad().view([-1]),
            v.grad().view([-1]),
        ];
        d.insert("alibi_grad".into(), digest(&Tensor::cat(&grads, 0)));
    }
    let sgd = Rule::Sgd { momentum: 0.9 };
    let adam = Rule::Adam {
        betas: [0.8, 0.99],
        eps: 1e-6,
        decoupled: false,
    };
    for (name, rule, clip) in [("adam", adam, 0.0), ("sgd_clipped", sgd, 20.0)] {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let p = vs.root().var_copy("p", &fixed(&[256, 64], 26));
        let mut opt = Optim::with_rule(&vs, rule, 3e-3, 0.01).expect("optimiser");
        let mut norms = Vec::new();
        for step in 0..5 {
            opt.zero_grad();
            (&p * fixed(&[256, 64], 27 + step))
                .sum(Kind::Float)
                .backward();
            let norm = opt.grad_norm();
            norms.push(norm);
            opt.clip(norm, clip);
            opt.step().expect("optimiser step");
        }
        d.insert(name.into(), digest(&p));
        if clip > 0.0 {
            d.insert("grad_norm".into(), digest(&Tensor::from_slice(&norms)));
        }
    }
}

/// Measures this machine's fingerprint under the profile already entered.
pub fn probe(profile: Profile) -> Fingerprint {
    let started = std::time::Instant::now();
    let rng_guard = model::TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    tch::set_num_threads(1);
    pin_thread(profile);
    let mut d = BTreeMap::new();
    let put = |d: &mut BTreeMap<String, String>, name: &str, t: &Tensor| {
        d.insert(name.to_string(), digest(t));
    };

    // A linear layer forward and backward at the training shapes: the q, k, v projection
    // of a trimmed batch (1088 rows) and the wide MLP of exercise 1 (1600 rows, which the
    // weight gradient sums in seven blocks of 256).
    for (name, rows, inp, out) in [("linear", 1088, 64, 192), ("linear_wide", 1600, 256, 1024)] {
        let x = fixed(&[rows, inp], 1).set_requires_grad(true);
        let w = fixed(&[out, inp], 2).set_requires_grad(true);
        let b = fixed(&[out], 3).set_requires_grad(true);
        let y = x.apply(&model::Linear::from_parts(
            w.shallow_clone(),
            b.shallow_clone(),
        ));
        // The gradient of sum(y * g) with respect to y is exactly g.
        (&y * fixed(&[rows, out], 4)).sum(Kind::Float).backward();
        put(&mut d, name, &y);
        put(&mut d, &format!("{name}_grad_input"), &x.grad());
        put(&mut d, &format!("{name}_grad_weight"), &w.grad());
    }
    // The attention products, batched over (batch x heads).
    let q = fixed(&[128, 17, 32], 5);
    let k = fixed(&[128, 17, 32], 6);
    put(
        &mut d,
        "attention_scores",
        &kernels::matmul(&q, &k.transpose(-2, -1)),
    );
    // The fused attention of a trimmed batch: output, weights, and the gradient of qkv.
    {
        let qkv = (fixed(&[64, 17, 192], 7) * 8.0).set_requires_grad(true);
        let (y, w) = kernels::attention(&qkv, 2, model::AttnOptions::default());
        (&y * fixed(&[64, 17, 64], 13)).sum(Kind::Float).backward();
        put(&mut d, "attention", &y);
        put(&mut d, "attention_weights", &w);
        put(&mut d, "attention_grad", &qkv.grad());
    }
    norm_and_gelu(&mut d);
    subnormals(&mut d);
    put(&mut d, "cross_entropy", &{
        let logits = fixed(&[1088, 12], 10) * 6.0;
        let y = Tensor::arange(1088, (Kind::Int64, tch::Device::Cpu)).remainder(12);
        logits.cross_entropy_for_logits(&y)
    });
    {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let p = vs.root().var_copy("p", &fixed(&[256, 64], 11));
        let mut opt = crate::optim::AdamW::new(&vs, 3e-3, 0.01).expect("AdamW");
        for step in 0..5 {
            opt.zero_grad();
            (&p * fixed(&[256, 64], 12 + step))
                .sum(Kind::Float)
                .backward();
            opt.step().expect("AdamW step");
        }
        put(&mut d, "adamw", &p);
    }
    vocabulary(&mut d);
    drop(rng_guard);

    // Four steps of the chapter's model, its real training loop included.
    let mut cfg = RunConfig::reference();
    cfg.train.steps = 4;
    cfg.train.block = 4;
    cfg.train.window = 4;
    cfg.eval.test_size = 12;
    cfg.eval.long_size = 4;
    if let Ok(fin) = crate::train::run(&cfg, 0, &mut crate::train::Quiet) {
        if let Some(vs) = &fin.weights {
            let mut vars: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
            vars.sort_by(|a, b| a.0.cmp(&b.0));
            let flat = Tensor::cat(
                &vars.iter().map(|(_, t)| t.view([-1])).collect::<Vec<_>>(),
                0,
            );
            d.insert("train_weights".into(), digest(&flat));
        }
        if let Some(t) = fin.result.train() {
            let losses = Tensor::from_slice(&t.losses);
            d.insert("train_losses".into(), digest(&losses));
        }
    }

    Fingerprint {
        profile: profile.id().into(),
        platform: Platform::this(),
        libtorch: env!("REVTX_LIBTORCH_VERSION").into(),
        aten: kernels::aten_capability(),
        mkl: mkl_branch(),
        engine: crate::CODE_FINGERPRINT.into(),
        digests: d,
        seconds: started.elapsed().as_secs_f64(),
    }
}
