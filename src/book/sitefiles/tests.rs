//! The site writer's tests: what changes, what is kept, what a failure or a kill leaves.

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

/// The fallback's renames, the build killed after none, one, two or all three of them
/// with a file of the user's in the site: the next build (which recovers first) finds
/// the old site or the new one whole, the user's file in it, and writes the new one.
#[test]
fn a_kill_inside_the_fallback_swap_loses_nothing() {
    for renames in 0..=3 {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("site");
        let mut first = Files::default();
        first.bytes("index.html", "old");
        first.write(&out, &state(tmp.path(), &out)).unwrap();
        std::fs::write(out.join("CNAME"), b"book.example.org").unwrap();
        let mut second = Files::default();
        second.bytes("index.html", "new");
        let killed = second.write_by(&out, &state(tmp.path(), &out), Swap::KilledAfter(renames));
        assert!(killed.is_err(), "{renames}");
        // The next build.
        recover(&out);
        let page = std::fs::read(out.join("index.html")).unwrap();
        let expect: &[u8] = if renames >= 2 { b"new" } else { b"old" };
        assert_eq!(page, expect, "after {renames} renames");
        assert_eq!(
            std::fs::read(out.join("CNAME")).unwrap(),
            b"book.example.org",
            "{renames}"
        );
        second.write(&out, &state(tmp.path(), &out)).unwrap();
        assert_eq!(std::fs::read(out.join("index.html")).unwrap(), b"new");
        assert_eq!(
            std::fs::read(out.join("CNAME")).unwrap(),
            b"book.example.org",
            "{renames}"
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("site")], "{renames}");
    }
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
