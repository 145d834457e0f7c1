//! Build script: two jobs.
//! 1. Give the binary an rpath to libtorch's lib dir, so it starts without LD_LIBRARY_PATH.
//! 2. Fingerprint the source that decides what a training run computes (model, data,
//!    training, experiment configs). The run cache keys on it, so editing that code
//!    re-runs the experiments, while editing the book compiler does not.
use std::path::{Path, PathBuf};

/// Files whose content changes what a run computes.
const RUN_SOURCES: &[&str] = &[
    "src/model",
    "src/data.rs",
    "src/train.rs",
    "src/experiments.rs",
    "src/rng.rs",
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Ok(lt) = std::env::var("LIBTORCH") {
        let lib = std::fs::canonicalize(Path::new(&lt).join("lib"))
            .unwrap_or_else(|_| Path::new(&lt).join("lib"));
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
        let version = std::fs::read_to_string(Path::new(&lt).join("build-version"))
            .unwrap_or_else(|_| "unknown".into());
        println!("cargo:rustc-env=REVTX_LIBTORCH_VERSION={}", version.trim());
    } else {
        println!("cargo:rustc-env=REVTX_LIBTORCH_VERSION=unknown");
    }

    let mut files = Vec::new();
    for rel in RUN_SOURCES {
        let p = root.join(rel);
        println!("cargo:rerun-if-changed={}", p.display());
        collect(&p, &mut files);
    }
    files.sort();
    let mut h = blake3::Hasher::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        h.update(rel.to_string_lossy().as_bytes());
        h.update(&[0]);
        h.update(&std::fs::read(f).unwrap());
        h.update(&[0]);
    }
    let hex = h.finalize().to_hex();
    println!("cargo:rustc-env=REVTX_CODE_FINGERPRINT={}", &hex[..16]);
}

fn collect(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            collect(&e.unwrap().path(), out);
        }
    } else if p.is_file() && p.extension().is_some_and(|e| e == "rs") {
        out.push(p.to_path_buf());
    }
}
