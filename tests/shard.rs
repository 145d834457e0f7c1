//! Sharded training, proven locally: a fixture book's runs split into three shards, each
//! trained by its own `revtx-book train` process into its own cache, merged, and built;
//! the site must equal an unsharded build's. And entries that disagree fail loudly.

mod common;

use common::Project;
use std::path::{Path, PathBuf};
use std::process::Command;

const BOOK: &str = "# Shards\n\n```run a\nbase = \"reference\"\n[train]\nsteps = 24\nblock = 8\n[eval]\ntest_size = 16\nlong_size = 4\n```\n\n```run b\nbase = \"a\"\nseeds = [1, 2]\n```\n\n```run c\nbase = \"noscale\"\n[train]\nsteps = 16\nblock = 8\n[eval]\ntest_size = 16\nlong_size = 4\n```\n\n```figure fig-loss\nkind = \"loss\"\nruns = [\"a\", \"c\"]\ncaption = \"Loss.\"\n```\n\nThe runs end at {=a.train.final_loss} and {=c.train.final_loss}.\n";

fn book_bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_revtx-book"));
    c.env("REVTX_ENGINE", env!("CARGO_BIN_EXE_revtx-engine"))
        .env("SOURCE_DATE_EPOCH", "1700000000");
    c
}

/// Runs a command that must succeed; its standard output.
fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every file of a site, by relative path. The Runs appendix records where and how fast
/// each run trained, which differs between any two trainings, so there: `env` is dropped
/// from the result files, and the appendix page's numbers are masked. Everything else,
/// weights included, must match byte for byte.
fn site_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut bytes = std::fs::read(e.path()).unwrap();
        if rel.starts_with("runs/") && Path::new(&rel).extension().is_some_and(|x| x == "json") {
            let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            v.as_object_mut().unwrap().remove("env");
            bytes = v.to_string().into_bytes();
        } else if rel == "runs.html" {
            let text = String::from_utf8(bytes).unwrap();
            let mut parts = text.split("<td class=\"num\">");
            let mut masked = parts.next().unwrap_or_default().to_string();
            for part in parts {
                let end = part.find("</td>").unwrap_or(0);
                masked.push_str("<td class=\"num\">#");
                masked.push_str(&part[end..]);
            }
            bytes = masked
                .replace(" <span class=\"badge\">cached</span>", "")
                .into_bytes();
        }
        out.push((rel, bytes));
    }
    out
}

#[test]
fn three_shards_merge_into_the_unsharded_site() {
    let p = Project::new(BOOK);
    let root = p.root();
    let arg = |s: &str| s.to_string();
    let r = root.to_string_lossy().into_owned();

    // The plan: four (run, seed)s, three shards, every uncached run in exactly one.
    let plan = run(book_bin().args(["plan", "--root", &r, "--shards", "3", "--json"]));
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["runs"].as_array().unwrap().len(), 4);
    let shards = plan["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    let mut keys: Vec<String> = shards
        .iter()
        .flat_map(|s| s["jobs"].as_array().unwrap().iter())
        .map(|j| j["key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 4, "each run in exactly one shard");

    // Each shard in its own process and cache directory.
    let mut shard_dirs = Vec::new();
    for i in 1..=3 {
        let dir = root.join(format!("shard-{i}"));
        let out = run(book_bin().args([
            arg("train"),
            arg("--root"),
            r.clone(),
            arg("--shard"),
            format!("{i}/3"),
            arg("--cache"),
            dir.to_string_lossy().into_owned(),
            arg("--quiet"),
        ]));
        assert!(out.contains(&format!("shard {i}/3:")), "{out}");
        shard_dirs.push(dir);
    }
    let merged = root.join("merged");
    let mut merge = book_bin();
    merge
        .args(["merge", "--into"])
        .arg(&merged)
        .args(&shard_dirs);
    let out = run(&mut merge);
    assert!(out.contains("4 copied"), "{out}");

    let build = |cache: &Path, site: &str, offline: bool| -> PathBuf {
        let mut c = book_bin();
        c.args(["build", "--root", &r, "--quiet", "--out", site, "--cache"])
            .arg(cache);
        if offline {
            c.arg("--offline");
        }
        run(&mut c);
        root.join(site)
    };
    let sharded = build(&merged, "site-sharded", true);
    // Unsharded: one build trains everything into one cache.
    let single = build(&root.join("single"), "site-single", false);
    let (a, b) = (site_files(&sharded), site_files(&single));
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        assert!(
            x == y,
            "{name} differs between the sharded and the unsharded build"
        );
    }
}

#[test]
fn entries_with_one_key_and_different_bits_fail_by_name() {
    let p = Project::new(&format!("# C\n\n{}\n", common::TINY_RUN));
    let root = p.root();
    let o = p.check();
    assert_eq!(o.errors(), 0, "{:?}", common::located(&o));
    let runs = root.join(".revtx-cache/runs");
    let entry = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| d.join("result.json").exists())
        .unwrap();
    let key = entry.file_name().unwrap().to_owned();
    // A second cache with the same key whose result differs in one loss, checksum fixed
    // up so that it verifies: what another machine's numerics would produce.
    let other = root.join("other");
    common::copy_dir(&entry, &other.join("runs").join(&key));
    let forged = other.join("runs").join(&key);
    let text = std::fs::read_to_string(forged.join("result.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let l = v["train"]["losses"][3].as_f64().unwrap();
    v["train"]["losses"][3] = serde_json::json!(l * (1.0 + 1e-7));
    std::fs::write(forged.join("result.json"), v.to_string()).unwrap();
    let sum = revtx_book::engine::entry::checksum(&forged).unwrap();
    std::fs::write(forged.join("checksum"), sum).unwrap();

    let out = book_bin()
        .arg("merge")
        .arg("--into")
        .arg(root.join(".revtx-cache"))
        .arg(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cache-conflict") && err.contains("hold different bits"),
        "{err}"
    );
    assert!(
        err.contains(&*forged.to_string_lossy()),
        "names both sources: {err}"
    );

    // Read side by side, the build stops with the same error before anything trains.
    let mut opts = p.options(false);
    opts.runs.extra_caches.push(other);
    let o = revtx_book::book::build(&opts);
    let codes: Vec<&str> = o.diags.iter().map(|d| d.code).collect();
    assert!(codes.contains(&"cache-conflict"), "{codes:?}");
}
