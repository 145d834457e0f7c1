//! Build script: stamps the compiler with the identity of the engine it keys the run cache
//! on: the engine crate's code fingerprint (`revtx_spec::fingerprint`, the same hash the
//! engine's build script computes), `revtx-intervene`'s, and the libtorch version. It links nothing of libtorch.
//! It also embeds the default theme, `templates/` and `static/`, into the binary
//! (`$OUT_DIR/theme.rs`, read by `src/book/theme.rs`).
use std::fmt::Write;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let engine = root.join("crates/revtx-engine");
    let (fingerprint, files) = revtx_spec::fingerprint::engine(&engine);
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed={}", engine.join("src").display());
    println!("cargo:rustc-env=REVTX_CODE_FINGERPRINT={fingerprint}");
    let intervene = root.join("crates/revtx-intervene");
    let (fingerprint, files) = revtx_spec::fingerprint::intervene(&intervene);
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed={}", intervene.join("src").display());
    println!("cargo:rustc-env=REVTX_INTERVENE_FINGERPRINT={fingerprint}");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    let libtorch = std::env::var("LIBTORCH").ok().map(PathBuf::from);
    // An unknown version would key every run on "unknown": a wrong LIBTORCH is an error.
    let version = revtx_spec::fingerprint::libtorch_version_checked(libtorch.as_deref())
        .unwrap_or_else(|e| panic!("{e}"));
    println!("cargo:rustc-env=REVTX_LIBTORCH_VERSION={version}");
    embed_theme(&root);
}

/// Writes `$OUT_DIR/theme.rs`: `THEME`, every file of `templates/` and `static/` as
/// (path relative to the project, bytes), sorted by path.
fn embed_theme(root: &Path) {
    let mut files = Vec::new();
    for dir in ["templates", "static"] {
        collect(root, &root.join(dir), &mut files);
    }
    files.sort();
    let mut out = String::from(
        "/// The default theme: (path under the project, bytes), sorted by path.\npub static THEME: &[(&str, &[u8])] = &[\n",
    );
    for rel in &files {
        let abs = root.join(rel);
        println!("cargo:rerun-if-changed={}", abs.display());
        let _ = writeln!(
            out,
            "    ({rel:?}, include_bytes!({:?})),",
            abs.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("theme.rs");
    std::fs::write(dest, out).expect("write theme.rs");
}

/// Every file under `dir`, relative to `root` with `/` separators; every folder is watched
/// so that an added or removed file rebuilds the theme.
fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(root, &p, out);
        } else if p.is_file() {
            let rel = p.strip_prefix(root).expect("under the root");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}
