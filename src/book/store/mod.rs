//! The results kept with the book: one file per cache key in the folder book.toml names
//! (`store = "results"`), the entry's result and (where something reads them) its weights,
//! compressed and checksummed. A build reads it before it trains, writes what it lacks.
//!
//! A stored file is `<key>.run`:
//!
//! ```text
//! revtx-stored-run 1
//! blake3 <hex of every byte after this line>
//! members result.json [weights.safetensors]
//! <blank line>
//! <deflate of: "result.json <n>\n" n bytes ["weights.safetensors <m>\n" m bytes]>
//! ```
//!
//! The checksum is over the bytes as stored, so a file that was damaged or edited by hand
//! without its checksum is refused before it is decompressed or parsed. One that was
//! edited and given a new checksum reads, and only a retrain finds it: `audit`.

mod needs;
#[cfg(test)]
mod tests;

pub use needs::{table_reads, weights_read, WeightsRead};

use revtx_spec::entry::{self, RESULT_FILE, WEIGHTS_FILE};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The first line of every stored file.
const MAGIC: &str = "revtx-stored-run 1";
/// The stored files' extension.
pub const EXT: &str = "run";
/// The prefix of a file being written, beside its final place, before it is renamed there.
const PARTIAL_PREFIX: &str = ".tmp-stored-";

/// A stored entry, read and verified: the bytes of the cache entry's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub result: Vec<u8>,
    pub weights: Option<Vec<u8>>,
}

/// Why a stored file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The file is not there.
    Missing,
    /// Its bytes do not match its checksum, or it is not a stored run at all: refused
    /// before anything in it is read.
    Corrupt(String),
    /// It cannot be read or written.
    Io(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Missing => f.write_str("not stored"),
            StoreError::Corrupt(why) | StoreError::Io(why) => f.write_str(why),
        }
    }
}

/// The store: a folder of `<key>.run` files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    pub dir: PathBuf,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The file of `key`.
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{EXT}"))
    }

    /// Every key the store holds (a file `<key>.run`), sorted; none when the folder is not
    /// there yet.
    pub fn keys(&self) -> BTreeSet<String> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return BTreeSet::new();
        };
        rd.filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let key = name.strip_suffix(&format!(".{EXT}"))?;
                (!key.starts_with('.') && is_key(key)).then(|| key.to_string())
            })
            .collect()
    }

    /// The bytes all stored files take.
    pub fn bytes(&self) -> u64 {
        self.keys()
            .iter()
            .filter_map(|k| std::fs::metadata(self.path(k)).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Reads and verifies `key`'s file: its checksum first, then its body.
    pub fn read(&self, key: &str) -> Result<Stored, StoreError> {
        let path = self.path(key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::Missing),
            Err(e) => return Err(StoreError::Io(format!("{}: {e}", path.display()))),
        };
        decode(&bytes).map_err(|why| StoreError::Corrupt(format!("{}: {why}", path.display())))
    }

    /// Whether `key`'s file holds weights, from its header alone (`None`: not stored).
    pub fn has_weights(&self, key: &str) -> Option<bool> {
        let mut head = [0u8; 160];
        let mut f = std::fs::File::open(self.path(key)).ok()?;
        let n = f.read(&mut head).ok()?;
        let m = members(&head[..n])?;
        Some(m.iter().any(|m| m == WEIGHTS_FILE))
    }

    /// Stores a cache entry's result, and its weights when `weights` asks for them and the
    /// entry has them, under `key`: into a temp file beside its place, then renamed.
    pub fn put(&self, key: &str, entry_dir: &Path, weights: bool) -> Result<u64, StoreError> {
        let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", entry_dir.display()));
        let result = std::fs::read(entry_dir.join(RESULT_FILE)).map_err(io)?;
        let weights = if weights {
            std::fs::read(entry_dir.join(WEIGHTS_FILE)).ok()
        } else {
            None
        };
        self.write(key, &Stored { result, weights })
    }

    /// Writes `stored` under `key` (temp file and rename); returns the bytes written.
    pub fn write(&self, key: &str, stored: &Stored) -> Result<u64, StoreError> {
        let io = |e: std::io::Error| StoreError::Io(format!("{}: {e}", self.dir.display()));
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let bytes = encode(stored);
        let mut tmp = tempfile::Builder::new()
            .prefix(PARTIAL_PREFIX)
            .tempfile_in(&self.dir)
            .map_err(io)?;
        tmp.write_all(&bytes).map_err(io)?;
        tmp.persist(self.path(key))
            .map_err(|e| StoreError::Io(format!("{}: {}", self.path(key).display(), e.error)))?;
        Ok(bytes.len() as u64)
    }

    /// Writes `key`'s stored entry into the run cache as `<runs>/<key>/` (the cache's own
    /// format, with its checksum), replacing whatever was there; returns the entry.
    pub fn unpack(&self, key: &str, runs_dir: &Path) -> Result<PathBuf, StoreError> {
        let stored = self.read(key)?;
        let out = runs_dir.join(key);
        entry::write(&out, |tmp| {
            std::fs::write(tmp.join(RESULT_FILE), &stored.result)?;
            if let Some(w) = &stored.weights {
                std::fs::write(tmp.join(WEIGHTS_FILE), w)?;
            }
            Ok(())
        })
        .map_err(|e| StoreError::Io(format!("{}: {e}", out.display())))?;
        Ok(out)
    }

    /// Removes the stored files of `keys`; returns the bytes freed.
    pub fn remove(&self, keys: &BTreeSet<String>) -> Result<u64, StoreError> {
        let mut freed = 0;
        for k in keys {
            let path = self.path(k);
            freed += std::fs::metadata(&path).map_or(0, |m| m.len());
            std::fs::remove_file(&path)
                .map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
        }
        Ok(freed)
    }
}

/// A warning at book.toml's `store` when it keeps results no run of the book uses: their
/// keys, and the command that removes them.
pub fn unused(
    store: &Store,
    at: &crate::book::diag::Span,
    plans: &[crate::book::runs::RunPlan],
    profile: revtx_spec::profile::Profile,
) -> Option<crate::book::diag::Diagnostic> {
    let used: BTreeSet<String> = crate::book::runs::jobs(plans, profile)
        .into_iter()
        .map(|j| j.key)
        .collect();
    let unused: Vec<String> = store.keys().difference(&used).cloned().collect();
    if unused.is_empty() {
        return None;
    }
    let shown: Vec<&str> = unused.iter().take(5).map(String::as_str).collect();
    let more = unused.len().saturating_sub(shown.len());
    Some(
        crate::book::diag::Diagnostic::warning(
            crate::book::codes::Code::UnusedResult,
            Some(at.clone()),
            format!(
                "the store keeps {} result(s) that no run of the book uses",
                unused.len()
            ),
        )
        .note(format!(
            "{}{}",
            shown.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() }
        ))
        .hint("`revtx-book store prune` removes them (a run whose config, seed or engine changed has a new key)"),
    )
}

/// A cache key: 24 lowercase hex digits (`entry::key`). Nothing else in the folder is a
/// stored run, and nothing else is ever removed from it.
fn is_key(s: &str) -> bool {
    s.len() == 24 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The stored file's bytes.
///
/// # Panics
/// Never: it writes into memory.
pub fn encode(stored: &Stored) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(format!("{RESULT_FILE} {}\n", stored.result.len()).as_bytes());
    body.extend_from_slice(&stored.result);
    let mut members = String::from(RESULT_FILE);
    if let Some(w) = &stored.weights {
        body.extend_from_slice(format!("{WEIGHTS_FILE} {}\n", w.len()).as_bytes());
        body.extend_from_slice(w);
        members += " ";
        members += WEIGHTS_FILE;
    }
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&body).expect("writing into memory");
    let mut rest = format!("members {members}\n\n").into_bytes();
    rest.extend_from_slice(&z.finish().expect("writing into memory"));
    let mut out = format!("{MAGIC}\nblake3 {}\n", blake3::hash(&rest).to_hex()).into_bytes();
    out.extend_from_slice(&rest);
    out
}

/// The members a stored file's header lists (`result.json`, `weights.safetensors`), read
/// from its first lines alone and not verified: what a full read would find, if it verifies.
pub fn members(head: &[u8]) -> Option<Vec<String>> {
    let mut lines = head.split(|&b| b == b'\n');
    (lines.next()? == MAGIC.as_bytes()).then_some(())?;
    lines.next()?;
    let m = std::str::from_utf8(lines.next()?.strip_prefix(b"members ")?).ok()?;
    Some(m.split(' ').map(String::from).collect())
}

/// Reads a stored file's bytes: the header, the checksum against everything after it
/// (before anything is decompressed), then the members.
pub fn decode(bytes: &[u8]) -> Result<Stored, String> {
    let mut lines = bytes.splitn(3, |&b| b == b'\n');
    let (Some(magic), Some(sum), Some(rest)) = (lines.next(), lines.next(), lines.next()) else {
        return Err("not a stored run (its header is cut short)".into());
    };
    if magic != MAGIC.as_bytes() {
        return Err(format!("not a stored run (it does not start `{MAGIC}`)"));
    }
    let want = sum
        .strip_prefix(b"blake3 ")
        .ok_or("its header has no `blake3` checksum")?;
    if blake3::hash(rest).to_hex().as_bytes() != want {
        return Err(
            "its checksum does not match its bytes: it was damaged or edited by hand, and is refused unread"
                .into(),
        );
    }
    let mut parts = rest.splitn(3, |&b| b == b'\n');
    let (Some(listed), Some(blank), Some(packed)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err("its header is cut short".into());
    };
    let listed = std::str::from_utf8(listed)
        .ok()
        .and_then(|l| l.strip_prefix("members "))
        .ok_or("its header lists no members")?;
    if !blank.is_empty() {
        return Err("its header does not end in a blank line".into());
    }
    let mut body = Vec::new();
    flate2::read::DeflateDecoder::new(packed)
        .read_to_end(&mut body)
        .map_err(|e| format!("it does not decompress: {e}"))?;
    let (result, rest) = member(&body, RESULT_FILE)?;
    let weights = if listed.split(' ').any(|m| m == WEIGHTS_FILE) {
        let (w, rest) = member(rest, WEIGHTS_FILE)?;
        if !rest.is_empty() {
            return Err("it has bytes after its weights".into());
        }
        Some(w.to_vec())
    } else if rest.is_empty() {
        None
    } else {
        return Err("it has bytes its header does not list".into());
    };
    Ok(Stored {
        result: result.to_vec(),
        weights,
    })
}

/// `name <n>\n` and the n bytes after it; the rest.
fn member<'a>(body: &'a [u8], name: &str) -> Result<(&'a [u8], &'a [u8]), String> {
    let nl = body
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| format!("its `{name}` is cut short"))?;
    let head = std::str::from_utf8(&body[..nl]).map_err(|_| format!("no `{name}` in it"))?;
    let n: usize = head
        .strip_prefix(name)
        .and_then(|r| r.strip_prefix(' '))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no `{name}` where it should be"))?;
    let rest = &body[nl + 1..];
    if rest.len() < n {
        return Err(format!("its `{name}` is cut short"));
    }
    Ok(rest.split_at(n))
}
