//! Build script: stamps the compiler with the identity of the engine it keys the run cache
//! on: the engine crate's code fingerprint (`revtx_spec::fingerprint`, the same hash the
//! engine's build script computes) and the libtorch version. It links nothing of libtorch.
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let engine = root.join("crates/revtx-engine");
    let (fingerprint, files) = revtx_spec::fingerprint::engine(&engine);
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed={}", engine.join("src").display());
    println!("cargo:rustc-env=REVTX_CODE_FINGERPRINT={fingerprint}");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    let libtorch = std::env::var("LIBTORCH").ok().map(PathBuf::from);
    // An unknown version would key every run on "unknown": a wrong LIBTORCH is an error.
    let version = revtx_spec::fingerprint::libtorch_version_checked(libtorch.as_deref())
        .unwrap_or_else(|e| panic!("{e}"));
    println!("cargo:rustc-env=REVTX_LIBTORCH_VERSION={version}");
}
