//! The engine as `revtx-engine` compiles it (`src/bin/revtx-engine.rs` loads this file as
//! its module `engine`): the library's plain types, re-exported, and the modules that call
//! libtorch, compiled into that binary only. Inside them `crate::engine` is this module.
//!
//! Why not modules of the library: code generation units that mixed them with the
//! compiler's code linked libtorch into `revtx-book`, whose ~0.17 s of static
//! initialisation (registering ATen's operators) then ran before every command.

#![allow(
    dead_code,
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

pub use revtx_book::engine::{
    config, data, entry, experiments, profile, result, rng, CODE_FINGERPRINT,
};
#[path = "eval.rs"]
pub mod eval;
#[path = "model/mod.rs"]
pub mod model;
#[path = "numerics.rs"]
pub mod numerics;
#[path = "optim.rs"]
pub mod optim;
#[path = "probes.rs"]
pub mod probes;
#[path = "train.rs"]
pub mod train;
