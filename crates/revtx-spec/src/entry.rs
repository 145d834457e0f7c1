//! The run cache's entry format, and the request the compiler hands the engine.
//!
//! An entry is a directory `<cache>/runs/<key>/` holding `result.json`, the trained
//! weights (`weights.safetensors`, for training runs) and `checksum`, written last. The
//! key hashes everything a result depends on; an entry that does not verify is never used.

use crate::experiments::RunConfig;
use crate::profile::{Platform, Profile};
use crate::result::{RunResult, RESULT_FORMAT};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One run for the engine to execute: `revtx-engine exec --request FILE --out DIR`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecRequest {
    pub config: RunConfig,
    pub seed: u64,
    pub profile: Profile,
    /// How progress lines name the run, e.g. `noscale s3`.
    pub label: String,
    /// The code fingerprint the compiler keyed this run on: an engine built from other
    /// source refuses the request rather than cache a result under another engine's key.
    /// For an intervening run, `revtx-intervene`'s fingerprint.
    pub engine: String,
    /// For an intervening run (`config.intervene`): the trained run's cache entry, whose
    /// weights it reads. Where it is decides nothing: the key holds the trained run's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained: Option<std::path::PathBuf>,
}

pub const RESULT_FILE: &str = "result.json";
pub const WEIGHTS_FILE: &str = "weights.safetensors";
pub const CHECKSUM_FILE: &str = "checksum";
/// The prefix of the directory an entry is written into, beside its final place, before
/// it is renamed there (`write`).
pub const PARTIAL_PREFIX: &str = ".tmp-run-";

/// Which engine computes a run: its code fingerprint (`crate::fingerprint`) and the
/// libtorch it links. The compiler and the engine each know theirs from their build script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine<'a> {
    pub code: &'a str,
    pub libtorch: &'a str,
}

/// The cache key of one (config, seed) under a profile: the canonical config, the seed,
/// the task's alphabet, the engine (code fingerprint and libtorch version), the thread
/// count, the result format and the profile with the settings it enters. A native result
/// also keys on the machine it ran on.
pub fn key(config: &RunConfig, seed: u64, profile: Profile, engine: Engine) -> String {
    let mut h = blake3::Hasher::new();
    h.update(serde_json::to_string(config).unwrap_or_default().as_bytes());
    h.update(
        format!(
            "|seed={seed}|task={}|code={}|libtorch={}|threads={}|format={RESULT_FORMAT}|profile={}|env={:?}",
            crate::task::SIGNATURE,
            engine.code,
            engine.libtorch,
            config.train.threads,
            profile.id(),
            profile.env(),
        )
        .as_bytes(),
    );
    if !profile.comparable() {
        let p = Platform::this();
        h.update(format!("|cpu={}|isa={}", p.cpu, p.isa).as_bytes());
    }
    h.finalize().to_hex()[..24].to_string()
}

/// The cache key of an intervening run at one seed: the key of the trained run it reads
/// (its config, seed, engine, libtorch, threads, format and profile), what it switches off
/// and how (`config.intervene`), and the code of `revtx-intervene` (its own fingerprint).
pub fn intervention_key(trained_key: &str, config: &RunConfig, code: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"intervene|trained=");
    h.update(trained_key.as_bytes());
    h.update(b"|intervene=");
    h.update(
        serde_json::to_string(&config.intervene)
            .unwrap_or_default()
            .as_bytes(),
    );
    h.update(format!("|code={code}|format={RESULT_FORMAT}").as_bytes());
    h.finalize().to_hex()[..24].to_string()
}

/// blake3 over the entry's result and weights (if present).
pub fn checksum(dir: &Path) -> Option<String> {
    let result = std::fs::read(dir.join(RESULT_FILE)).ok()?;
    let weights = std::fs::read(dir.join(WEIGHTS_FILE)).ok();
    Some(checksum_of(&result, weights.as_deref()))
}

/// blake3 over a result's and its weights' bytes, as `checksum` reads them.
pub fn checksum_of(result: &[u8], weights: Option<&[u8]>) -> String {
    let mut h = blake3::Hasher::new();
    h.update(RESULT_FILE.as_bytes());
    h.update(result);
    if let Some(w) = weights {
        h.update(WEIGHTS_FILE.as_bytes());
        h.update(w);
    }
    h.finalize().to_hex().to_string()
}

/// [`checksum_of`] with the weights read from `weights` in pieces, never held whole: a warm
/// build verifies some 90 MB of weights, and reading each file into a fresh buffer made the
/// kernel zero as many pages again. A missing file counts as no weights, as in `checksum`.
fn checksum_streaming(result: &[u8], weights: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut h = blake3::Hasher::new();
    h.update(RESULT_FILE.as_bytes());
    h.update(result);
    match std::fs::File::open(weights) {
        Ok(mut f) => {
            h.update(WEIGHTS_FILE.as_bytes());
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match f.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        h.update(&buf[..n]);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    Ok(h.finalize().to_hex().to_string())
}

/// Whether the entry at `dir` keeps its trained weights.
pub fn has_weights(dir: &Path) -> bool {
    dir.join(WEIGHTS_FILE).is_file()
}

/// Whether `dir` holds a complete entry whose checksum matches its content.
pub fn verifies(dir: &Path) -> bool {
    let want = std::fs::read_to_string(dir.join(CHECKSUM_FILE)).ok();
    want.is_some() && want.as_deref().map(str::trim) == checksum(dir).as_deref()
}

/// Reads and verifies the entry for `(config, seed, profile)`. `Err` says why it cannot
/// be trusted.
pub fn load(
    dir: &Path,
    config: &RunConfig,
    seed: u64,
    profile: Profile,
) -> Result<RunResult, String> {
    if !dir.exists() {
        return Err("not cached".into());
    }
    let want = std::fs::read_to_string(dir.join(CHECKSUM_FILE))
        .map_err(|_| "cache entry has no checksum".to_string())?;
    // Each file is read once: checked against the checksum, then parsed.
    let text =
        std::fs::read(dir.join(RESULT_FILE)).map_err(|e| format!("cache entry unreadable: {e}"))?;
    let sum = checksum_streaming(&text, &dir.join(WEIGHTS_FILE))
        .map_err(|e| format!("cache entry unreadable: {e}"))?;
    if sum != want.trim() {
        return Err("cache entry is corrupt (checksum mismatch)".into());
    }
    let r: RunResult =
        serde_json::from_slice(&text).map_err(|e| format!("cache entry does not parse: {e}"))?;
    if r.config != *config
        || r.seed != seed
        || r.format != RESULT_FORMAT
        || r.env.profile != profile.id()
    {
        return Err("cache entry is for another config".into());
    }
    // A training run's weights may be left out (the book's store keeps them only where
    // something reads them): the checksum says whether they were, and a caller that needs
    // them asks `has_weights`.
    Ok(r)
}

/// A digest of what a run computed: its weights' bytes and its result's bytes as written,
/// every top-level field but `env` (where, when and how fast it ran). Two machines that
/// compute the same bits give the same digest; two entries under one key whose digests
/// differ were not computed alike, down to a single bit of a single float: the fields are
/// hashed as the engine wrote them, never re-parsed into numbers.
pub fn content_digest(dir: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(dir.join(RESULT_FILE)).map_err(|e| e.to_string())?;
    let fields: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut h = blake3::Hasher::new();
    for (name, raw) in fields.iter().filter(|(name, _)| *name != "env") {
        h.update(name.as_bytes());
        h.update(&[0]);
        h.update(raw.get().as_bytes());
        h.update(&[0]);
    }
    if let Ok(w) = std::fs::read(dir.join(WEIGHTS_FILE)) {
        h.update(&w);
    }
    Ok(h.finalize().to_hex()[..32].to_string())
}

/// Two cache entries with the same key that hold different computations.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub key: String,
    pub first: std::path::PathBuf,
    pub second: std::path::PathBuf,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "two cache entries for key {} hold different bits: {} and {}; they were computed \
             under different numerics (the numeric profiles or platforms differ), so neither \
             can be trusted over the other",
            self.key,
            self.first.display(),
            self.second.display()
        )
    }
}

/// Looks a key up in several run caches (`<cache>/runs/<key>`), in order. Entries that
/// verify must agree (see `content_digest`); the first one is used. With one entry there is
/// nothing to compare, and no digest is computed.
pub fn find(
    caches: &[std::path::PathBuf],
    key: &str,
    config: &RunConfig,
    seed: u64,
    profile: Profile,
) -> Result<(std::path::PathBuf, RunResult), FindError> {
    let mut found: Option<(std::path::PathBuf, RunResult)> = None;
    let mut first_digest: Option<String> = None;
    let mut why = "not cached".to_string();
    for cache in caches {
        let dir = cache.join("runs").join(key);
        match load(&dir, config, seed, profile) {
            Ok(r) => match &found {
                None => found = Some((dir, r)),
                Some((first, _)) => {
                    let d = match &first_digest {
                        Some(d) => d.clone(),
                        None => content_digest(first).map_err(FindError::Invalid)?,
                    };
                    if content_digest(&dir).map_err(FindError::Invalid)? != d {
                        return Err(FindError::Conflict(Conflict {
                            key: key.to_string(),
                            first: first.clone(),
                            second: dir,
                        }));
                    }
                    first_digest = Some(d);
                }
            },
            Err(e) if e == "not cached" => {}
            Err(e) => why = e,
        }
    }
    match found {
        Some((dir, r)) => Ok((dir, r)),
        None => Err(FindError::Invalid(why)),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FindError {
    /// Not cached, or no entry that verifies: why.
    Invalid(String),
    Conflict(Conflict),
}

/// What `merge` did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Merged {
    pub copied: usize,
    pub already: usize,
    /// Entries that do not verify (half-written or corrupt): skipped, never copied.
    pub skipped: Vec<std::path::PathBuf>,
}

/// Copies every verified entry of the `sources` caches into `into`. An entry whose key
/// `into` already holds must carry the same computation, or the merge fails.
pub fn merge(into: &Path, sources: &[std::path::PathBuf]) -> Result<Merged, String> {
    let mut m = Merged::default();
    let dst_runs = into.join("runs");
    std::fs::create_dir_all(&dst_runs).map_err(|e| format!("{}: {e}", dst_runs.display()))?;
    for src in sources {
        let runs = src.join("runs");
        let Ok(entries) = std::fs::read_dir(&runs) else {
            return Err(format!(
                "{} holds no run cache (no runs/ directory)",
                src.display()
            ));
        };
        let mut dirs: Vec<std::path::PathBuf> =
            entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        for dir in dirs {
            let Some(key) = dir.file_name().and_then(|n| n.to_str()).map(String::from) else {
                continue;
            };
            if key.starts_with('.') || !dir.is_dir() {
                continue;
            }
            if !verifies(&dir) {
                m.skipped.push(dir);
                continue;
            }
            let dst = dst_runs.join(&key);
            if verifies(&dst) {
                if content_digest(&dst)? != content_digest(&dir)? {
                    return Err(Conflict {
                        key,
                        first: dst,
                        second: dir,
                    }
                    .to_string());
                }
                m.already += 1;
                continue;
            }
            write(&dst, |tmp| {
                for f in [RESULT_FILE, WEIGHTS_FILE] {
                    if dir.join(f).exists() {
                        std::fs::copy(dir.join(f), tmp.join(f))?;
                    }
                }
                Ok(())
            })
            .map_err(|e| format!("copying {} into {}: {e}", dir.display(), dst.display()))?;
            m.copied += 1;
        }
    }
    Ok(m)
}

/// Writes an entry atomically: `fill` writes the result and weights into a temp directory
/// beside `out`, the checksum is added last, and the directory is renamed into place. An
/// entry already at `out` that verifies is kept (runs are deterministic, so another build
/// produced the same); anything else there is stale or corrupt and is replaced.
pub fn write(out: &Path, fill: impl FnOnce(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
    let parent = out
        .parent()
        .ok_or_else(|| std::io::Error::other("the entry's directory has no parent"))?;
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .tempdir_in(parent)?;
    fill(tmp.path())?;
    let sum =
        checksum(tmp.path()).ok_or_else(|| std::io::Error::other("the new entry has no result"))?;
    std::fs::write(tmp.path().join(CHECKSUM_FILE), sum)?;
    if verifies(out) {
        return Ok(()); // `tmp` is removed on drop
    }
    if out.exists() {
        std::fs::remove_dir_all(out)?;
    }
    let tmp = tmp.keep();
    if let Err(e) = std::fs::rename(&tmp, out) {
        let _ = std::fs::remove_dir_all(&tmp);
        if !verifies(out) {
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_profiles_seeds_and_configs() {
        let c = RunConfig::reference();
        let e = Engine {
            code: "0123456789abcdef",
            libtorch: "2.13.0",
        };
        let k = key(&c, 0, Profile::Portable, e);
        assert_eq!(k, key(&c, 0, Profile::Portable, e));
        assert_ne!(k, key(&c, 1, Profile::Portable, e));
        assert_ne!(k, key(&c, 0, Profile::Native, e));
        let mut c2 = c.clone();
        c2.train.steps += 1;
        assert_ne!(k, key(&c2, 0, Profile::Portable, e));
        let other = Engine {
            code: "0123456789abcdee",
            ..e
        };
        assert_ne!(k, key(&c, 0, Profile::Portable, other));
        let other = Engine {
            libtorch: "2.13.1",
            ..e
        };
        assert_ne!(k, key(&c, 0, Profile::Portable, other));
    }

    /// Each value of the config, changed alone, changes the key: the defaults among them
    /// (ε, β, the task, the letters, the norm...) as much as the values a run block writes.
    #[test]
    fn every_value_enters_the_key() {
        let engine = Engine {
            code: "0123456789abcdef",
            libtorch: "2.13.0",
        };
        let reference = RunConfig::reference();
        let want = key(&reference, 0, Profile::Portable, engine);
        let mut eps = reference.clone();
        eps.train.eps = 2e-8;
        assert_ne!(key(&eps, 0, Profile::Portable, engine), want, "ε at 2e-8");
        let v = serde_json::to_value(&reference).unwrap();
        let mut paths = Vec::new();
        crate::experiments::tests::member_paths(&v, "", &mut paths);
        let mut changed = 0;
        for path in &paths {
            let mut w = v.clone();
            let (parent, last) = crate::experiments::tests::parent_of(&mut w, path);
            let other = match &parent[&last] {
                serde_json::Value::Bool(b) => serde_json::json!(!b),
                serde_json::Value::Number(n) if n.is_u64() => {
                    serde_json::json!(n.as_u64().unwrap() + 1)
                }
                serde_json::Value::Number(n) => serde_json::json!(n.as_f64().unwrap() * 0.5 + 0.25),
                serde_json::Value::String(s) => serde_json::json!(format!("{s}x")),
                serde_json::Value::Array(a) => {
                    let mut a = a.clone();
                    a.pop();
                    serde_json::Value::Array(a)
                }
                _ => continue,
            };
            parent.insert(last, other);
            // A changed word is no longer a value of its enum: only the others parse.
            if let Ok(c2) = serde_json::from_value::<RunConfig>(w) {
                assert_ne!(key(&c2, 0, Profile::Portable, engine), want, "{path}");
                changed += 1;
            }
        }
        assert!(changed >= 35, "{changed} values changed");
    }

    /// The streamed checksum is `checksum_of` over the same bytes, with and without
    /// weights, across the read buffer's size.
    #[test]
    fn streamed_checksum_is_the_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join(WEIGHTS_FILE);
        let result = b"{\"a\": 1}";
        assert_eq!(
            checksum_streaming(result, &w).unwrap(),
            checksum_of(result, None)
        );
        let weights: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&w, &weights).unwrap();
        assert_eq!(
            checksum_streaming(result, &w).unwrap(),
            checksum_of(result, Some(&weights))
        );
        assert_ne!(
            checksum_streaming(result, &w).unwrap(),
            checksum_of(result, Some(&weights[1..]))
        );
    }

    #[test]
    fn written_entries_verify_and_corrupt_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("runs").join("k");
        write(&out, |d| std::fs::write(d.join(RESULT_FILE), b"{}")).unwrap();
        assert!(verifies(&out));
        std::fs::write(out.join(RESULT_FILE), b"{ }").unwrap();
        assert!(!verifies(&out));
        write(&out, |d| std::fs::write(d.join(RESULT_FILE), b"{}")).unwrap();
        assert!(verifies(&out), "a corrupt entry is replaced");
    }
}
