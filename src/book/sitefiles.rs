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
        swap(tmp.path(), &out)?;
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

/// The name of the temporary folders the site is assembled in, beside the site.
const TMP_PREFIX: &str = ".revtx-site-tmp-";

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
    // No exchange here: the old site aside, the new one in, the old one where `new` was.
    let aside = new.with_extension("old");
    std::fs::rename(out, &aside)?;
    std::fs::rename(new, out)?;
    std::fs::rename(&aside, new)?;
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
mod tests {
    use super::*;

    /// What `out` holds now, as the build would see it.
    fn state(root: &Path, out: &Path) -> OutState {
        outdir::check(root, &[], out).unwrap()
    }

    /// The writer leaves `out` holding exactly the files, rewrites only what changed, and
    /// keeps an unchanged file's inode (and so its mtime).
    #[test]
    fn writes_only_what_changed_and_removes_what_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("w.bin");
        std::fs::write(&cache, b"weights").unwrap();
        let stat = tmp.path().join("assets");
        std::fs::create_dir_all(stat.join("fonts")).unwrap();
        std::fs::write(stat.join("fonts/a.woff2"), b"font").unwrap();
        let out = tmp.path().join("site");
        let write = |f: &Files| f.write(&out, &state(tmp.path(), &out)).unwrap();

        let mut first = Files::default();
        first.bytes("index.html", "<p>one</p>");
        first.bytes("old.html", "gone next time");
        first.link("runs/w.bin", &cache);
        first.copy_tree("static", &stat).unwrap();
        assert_eq!(write(&first).written, 4);
        let ino = |rel: &str| std::fs::metadata(out.join(rel)).unwrap().ino();
        let (index, font) = (ino("index.html"), ino("static/fonts/a.woff2"));
        assert_eq!(ino("runs/w.bin"), std::fs::metadata(&cache).unwrap().ino());

        let mut second = Files::default();
        second.bytes("index.html", "<p>one</p>");
        second.bytes("new/page.html", "<p>two</p>");
        second.link("runs/w.bin", &cache);
        second.copy_tree("static", &stat).unwrap();
        let done = write(&second);
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
                (
                    outdir::MARKER.to_string(),
                    outdir::marker_text(second.files.keys()).into_bytes()
                ),
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
        let done = write(&third);
        assert_eq!((done.written, done.unchanged, done.removed), (1, 3, 0));
        assert_eq!(
            std::fs::read(out.join("index.html")).unwrap(),
            b"<p>changed</p>"
        );
        assert_eq!(ino("static/fonts/a.woff2"), font);

        // The same files again: nothing is written, the folder itself is not replaced.
        let folder = std::fs::metadata(&out).unwrap().ino();
        let done = write(&third);
        assert_eq!((done.written, done.unchanged, done.removed), (0, 4, 0));
        assert_eq!(std::fs::metadata(&out).unwrap().ino(), folder);
        // No temporary folder is left beside the site.
        let beside: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TMP_PREFIX))
            .collect();
        assert_eq!(beside, Vec::<String>::new());
    }

    /// A file the user put in the site survives every build; one where the site now makes
    /// a file of the same name stops the build with the site untouched.
    #[test]
    fn the_users_files_in_the_site_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("site");
        let write = |f: &Files| f.write(&out, &state(tmp.path(), &out));
        let mut first = Files::default();
        first.bytes("index.html", "one");
        first.bytes("gone.html", "made once");
        write(&first).unwrap();
        std::fs::create_dir_all(out.join("mine/empty")).unwrap();
        std::fs::write(out.join("mine/notes.txt"), b"the user's").unwrap();
        std::fs::write(out.join("CNAME"), b"book.example.org").unwrap();
        std::os::unix::fs::symlink("index.html", out.join("home.html")).unwrap();

        let mut second = Files::default();
        second.bytes("index.html", "two");
        write(&second).unwrap();
        let names: Vec<String> = files_under(&out).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [outdir::MARKER, "CNAME", "index.html", "mine/notes.txt"]
        );
        assert!(out.join("mine/empty").is_dir());
        assert_eq!(
            std::fs::read(out.join("mine/notes.txt")).unwrap(),
            b"the user's"
        );
        assert_eq!(
            std::fs::read_link(out.join("home.html")).unwrap(),
            Path::new("index.html")
        );

        // The site would now make `CNAME`: an error, and nothing changes.
        let before = files_under(&out);
        let mut third = Files::default();
        third.bytes("index.html", "three");
        third.bytes("CNAME", "other");
        let err = write(&third).unwrap_err().to_string();
        assert!(err.contains("was not written by revtx-book"), "{err}");
        assert_eq!(files_under(&out), before);
    }

    /// An error half-way through writing (here a file that cannot be copied, written after
    /// others) leaves the old site exactly as it was, and no temporary folder behind.
    #[test]
    fn a_failed_write_leaves_the_old_site_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("site");
        let mut first = Files::default();
        for i in 0..20 {
            first.bytes(format!("page-{i:02}.html"), format!("old {i}"));
        }
        first.write(&out, &state(tmp.path(), &out)).unwrap();
        let before = files_under(&out);

        let mut second = Files::default();
        for i in 0..20 {
            second.bytes(format!("page-{i:02}.html"), format!("new {i}"));
        }
        second.files.insert(
            "zz-missing.css".into(),
            Source::Copy(tmp.path().join("nope")),
        );
        assert!(second.write(&out, &state(tmp.path(), &out)).is_err());
        assert_eq!(files_under(&out), before);
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("site")]);
    }

    /// A temporary folder a killed build left is removed by the next build; a folder of
    /// that name without our marker is not.
    #[test]
    fn stale_temporary_folders_are_swept_only_when_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let ours = tmp.path().join(format!("{TMP_PREFIX}abc"));
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::write(
            ours.join(outdir::MARKER),
            outdir::marker_text(std::iter::empty()),
        )
        .unwrap();
        let theirs = tmp.path().join(format!("{TMP_PREFIX}def"));
        std::fs::create_dir_all(&theirs).unwrap();
        std::fs::write(theirs.join("x"), b"keep").unwrap();
        let out = tmp.path().join("site");
        let mut f = Files::default();
        f.bytes("index.html", "x");
        f.write(&out, &state(tmp.path(), &out)).unwrap();
        assert!(!ours.exists());
        assert_eq!(std::fs::read(theirs.join("x")).unwrap(), b"keep");
    }
}
