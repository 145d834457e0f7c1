//! Why a run trains: for a (run, seed) that no cache holds, the nearest entry the caches
//! do hold and every way it differs (a config field and its two values, the seed, the
//! engine's fingerprint, libtorch, the profile, the result format); for a cached one, the
//! entry that serves it. `revtx-book plan --why` prints it.

use super::runs::Job;
use revtx_spec::entry::RESULT_FILE;
use revtx_spec::profile::Profile;
use revtx_spec::result::RESULT_FORMAT;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One way a cached entry differs from the job.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// `train.lr`, `seed`, `engine`, `libtorch`, `profile`, `format`.
    pub what: String,
    /// The entry's value and the job's.
    pub cached: String,
    pub wanted: String,
}

/// The nearest cached entry to a job that must train.
#[derive(Clone, Debug)]
pub struct Nearest {
    pub dir: PathBuf,
    pub differences: Vec<Difference>,
}

/// What the caches hold of every entry: its directory and result, read once.
pub struct Entries(Vec<(PathBuf, Value)>);

impl Entries {
    /// Every entry's `result.json` under `caches` (unreadable ones are skipped: the build
    /// would not trust them either).
    pub fn read(caches: &[PathBuf]) -> Self {
        let mut out = Vec::new();
        for cache in caches {
            let Ok(dir) = std::fs::read_dir(cache.join("runs")) else {
                continue;
            };
            let mut dirs: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
            dirs.sort();
            for d in dirs {
                let value = std::fs::read(d.join(RESULT_FILE))
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
                if let Some(v) = value {
                    out.push((d, v));
                }
            }
        }
        Entries(out)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entry with the fewest differences from `job` (ties: the first in path order),
    /// or `None` when the caches are empty.
    pub fn nearest(&self, job: &Job, profile: Profile) -> Option<Nearest> {
        let wanted = wanted(job, profile);
        self.0
            .iter()
            .map(|(dir, v)| Nearest {
                dir: dir.clone(),
                differences: differences(v, &wanted),
            })
            .min_by_key(|n| n.differences.len())
    }
}

/// What a job's entry would hold, in the shape of a result: config, seed, and the engine's
/// and profile's facts.
fn wanted(job: &Job, profile: Profile) -> Value {
    serde_json::json!({
        "format": RESULT_FORMAT,
        "config": job.config,
        "seed": job.seed,
        "env": {
            "code_fingerprint": crate::ENGINE.code,
            "libtorch": crate::ENGINE.libtorch,
            "profile": profile.id(),
        },
    })
}

/// Every way the cached result `cached` differs from `wanted`, config fields by their
/// run-block path.
pub fn differences(cached: &Value, wanted: &Value) -> Vec<Difference> {
    let mut out = Vec::new();
    let named = [
        ("/seed", "seed"),
        ("/env/code_fingerprint", "engine"),
        ("/env/libtorch", "libtorch"),
        ("/env/profile", "profile"),
        ("/format", "format"),
    ];
    for (pointer, what) in named {
        let (a, b) = (cached.pointer(pointer), wanted.pointer(pointer));
        if a != b {
            out.push(Difference {
                what: what.into(),
                cached: show(a),
                wanted: show(b),
            });
        }
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    leaves(&cached["config"], "", &mut a);
    leaves(&wanted["config"], "", &mut b);
    let mut keys: Vec<&String> = a.iter().chain(&b).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let find = |xs: &[(String, Value)]| xs.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
        let (x, y) = (find(&a), find(&b));
        if x != y {
            out.push(Difference {
                what: k.clone(),
                cached: x.map_or_else(|| "(default)".into(), |v| v.to_string()),
                wanted: y.map_or_else(|| "(default)".into(), |v| v.to_string()),
            });
        }
    }
    out
}

fn show(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "(none)".into(),
    }
}

/// Every leaf of a JSON value with its dotted path (`train.lr`).
fn leaves(v: &Value, at: &str, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                leaves(x, &key, out);
            }
        }
        other => out.push((at.to_string(), other.clone())),
    }
}

/// A cache entry's directory, shown relative to `root` when it is under it.
pub fn shown(dir: &Path, root: &Path) -> String {
    dir.strip_prefix(root).unwrap_or(dir).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_key_and_engine_are_named_with_both_values() {
        let cached = serde_json::json!({
            "format": 5, "seed": 0,
            "config": {"train": {"lr": 0.003, "steps": 10}, "data": {}},
            "env": {"code_fingerprint": "aaaa", "libtorch": "2.1", "profile": "p"},
        });
        let wanted = serde_json::json!({
            "format": 5, "seed": 0,
            "config": {"train": {"lr": 0.001, "steps": 10}, "data": {"task": "copy"}},
            "env": {"code_fingerprint": "bbbb", "libtorch": "2.1", "profile": "p"},
        });
        let d = differences(&cached, &wanted);
        let shown: Vec<String> = d
            .iter()
            .map(|d| format!("{}: {} -> {}", d.what, d.cached, d.wanted))
            .collect();
        assert_eq!(
            shown,
            [
                "engine: aaaa -> bbbb",
                "data.task: (default) -> \"copy\"",
                "train.lr: 0.003 -> 0.001"
            ]
        );
        assert!(differences(&cached, &cached).is_empty());
    }
}
