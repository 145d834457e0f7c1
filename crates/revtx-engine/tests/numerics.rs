//! Tests of `src/numerics.rs`.

use revtx_engine::model::kernels;
use revtx_engine::numerics::*;
use revtx_engine::profile::Profile;
use tch::{Kind, Tensor};

/// The test process runs under the portable profile (`.cargo/config.toml` sets it
/// before libtorch loads), so every engine test computes what the book computes.
#[test]
fn tests_run_under_the_portable_profile() {
    enter(Profile::Portable).expect("portable profile");
    assert_eq!(kernels::aten_capability(), "AVX2");
    assert_eq!(mkl_branch(), "COMPATIBLE");
}

#[test]
fn the_portable_profile_flushes_subnormals_and_the_native_keeps_them() {
    let tiny = f32::from_bits(1 << 20);
    let aten = |x: f32| {
        let t = Tensor::from_slice(&[x; 64]) * 1.5;
        f64::try_from(t.abs().sum(Kind::Double)).unwrap()
    };
    pin_thread(Profile::Native);
    assert!(!flushes_subnormals());
    assert_ne!(std::hint::black_box(tiny) * 1.5, 0.0);
    assert!(aten(tiny) > 0.0);
    pin_thread(Profile::Portable);
    assert!(flushes_subnormals());
    // Bits, not `==`: with DAZ set, a comparison reads a subnormal as zero too.
    assert_eq!((std::hint::black_box(tiny) * 1.5).to_bits(), 0);
    assert_eq!(aten(tiny), 0.0);
    // A subnormal input reads as zero even where the result would be normal (DAZ)...
    assert_eq!((std::hint::black_box(tiny) * 2f32.powi(60)).to_bits(), 0);
    // ...and a normal float whose product is subnormal becomes zero (FTZ).
    assert_eq!(
        (std::hint::black_box(f32::MIN_POSITIVE) * 0.25).to_bits(),
        0
    );
}

#[test]
fn fingerprint_is_stable_within_a_process() {
    let a = probe(Profile::Portable);
    let b = probe(Profile::Portable);
    assert_eq!(a.digests, b.digests);
    assert!(a.digests.len() >= 12, "{:?}", a.digests.keys());
}
