//! The engine: trains and evaluates the chapter's model with libtorch, one run per process
//! (`src/main.rs` is the `revtx-engine` binary). The only crate of the workspace that links
//! libtorch; the compiler reads its requests and results through `revtx-spec`.
//!
//! - [`data`], [`rng`]: the training data and the random numbers that draw it;
//! - [`model`]: the transformer, its attention and its C++ kernels (`model/kernels/`);
//! - [`optim`], [`schedule`], [`train`], [`eval`], [`probes`]: one run, from first step to
//!   result;
//! - [`numerics`]: entering a numeric profile, and the numerics fingerprint;
//! - [`trig`]: sines, cosines and exponentials of our own, the same bits everywhere.

pub mod data;
pub mod eval;
pub mod model;
pub mod numerics;
pub mod optim;
pub mod probes;
pub mod rng;
pub mod schedule;
pub mod train;
pub mod trig;

use revtx_spec::profile::Platform;
use revtx_spec::result::{RunEnv, StepPhases};
pub use revtx_spec::{config, entry, experiments, profile, result};

/// Identity of this engine: the hash of this crate's sources (`revtx_spec::fingerprint`),
/// computed by build.rs. Part of every cache key.
pub const CODE_FINGERPRINT: &str = env!("REVTX_CODE_FINGERPRINT");
/// The libtorch the engine links, e.g. `2.13.0`.
pub const LIBTORCH_VERSION: &str = env!("REVTX_LIBTORCH_VERSION");

/// This process and machine, before any timing.
pub fn run_env(threads: usize) -> RunEnv {
    let p = Platform::this();
    RunEnv {
        profile: numerics::current().id().into(),
        threads,
        libtorch: LIBTORCH_VERSION.into(),
        cpu: p.cpu,
        vendor: p.vendor,
        isa: p.isa,
        code_fingerprint: CODE_FINGERPRINT.into(),
        train_seconds: 0.0,
        eval_seconds: 0.0,
        steps_per_second: 0.0,
        phases: StepPhases::default(),
        started_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    }
}
