//! Sharded training, proven locally: a fixture book's runs split into three shards, each
//! trained by its own `revtx-book train` process into its own cache, merged, and built;
//! the site must equal an unsharded build's. And entries that disagree fail loudly.

mod common;

use common::Project;
use revtx_book::book::codes::Code;
use std::path::{Path, PathBuf};
use std::process::Command;

const BOOK: &str = "# Shards\n\n```run a\nbase = \"reference\"\n[train]\nsteps = 24\nblock = 8\n[eval]\ntest_size = 16\nlong_size = 4\n```\n\n```run b\nbase = \"a\"\nseeds = [1, 2]\n```\n\n```run c\nbase = \"noscale\"\n[train]\nsteps = 16\nblock = 8\n[eval]\ntest_size = 16\nlong_size = 4\n```\n\n```figure fig-loss\nkind = \"loss\"\nruns = [\"a\", \"c\"]\ncaption = \"Loss.\"\n```\n\nThe runs end at {=a.train.final_loss} and {=c.train.final_loss}.\n";

fn book_bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_revtx-book"));
    c.env("REVTX_ENGINE", common::engine_exe())
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
    for (rel, mut bytes) in common::files_under(dir) {
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
    let chapters = plan["chapters"].as_array().unwrap();
    assert_eq!(chapters.len(), 1, "{chapters:?}");
    assert_eq!(
        (
            &chapters[0]["runs"],
            &chapters[0]["to_train"],
            &chapters[0]["measured"]
        ),
        (&4.into(), &4.into(), &0.into()),
        "{chapters:?}"
    );

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
    // Once trained, each chapter's runs carry what they took.
    let plan = run(book_bin()
        .args(["plan", "--root", &r, "--json", "--cache"])
        .arg(&merged));
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let chapter = &plan["chapters"][0];
    assert_eq!(
        (&chapter["to_train"], &chapter["measured"]),
        (&0.into(), &4.into()),
        "{chapter}"
    );
    assert!(
        chapter["measured_seconds"].as_f64().unwrap() > 0.0,
        "{chapter}"
    );
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

/// The byte ranges of the numbers in the result's `"losses":[...]`, as written.
fn loss_tokens(text: &str) -> Vec<std::ops::Range<usize>> {
    let open = text.find("\"losses\":[").expect("a losses array") + "\"losses\":[".len();
    let close = open + text[open..].find(']').expect("the array ends");
    let mut out = Vec::new();
    let mut start = open;
    for tok in text[open..close].split(',') {
        out.push(start..start + tok.len());
        start += tok.len() + 1;
    }
    out
}

/// A second cache holding the tiny run's entry changed by `edit` (result text, weights
/// bytes), its checksum fixed up so that it verifies: what another machine's numerics
/// would produce. Returns (the project, the other cache, the forged entry).
fn forged_entry(edit: impl FnOnce(&mut String, &mut Vec<u8>)) -> (Project, PathBuf, PathBuf) {
    let p = Project::new(&format!("# C\n\n{}\n", common::TINY_RUN));
    let root = p.root().to_path_buf();
    let o = p.check();
    assert_eq!(o.errors(), 0, "{:?}", common::located(&o));
    let runs = root.join(".revtx-cache/runs");
    let entry = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| d.join("result.json").exists())
        .unwrap();
    let key = entry.file_name().unwrap().to_owned();
    let other = root.join("other");
    common::copy_dir(&entry, &other.join("runs").join(&key));
    let forged = other.join("runs").join(&key);
    let mut text = std::fs::read_to_string(forged.join("result.json")).unwrap();
    let mut weights = std::fs::read(forged.join("weights.safetensors")).unwrap();
    let (t0, w0) = (text.clone(), weights.clone());
    edit(&mut text, &mut weights);
    assert!(t0 != text || w0 != weights, "the edit changed nothing");
    std::fs::write(forged.join("result.json"), text).unwrap();
    std::fs::write(forged.join("weights.safetensors"), weights).unwrap();
    let sum = revtx_spec::entry::checksum(&forged).unwrap();
    std::fs::write(forged.join("checksum"), sum).unwrap();
    (p, other, forged)
}

/// `merge` refuses the forged entry, naming it, and a build reading both caches side by
/// side stops with the same error before anything trains.
fn assert_conflict(p: &Project, other: &Path, forged: &Path) {
    let out = book_bin()
        .arg("merge")
        .arg("--into")
        .arg(p.root().join(".revtx-cache"))
        .arg(other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "merge accepted a conflicting entry: {err}"
    );
    assert!(
        err.contains("cache-conflict") && err.contains("hold different bits"),
        "{err}"
    );
    assert!(
        err.contains(&*forged.to_string_lossy()),
        "names both sources: {err}"
    );
    let mut opts = p.options(false);
    opts.runs.extra_caches.push(other.to_path_buf());
    let o = revtx_book::book::build(&opts);
    let codes: Vec<&str> = o.diags.iter().map(|d| d.code.name()).collect();
    assert!(codes.contains(&Code::CacheConflict.name()), "{codes:?}");
}

/// Whether `x` and its neighbour one bit away, written as the engine writes floats, read
/// back through `serde_json::Value` (its default, best-effort float parsing) as the same
/// value: a digest over re-parsed JSON could not tell them apart. About one value in 17
/// near the chapter's losses does this.
fn reparse_loses_the_bit(x: f64) -> bool {
    let y = f64::from_bits(x.to_bits() ^ 1);
    let back = |v: f64| {
        serde_json::from_str::<serde_json::Value>(&serde_json::to_string(&v).unwrap())
            .unwrap()
            .to_string()
    };
    back(x) == back(y)
}

/// One loss differs in its last bit (one ulp), written as the engine writes floats; every
/// other byte of the result is the same. The loss is one whose flip a re-parse of the JSON
/// would lose, where the run has one.
#[test]
fn a_one_bit_difference_in_a_loss_is_a_conflict() {
    let (p, other, forged) = forged_entry(|text, _| {
        let tokens = loss_tokens(text);
        let pick = (0..tokens.len())
            .find(|&i| reparse_loses_the_bit(text[tokens[i].clone()].parse().unwrap()))
            .unwrap_or(3);
        eprintln!("flipping loss {pick} of {}", tokens.len());
        let at = tokens[pick].clone();
        let x: f64 = text[at.clone()].parse().unwrap();
        let y = f64::from_bits(x.to_bits() ^ 1);
        let written = serde_json::to_string(&y).unwrap();
        assert_eq!(written.parse::<f64>().unwrap().to_bits(), x.to_bits() ^ 1);
        text.replace_range(at, &written);
    });
    assert_conflict(&p, &other, &forged);
}

/// One bit of the weights differs: the lowest mantissa bit of the last float (safetensors
/// stores little-endian float32 data up to the end of the file).
#[test]
fn a_one_bit_difference_in_the_weights_is_a_conflict() {
    let (p, other, forged) = forged_entry(|_, weights| {
        let lowest = weights.len() - 4;
        weights[lowest] ^= 1;
    });
    assert_conflict(&p, &other, &forged);
}
