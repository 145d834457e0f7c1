//! The output folder: proves that a folder is the tool's before anything in it is written
//! or removed. A site holds a marker file listing every file the last build wrote; only
//! those are ever replaced or removed, and a folder without one must be empty or absent.
//!
//! Refused outright, whatever they hold: `/`, the home folder and any folder above it, the
//! project root and any folder above it, and the book, `templates/`, `static/` and the run
//! caches, with every folder inside or above them.

use super::codes::Code;
use super::diag::Diagnostic;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The marker a site folder holds: its name, and the first line of its text.
pub const MARKER: &str = ".revtx-book-site";
const MARKER_HEAD: &str = "revtx-book site: the files below were written by revtx-book build";

/// What the output folder holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutState {
    /// Absent, or an empty folder: the site is written whole and renamed into place.
    Fresh,
    /// A site the tool wrote: the files its marker lists (paths relative to the folder).
    Ours(BTreeSet<String>),
}

/// The marker's text for a site of these files.
pub fn marker_text<'a>(files: impl Iterator<Item = &'a String>) -> String {
    let mut s = String::from(MARKER_HEAD);
    s.push('\n');
    for f in files {
        s.push_str(f);
        s.push('\n');
    }
    s
}

/// The files a marker lists, or `None` when the text is not a marker.
pub fn parse_marker(text: &str) -> Option<BTreeSet<String>> {
    let mut lines = text.lines();
    (lines.next()? == MARKER_HEAD).then(|| {
        lines
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    })
}

/// `p` as an absolute path with every symlink of its existing part resolved and the `.`
/// and `..` of the rest applied.
pub fn resolve(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    // The deepest ancestor that exists, resolved; the rest appended as written.
    let mut base = abs.as_path();
    let mut rest = Vec::new();
    let mut resolved = loop {
        if let Ok(c) = std::fs::canonicalize(base) {
            break c;
        }
        match (base.parent(), base.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                base = parent;
            }
            // `..` as the last component: go up lexically.
            (Some(parent), None) => {
                rest.push("..".into());
                base = parent;
            }
            (None, _) => break PathBuf::from("/"),
        }
    };
    for name in rest.into_iter().rev() {
        match Path::new(&name).components().next() {
            Some(Component::ParentDir) => {
                resolved.pop();
            }
            Some(Component::CurDir) | None => {}
            Some(_) => resolved.push(name),
        }
    }
    resolved
}

/// The folders a site may never be written to, over or under, with what each is.
fn protected(root: &Path, caches: &[PathBuf]) -> Vec<(PathBuf, String, bool)> {
    // (folder, what it is, whether a site inside it is refused too)
    let mut out = vec![(resolve(root), "the project root".to_string(), false)];
    for d in ["book", "templates", "static"] {
        out.push((
            resolve(&root.join(d)),
            format!("the project's `{d}/`"),
            true,
        ));
    }
    for c in caches {
        out.push((resolve(c), "a run cache".to_string(), true));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        out.push((
            resolve(Path::new(&home)),
            "the home folder".to_string(),
            false,
        ));
    }
    out
}

/// The folder `build` writes the book's own site to, under the project root.
pub const BOOK_SITE: &str = "site";

/// `build --seed-shift K`'s refusal of the book's own site, however `out` spells it
/// (`site`, `./site`, `site/`, an absolute path or a link to it): a site of other seeds'
/// numbers must never replace the real one.
pub fn refuse_book_site(root: &Path, out: &Path) -> Option<Diagnostic> {
    let own = resolve(&root.join(BOOK_SITE));
    (resolve(out) == own).then(|| {
        Diagnostic::error(
            Code::OutDir,
            None,
            format!(
                "refusing to write a seed-shifted site to `{}`: it is the book's own site ({})",
                out.display(),
                own.display()
            ),
        )
        .hint("build --seed-shift writes a site of other seeds' numbers; give it an --out of its own, e.g. `--out site-shifted`")
    })
}

/// Whether the tool may write its site into `out`, and what `out` holds now. A refusal is
/// an `out-dir` error naming the folder; nothing has been touched.
pub fn check(root: &Path, caches: &[PathBuf], out: &Path) -> Result<OutState, Diagnostic> {
    let target = resolve(out);
    let refuse = |why: String| {
        Diagnostic::error(
            Code::OutDir,
            None,
            format!("refusing to write the site to `{}`: {why}", out.display()),
        )
    };
    if target.parent().is_none() {
        return Err(refuse("it is the root of the file system".into())
            .hint("give --out a folder of its own, e.g. `--out site`"));
    }
    for (dir, what, inside) in protected(root, caches) {
        let why = if target == dir {
            format!("it is {what} ({})", dir.display())
        } else if dir.starts_with(&target) {
            format!("it holds {what} ({})", dir.display())
        } else if inside && target.starts_with(&dir) {
            format!("it lies inside {what} ({})", dir.display())
        } else {
            continue;
        };
        return Err(refuse(why).hint("give --out a folder of its own, e.g. `--out site`"));
    }
    let meta = match std::fs::symlink_metadata(&target) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OutState::Fresh),
        Err(e) => return Err(refuse(format!("it cannot be read ({e})"))),
    };
    if !meta.is_dir() {
        return Err(refuse("it exists and is not a folder".into()));
    }
    let mut entries =
        std::fs::read_dir(&target).map_err(|e| refuse(format!("it cannot be read ({e})")))?;
    if entries.next().is_none() {
        return Ok(OutState::Fresh);
    }
    match std::fs::read_to_string(target.join(MARKER)) {
        Ok(text) => parse_marker(&text)
            .map(OutState::Ours)
            .ok_or_else(|| refuse(format!("its `{MARKER}` is not a marker revtx-book wrote"))),
        Err(_) => Err(refuse(format!(
            "it is not empty and holds no site of revtx-book's (no `{MARKER}` in it)"
        ))
        .hint(
            "give --out an empty or new folder; a site written by a revtx-book older than \
             the marker can be deleted by hand and built again",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_applies_dots_past_what_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        assert_eq!(
            resolve(&tmp.path().join("a/b/../c/./d")),
            base.join("a/c/d")
        );
        assert_eq!(resolve(&tmp.path().join("new/..")), base);
        assert_eq!(resolve(&tmp.path().join("..")), base.parent().unwrap());
        std::os::unix::fs::symlink(&base, base.join("link")).unwrap();
        assert_eq!(resolve(&base.join("link/x")), base.join("x"));
    }

    #[test]
    fn marker_round_trips_and_rejects_other_text() {
        let files: BTreeSet<String> = ["a.html".to_string(), "runs/x.json".to_string()].into();
        assert_eq!(parse_marker(&marker_text(files.iter())), Some(files));
        assert_eq!(parse_marker("something else\na.html\n"), None);
        assert_eq!(parse_marker(""), None);
    }
}
