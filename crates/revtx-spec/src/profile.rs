//! The numeric profile: which CPU code paths libtorch may take during a run. Under the
//! portable profile a run computes the same bits on every x86-64 CPU with AVX2 and FMA.
//!
//! libtorch picks its kernels by CPU: ATen by vector width (default, AVX2, AVX-512), MKL by
//! vendor and model, oneDNN by instruction set. Different kernels sum in different orders,
//! and one different last bit at step 1 is a different model by step 500. The portable
//! profile pins all three, and keeps the model's products out of MKL and oneDNN:
//!
//! - the linear layers (96% of the arithmetic) run on the engine's own matrix product
//!   (`revtx-engine`'s `model/kernels/gemm.cpp`): each output one chain of fused multiply-adds in a fixed order, so
//!   its AVX-512 kernel and its AVX2 kernel compute the same bits, and a machine with
//!   AVX-512 uses all of it; attention, GELU and layer norm are the engine's own kernels;
//! - `ATEN_CPU_CAPABILITY=avx2`: ATen's AVX2 kernels, the same compiled code everywhere;
//! - `ONEDNN_MAX_CPU_ISA=AVX2`: oneDNN's AVX2 kernels, chosen by instruction set, never by
//!   vendor, for anything of libtorch's that still reaches oneDNN;
//! - `MKL_CBWR=COMPATIBLE`: MKL's vendor-neutral branch, for anything that still reaches MKL;
//! - subnormal floats flushed to zero (MXCSR's FTZ and DAZ bits, set by `numerics::enter`
//!   and on every thread that trains). An x86 core takes a slow microcode path for an
//!   operation that reads or writes a subnormal, and a confident model's gradients fill
//!   with them: on a Xeon, the width-256 run of exercise 1 took 463 s with them and 205 s
//!   flushed, with the same result. Both bits are defined by the x86 architecture.
//!
//! This module is plain Rust: the compiler uses it to name profiles and describe machines.

use serde::{Deserialize, Serialize};
/// Which numerics a run uses. Part of every cache key and recorded in every result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Bit-identical on every x86-64 CPU with AVX2 and FMA. What the book is checked under.
    #[default]
    #[cfg_attr(feature = "clap", value(alias = "portable-avx2-v2"))]
    Portable,
    /// Whatever libtorch picks on this CPU, all products through MKL: quick local drafts,
    /// cached under their own key and never compared against the book.
    Native,
}

impl Profile {
    /// The name used in cache keys, results and the book's numerics file. Bumped when the
    /// profile's meaning changes (v2: subnormals flushed to zero).
    pub fn id(self) -> &'static str {
        match self {
            Profile::Portable => "portable-avx2-v2",
            Profile::Native => "native",
        }
    }

    /// Environment the engine sets for itself before libtorch does any work.
    pub fn env(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Profile::Portable => &[
                ("ATEN_CPU_CAPABILITY", "avx2"),
                ("ONEDNN_MAX_CPU_ISA", "AVX2"),
                ("MKL_CBWR", "COMPATIBLE"),
            ],
            Profile::Native => &[],
        }
    }

    /// Whether subnormal floats are flushed to zero, as inputs and as results. The native
    /// profile keeps libtorch's default, IEEE subnormals.
    pub fn flushes_subnormals(self) -> bool {
        self == Profile::Portable
    }

    /// Whether results under this profile can be compared with a book blessed elsewhere.
    pub fn comparable(self) -> bool {
        self == Profile::Portable
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The register width of the engine's kernels that have two, the matrix product and GELU.
/// Both compute the same bits; a machine with AVX-512 uses it unless held to AVX2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isa {
    Avx2,
    Avx512,
}

impl Isa {
    /// The name results, benches and the C kernels use: `avx2`, `avx512`.
    pub fn as_str(self) -> &'static str {
        match self {
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }
}

impl std::fmt::Display for Isa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a machine is, as far as its numerics go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// `x86_64`, `aarch64`, ...
    pub arch: String,
    pub os: String,
    /// `GenuineIntel`, `AuthenticAMD`, or empty where unknown.
    pub vendor: String,
    /// The CPU's model name, as /proc/cpuinfo gives it.
    pub cpu: String,
    /// Vector extensions that decide libtorch's code paths, e.g. `avx2 fma avx512f`.
    pub isa: String,
}

impl Platform {
    /// This machine.
    pub fn this() -> Self {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        let cpu = field("model name");
        Platform {
            arch: std::env::consts::ARCH.into(),
            os: std::env::consts::OS.into(),
            vendor: field("vendor_id"),
            cpu: if cpu.is_empty() {
                "unknown".into()
            } else {
                cpu
            },
            isa: isa_flags().join(" "),
        }
    }

    /// `None` if `profile` gives the same bits here as on every other supported machine;
    /// otherwise why not.
    pub fn unsupported(&self, profile: Profile) -> Option<String> {
        if profile != Profile::Portable {
            return Some(format!(
                "the `{profile}` profile gives results that hold on this machine only"
            ));
        }
        if self.arch != "x86_64" {
            return Some(format!(
                "the portable profile needs an x86-64 CPU with AVX2 and FMA; this is {} ({})",
                self.arch, self.os
            ));
        }
        let has = |f: &str| self.isa.split(' ').any(|x| x == f);
        if !(has("avx2") && has("fma")) {
            return Some(format!(
                "the portable profile needs AVX2 and FMA; this CPU ({}) has only `{}`",
                self.cpu, self.isa
            ));
        }
        None
    }

    /// One line for reports: `AMD EPYC (AuthenticAMD; avx2 fma)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, {}; {})",
            self.cpu, self.vendor, self.arch, self.isa
        )
    }
}

/// A machine's numerics under one profile: digests of the operations a training step
/// uses, on fixed inputs, and of a few real training steps (see `numerics::probe`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub profile: String,
    pub platform: Platform,
    pub libtorch: String,
    /// What ATen dispatched to and which MKL branch ran, as libtorch reports them.
    pub aten: String,
    pub mkl: String,
    /// The engine's code fingerprint: another engine may compute other bits anywhere.
    pub engine: String,
    /// Operation name → digest of its result's bits.
    pub digests: std::collections::BTreeMap<String, String>,
    /// How long the probe took, without starting the process.
    #[serde(default)]
    pub seconds: f64,
}

impl Fingerprint {
    /// The operations whose digests differ from `other`'s (or that only one of them has).
    pub fn differences(&self, other: &Fingerprint) -> Vec<String> {
        let mut names: Vec<&String> = self.digests.keys().chain(other.digests.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter(|n| self.digests.get(*n) != other.digests.get(*n))
            .cloned()
            .collect()
    }
}

#[cfg(target_arch = "x86_64")]
fn isa_flags() -> Vec<&'static str> {
    let mut v = Vec::new();
    if std::arch::is_x86_feature_detected!("avx2") {
        v.push("avx2");
    }
    if std::arch::is_x86_feature_detected!("fma") {
        v.push("fma");
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        v.push("avx512f");
    }
    v
}

#[cfg(not(target_arch = "x86_64"))]
fn isa_flags() -> Vec<&'static str> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_portable_profile_is_comparable() {
        assert!(Profile::Portable.comparable());
        assert!(!Profile::Native.comparable());
    }

    #[test]
    fn platforms_without_avx2_and_fma_are_named() {
        let p = Platform {
            arch: "aarch64".into(),
            os: "macos".into(),
            vendor: String::new(),
            cpu: "Apple M2".into(),
            isa: String::new(),
        };
        assert!(p
            .unsupported(Profile::Portable)
            .unwrap()
            .contains("aarch64"));
        let old = Platform {
            arch: "x86_64".into(),
            isa: "fma".into(),
            ..p.clone()
        };
        assert!(old.unsupported(Profile::Portable).unwrap().contains("AVX2"));
        let ok = Platform {
            arch: "x86_64".into(),
            isa: "avx2 fma avx512f".into(),
            ..p
        };
        assert_eq!(ok.unsupported(Profile::Portable), None);
        assert!(ok.unsupported(Profile::Native).is_some());
    }
}
