//! The site as the set of files it must hold, assembled in memory, and the writer that
//! makes `site/` hold exactly them, swapping the whole folder at once.
//!
//! A build renders every page before it writes anything, and writes the new site in a
//! temporary sibling that one atomic exchange puts in place, so a failed, interrupted or
//! killed build leaves the previous site whole. Unchanged files are hard links to the old
//! ones, a run's download is a hard link to its cache entry, and a build that changes
//! nothing writes nothing. Only files the last build's marker lists are ever replaced.

use super::outdir::{self, OutState};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
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

    /// Makes `out` hold exactly these files, given what it holds now (see
    /// [`outdir::check`]): a new site is written whole and renamed into place; an existing
    /// one is left alone when nothing changed, and otherwise rebuilt beside it (unchanged
    /// files hard-linked, so they keep their inodes) and swapped in with one atomic
    /// exchange. Files of the folder that the last build did not write are carried over;
    /// only files the last build's marker lists are ever replaced or removed.
    pub fn write(&self, out: &Path, state: &OutState) -> Result<Written> {
        self.write_by(out, state, Swap::Exchange)
    }

    /// [`Files::write`], the old site replaced as `how` says.
    fn write_by(&self, out: &Path, state: &OutState, how: Swap) -> Result<Written> {
        let out = outdir::resolve(out);
        let parent = out.parent().context("the site folder has no parent")?;
        std::fs::create_dir_all(parent)?;
        sweep_stale(parent);
        let previous = match state {
            OutState::Fresh => return self.write_fresh(&out, parent),
            OutState::Ours(previous) => previous,
        };
        let mut w = Written::default();
        let mut unchanged = BTreeSet::new();
        for (rel, src) in &self.files {
            if previous.contains(rel) && same(&out.join(rel), src) {
                unchanged.insert(rel.as_str());
            } else {
                w.written += 1;
            }
        }
        w.unchanged = unchanged.len();
        w.removed = previous
            .iter()
            .filter(|rel| !self.files.contains_key(*rel) && out.join(rel).exists())
            .count();
        if w.written == 0 && w.removed == 0 {
            return Ok(w);
        }
        let tmp = self.new_tree(parent)?;
        for (rel, src) in &self.files {
            let dest = tmp.path().join(rel);
            if unchanged.contains(rel.as_str()) {
                if let Some(d) = dest.parent() {
                    std::fs::create_dir_all(d)?;
                }
                link_or_copy(&out.join(rel), &dest)?;
            } else {
                create(&dest, src)?;
            }
        }
        self.carry_foreign(&out, tmp.path(), previous)?;
        match how {
            Swap::Exchange => swap(tmp.path(), &out)?,
            #[cfg(test)]
            Swap::KilledAfter(renames) => {
                swap_by_renames(tmp.path(), &out, renames)?;
                // The process dies here: nothing after it runs, no temporary folder is
                // cleaned up.
                let _ = tmp.keep();
                anyhow::bail!("killed after {renames} of the fallback's renames");
            }
        }
        // `tmp` now holds the old site, every foreign file of which was carried over.
        remove_old(&tmp.keep());
        Ok(w)
    }

    /// A temporary folder beside the site holding the new marker (first, so that a build
    /// killed while filling it leaves a folder the next build knows as its own).
    fn new_tree(&self, parent: &Path) -> Result<tempfile::TempDir> {
        let tmp = tempfile::Builder::new()
            .prefix(TMP_PREFIX)
            .tempdir_in(parent)?;
        std::fs::write(
            tmp.path().join(outdir::MARKER),
            outdir::marker_text(self.files.keys()),
        )?;
        Ok(tmp)
    }

    /// Copies into `new` (hard links where it can) every entry of `out` that the last build
    /// did not write: a file the user put in the site survives every build. A foreign file
    /// where the site now makes one of the same name is an error: nothing is lost.
    fn carry_foreign(&self, out: &Path, new: &Path, previous: &BTreeSet<String>) -> Result<()> {
        for entry in walkdir::WalkDir::new(out).min_depth(1) {
            let entry = entry?;
            let rel = entry
                .path()
                .strip_prefix(out)?
                .to_string_lossy()
                .into_owned();
            let ty = entry.file_type();
            if rel == outdir::MARKER || previous.contains(&rel) {
                continue;
            }
            let dest = new.join(&rel);
            if ty.is_dir() {
                if self.files.contains_key(&rel) {
                    anyhow::bail!(
                        "{} is a folder of yours where the site now makes a file: move it away",
                        entry.path().display()
                    );
                }
                // A folder is made for the files it holds; an empty one of the user's too.
                if std::fs::read_dir(entry.path())?.next().is_none() {
                    std::fs::create_dir_all(&dest)?;
                }
                continue;
            }
            if self.files.contains_key(&rel) || dest.exists() {
                anyhow::bail!(
                    "{} was not written by revtx-book, and the site now makes a file of that \
                     name: move it away",
                    entry.path().display()
                );
            }
            if let Some(d) = dest.parent() {
                std::fs::create_dir_all(d)?;
            }
            if ty.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &dest)?;
            } else {
                link_or_copy(entry.path(), &dest)?;
            }
        }
        Ok(())
    }

    /// A new site: everything into a temporary sibling, renamed into place.
    fn write_fresh(&self, out: &Path, parent: &Path) -> Result<Written> {
        let tmp = self.new_tree(parent)?;
        for (rel, src) in &self.files {
            create(&tmp.path().join(rel), src)?;
        }
        if std::fs::symlink_metadata(out).is_ok_and(|m| m.is_dir()) {
            // An empty folder (checked by `outdir::check`): the rename replaces it.
            std::fs::remove_dir(out)
                .with_context(|| format!("{} is no longer empty", out.display()))?;
        }
        std::fs::rename(tmp.keep(), out)
            .with_context(|| format!("moving the new site into {}", out.display()))?;
        Ok(Written {
            written: self.files.len(),
            ..Written::default()
        })
    }
}

/// How the new site replaces the old one.
#[derive(Clone, Copy, Debug)]
enum Swap {
    /// [`swap`]: one exchange, or three renames where the file system has none.
    Exchange,
    /// The three renames, the process killed after this many (tests).
    #[cfg(test)]
    KilledAfter(usize),
}

/// The name of the temporary folders the site is assembled in, beside the site.
const TMP_PREFIX: &str = ".revtx-site-tmp-";
/// The name the old site takes, beside itself, while the fallback swaps by renames.
const ASIDE_PREFIX: &str = ".revtx-site-aside-";

/// Where the old site `out` stands while [`swap_by_renames`] swaps it.
fn aside_of(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.with_file_name(format!("{ASIDE_PREFIX}{name}"))
}

/// Puts right what a build killed inside [`swap_by_renames`] left: with `out` gone, the
/// old site stands aside whole (the user's files in it) and goes back; with `out` there,
/// the new site is in place, carrying every file of the user's, and the old one goes. A
/// folder at the aside's name without our marker is not ours and is left alone. Run before
/// the output folder is looked at.
pub fn recover(out: &Path) {
    let out = outdir::resolve(out);
    let aside = aside_of(&out);
    if !aside.join(outdir::MARKER).is_file() {
        return;
    }
    if std::fs::symlink_metadata(&out).is_err() {
        let _ = std::fs::rename(&aside, &out);
    } else {
        remove_old(&aside);
    }
}

/// Removes the temporary folders a killed build left beside the site: only those named
/// as ours that hold our marker (whole, or its first bytes), or nothing at all (killed
/// before the marker was written).
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let named = e.file_name().to_string_lossy().starts_with(TMP_PREFIX);
        if !named || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        // A build killed while writing the marker leaves its first bytes.
        let marked = std::fs::read(e.path().join(outdir::MARKER)).is_ok_and(|b| {
            let head = outdir::marker_text(std::iter::empty());
            let n = b.len().min(head.len());
            b[..n] == head.as_bytes()[..n]
        });
        if marked {
            let _ = std::fs::remove_dir_all(e.path());
        } else {
            let _ = std::fs::remove_dir(e.path()); // only succeeds when empty
        }
    }
}

/// Removes the old site after the swap, its marker last: a build killed meanwhile leaves
/// a folder the next one still knows as its own.
fn remove_old(dir: &Path) {
    for e in walkdir::WalkDir::new(dir)
        .min_depth(1)
        .contents_first(true)
        .into_iter()
        .flatten()
    {
        if e.depth() == 1 && e.file_name() == outdir::MARKER {
            continue;
        }
        let _ = if e.file_type().is_dir() {
            std::fs::remove_dir(e.path())
        } else {
            std::fs::remove_file(e.path())
        };
    }
    let _ = std::fs::remove_file(dir.join(outdir::MARKER));
    let _ = std::fs::remove_dir(dir);
}

/// Exchanges the folders `new` and `out` in one step (`renameat2` with `RENAME_EXCHANGE`):
/// a reader sees the whole old site or the whole new one, and a build killed at any point
/// leaves one of them. Where the file system cannot exchange, two renames.
fn swap(new: &Path, out: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes());
    let (a, b) = (c(new)?, c(out)?);
    // SAFETY: two valid NUL-terminated paths, resolved against the current directory.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if !matches!(
        err.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP)
    ) {
        return Err(err).with_context(|| format!("swapping the new site into {}", out.display()));
    }
    swap_by_renames(new, out, 3)
}

/// The exchange as renames, for a file system without one: the old site aside, under a
/// name that says whose it is ([`aside_of`]), the new one in, the old one where `new` was;
/// `steps` of the three. A kill between them leaves what [`recover`] puts right.
fn swap_by_renames(new: &Path, out: &Path, steps: usize) -> Result<()> {
    let aside = aside_of(out);
    if steps >= 1 {
        std::fs::rename(out, &aside)?;
    }
    if steps >= 2 {
        std::fs::rename(new, out)?;
    }
    if steps >= 3 {
        std::fs::rename(&aside, new)?;
    }
    Ok(())
}

/// Writes `src` at `dest`, a path in a folder no one else reads yet.
fn create(dest: &Path, src: &Source) -> Result<()> {
    if let Some(d) = dest.parent() {
        std::fs::create_dir_all(d)?;
    }
    match src {
        Source::Bytes(b) => std::fs::write(dest, b)?,
        Source::Link(from) => link_or_copy(from, dest)?,
        Source::Copy(from) => {
            std::fs::copy(from, dest).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    Ok(())
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
mod tests;
