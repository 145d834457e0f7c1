//! revtx-book: an executable textbook chapter.
//!
//! - [`engine`] trains the chapter's transformer with libtorch. It runs in its own binary,
//!   `revtx-engine`, one process per run; it knows nothing of the compiler.
//! - [`book`] is the compiler: it turns the markdown chapter into a static site and checks
//!   every quoted figure against the run it came from. The `revtx-book` binary reads the
//!   engine's plain types but never calls into libtorch, so a warm build does not load it.

pub mod book;
pub mod engine;
