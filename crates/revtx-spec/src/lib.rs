//! What a run is and what it produces, read by both sides: the compiler plans runs and
//! reads their results; the engine computes them. Plain serde types, no libtorch.
//!
//! - [`config`], [`experiments`]: a run's configuration, the presets, a run as an author
//!   writes it; [`task`]: the reversal task's alphabet.
//! - [`result`]: what a run produces; [`entry`]: the run cache's format and keys.
//! - [`profile`]: numeric profiles and the machine a run ran on.
//! - `choice!`: a choice's enum, its words and its `ALL`, declared once.
//! - [`fingerprint`]: the engine's identity, computed by both build scripts.

mod choice;
pub mod config;
pub mod entry;
pub mod experiments;
pub mod fingerprint;
pub mod profile;
pub mod result;
pub mod task;
