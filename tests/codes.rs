//! Diagnostics that no fixture book can produce (the cache, the machine, the command line),
//! each produced here by a test named after its code: the diagnostic is an error, and the
//! command line that meets it exits non-zero. `tests/fixtures.rs` lists these tests in
//! `PRODUCED_ELSEWHERE`. Also the guards against stale cache entries: an engine asked to
//! run a request keyed on another engine's code, and a cache entry for another config.

mod common;
use common::*;
use revtx_book::book::codes::Code;
use revtx_book::book::diag::Severity;
use revtx_book::book::Outcome;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The book's diagnostics of `code`, each of which must be an error.
fn errors_of(out: &Outcome, code: Code) -> usize {
    let of: Vec<_> = out.diags.iter().filter(|d| d.code == code).collect();
    assert!(!of.is_empty(), "no {code}: {:?}", located(out));
    for d in &of {
        assert_eq!(d.severity, Severity::Error, "{code} is not an error: {d:?}");
    }
    assert!(out.errors() > 0, "the outcome counts no error");
    of.len()
}

/// `revtx-book ARGS --root P`: its exit status must be a failure, and its standard error
/// must print the code as an error (`error[code]`).
fn cli_fails_with(p: &Project, args: &[&str], env: &[(&str, &Path)], code: Code) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_revtx-book"));
    cmd.args(args).arg("--root").arg(p.root()).arg("--quiet");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "`revtx-book {}` exited {:?} with {code}:\n{err}",
        args.join(" "),
        out.status.code()
    );
    assert!(
        err.contains(&format!("error[{}]", code.name())),
        "`revtx-book {}` does not print error[{}]:\n{err}",
        args.join(" "),
        code.name()
    );
    err
}

fn executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn tiny_book() -> Project {
    Project::new(&format!(
        "# T\n\n{TINY_RUN}\n\nIt trains for [30]{{=tiny.config.train.steps}} steps.\n"
    ))
}

/// The one cache entry under `cache/runs`.
fn only_entry(cache: &Path) -> PathBuf {
    let entries: Vec<PathBuf> = std::fs::read_dir(cache.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("result.json").exists())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].clone()
}

#[test]
fn offline() {
    let p = tiny_book();
    let mut opts = p.options(false);
    opts.runs.offline = true;
    errors_of(&revtx_book::book::build(&opts), Code::Offline);
    cli_fails_with(&p, &["check", "--offline"], &[], Code::Offline);
    cli_fails_with(&p, &["build", "--offline"], &[], Code::Offline);
    assert!(
        !p.root().join("site").exists(),
        "an offline failure wrote a site"
    );
}

#[test]
fn unknown_run() {
    let p = tiny_book();
    let mut opts = p.options(false);
    opts.runs.rerun.insert("tinny".into());
    errors_of(&revtx_book::book::build(&opts), Code::UnknownRun);
    cli_fails_with(&p, &["check", "--rerun", "tinny"], &[], Code::UnknownRun);
}

#[test]
fn run_failed() {
    let p = tiny_book();
    let mut opts = p.options(false);
    opts.runs.timeout = std::time::Duration::from_millis(1);
    errors_of(&revtx_book::book::build(&opts), Code::RunFailed);
    // The command line's budget is whole seconds: an engine that measures this machine
    // but fails every run fails the build the same way.
    let failing = p.root().join("failing-engine");
    std::fs::write(
        &failing,
        format!(
            "#!/bin/sh\nif [ \"$1\" = exec ]; then echo no >&2; exit 3; fi\nexec \"{}\" \"$@\"\n",
            engine_exe().display()
        ),
    )
    .unwrap();
    executable(&failing);
    cli_fails_with(
        &p,
        &["build"],
        &[("REVTX_ENGINE", &failing)],
        Code::RunFailed,
    );
    assert!(!p.root().join("site").exists(), "a failed run wrote a site");
}

#[test]
fn numerics_probe() {
    let p = tiny_book();
    let missing = p.root().join("no-such-engine");
    let mut opts = p.options(false);
    opts.runs.engine.clone_from(&missing);
    errors_of(&revtx_book::book::build(&opts), Code::NumericsProbe);
    cli_fails_with(
        &p,
        &["build"],
        &[("REVTX_ENGINE", &missing)],
        Code::NumericsProbe,
    );
    assert!(!p.root().join(".revtx-cache/runs").exists(), "it trained");
}

#[test]
fn bless() {
    let p = tiny_book();
    let mut opts = p.options(false);
    opts.bless = true;
    opts.runs.profile = revtx_spec::profile::Profile::Native;
    errors_of(&revtx_book::book::build(&opts), Code::Bless);
    cli_fails_with(
        &p,
        &["check", "--bless", "--profile", "native"],
        &[],
        Code::Bless,
    );
    assert!(p.chapter().contains("[30]{=tiny.config.train.steps}"));
}

/// Two caches whose entries under one key hold different bits: `build` (not only `merge`)
/// stops with an error, and writes no site.
#[test]
fn cache_conflict() {
    let p = tiny_book();
    assert_eq!(p.check().errors(), 0);
    let entry = only_entry(&p.root().join(".revtx-cache"));
    let other = p.root().join("other");
    let forged = other.join("runs").join(entry.file_name().unwrap());
    copy_dir(&entry, &forged);
    let mut weights = std::fs::read(forged.join("weights.safetensors")).unwrap();
    let last = weights.len() - 1;
    weights[last] ^= 1;
    std::fs::write(forged.join("weights.safetensors"), weights).unwrap();
    let sum = revtx_spec::entry::checksum(&forged).unwrap();
    std::fs::write(forged.join("checksum"), sum).unwrap();

    let mut opts = p.options(true);
    opts.runs.extra_caches.push(other.clone());
    errors_of(&revtx_book::book::build(&opts), Code::CacheConflict);
    assert!(!p.root().join("site").exists(), "a conflict wrote a site");
    let cache = p.root().join(".revtx-cache");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_revtx-book"));
    let out = cmd
        .args(["build", "--quiet", "--root"])
        .arg(p.root())
        .arg("--cache")
        .arg(&cache)
        .arg("--cache")
        .arg(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "build exited 0 on a conflict: {err}");
    assert!(err.contains("error[cache-conflict]"), "{err}");
    assert!(!p.root().join("site").exists(), "a conflict wrote a site");
}

/// A cache entry whose result is for another config, checksum and all in order (what an
/// entry under a reused or colliding key would hold), is never used: the run trains again,
/// and says why.
#[test]
fn a_cache_entry_for_another_config_is_not_used() {
    let p = tiny_book();
    assert_eq!(p.check().errors(), 0);
    let entry = only_entry(&p.root().join(".revtx-cache"));
    let text = std::fs::read_to_string(entry.join("result.json")).unwrap();
    let mut result: serde_json::Value = serde_json::from_str(&text).unwrap();
    let steps = &mut result["config"]["train"]["steps"];
    assert_eq!(steps.as_u64(), Some(30), "{result:#}");
    *steps = 31.into();
    std::fs::write(
        entry.join("result.json"),
        serde_json::to_string(&result).unwrap(),
    )
    .unwrap();
    let sum = revtx_spec::entry::checksum(&entry).unwrap();
    std::fs::write(entry.join("checksum"), sum).unwrap();

    // Offline, the entry is not a result: the build fails rather than read it.
    let mut opts = p.options(false);
    opts.runs.offline = true;
    let off = revtx_book::book::build(&opts);
    errors_of(&off, Code::Offline);
    // Online, it is not read as the run's result either (read, its 31 steps would make
    // the chapter's 30 a drift): the build says why.
    let out = p.check();
    let said = format!("{:?} {:?}", located(&out), runs_of(&out));
    assert!(
        !out.diags.iter().any(|d| d.code == Code::Drift),
        "the entry for another config was used: {said}"
    );
    assert!(said.contains("another config"), "{said}");
}

/// The engine refuses a request keyed on another engine's code (the run would be cached
/// under a key that does not describe what computed it), and writes no entry; the same
/// request with its own fingerprint trains.
#[test]
fn the_engine_refuses_a_request_for_another_engine() {
    let p = tiny_book();
    let mut opts = p.options(false);
    opts.runs.engine = p.root().join("recording-engine");
    // A wrapper that keeps each request the book sends, then runs the real engine.
    let keep = p.root().join("requests");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::write(
        &opts.runs.engine,
        format!(
            "#!/bin/sh\nif [ \"$1 $2\" = \"exec --request\" ]; then cp \"$3\" \"{}/$$.json\"; fi\nexec \"{}\" \"$@\"\n",
            keep.display(),
            engine_exe().display()
        ),
    )
    .unwrap();
    executable(&opts.runs.engine);
    let out = revtx_book::book::build(&opts);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let request = std::fs::read_dir(&keep)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("the book sent the engine no request (is `exec` still its command?)");
    let mut req: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&request).unwrap()).unwrap();
    let own = req["engine"].as_str().unwrap().to_string();

    let exec = |req: &serde_json::Value, name: &str| {
        let file = p.root().join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_string(req).unwrap()).unwrap();
        let out_dir = p.root().join(name);
        let out = Command::new(engine_exe())
            .args(["exec", "--request"])
            .arg(&file)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap();
        (out, out_dir)
    };
    req["engine"] = format!("{own}-another").into();
    let (out, dir) = exec(&req, "foreign");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the engine ran a foreign request: {err}"
    );
    assert!(err.contains("keyed the run on"), "{err}");
    assert!(
        !dir.join("result.json").exists(),
        "a refused request wrote an entry"
    );
    req["engine"] = own.into();
    let (out, dir) = exec(&req, "own");
    assert!(
        out.status.success() && dir.join("result.json").exists(),
        "the control request did not train: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The check of `PRODUCED_ELSEWHERE` takes a test that names the code, and refuses what the
/// issue found there: a file that only holds the list, and production code.
#[test]
fn a_code_is_produced_only_by_a_test_that_names_it() {
    let read = |f: &str| std::fs::read_to_string(repo().join(f)).unwrap();
    assert_eq!(
        common::producers::test_produces(&read("tests/codes.rs"), "unknown_run", Code::UnknownRun),
        Ok(())
    );
    // The list itself names every code, in no test.
    let here = read("tests/fixtures.rs");
    assert!(common::producers::test_produces(
        &here,
        "every_bad_input_gets_its_diagnostic",
        Code::UnknownRun
    )
    .is_err());
    // Production code names the code, and is no test.
    let err = common::producers::test_produces(
        &read("src/book/numerics.rs"),
        "gate_on",
        Code::NumericsUnsupported,
    )
    .unwrap_err();
    assert!(err.contains("is not a #[test]"), "{err}");
    // A prefix of another code's name is not the code.
    let text = "#[test]\nfn t() {\n    let _ = Code::NumericsFileX;\n}\n";
    assert!(common::producers::test_produces(text, "t", Code::NumericsFile).is_err());
    // A helper the test calls counts.
    let text = "fn helper() {\n    Code::Drift;\n}\n\n#[test]\nfn t() {\n    helper();\n}\n";
    assert_eq!(
        common::producers::test_produces(text, "t", Code::Drift),
        Ok(())
    );
    // An ignored test never runs; a comment, or an assertion that the code is absent,
    // produces nothing.
    for (text, why) in [
        (
            "#[test]\n#[ignore = \"slow\"]\nfn t() {\n    errors_of(&out, Code::Drift);\n}\n",
            "is #[ignore]d",
        ),
        (
            "#[test]\nfn t() {\n    // errors_of(&out, Code::Drift);\n    run();\n}\n",
            "never asks",
        ),
        (
            "#[test]\nfn t() {\n    assert!(out.diags.iter().all(|d| d.code != Code::Drift));\n}\n",
            "never asks",
        ),
        (
            "#[test]\nfn t() {\n    assert!(!out.diags.iter().any(|d| d.code == Code::Drift));\n}\n",
            "never asks",
        ),
    ] {
        let err = common::producers::test_produces(text, "t", Code::Drift).unwrap_err();
        assert!(err.contains(why), "{err}\n{text}");
    }
}
