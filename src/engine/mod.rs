//! The engine: trains and evaluates the chapter's model with libtorch, one run at a time.
//! It depends on nothing in the compiler; the compiler reads its plain types.
//!
//! Plain Rust (read by the compiler too): `config`, `experiments`, `data`, `rng`,
//! `result`, `entry` (the run cache's format), `profile` (numeric profiles, platforms).
//! libtorch (linked into `revtx-engine` only): `model`, `optim`, `train`, `eval`, `probes`,
//! `numerics` (entering a profile, the numerics fingerprint). Those files live here too,
//! but only `src/bin/revtx-engine.rs` compiles them: were they modules of this library,
//! code generation units that mix them with the compiler's code would link libtorch into
//! `revtx-book`, and its ~0.17 s of static initialisation would run before every command.

// Pedantic lints that are noise in numeric code, allowed with their reason:
// - casts between usize, i64 and f64: tensor sizes and counts here are far below 2^52;
// - must_use / errors / panics docs and markdown in docs: internal API, documented in prose;
// - single-character and similar names: the model's math (b, t, d, h, q, k, v);
// - `nn::Path` and configs passed by value, `Default::default()` for tch's configs: tch's
//   own idiom; `From` for lossless casts and method paths for closures: no clearer;
// - exact float comparisons: the tests compare bits on purpose.
#![allow(
    clippy::needless_pass_by_value,
    clippy::default_trait_access,
    clippy::cast_lossless,
    clippy::redundant_closure_for_method_calls,
    clippy::float_cmp,
    clippy::implicit_hasher,
    clippy::struct_field_names,
    clippy::range_plus_one,
    clippy::single_match_else,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::must_use_candidate,
    clippy::missing_errors_doc,
    clippy::missing_panics_doc,
    clippy::doc_markdown,
    clippy::many_single_char_names,
    clippy::similar_names
)]

pub mod config;
pub mod data;
pub mod entry;
pub mod experiments;
pub mod profile;
pub mod result;
pub mod rng;

/// Identity of the engine's source: a hash of every file under `src/engine/` and of the
/// engine binary's source, computed by build.rs. Part of every cache key.
pub const CODE_FINGERPRINT: &str = env!("REVTX_CODE_FINGERPRINT");
/// The libtorch the engine links, e.g. `2.13.0`.
pub const LIBTORCH_VERSION: &str = env!("REVTX_LIBTORCH_VERSION");
