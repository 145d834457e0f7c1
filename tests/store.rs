//! The results kept with the book (book.toml's `store`): a build with an empty cache reads
//! them and trains nothing; a damaged one is refused unread; one no run uses is reported and
//! pruned, and nothing else in the folder is touched; weights are kept only where something
//! reads them; `audit` retrains and finds a result edited by hand, at its run, seed and field.

mod common;
use common::*;
use revtx_book::book::codes::Code;
use revtx_book::book::store::{decode, encode, Store};
use std::process::Command;

const STORE: &str = "store = \"results\"\n";

fn stored_book(chapter: &str) -> Project {
    let p = Project::new(chapter);
    let toml = p.root().join("book/book.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text + STORE).unwrap();
    p
}

fn tiny(seeds: &str, steps: u32) -> String {
    let run = TINY_RUN.replace("steps = 30", &format!("steps = {steps}"));
    let run = run.replacen(
        "base = \"reference\"\n",
        &format!("base = \"reference\"\n{seeds}\n"),
        1,
    );
    format!("# T\n\n{run}\n\nIt trains for [{steps}]{{=tiny.config.train.steps}} steps.\n")
}

fn store_of(p: &Project) -> Store {
    Store::new(p.root().join("book/results"))
}

fn cli(p: &Project, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(args)
        .arg("--root")
        .arg(p.root())
        .arg("--quiet")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn clear_cache(p: &Project) {
    std::fs::remove_dir_all(p.root().join(".revtx-cache")).unwrap();
}

/// Rewrites the stored result of `key` with `edit` applied to its JSON, and a checksum that
/// matches: an edit the checksum cannot see.
fn edit_stored(store: &Store, key: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut s = decode(&std::fs::read(store.path(key)).unwrap()).unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&s.result).unwrap();
    edit(&mut v);
    s.result = serde_json::to_vec(&v).unwrap();
    std::fs::write(store.path(key), encode(&s)).unwrap();
}

#[test]
fn a_book_with_an_empty_cache_reads_its_store_and_trains_nothing() {
    let p = stored_book(&tiny("seeds = [0, 1]", 30));
    let first = p.check();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    assert_eq!(
        first
            .run_report
            .iter()
            .filter(|l| l.contains(": ran ("))
            .count(),
        2,
        "{:?}",
        first.run_report
    );
    let store = store_of(&p);
    assert_eq!(store.keys().len(), 2, "one stored result per seed");
    // Nothing reads the tiny run's weights: the store keeps none.
    for k in store.keys() {
        assert_eq!(store.has_weights(&k), Some(false), "{k}");
    }
    clear_cache(&p);
    let mut opts = p.options(false);
    opts.runs.offline = true; // training is an error now
    let second = revtx_book::book::build(&opts);
    assert_eq!(second.errors(), 0, "{:?}", located(&second));
    let from_store = second
        .run_report
        .iter()
        .filter(|l| l.ends_with(": from the store"))
        .count();
    assert_eq!(from_store, 2, "{:?}", second.run_report);
    let claims = |o: &revtx_book::book::Outcome| serde_json::to_string(&o.claims).unwrap();
    assert_eq!(
        claims(&first),
        claims(&second),
        "the same claims from the store"
    );
}

#[test]
fn weights_are_kept_where_a_widget_reads_them() {
    let chapter = format!(
        "{}\n```widget w\nmodels = [{{ run = \"tiny\" }}]\n```\n",
        tiny("seeds = [0, 1]", 30)
    );
    let p = stored_book(&chapter);
    let o = p.check();
    assert_eq!(o.errors(), 0, "{:?}", located(&o));
    let store = store_of(&p);
    let with: Vec<bool> = store
        .keys()
        .iter()
        .map(|k| store.has_weights(k) == Some(true))
        .collect();
    assert_eq!(
        with.iter().filter(|w| **w).count(),
        1,
        "the widget's first seed only: {with:?}"
    );
    // From the store alone, the site exports the widget's model.
    clear_cache(&p);
    let mut opts = p.options(true);
    opts.runs.offline = true;
    let built = revtx_book::book::build(&opts);
    assert_eq!(built.errors(), 0, "{:?}", located(&built));
}

#[test]
fn store_corrupt() {
    let p = stored_book(&tiny("seed = 0", 30));
    assert_eq!(p.check().errors(), 0);
    let store = store_of(&p);
    let key = store.keys().into_iter().next().unwrap();
    let mut bytes = std::fs::read(store.path(&key)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(store.path(&key), &bytes).unwrap();
    clear_cache(&p);
    let o = p.check();
    let refused: Vec<_> = o
        .diags
        .iter()
        .filter(|d| d.code == Code::StoreCorrupt)
        .collect();
    assert_eq!(refused.len(), 1, "{:?}", located(&o));
    assert_eq!(refused[0].severity, revtx_book::book::diag::Severity::Error);
    assert!(
        !o.run_report.iter().any(|l| l.contains(": ran (")),
        "nothing trains over a refused result: {:?}",
        o.run_report
    );
    assert_eq!(
        std::fs::read(store.path(&key)).unwrap(),
        bytes,
        "the file is left as it was"
    );
    let (ok, _, err) = cli(&p, &["check"]);
    assert!(!ok && err.contains("error[store-corrupt]"), "{err}");
}

#[test]
fn unused_result() {
    let p = stored_book(&tiny("seed = 0", 30));
    assert_eq!(p.check().errors(), 0);
    let old = store_of(&p).keys();
    // The run changes: its old result is no run's now.
    std::fs::write(p.root().join("book/chapter.md"), tiny("seed = 0", 31)).unwrap();
    let o = p.check();
    let unused: Vec<_> = o
        .diags
        .iter()
        .filter(|d| d.code == Code::UnusedResult)
        .collect();
    assert_eq!(unused.len(), 1, "{:?}", located(&o));
    let (ok, _, err) = cli(&p, &["check", "--deny-warnings"]);
    assert!(!ok && err.contains("error[unused-result]"), "{err}");
    let store = store_of(&p);
    assert_eq!(store.keys().len(), 2);
    std::fs::write(store.dir.join("NOTES.md"), "mine").unwrap();
    let (ok, out, err) = cli(&p, &["store", "prune"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("removed 1 unused results"), "{out}");
    let left = store.keys();
    assert_eq!(left.len(), 1);
    assert!(
        left.is_disjoint(&old),
        "the old key went, the new one stayed"
    );
    assert!(
        store.dir.join("NOTES.md").exists(),
        "prune removes stored results only"
    );
    assert_eq!(
        p.check()
            .diags
            .iter()
            .filter(|d| d.code == Code::UnusedResult)
            .count(),
        0
    );
}

#[test]
fn audit_mismatch() {
    let p = stored_book(&tiny("seeds = [0, 1]", 30));
    assert_eq!(p.check().errors(), 0);
    let (ok, out, err) = cli(&p, &["audit", "--all"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.matches(": same, bit for bit").count(), 2, "{out}");
    // One float of seed 1's losses, one bit away, with a checksum that matches.
    let store = store_of(&p);
    let seed1 = store
        .keys()
        .into_iter()
        .find(|k| {
            let s = store.read(k).unwrap();
            serde_json::from_slice::<serde_json::Value>(&s.result).unwrap()["seed"] == 1
        })
        .unwrap();
    edit_stored(&store, &seed1, |v| {
        let l = &mut v["train"]["losses"][7];
        let x = l.as_f64().unwrap();
        *l = serde_json::json!(f64::from_bits(x.to_bits() + 1));
    });
    let (ok, out, err) = cli(&p, &["audit", "--runs", "tiny"]);
    assert!(!ok, "an edited result passed the audit:\n{out}{err}");
    let code = format!("error[{}]", Code::AuditMismatch.name());
    assert!(err.contains(&code), "{err}");
    assert!(
        err.contains(
            "run `tiny` seed 1: retrained, it differs from its stored result at `train.losses[7]`"
        ),
        "{err}"
    );
    assert!(
        out.contains("tiny seed 0 (") && out.contains("same, bit for bit"),
        "{out}"
    );
    // The build itself still reads it (its checksum matches): only the audit can tell.
    clear_cache(&p);
    let o = p.check();
    assert_eq!(o.errors(), 0, "{:?}", located(&o));
}

#[test]
fn a_store_outside_the_book_is_refused() {
    for bad in ["../elsewhere", "/tmp/results", ".", "chapter.md"] {
        let p = Project::new(&tiny("seed = 0", 30));
        let toml = p.root().join("book/book.toml");
        let text = std::fs::read_to_string(&toml).unwrap();
        std::fs::write(&toml, format!("{text}store = \"{bad}\"\n")).unwrap();
        let o = p.check();
        assert!(
            o.diags.iter().any(|d| d.code == Code::FileOutside),
            "{bad}: {:?}",
            located(&o)
        );
    }
}
