//! The engine's code fingerprint: a hash of the source that decides what a run computes,
//! which is the `revtx-engine` crate (its manifest, build script and `src/`, C++ included;
//! not its tests) and the tasks it trains on (`revtx-spec`'s `task.rs`, whose answers the
//! engine encodes and scores). Part of every cache key. Both build scripts call this, the
//! compiler's to key the cache and the engine's to stamp its results, so they agree.
//! What is hashed is what compiles ([`code::normal_form`]): comments, a listing's anchor
//! lines among them, and layout are left out, so a `cargo fmt` or a reworded doc comment
//! retrains nothing, and showing more of the engine neither.

pub mod code;

use std::path::{Path, PathBuf};

/// The paths that count, relative to the engine crate.
pub const ENGINE_SOURCES: &[&str] = &["Cargo.toml", "build.rs", "src", "../revtx-spec/src/task.rs"];

/// The paths that count for `revtx-intervene`, relative to its crate. What it computes
/// also depends on the engine (the model and its decoding), whose fingerprint is in the
/// key of the trained run that every intervening run's key holds.
pub const INTERVENE_SOURCES: &[&str] = &["Cargo.toml", "build.rs", "src"];

/// The fingerprint of the engine crate at `engine_dir` (16 hex digits), and every file it
/// read, for `cargo:rerun-if-changed`.
///
/// # Panics
/// If a file under the engine crate cannot be read: a build script cannot go on.
#[must_use]
pub fn engine(engine_dir: &Path) -> (String, Vec<PathBuf>) {
    of(engine_dir, ENGINE_SOURCES)
}

/// The fingerprint of the `revtx-intervene` crate at `dir`, as [`engine`]'s.
#[must_use]
pub fn intervene(dir: &Path) -> (String, Vec<PathBuf>) {
    of(dir, INTERVENE_SOURCES)
}

fn of(crate_dir: &Path, sources: &[&str]) -> (String, Vec<PathBuf>) {
    let mut files = Vec::new();
    for rel in sources {
        collect(&crate_dir.join(rel), &mut files);
    }
    files.sort();
    let mut h = blake3::Hasher::new();
    for f in &files {
        let rel = f.strip_prefix(crate_dir).expect("under the crate");
        h.update(rel.to_string_lossy().as_bytes());
        h.update(&[0]);
        h.update(&compiled_form(f));
        h.update(&[0]);
    }
    (h.finalize().to_hex()[..16].to_string(), files)
}

/// What of a file counts: a Rust or C++ source's [`code::normal_form`], any other file's
/// bytes as they are.
fn compiled_form(f: &Path) -> Vec<u8> {
    let bytes = std::fs::read(f).expect("engine source readable");
    match (code::Lang::of(f), std::str::from_utf8(&bytes)) {
        (Some(lang), Ok(text)) => code::normal_form(text, lang).into_bytes(),
        _ => bytes,
    }
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

    /// The real engine, reformatted by rustfmt at another width with tabs, its C++
    /// re-indented and every file given comments of its own, keeps its fingerprint; one
    /// operator changed in it does not.
    #[test]
    fn the_real_engine_reformatted_keeps_its_fingerprint() {
        let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../revtx-engine");
        let (want, files) = engine(&real);
        let dir = tempfile_dir().join("x");
        let copy = dir.join("revtx-engine");
        let (mut formatted, mut commented) = (0, 0);
        let mut moved = Vec::new();
        for f in &files {
            let rel = f.strip_prefix(&real).unwrap();
            let to = copy.join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            let text = std::fs::read_to_string(f).unwrap();
            let text = match code::Lang::of(f) {
                Some(code::Lang::Rust) => {
                    // Narrower and wider lines than cargo fmt's: rustfmt then breaks other
                    // lines, wraps or unwraps closures and arms in blocks, adds or drops
                    // trailing commas. Files alternate between the two.
                    let config = if formatted % 2 == 0 {
                        "max_width=64,hard_tabs=true"
                    } else {
                        "max_width=200,use_small_heuristics=Max,hard_tabs=true"
                    };
                    formatted += 1;
                    let fmt = rustfmt(&text, config);
                    assert_ne!(fmt, text, "{} is laid out anew", rel.display());
                    recomment(&fmt, "fn ")
                }
                Some(code::Lang::C) => {
                    commented += 1;
                    recomment(&text, "static ")
                        .lines()
                        .fold(String::new(), |acc, l| acc + "  " + l + "\n")
                }
                None => text,
            };
            if let Some(lang) = code::Lang::of(f) {
                let was = code::normal_form(&std::fs::read_to_string(f).unwrap(), lang);
                let now = code::normal_form(&text, lang);
                if was != now {
                    let at = was
                        .chars()
                        .zip(now.chars())
                        .take_while(|(x, y)| x == y)
                        .count();
                    let near = |s: &str| {
                        s.chars()
                            .skip(at.saturating_sub(40))
                            .take(80)
                            .collect::<String>()
                    };
                    moved.push(format!(
                        "{}: {} | {}",
                        rel.display(),
                        near(&was),
                        near(&now)
                    ));
                }
            }
            std::fs::write(&to, text).unwrap();
        }
        assert!(formatted >= 10 && commented >= 8, "{formatted} {commented}");
        assert!(moved.is_empty(), "{moved:#?}");
        let (got, copied) = engine(&copy);
        assert_eq!(copied.len(), files.len());
        assert_eq!(got, want, "reformatted and re-commented");
        let optim = copy.join("src/optim.rs");
        let text = std::fs::read_to_string(&optim).unwrap();
        std::fs::write(
            &optim,
            text.replacen("1.0 - lr * weight_decay", "1.0 + lr * weight_decay", 1),
        )
        .unwrap();
        assert_ne!(engine(&copy).0, want, "an operator changed");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `text` laid out by rustfmt under `config`.
    fn rustfmt(text: &str, config: &str) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("rustfmt")
            .args(["--edition", "2021", "--emit", "stdout", "--config", config])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("rustfmt runs (rustup component add rustfmt)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "rustfmt failed");
        String::from_utf8(out.stdout).unwrap()
    }

    /// `text` with a comment of each kind before every line that starts with `start`, and
    /// one at the top.
    fn recomment(text: &str, start: &str) -> String {
        let mut out = String::from("/* A file of the engine. */\n");
        for l in text.lines() {
            if l.trim_start().starts_with(start) {
                out.push_str("// What follows, said again.\n/** and once more */\n");
            }
            out.push_str(l);
            out.push('\n');
        }
        out
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("revtx-fp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }
}
