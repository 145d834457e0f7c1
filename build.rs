//! Build script: three jobs.
//! 1. Give the binary an rpath to libtorch's lib dir, so it starts without `LD_LIBRARY_PATH`.
//! 2. Compile the engine's C++ kernels: the shim against libtorch, and the matrix product
//!    once per instruction set.
//! 3. Fingerprint the source that decides what a run computes: everything under
//!    `src/engine/` and the engine binary. The run cache keys on it, so editing that code
//!    re-runs the experiments, while editing the book compiler does not.
use std::path::{Path, PathBuf};

/// Source whose content decides what a run computes: walked, not listed file by file.
const ENGINE_SOURCES: &[&str] = &["src/engine", "src/bin/revtx-engine.rs"];

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
        compile_kernels(Path::new(&lt));
    } else {
        println!("cargo:rustc-env=REVTX_LIBTORCH_VERSION=unknown");
    }

    let mut files = Vec::new();
    for rel in ENGINE_SOURCES {
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
        h.update(&without_tests(f, &std::fs::read(f).unwrap()));
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
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

/// Compiles `src/engine/model/kernels.cpp`, the engine's matrix products, against libtorch's headers,
/// with the flags torch-sys uses for its own C++.
fn compile_kernels(libtorch: &Path) {
    println!("cargo:rerun-if-changed=src/engine/model/kernels.cpp");
    let include = libtorch.join("include");
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        // The attention products' order of operations is the source's: no contraction
        // into fused multiply-adds, whatever the compiler's default.
        .flag("-ffp-contract=off")
        .file("src/engine/model/kernels.cpp")
        .compile("revtx_kernels");
    // The matrix product, once per instruction set: the same source and the same bits,
    // 8 or 16 lanes. `kernels.cpp` picks one at run time.
    println!("cargo:rerun-if-changed=src/engine/model/gemm.cpp");
    for (isa, flags) in [
        ("avx2", &["-mavx2", "-mfma"][..]),
        ("avx512", &["-mavx512f", "-mavx2", "-mfma"][..]),
    ] {
        let mut b = cc::Build::new();
        b.cpp(true)
            .pic(true)
            .warnings(false)
            .flag("-std=c++17")
            .flag("-ffp-contract=off")
            .define(&format!("REVTX_GEMM_{}", isa.to_uppercase()), None)
            .define("REVTX_GEMM_NAME", format!("revtx_gemm_{isa}").as_str());
        for f in flags {
            b.flag(f);
        }
        b.file("src/engine/model/gemm.cpp")
            .compile(&format!("revtx_gemm_{isa}"));
    }
    println!(
        "cargo:rustc-link-search=native={}",
        libtorch.join("lib").display()
    );
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
}

/// A Rust file's content up to its test module (`#[cfg(test)]` at the start of a line, by
/// convention the file's end): editing a unit test does not invalidate every cached run.
fn without_tests(path: &Path, bytes: &[u8]) -> Vec<u8> {
    if path.extension().is_none_or(|e| e != "rs") {
        return bytes.to_vec();
    }
    let text = String::from_utf8_lossy(bytes);
    let end = text.find("\n#[cfg(test)]").map_or(text.len(), |i| i + 1);
    text[..end].as_bytes().to_vec()
}
