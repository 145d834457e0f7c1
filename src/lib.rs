//! revtx-book: an executable textbook. The compiler and its CLI.
//!
//! - [`book`] turns the markdown book into a static site and checks every quoted figure
//!   against the run it came from. Runs are described by `revtx-spec` and computed by the
//!   `revtx-engine` binary, one process per run; this crate does not depend on the engine
//!   crate, so it links no libtorch (Cargo holds that, and `tests/link.rs` checks it).

pub mod book;

/// The engine this compiler keys the run cache on: the code fingerprint of
/// `crates/revtx-engine` and the libtorch version, stamped by build.rs.
pub const ENGINE: revtx_spec::entry::Engine<'static> = revtx_spec::entry::Engine {
    code: env!("REVTX_CODE_FINGERPRINT"),
    libtorch: env!("REVTX_LIBTORCH_VERSION"),
};

/// The code fingerprint of `crates/revtx-intervene`, which evaluates trained weights with
/// parts of the model switched off: part of every intervening run's key.
pub const INTERVENE: &str = env!("REVTX_INTERVENE_FINGERPRINT");
