//! Build script: three jobs.
//! 1. Give the binary an rpath to libtorch's lib dir, so it starts without `LD_LIBRARY_PATH`.
//! 2. Compile the C++ kernels: the shim against libtorch, and the matrix product once per
//!    instruction set.
//! 3. Stamp the engine with its code fingerprint (`revtx_spec::fingerprint`), the hash of
//!    this crate's sources that the compiler's build script computes too.
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    let libtorch = std::env::var("LIBTORCH").ok().map(PathBuf::from);
    if let Some(lt) = &libtorch {
        let lib = std::fs::canonicalize(lt.join("lib")).unwrap_or_else(|_| lt.join("lib"));
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
        compile_kernels(lt);
    }
    println!(
        "cargo:rustc-env=REVTX_LIBTORCH_VERSION={}",
        revtx_spec::fingerprint::libtorch_version(libtorch.as_deref())
    );
    let (fingerprint, files) = revtx_spec::fingerprint::engine(&root);
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!("cargo:rustc-env=REVTX_CODE_FINGERPRINT={fingerprint}");
}

/// Compiles the C++ kernels (`src/model/kernels/`, see `kernels.h`): the libtorch side
/// against libtorch's headers, with the flags torch-sys uses for its own C++, and the plain
/// kernels once per instruction set.
fn compile_kernels(libtorch: &Path) {
    let dir = Path::new("src/model/kernels");
    let include = libtorch.join("include");
    let mut shim = cc::Build::new();
    shim.cpp(true)
        .pic(true)
        .warnings(false)
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag("-D_GLIBCXX_USE_CXX11_ABI=1")
        .flag("-DGLOG_USE_GLOG_EXPORT")
        // The order of operations is the source's: no contraction into fused
        // multiply-adds, whatever the compiler's default.
        .flag("-ffp-contract=off");
    for unit in ["linear", "attention", "mlp", "layer_norm", "ffi"] {
        shim.file(dir.join(format!("{unit}.cpp")));
    }
    shim.compile("revtx_kernels");
    // The plain kernels, once per instruction set: the same source and the same bits, 8 or
    // 16 lanes; `linear.cpp` and `mlp.cpp` pick one at run time. The matrix product takes
    // its width from -m flags; GELU from `lanes.h`'s target attributes.
    for (isa, lanes, flags) in [
        ("avx2", "8", &["-mavx2", "-mfma"][..]),
        ("avx512", "16", &["-mavx512f", "-mavx2", "-mfma"][..]),
    ] {
        let plain = || {
            let mut b = cc::Build::new();
            b.cpp(true)
                .pic(true)
                .warnings(false)
                .flag("-std=c++17")
                .flag("-ffp-contract=off");
            b
        };
        let mut gemm = plain();
        gemm.define(&format!("REVTX_GEMM_{}", isa.to_uppercase()), None)
            .define("REVTX_GEMM_NAME", format!("revtx_gemm_{isa}").as_str());
        for f in flags {
            gemm.flag(f);
        }
        gemm.file(dir.join("gemm.cpp"))
            .compile(&format!("revtx_gemm_{isa}"));
        plain()
            .define("REVTX_LANES", lanes)
            .define("REVTX_GELU_NAME", format!("revtx_gelu_{isa}").as_str())
            .file(dir.join("gelu.cpp"))
            .compile(&format!("revtx_gelu_{isa}"));
    }
    println!(
        "cargo:rustc-link-search=native={}",
        libtorch.join("lib").display()
    );
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
}
