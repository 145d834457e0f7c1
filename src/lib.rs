//! revtx-book: an executable textbook chapter.
//!
//! The engine (`src/model`, `src/train.rs`) trains the chapter's transformer with
//! libtorch; it is compiled into its own binary, `revtx-engine`, from the types here
//! (`config`, `data`, `experiments`, `result`, `rng`). The compiler (`book`) turns
//! the markdown chapter into a static site and checks every quoted figure against the run
//! it came from; the `revtx-book` binary never calls into libtorch, so a warm build does
//! not pay for loading it.

pub mod book;
pub mod config;
pub mod data;
pub mod experiments;
pub mod result;
pub mod rng;
