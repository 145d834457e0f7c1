//! The output folder is the tool's own: `build --out` refuses the book, the project, the
//! folders above them, `templates/`, `static/`, the cache, `/`, the home folder and any
//! non-empty folder without a site marker, with exit 2 and every file left as it was.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every file under `dir` with its bytes and every folder, in name order (what must not
/// change), skipping the run cache's bookkeeping.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(Result::unwrap)
        .map(|e| {
            let bytes = e
                .file_type()
                .is_file()
                .then(|| std::fs::read(e.path()).unwrap());
            (e.path().to_path_buf(), bytes)
        })
        .collect()
}

/// A fixture project inside a folder of its own, beside a file of the user's and a home
/// folder holding one, so that "above the project" and "the home folder" can be tried.
struct World {
    top: tempfile::TempDir,
    project: Project,
}

impl World {
    fn new() -> Self {
        let top = tempfile::tempdir().unwrap();
        let project = Project::new("# Chapter\n\nA chapter with no runs.\n");
        // The project is moved into `top/project`, beside the user's things.
        let root = top.path().join("project");
        copy_dir(project.root(), &root);
        std::fs::write(top.path().join("beside.txt"), b"the user's file").unwrap();
        std::fs::create_dir_all(top.path().join("home/docs")).unwrap();
        std::fs::write(top.path().join("home/docs/letter.txt"), b"dear").unwrap();
        std::fs::create_dir_all(root.join("mine")).unwrap();
        std::fs::write(root.join("mine/notes.txt"), b"notes").unwrap();
        std::fs::write(root.join("notes.txt"), b"a file").unwrap();
        std::fs::create_dir_all(root.join(".revtx-cache")).unwrap();
        std::fs::write(root.join(".revtx-cache/keep"), b"cache").unwrap();
        World { top, project }
    }

    fn root(&self) -> PathBuf {
        self.top.path().join("project")
    }

    /// `revtx-book build --out <out>` from the project root, HOME at `top/home`.
    fn build(&self, out: &str) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_revtx-book"))
            .current_dir(self.root())
            .env("HOME", self.top.path().join("home"))
            .args(["build", "--no-pdf", "--offline", "--quiet", "--out", out])
            .output()
            .unwrap()
    }
}

#[test]
fn every_forbidden_out_is_refused_and_nothing_is_touched() {
    let w = World::new();
    let _ = &w.project;
    let top = w.top.path().to_string_lossy().into_owned();
    let home = format!("{top}/home");
    let cases: &[(&str, &str)] = &[
        ("book", "it is the project's `book/`"),
        ("book/site", "it lies inside the project's `book/`"),
        (".", "it is the project root"),
        ("..", "it holds the project root"),
        (&top, "it holds the project root"),
        ("/", "it is the root of the file system"),
        ("templates", "it is the project's `templates/`"),
        ("static/site", "it lies inside the project's `static/`"),
        (".revtx-cache", "it is a run cache"),
        (".revtx-cache/runs/site", "it lies inside a run cache"),
        (&home, "it is the home folder"),
        ("mine", "it is not empty and holds no site of revtx-book's"),
        ("notes.txt", "it exists and is not a folder"),
    ];
    assert_eq!(cases.len(), 13);
    let before = snapshot(w.top.path());
    assert!(
        before.len() > 20,
        "the world holds {} entries",
        before.len()
    );
    for (out, why) in cases {
        let o = w.build(out);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--out {out}: {stderr}");
        assert!(
            stderr.contains("error[out-dir]: refusing to write the site to `"),
            "--out {out}: {stderr}"
        );
        assert!(
            stderr.contains(why),
            "--out {out}: want `{why}` in {stderr}"
        );
        assert_eq!(snapshot(w.top.path()), before, "--out {out} changed a file");
    }
}

/// A folder the tool wrote is rebuilt; a file put in it survives, and a site without the
/// marker (or with a marker of someone else's) is refused.
#[test]
fn a_site_the_tool_wrote_is_rebuilt_and_keeps_the_users_files() {
    let w = World::new();
    let o = w.build("site");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let site = w.root().join("site");
    assert!(site.join(".revtx-book-site").is_file());
    assert!(site.join("index.html").is_file());
    std::fs::write(site.join("CNAME"), b"book.example.org").unwrap();
    // The chapter changes; the next build rewrites it and keeps the user's file.
    std::fs::write(
        w.root().join("book/chapter.md"),
        "# Chapter\n\nNew words.\n",
    )
    .unwrap();
    let o = w.build("site");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(site.join("CNAME")).unwrap(),
        b"book.example.org"
    );
    let page = std::fs::read_to_string(site.join("chapter-1.html")).unwrap();
    assert!(page.contains("New words."));

    // Without its marker the same folder is no longer provably the tool's.
    std::fs::remove_file(site.join(".revtx-book-site")).unwrap();
    let before = snapshot(w.top.path());
    let o = w.build("site");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(snapshot(w.top.path()), before);
    std::fs::write(site.join(".revtx-book-site"), "someone else's\nCNAME\n").unwrap();
    let before = snapshot(w.top.path());
    let o = w.build("site");
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("is not a marker revtx-book wrote"),
        "{stderr}"
    );
    assert_eq!(snapshot(w.top.path()), before);
}

/// An empty folder is taken as a new site.
#[test]
fn an_empty_folder_is_a_new_site() {
    let w = World::new();
    std::fs::create_dir_all(w.root().join("empty")).unwrap();
    let o = w.build("empty");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(w.root().join("empty/index.html").is_file());
}

/// Through the library: a refused folder is one `out-dir` error, and nothing ran.
#[test]
fn a_refused_out_is_an_out_dir_error() {
    use revtx_book::book::codes::Code;
    use revtx_book::book::diag::Severity;
    let p = Project::new(&format!("# T\n\n{TINY_RUN}\n"));
    let mut opts = p.options(true);
    opts.out = Some(p.root().join("book"));
    let o = revtx_book::book::build(&opts);
    let got: Vec<_> = o.diags.iter().map(|d| (d.code, d.severity)).collect();
    assert_eq!(got, vec![(Code::OutDir, Severity::Error)]);
    assert!(!p.root().join(".revtx-cache/runs").exists(), "it trained");
    assert!(p.root().join("book/chapter.md").is_file());
}
