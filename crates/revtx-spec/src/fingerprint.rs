//! The engine's code fingerprint: a hash of the source that decides what a run computes,
//! which is the `revtx-engine` crate (its manifest, build script and `src/`, C++ included;
//! not its tests) and the tasks it trains on (`revtx-spec`'s `task.rs`, whose answers the
//! engine encodes and scores). Part of every cache key. Both build scripts call this, the
//! compiler's to key the cache and the engine's to stamp its results, so they agree.
//! A listing's anchor lines (`// ANCHOR: name`, `// ANCHOR_END: name`) are the book's
//! markup, not code: they are left out, so showing more of the engine retrains nothing.

use std::path::{Path, PathBuf};

/// The paths that count, relative to the engine crate.
pub const ENGINE_SOURCES: &[&str] = &["Cargo.toml", "build.rs", "src", "../revtx-spec/src/task.rs"];

/// The fingerprint of the engine crate at `engine_dir` (16 hex digits), and every file it
/// read, for `cargo:rerun-if-changed`.
///
/// # Panics
/// If a file under the engine crate cannot be read: a build script cannot go on.
#[must_use]
pub fn engine(engine_dir: &Path) -> (String, Vec<PathBuf>) {
    let mut files = Vec::new();
    for rel in ENGINE_SOURCES {
        collect(&engine_dir.join(rel), &mut files);
    }
    files.sort();
    let mut h = blake3::Hasher::new();
    for f in &files {
        let rel = f.strip_prefix(engine_dir).expect("under the engine crate");
        h.update(rel.to_string_lossy().as_bytes());
        h.update(&[0]);
        h.update(&without_anchors(
            &std::fs::read(f).expect("engine source readable"),
        ));
        h.update(&[0]);
    }
    (h.finalize().to_hex()[..16].to_string(), files)
}

/// A file's bytes less the lines that only mark a listing's anchor.
fn without_anchors(bytes: &[u8]) -> Vec<u8> {
    let is_anchor = |line: &[u8]| {
        let t = String::from_utf8_lossy(line);
        let t = t.trim_start();
        t.starts_with("// ANCHOR:") || t.starts_with("// ANCHOR_END:")
    };
    bytes
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !is_anchor(line))
        .flatten()
        .copied()
        .collect()
}

fn collect(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        for e in std::fs::read_dir(p).expect("engine source dir readable") {
            collect(&e.expect("dir entry").path(), out);
        }
    } else if p.is_file() {
        out.push(p.to_path_buf());
    }
}

/// The libtorch version the engine builds against (`build-version` in the libtorch that
/// `LIBTORCH` names, e.g. `2.13.0`), or `unknown`.
#[must_use]
pub fn libtorch_version(libtorch: Option<&Path>) -> String {
    libtorch
        .and_then(|lt| std::fs::read_to_string(lt.join("build-version")).ok())
        .map_or_else(|| "unknown".into(), |v| v.trim().to_string())
}

/// [`libtorch_version`], or why it cannot be known: `LIBTORCH` unset, or naming a folder
/// with no `build-version` (e.g. `.libtorch` instead of `.libtorch/torch`). An unknown
/// version would silently change every cache key, so the compiler's build refuses it.
pub fn libtorch_version_checked(libtorch: Option<&Path>) -> Result<String, String> {
    let Some(lt) = libtorch else {
        return Err(
            "LIBTORCH is not set: run scripts/setup-libtorch.sh, which installs \
                    libtorch into .libtorch/ (.cargo/config.toml points LIBTORCH at it)"
                .into(),
        );
    };
    match std::fs::read_to_string(lt.join("build-version")) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
        _ => Err(format!(
            "LIBTORCH={} holds no build-version file: it must name the libtorch folder \
             itself (the one holding include/, lib/ and build-version), e.g. .libtorch/torch",
            lt.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchor_lines_are_not_code() {
        let with = b"fn f() {\n    // ANCHOR: f\n    1\n    // ANCHOR_END: f\n}\n";
        assert_eq!(without_anchors(with), b"fn f() {\n    1\n}\n".to_vec());
        // Any other comment is kept: it may be all that tells two sources apart.
        let other = b"// ANCHORS are fine\nx\n";
        assert_eq!(without_anchors(other), other.to_vec());
    }

    #[test]
    fn a_libtorch_without_its_version_is_refused() {
        let dir = std::env::temp_dir().join(format!("revtx-lt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let torch = dir.join("torch");
        std::fs::create_dir_all(&torch).unwrap();
        let err = libtorch_version_checked(Some(&dir)).unwrap_err();
        assert!(err.contains("holds no build-version"), "{err}");
        assert!(libtorch_version_checked(None)
            .unwrap_err()
            .contains("not set"));
        std::fs::write(torch.join("build-version"), "2.13.0\n").unwrap();
        assert_eq!(libtorch_version_checked(Some(&torch)).unwrap(), "2.13.0");
        assert_eq!(libtorch_version(Some(&dir)), "unknown");
    }

    /// The real engine's fingerprint reads the tasks' code: a change to an answer changes
    /// what every run trains on.
    #[test]
    fn covers_the_tasks() {
        let engine_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../revtx-engine");
        let (_, files) = engine(&engine_dir);
        assert!(
            files.iter().any(|f| f.ends_with("revtx-spec/src/task.rs")),
            "{files:?}"
        );
        assert!(files.iter().any(|f| f.ends_with("src/model/mod.rs")));
    }

    #[test]
    fn covers_sources_and_not_tests() {
        let dir = tempfile_dir();
        std::fs::create_dir_all(dir.join("src/model")).unwrap();
        std::fs::create_dir_all(dir.join("tests")).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "fn a() {}").unwrap();
        std::fs::write(dir.join("src/model/k.cpp"), "int k;").unwrap();
        std::fs::write(dir.join("tests/t.rs"), "#[test] fn t() {}").unwrap();
        let (before, files) = engine(&dir);
        assert_eq!(files.len(), 3, "{files:?}");
        std::fs::write(dir.join("tests/t.rs"), "#[test] fn u() {}").unwrap();
        assert_eq!(engine(&dir).0, before, "a test edit must not count");
        std::fs::write(dir.join("src/model/k.cpp"), "int k2;").unwrap();
        assert_ne!(engine(&dir).0, before, "a kernel edit must count");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("revtx-fp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }
}
