//! Build script: gives the binary an rpath to libtorch's lib dir (the engine's build script
//! does this for its own binary only), and stamps it with its code fingerprint
//! (`revtx_spec::fingerprint::intervene`), the hash the compiler's build script computes too.
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Some(lt) = std::env::var("LIBTORCH").ok().map(PathBuf::from) {
        let lib = std::fs::canonicalize(lt.join("lib")).unwrap_or_else(|_| lt.join("lib"));
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    }
    let (fingerprint, files) = revtx_spec::fingerprint::intervene(&root);
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!("cargo:rustc-env=REVTX_INTERVENE_FINGERPRINT={fingerprint}");
}
