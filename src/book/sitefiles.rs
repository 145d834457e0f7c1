//! The site as the set of files it must hold, assembled in memory, and the writer that
//! makes `site/` hold exactly them while touching only the files that changed.
//!
//! A build renders every page before it writes anything, so a failed or interrupted build
//! leaves the previous site as it was. The first build writes a temporary sibling and
//! renames it into place; later ones rewrite only changed files (each through a temp file
//! and a rename), re-link a run's download only when the cache entry behind it changed,
//! and remove what the book no longer makes.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where a file's bytes come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Made by the build.
    Bytes(Vec<u8>),
    /// A run cache file, hard-linked (copied where links cannot be made). Cache entries
    /// are never modified in place, so the same inode means the same bytes.
    Link(PathBuf),
    /// A project file (under `static/`), copied: nothing written into the site may ever
    /// reach the sources.
    Copy(PathBuf),
}

/// The site's files by path relative to the site root (`/`-separated).
#[derive(Debug, Default)]
pub struct Files {
    files: BTreeMap<String, Source>,
}

/// What `Files::write` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub written: usize,
    pub unchanged: usize,
    pub removed: usize,
}

impl Files {
    pub fn bytes(&mut self, rel: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        self.files.insert(rel.into(), Source::Bytes(bytes.into()));
    }

    pub fn link(&mut self, rel: impl Into<String>, from: &Path) {
        self.files
            .insert(rel.into(), Source::Link(from.to_path_buf()));
    }

    /// Every file under `from`, copied to the same place under `rel`.
    pub fn copy_tree(&mut self, rel: &str, from: &Path) -> Result<()> {
        for entry in walkdir::WalkDir::new(from).follow_links(true) {
            let entry = entry?;
            if entry.file_type().is_file() {
                let sub = entry
                    .path()
                    .strip_prefix(from)?
                    .to_string_lossy()
                    .into_owned();
                self.files
                    .insert(format!("{rel}/{sub}"), Source::Copy(entry.into_path()));
            }
        }
        Ok(())
    }

    /// Makes `out` hold exactly these files.
    pub fn write(&self, out: &Path) -> Result<Written> {
        if !out.is_dir() {
            return self.write_fresh(out);
        }
        let mut w = Written::default();
        for (rel, src) in &self.files {
            let dest = out.join(rel);
            if same(&dest, src) {
                w.unchanged += 1;
                continue;
            }
            put(&dest, src).with_context(|| format!("writing {}", dest.display()))?;
            w.written += 1;
        }
        // What the book no longer makes; then the folders that held only that.
        let mut dirs = Vec::new();
        for entry in walkdir::WalkDir::new(out).min_depth(1) {
            let entry = entry?;
            let rel = entry
                .path()
                .strip_prefix(out)?
                .to_string_lossy()
                .into_owned();
            if entry.file_type().is_dir() {
                dirs.push(entry.into_path());
            } else if !self.files.contains_key(&rel) {
                std::fs::remove_file(entry.path())?;
                w.removed += 1;
            }
        }
        for d in dirs.iter().rev() {
            let _ = std::fs::remove_dir(d); // only succeeds when empty
        }
        Ok(w)
    }

    /// The first build: everything into a temporary sibling, renamed into place.
    fn write_fresh(&self, out: &Path) -> Result<Written> {
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let tmp = tempfile::Builder::new()
            .prefix(".site-tmp-")
            .tempdir_in(parent)?;
        for (rel, src) in &self.files {
            let dest = tmp.path().join(rel);
            if let Some(d) = dest.parent() {
                std::fs::create_dir_all(d)?;
            }
            match src {
                Source::Bytes(b) => std::fs::write(&dest, b)?,
                Source::Link(from) => link_or_copy(from, &dest)?,
                Source::Copy(from) => {
                    std::fs::copy(from, &dest)
                        .with_context(|| format!("copying {}", from.display()))?;
                }
            }
        }
        if out.exists() {
            // Not a directory: something else is in the way.
            anyhow::bail!("{} exists and is not a directory", out.display());
        }
        std::fs::rename(tmp.keep(), out)
            .with_context(|| format!("moving the new site into {}", out.display()))?;
        Ok(Written {
            written: self.files.len(),
            ..Written::default()
        })
    }
}

/// Whether `dest` already holds `src`'s bytes.
fn same(dest: &Path, src: &Source) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dest) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    match src {
        Source::Bytes(b) => {
            meta.len() == b.len() as u64 && std::fs::read(dest).is_ok_and(|d| d == *b)
        }
        // Linked: the same file or not, whatever the bytes (an older entry's file with the
        // same bytes is re-linked once, not compared at every build). Across devices, where
        // the link was a copy, the bytes are compared.
        Source::Link(from) => std::fs::metadata(from).is_ok_and(|f| {
            if f.dev() == meta.dev() {
                f.ino() == meta.ino()
            } else {
                f.len() == meta.len() && std::fs::read(from).ok() == std::fs::read(dest).ok()
            }
        }),
        Source::Copy(from) => std::fs::metadata(from).is_ok_and(|f| {
            f.len() == meta.len() && std::fs::read(from).ok() == std::fs::read(dest).ok()
        }),
    }
}

/// Writes `src` at `dest` through a temporary file beside it and a rename, so that a
/// reader (the browser of `serve`) never sees half a file.
fn put(dest: &Path, src: &Source) -> Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    if std::fs::symlink_metadata(dest).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(dest)?;
    }
    match src {
        Source::Bytes(b) => super::site::write_atomic(dest, b)?,
        Source::Link(from) => {
            let tmp = dir.join(format!(".link-tmp-{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            link_or_copy(from, &tmp)?;
            std::fs::rename(&tmp, dest)?;
        }
        Source::Copy(from) => {
            let bytes =
                std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
            super::site::write_atomic(dest, &bytes)?;
        }
    }
    Ok(())
}

fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    }
    Ok(())
}

/// Every file under `dir` with its bytes, by path relative to `dir`, in name order; nothing
/// when `dir` does not exist. What a site holds, for comparing two builds.
///
/// # Panics
/// If a file under `dir` cannot be read: this is for tests of what a build wrote.
pub fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    if !dir.exists() {
        return Vec::new();
    }
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer leaves `out` holding exactly the files, rewrites only what changed, and
    /// keeps an unchanged file's inode (and so its mtime).
    #[test]
    fn writes_only_what_changed_and_removes_what_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("w.bin");
        std::fs::write(&cache, b"weights").unwrap();
        let stat = tmp.path().join("static");
        std::fs::create_dir_all(stat.join("fonts")).unwrap();
        std::fs::write(stat.join("fonts/a.woff2"), b"font").unwrap();
        let out = tmp.path().join("site");

        let mut first = Files::default();
        first.bytes("index.html", "<p>one</p>");
        first.bytes("old.html", "gone next time");
        first.link("runs/w.bin", &cache);
        first.copy_tree("static", &stat).unwrap();
        assert_eq!(first.write(&out).unwrap().written, 4);
        let ino = |rel: &str| std::fs::metadata(out.join(rel)).unwrap().ino();
        let (index, font) = (ino("index.html"), ino("static/fonts/a.woff2"));
        assert_eq!(ino("runs/w.bin"), std::fs::metadata(&cache).unwrap().ino());

        let mut second = Files::default();
        second.bytes("index.html", "<p>one</p>");
        second.bytes("new/page.html", "<p>two</p>");
        second.link("runs/w.bin", &cache);
        second.copy_tree("static", &stat).unwrap();
        let done = second.write(&out).unwrap();
        assert_eq!(
            done,
            Written {
                written: 1,
                unchanged: 3,
                removed: 1
            }
        );
        assert_eq!(
            (ino("index.html"), ino("static/fonts/a.woff2")),
            (index, font)
        );
        assert_eq!(
            files_under(&out),
            vec![
                ("index.html".to_string(), b"<p>one</p>".to_vec()),
                ("new/page.html".to_string(), b"<p>two</p>".to_vec()),
                ("runs/w.bin".to_string(), b"weights".to_vec()),
                ("static/fonts/a.woff2".to_string(), b"font".to_vec()),
            ]
        );

        // A changed file is rewritten; nothing else is touched.
        let mut third = Files::default();
        third.bytes("index.html", "<p>changed</p>");
        third.bytes("new/page.html", "<p>two</p>");
        third.link("runs/w.bin", &cache);
        third.copy_tree("static", &stat).unwrap();
        let done = third.write(&out).unwrap();
        assert_eq!((done.written, done.unchanged, done.removed), (1, 3, 0));
        assert_eq!(
            std::fs::read(out.join("index.html")).unwrap(),
            b"<p>changed</p>"
        );
        assert_eq!(ino("static/fonts/a.woff2"), font);
    }
}
