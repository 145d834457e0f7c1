//! The run cache: what reruns, what is never trusted, what trains once, and a failed
//! build that leaves the site as it was.

mod common;
use common::*;
use revtx_book::book::codes::Code;

/// Changing a run's config re-runs that run alone; editing prose re-runs nothing.
#[test]
fn cache_reruns_only_what_changed() {
    let two = format!("# C\n\n{TINY_RUN}\n\n```run other\nbase = \"tiny\"\nseed = 1\n```\n\nText [103,244]{{=tiny.params}}.\n");
    let p = Project::new(&two);
    let first = p.check();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    assert!(
        runs_of(&first).iter().all(|l| l.contains("ran")),
        "{:?}",
        first.run_report
    );
    std::fs::write(
        p.root().join("book/chapter.md"),
        two.replace("Text", "Edited prose"),
    )
    .unwrap();
    let second = p.check();
    assert!(
        runs_of(&second).iter().all(|l| l.ends_with("cached")),
        "{:?}",
        second.run_report
    );
    std::fs::write(
        p.root().join("book/chapter.md"),
        two.replace("seed = 1", "seed = 2"),
    )
    .unwrap();
    let third = p.check();
    let ran: Vec<_> = runs_of(&third)
        .into_iter()
        .filter(|l| l.contains("ran"))
        .collect();
    assert_eq!(ran.len(), 1, "{:?}", third.run_report);
    assert!(ran[0].starts_with("other"), "{ran:?}");
}

/// The one cache entry under `runs` (its files, not the bookkeeping beside them).
fn only_entry(runs: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap()
}

/// A corrupt cache entry is detected and re-run, never trusted.
#[test]
fn corrupt_cache_entry_is_rerun() {
    let src = format!("# C\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}}\n");
    let p = Project::new(&src);
    assert_eq!(p.check().errors(), 0);
    let runs = p.root().join(".revtx-cache/runs");
    let entry = only_entry(&runs);
    let json = entry.join("result.json");
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::write(&json, &text[..text.len() / 2]).unwrap();
    let again = p.check();
    assert_eq!(again.errors(), 0);
    assert!(
        runs_of(&again)[0].contains("corrupt"),
        "{:?}",
        again.run_report
    );
    // --offline refuses to train instead.
    std::fs::write(&json, "{}").unwrap();
    let mut opts = p.options(false);
    opts.runs.offline = true;
    let off = revtx_book::book::build(&opts);
    assert!(
        off.diags.iter().any(|d| d.code == Code::Offline),
        "{:?}",
        located(&off)
    );
    assert!(
        located(&off)
            .iter()
            .any(|(_, _, m)| m.contains("--offline")),
        "{:?}",
        located(&off)
    );
}

/// A failed build leaves the previous site intact.
#[test]
fn failed_build_keeps_previous_site() {
    let good = format!("# C\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}}\n");
    let p = Project::new(&good);
    assert_eq!(p.build().errors(), 0);
    let index = std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap();
    std::fs::write(
        p.root().join("book/chapter.md"),
        good.replace("103,244", "5"),
    )
    .unwrap();
    assert!(p.build().errors() > 0);
    assert_eq!(
        std::fs::read_to_string(p.root().join("site/chapter-1.html")).unwrap(),
        index
    );
}

/// The issue's test: one cached result corrupted on purpose (its accuracy edited, its
/// checksum made to match) turns an asserted sentence false, and `check --offline` fails
/// at that sentence's line.
#[test]
fn a_corrupted_cached_result_falsifies_its_asserted_sentence() {
    let src = format!(
        "# C\n\n{TINY_RUN}\n\nThirty steps are too few: [most test strings come out wrong]{{? tiny.train.test.accuracy < 0.5}}.\n"
    );
    let p = Project::new(&src);
    let first = p.check();
    assert_eq!(first.errors(), 0, "{:?}", located(&first));
    let runs = p.root().join(".revtx-cache/runs");
    let entry = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .unwrap();
    let json = entry.join("result.json");
    let mut result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    result["train"]["test"]["accuracy"] = serde_json::json!(0.95);
    std::fs::write(&json, serde_json::to_string_pretty(&result).unwrap()).unwrap();
    let sum = revtx_spec::entry::checksum(&entry).unwrap();
    std::fs::write(entry.join("checksum"), sum).unwrap();

    let mut opts = p.options(false);
    opts.runs.offline = true;
    let out = revtx_book::book::build(&opts);
    let got = located(&out);
    let line = 4 + TINY_RUN.lines().count();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (line, 28), "{got:?}");
    assert!(got[0].2.starts_with("[assertion-false]"), "{got:?}");
    assert!(
        out.diags[0]
            .notes
            .contains(&"tiny.train.test.accuracy = 0.95".to_string()),
        "{:?}",
        out.diags[0].notes
    );
}

/// Runs that share a cache key (here `tiny` and seed 0 of the ensemble `ens`) train once,
/// and both read the one result.
#[test]
fn runs_sharing_a_key_train_once() {
    let src = format!(
        "# Shared\n\n{TINY_RUN}\n\n```run ens\nbase = \"tiny\"\nseeds = [0, 1]\n```\n\n\
         [103,244]{{=tiny.params}}.\n"
    );
    let p = Project::new(&src);
    let out = p.check();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let lines = runs_of(&out);
    let ran: Vec<_> = lines.iter().filter(|l| l.contains("ran")).collect();
    let shared: Vec<_> = lines.iter().filter(|l| l.contains("same run as")).collect();
    assert_eq!(ran.len(), 2, "two distinct keys train: {lines:?}");
    assert_eq!(shared.len(), 1, "one job reads another's result: {lines:?}");
    let entries = std::fs::read_dir(p.root().join(".revtx-cache/runs"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(entries, 2, "two cache entries");
}

/// `--jobs 0` is refused with a message, not silently replaced.
#[test]
fn zero_jobs_is_refused() {
    let p = Project::new("# C\n\nText.\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["check", "-q", "--jobs", "0", "--root"])
        .arg(p.root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--jobs") && stderr.contains("at least 1"),
        "{stderr}"
    );
}

/// A chapter that is a symlink to a file outside book/ is refused at its entry, as
/// `include` refuses one; the file is not read.
#[test]
fn a_chapter_linked_from_outside_the_book_is_refused() {
    let p = Project::new("# C\n\nText.\n");
    let outside = p.root().join("outside.md");
    std::fs::write(&outside, "# Outside\n\nSECRET 12345\n").unwrap();
    std::os::unix::fs::symlink(&outside, p.root().join("book/linked.md")).unwrap();
    std::fs::write(
        p.root().join("book/book.toml"),
        "title = \"T\"\nauthor = \"A\"\nchapters = [\"chapter.md\", \"linked.md\"]\n",
    )
    .unwrap();
    let out = p.build();
    let got = located(&out);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0, got[0].1), (3, 27), "{got:?}");
    assert!(
        got[0].2.contains("[chapter-outside]") && got[0].2.contains("link to a file outside"),
        "{got:?}"
    );
    assert!(
        !p.root().join("site").exists(),
        "no site for a failed build"
    );
}

/// A run that outlives its time budget fails at its directive, and nothing is cached.
#[test]
fn a_run_over_its_time_budget_fails_at_its_directive() {
    let p = Project::new(&format!("# T\n\n{TINY_RUN}\n"));
    let mut opts = p.options(false);
    opts.runs.timeout = std::time::Duration::from_millis(1);
    let out = revtx_book::book::build(&opts);
    let failed: Vec<_> = out
        .diags
        .iter()
        .filter(|d| d.code == Code::RunFailed)
        .collect();
    assert_eq!(failed.len(), 1, "{:?}", located(&out));
    assert!(
        failed[0].message.contains("run `tiny` seed 0 failed"),
        "{:?}",
        failed[0]
    );
    assert_eq!(
        located(&out)[0].0,
        3,
        "at the run's fence: {:?}",
        located(&out)
    );
    assert!(
        files_under(&p.root().join(".revtx-cache/runs")).is_empty(),
        "a failed run left a cache entry"
    );
}

/// `serve`'s memo of verified entries (`remember_verified`): an entry whose files are as
/// they were is taken without reading it again, and one whose weights changed in place
/// (same size, new bytes) is read and verified afresh, so it is caught as corrupt.
#[test]
fn the_serve_memo_never_hides_a_changed_entry() {
    let src = format!("# C\n\n{TINY_RUN}\n\n[103,244]{{=tiny.params}}\n");
    let p = Project::new(&src);
    let memo = || {
        let mut opts = p.options(false);
        opts.runs.remember_verified = true;
        revtx_book::book::build(&opts)
    };
    assert_eq!(memo().errors(), 0);
    let runs = p.root().join(".revtx-cache/runs");
    let entry = only_entry(&runs);
    // Remembered: the second build takes it from the memo, as cached.
    let again = memo();
    assert_eq!(again.errors(), 0);
    assert!(
        runs_of(&again)[0].contains("cached"),
        "{:?}",
        again.run_report
    );
    // The weights rewritten in place, the same length: the memo must not answer for them.
    let weights = entry.join("weights.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::thread::sleep(std::time::Duration::from_millis(10));
    std::fs::write(&weights, &bytes).unwrap();
    let changed = memo();
    assert_eq!(changed.errors(), 0);
    assert!(
        runs_of(&changed)[0].contains("corrupt"),
        "{:?}",
        changed.run_report
    );
}

/// `--offline` on an empty cache: the figure of a declared run that could not train says
/// nothing of its own (the run's `offline` error says why), never "unknown run".
#[test]
fn offline_on_an_empty_cache_blames_the_cache_not_the_run() {
    let p = Project::new(&format!(
        "# C\n\n{TINY_RUN}\n\n```figure fig-loss\nkind = \"loss\"\nruns = [\"tiny\"]\ncaption = \"Loss.\"\n```\n"
    ));
    let mut opts = p.options(false);
    opts.runs.offline = true;
    let off = revtx_book::book::build(&opts);
    let codes: Vec<Code> = off.diags.iter().map(|d| d.code).collect();
    assert_eq!(codes, [Code::Offline], "{:?}", located(&off));
}
