//! The theme that ships in the binary: `templates/` and `static/` as they were when it was
//! built. A book overrides any file by having its own at the same path under its root
//! (mdBook's `theme/`); a book without those folders builds with the defaults.

use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/theme.rs"));

/// The default's bytes of `rel` (`templates/page.html`), if the theme has it.
pub fn default(rel: &str) -> Option<&'static [u8]> {
    THEME
        .binary_search_by(|(p, _)| (*p).cmp(rel))
        .ok()
        .map(|i| THEME[i].1)
}

/// The bytes of `rel`: the book's own file under `root` if it has one, else the default.
pub fn read(root: &Path, rel: &str) -> Option<Vec<u8>> {
    std::fs::read(root.join(rel))
        .ok()
        .or_else(|| default(rel).map(<[u8]>::to_vec))
}

/// [`read`] as text.
pub fn text(root: &Path, rel: &str) -> Option<String> {
    read(root, rel).and_then(|b| String::from_utf8(b).ok())
}

/// The default theme's files under `dir` (`static`), as (path relative to `dir`, bytes).
pub fn defaults_under(dir: &str) -> impl Iterator<Item = (&'static str, &'static [u8])> + '_ {
    THEME.iter().filter_map(move |(p, b)| {
        p.strip_prefix(dir)
            .and_then(|r| r.strip_prefix('/'))
            .map(|r| (r, *b))
    })
}

/// A minijinja loader over `root/templates` with the theme's templates beneath it.
pub fn loader(
    root: &Path,
) -> impl Fn(&str) -> Result<Option<String>, minijinja::Error> + Send + Sync + 'static {
    let root = root.to_path_buf();
    move |name| Ok(text(&root, &format!("templates/{name}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_theme_holds_the_templates_and_static_files_and_a_book_overrides_them() {
        assert!(THEME.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
        assert!(default("templates/page.html").is_some());
        assert!(defaults_under("static").count() > 10);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read(dir.path(), "templates/page.html").as_deref(),
            default("templates/page.html")
        );
        std::fs::create_dir_all(dir.path().join("templates")).unwrap();
        std::fs::write(dir.path().join("templates/page.html"), "mine").unwrap();
        assert_eq!(text(dir.path(), "templates/page.html").unwrap(), "mine");
        assert_eq!(read(dir.path(), "templates/none.html"), None);
    }
}
