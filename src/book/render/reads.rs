//! The files a chapter's rendering reads besides the book's sources (included listings, the
//! notebook's template and package), noted as they are read so that the render memo can
//! tell, on a later build, whether any of them changed.

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// One read: a file's text, or a folder's list of names, with the digest of what was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Read {
    pub path: PathBuf,
    pub folder: bool,
    pub digest: String,
}

thread_local! {
    /// The reads of the rendering in progress on this thread, when one is being recorded.
    static RECORDING: RefCell<Option<Vec<Read>>> = const { RefCell::new(None) };
}

fn note(path: &Path, folder: bool, digest: String) {
    RECORDING.with(|r| {
        if let Some(reads) = r.borrow_mut().as_mut() {
            let read = Read {
                path: path.to_path_buf(),
                folder,
                digest,
            };
            if !reads.contains(&read) {
                reads.push(read);
            }
        }
    });
}

/// `std::fs::read_to_string`, noted.
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    note(path, false, digest(text.as_bytes()));
    Ok(text)
}

/// The names in the folder `path`, sorted, noted.
pub fn folder_names(path: &Path) -> std::io::Result<Vec<String>> {
    let names = names_in(path)?;
    note(path, true, digest(names.join("\n").as_bytes()));
    Ok(names)
}

fn names_in(path: &Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// Runs `f`, returning what it gave and the files it read through this module.
pub fn recording<T>(f: impl FnOnce() -> T) -> (T, Vec<Read>) {
    let outer = RECORDING.with(|r| r.borrow_mut().replace(Vec::new()));
    let out = f();
    let reads = RECORDING.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (out, reads.unwrap_or_default())
}

/// Whether every file and folder of `reads` still holds what it held when it was read.
pub fn unchanged(reads: &[Read]) -> bool {
    reads.iter().all(|r| {
        let now = if r.folder {
            names_in(&r.path)
                .ok()
                .map(|names| digest(names.join("\n").as_bytes()))
        } else {
            std::fs::read(&r.path).ok().map(|b| digest(&b))
        };
        now.as_deref() == Some(r.digest.as_str())
    })
}

fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_noted_only_while_recording_and_a_change_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.py");
        std::fs::write(&f, "x = 1\n").unwrap();
        read_to_string(&f).unwrap();
        let ((), reads) = recording(|| {
            read_to_string(&f).unwrap();
            read_to_string(&f).unwrap();
            folder_names(dir.path()).unwrap();
        });
        assert_eq!(reads.len(), 2, "{reads:?}");
        assert!(unchanged(&reads));
        std::fs::write(dir.path().join("b.py"), "").unwrap();
        assert!(!unchanged(&reads), "a file added to a folder read");
        std::fs::remove_file(dir.path().join("b.py")).unwrap();
        assert!(unchanged(&reads));
        std::fs::write(&f, "x = 2\n").unwrap();
        assert!(!unchanged(&reads), "a file changed");
        std::fs::remove_file(&f).unwrap();
        assert!(!unchanged(&reads), "a file removed");
    }
}
