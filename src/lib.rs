//! revtx-book: an executable textbook chapter.
//!
//! The engine (`model`, `data`, `train`, `experiments`) trains the chapter's transformer
//! with libtorch; it runs in its own binary, `revtx-engine`. The compiler (`book`) turns
//! the markdown chapter into a static site and checks every quoted figure against the run
//! it came from; the `revtx-book` binary never calls into libtorch, so a warm build does
//! not pay for loading it.

pub mod book;
pub mod data;
pub mod experiments;
pub mod model;
pub mod result;
pub mod rng;
pub mod train;
