//! The audit: stored results retrained from nothing and compared with the store, bit for
//! bit. Which entries: all, some runs, or one shard of a fixed partition, chosen by a
//! rotation so that consecutive builds audit different entries and all of them in turn.

use super::codes::Code;
use super::diag::{Diagnostic, Sources};
use super::runs::{self, Job, RunOptions};
use super::store::{Store, Stored};
use super::{numerics, parse};
use revtx_spec::entry::{RESULT_FILE, WEIGHTS_FILE};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Which stored entries to audit.
#[derive(Clone, Debug, PartialEq)]
pub enum Select {
    All,
    /// Every stored seed of these runs.
    Runs(Vec<String>),
    /// Shard `index` (1-based) of `of`, the entries split by their recorded training time.
    Shard {
        index: usize,
        of: usize,
    },
    /// About `n` entries: the entries split into shards of about `n`, this round's shard.
    Sample(usize),
    /// About this many seconds of training on `jobs` cores: shards of that cost, this
    /// round's shard.
    Budget(f64),
}

/// One entry the audit chose, and what became of it.
#[derive(Clone, Debug)]
pub struct Audited {
    pub run: String,
    pub seed: u64,
    pub key: String,
    /// The training seconds the stored entry recorded.
    pub recorded_seconds: f64,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Retrained bit for bit as stored.
    Same,
    /// The first field that differs, and its two values.
    Differs {
        field: String,
        stored: String,
        retrained: String,
    },
    /// It did not retrain (the engine failed, or the run was interrupted).
    NotRetrained,
}

/// What the audit did.
#[derive(Debug, Default)]
pub struct Report {
    /// The shard audited and how many there are (1 of 1 for `All` and `Runs`).
    pub shard: (usize, usize),
    /// The round that chose the shard, and where it came from.
    pub round: Option<(u64, String)>,
    pub stored: usize,
    pub audited: Vec<Audited>,
    pub seconds: f64,
    pub diags: Vec<Diagnostic>,
    /// The numerics gate's line.
    pub numerics: String,
    /// Under a budget: the entries whose recorded training alone exceeds it, left to a full
    /// or sharded audit (run and seed).
    pub over_budget: Vec<(String, u64, f64)>,
}

impl Report {
    pub fn failed(&self) -> bool {
        self.diags
            .iter()
            .any(|d| d.severity == super::diag::Severity::Error)
    }
}

/// Audits the store of the book at `root`: `round` picks the shard for `Sample` and `Budget`.
pub fn audit(
    root: &Path,
    opts: &RunOptions,
    select: &Select,
    round: &(u64, String),
    sources: &mut Sources,
) -> Report {
    let mut r = Report::default();
    let Some(book) = parse::load(root, sources, &mut r.diags) else {
        return r;
    };
    let plans = runs::plan(&book, sources, &mut r.diags);
    if r.failed() {
        return r;
    }
    let Some((store, _)) = book.store.clone() else {
        r.diags.push(
            Diagnostic::error(Code::Toml, None, "this book keeps no results to audit")
                .hint("name a folder for them in book/book.toml, e.g. `store = \"results\"`"),
        );
        return r;
    };
    // Each stored key once, in key order: the partition is the same on every machine.
    let stored_keys = store.keys();
    let mut entries: Vec<(Job, f64)> = Vec::new();
    for job in runs::jobs(&plans, opts.profile) {
        if stored_keys.contains(&job.key) && !entries.iter().any(|(j, _)| j.key == job.key) {
            let seconds = recorded_seconds(&store, &job.key);
            entries.push((job, seconds));
        }
    }
    entries.sort_by(|a, b| a.0.key.cmp(&b.0.key));
    r.stored = entries.len();
    let chosen = match choose(&entries, select, opts.jobs, round, &mut r) {
        Ok(c) => c,
        Err(d) => {
            r.diags.push(d);
            return r;
        }
    };
    if chosen.is_empty() {
        return r;
    }
    let gate = numerics::gate(
        root,
        &opts.engine,
        opts.profile,
        (false, false),
        sources,
        &mut r.diags,
    );
    r.numerics = gate.summary;
    if !gate.proceed {
        return r; // the gate said why, in its own error
    }
    if !gate.comparable {
        r.diags.push(Diagnostic::error(
            Code::NotComparable,
            None,
            format!("the `{}` profile's results hold on one machine only: the store keeps portable ones", opts.profile),
        ));
        return r;
    }
    let started = Instant::now();
    retrain_and_compare(&store, chosen, opts, &mut r);
    r.seconds = started.elapsed().as_secs_f64();
    r
}

/// The training seconds a stored entry recorded (0 when it cannot be read: the audit then
/// reports it).
fn recorded_seconds(store: &Store, key: &str) -> f64 {
    store
        .read(key)
        .ok()
        .and_then(|s| serde_json::from_slice::<Value>(&s.result).ok())
        .and_then(|v| v["env"]["train_seconds"].as_f64())
        .unwrap_or(0.0)
}

/// The entries `select` names.
fn choose(
    entries: &[(Job, f64)],
    select: &Select,
    jobs: usize,
    round: &(u64, String),
    r: &mut Report,
) -> Result<Vec<(Job, f64)>, Diagnostic> {
    let shards = |n: usize| partition(entries, n.clamp(1, entries.len().max(1)));
    let pick = |all: Vec<Vec<(Job, f64)>>, r: &mut Report| {
        let of = all.len();
        let index = usize::try_from(round.0 % of as u64).unwrap_or(0) + 1;
        r.shard = (index, of);
        r.round = Some(round.clone());
        all.into_iter().nth(index - 1).unwrap_or_default()
    };
    r.shard = (1, 1);
    Ok(match select {
        Select::All => entries.to_vec(),
        Select::Runs(ids) => {
            let mut out = Vec::new();
            for id in ids {
                let of: Vec<(Job, f64)> = entries
                    .iter()
                    .filter(|(j, _)| j.run == *id)
                    .cloned()
                    .collect();
                if of.is_empty() {
                    let known: Vec<&str> = entries.iter().map(|(j, _)| j.run.as_str()).collect();
                    let mut known: Vec<&str> = known
                        .into_iter()
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect();
                    known.truncate(12);
                    return Err(Diagnostic::error(
                        Code::UnknownRun,
                        None,
                        format!("the store keeps no result of a run `{id}`"),
                    )
                    .hint(format!("stored runs include: {}", known.join(", "))));
                }
                out.extend(of);
            }
            out
        }
        Select::Shard { index, of } => {
            r.shard = (*index, *of);
            shards(*of).into_iter().nth(index - 1).unwrap_or_default()
        }
        Select::Sample(n) => pick(shards(entries.len().div_ceil((*n).max(1))), r),
        Select::Budget(seconds) => {
            let per = seconds * f64::from(u32::try_from(jobs.max(1)).unwrap_or(u32::MAX));
            // An entry that alone takes longer than the budget would make its round overrun
            // it: it is left to `--all` or `--shard` (the weekly audit), and named.
            let (fit, long): (Vec<_>, Vec<_>) =
                entries.iter().cloned().partition(|(_, s)| *s <= per);
            r.over_budget = long
                .iter()
                .map(|(j, s)| (j.run.clone(), j.seed, *s))
                .collect();
            if fit.is_empty() {
                return Ok(Vec::new());
            }
            let total: f64 = fit.iter().map(|(_, s)| s).sum();
            // As many shards as the total takes budgets, at least one and at most one per entry.
            let n = (1..=fit.len())
                .find(|&n| total <= per * f64::from(u32::try_from(n).unwrap_or(u32::MAX)))
                .unwrap_or(fit.len());
            pick(partition(&fit, n), r)
        }
    })
}

/// Splits entries (in key order) into `n` shards of about equal recorded time: longest
/// first, each to the least loaded shard, ties to the lowest index. Each shard keeps key
/// order.
pub fn partition(entries: &[(Job, f64)], n: usize) -> Vec<Vec<(Job, f64)>> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| {
        entries[b]
            .1
            .total_cmp(&entries[a].1)
            .then(entries[a].0.key.cmp(&entries[b].0.key))
    });
    let mut load = vec![0.0f64; n.max(1)];
    let mut member: Vec<Vec<usize>> = vec![Vec::new(); n.max(1)];
    for i in order {
        let s = (0..load.len())
            .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
            .unwrap_or(0);
        load[s] += entries[i].1;
        member[s].push(i);
    }
    member
        .into_iter()
        .map(|mut m| {
            m.sort_unstable();
            m.into_iter().map(|i| entries[i].clone()).collect()
        })
        .collect()
}

/// Trains the chosen entries into a fresh folder of their own (no cache and no store is
/// read) and compares each with the store.
fn retrain_and_compare(store: &Store, chosen: Vec<(Job, f64)>, opts: &RunOptions, r: &mut Report) {
    let base = opts.cache_dir.join("audit");
    let _ = std::fs::create_dir_all(&base);
    let Ok(tmp) = tempfile::Builder::new().prefix("audit-").tempdir_in(&base) else {
        r.diags.push(Diagnostic::error(
            Code::Io,
            None,
            format!(
                "cannot make a folder to retrain in under {}",
                base.display()
            ),
        ));
        return;
    };
    let mut o = opts.clone();
    o.cache_dir = tmp.path().to_path_buf();
    // Nothing retrained here is looked up in a cache (`run_jobs` runs every job it is
    // given); only an intervening run reads its trained run's weights from one, and those
    // are the build's own (their own audit is the trained entry's).
    o.extra_caches = opts.caches();
    o.store = None;
    o.store_write = false;
    let runs_dir = tmp.path().join("runs");
    let jobs: Vec<Job> = chosen.iter().map(|(j, _)| j.clone()).collect();
    let ran = runs::run_jobs(jobs, &runs_dir, &o, &mut r.diags);
    for (job, seconds) in chosen {
        let verdict = match ran.iter().find(|(j, _)| j.key == job.key) {
            None => Verdict::NotRetrained,
            Some((_, p)) => match store.read(&job.key) {
                Ok(stored) => compare(&stored, &p.dir),
                Err(e) => Verdict::Differs {
                    field: "the stored file".into(),
                    stored: e.to_string(),
                    retrained: "a result".into(),
                },
            },
        };
        if let Verdict::Differs {
            field,
            stored,
            retrained,
        } = &verdict
        {
            r.diags.push(
                Diagnostic::error(
                    Code::AuditMismatch,
                    Some(job.span.clone()),
                    format!(
                        "run `{}` seed {}: retrained, it differs from its stored result at `{field}`",
                        job.run, job.seed
                    ),
                )
                .label(format!("stored {stored}, retrained {retrained}"))
                .note(format!("stored in {}", store.path(&job.key).display()))
                .hint("a stored result is a pure function of its key: this one was edited, or computed by other code; delete it and build to store what the code computes"),
            );
        }
        r.audited.push(Audited {
            run: job.run,
            seed: job.seed,
            key: job.key,
            recorded_seconds: seconds,
            verdict,
        });
    }
}

/// The stored entry against the retrained one in `dir`: the result's fields but `env`
/// (where, when and how fast it ran), then the weights when the store keeps them.
pub fn compare(stored: &Stored, dir: &Path) -> Verdict {
    let retrained = std::fs::read(dir.join(RESULT_FILE)).unwrap_or_default();
    let parse = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap_or(Value::Null);
    let (mut a, mut b) = (parse(&stored.result), parse(&retrained));
    for v in [&mut a, &mut b] {
        if let Value::Object(o) = v {
            o.remove("env");
        }
    }
    if let Some((field, x, y)) = first_difference(&a, &b, String::new()) {
        return Verdict::Differs {
            field,
            stored: x,
            retrained: y,
        };
    }
    if let Some(w) = &stored.weights {
        let mine = std::fs::read(dir.join(WEIGHTS_FILE)).unwrap_or_default();
        if *w != mine {
            return Verdict::Differs {
                field: format!("{WEIGHTS_FILE}: {}", first_tensor_difference(w, &mine)),
                stored: format!("{} bytes", w.len()),
                retrained: format!("{} bytes", mine.len()),
            };
        }
    }
    Verdict::Same
}

/// The first place two JSON values differ (object members in name order, array elements in
/// order), with both values as JSON; numbers compare by their bits.
#[allow(
    clippy::many_single_char_names,
    reason = "two values and their parts, side by side"
)]
pub fn first_difference(a: &Value, b: &Value, at: String) -> Option<(String, String, String)> {
    let show = |v: Option<&Value>| v.map_or_else(|| "nothing".into(), |v| clip(&v.to_string()));
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut names: Vec<&String> = x.keys().chain(y.keys()).collect();
            names.sort();
            names.dedup();
            for n in names {
                let path = if at.is_empty() {
                    n.clone()
                } else {
                    format!("{at}.{n}")
                };
                match (x.get(n), y.get(n)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, path) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some((path, show(p), show(q))),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(p, q, format!("{at}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| {
                (
                    format!("{at} (its length)"),
                    x.len().to_string(),
                    y.len().to_string(),
                )
            })
        }
        (Value::Number(x), Value::Number(y)) => {
            let same = match (x.as_f64(), y.as_f64()) {
                (Some(p), Some(q)) => p.to_bits() == q.to_bits() && x.is_f64() == y.is_f64(),
                _ => x == y,
            };
            (!same).then(|| (at, x.to_string(), y.to_string()))
        }
        _ => (a != b).then(|| (at, show(Some(a)), show(Some(b)))),
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= 60 {
        s.to_string()
    } else {
        s.chars().take(57).collect::<String>() + "…"
    }
}

/// The tensor of a safetensors file in which two files first differ (by byte offset).
fn first_tensor_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let Ok(st) = safetensors::SafeTensors::deserialize(a) else {
        return format!("byte {at}");
    };
    let header = 8 + usize::try_from(u64::from_le_bytes(a[..8].try_into().unwrap_or_default()))
        .unwrap_or(usize::MAX - 8);
    if at < header {
        return "its header".into();
    }
    let base = a.as_ptr() as usize;
    for (name, view) in st.tensors() {
        let start = view.data().as_ptr() as usize - base;
        let end = start + view.data().len();
        if (start..end).contains(&at) {
            let dtype = view.dtype().size().max(1);
            return format!("tensor `{name}`, element {}", (at - start) / dtype);
        }
    }
    format!("byte {at}")
}

/// How long an audit of `entries` would train, one after another (their recorded seconds).
pub fn recorded_total(entries: &[Audited]) -> Duration {
    Duration::from_secs_f64(entries.iter().map(|a| a.recorded_seconds).sum::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(seconds: &[f64]) -> Vec<(Job, f64)> {
        seconds
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let job = Job {
                    run: format!("r{i}"),
                    seed: 0,
                    config: revtx_spec::experiments::RunConfig::reference(),
                    key: format!("{i:024}"),
                    span: crate::book::diag::Span {
                        file: 0,
                        range: 0..0,
                    },
                    weights: false,
                    trained: None,
                };
                (job, s)
            })
            .collect()
    }

    /// Consecutive rounds audit different entries, and as many rounds as there are shards
    /// audit every entry exactly once.
    #[test]
    fn the_rotation_audits_every_entry_once_in_its_rounds() {
        let all = entries(&[40.0, 3.0, 9.0, 1.0, 12.0, 7.0, 30.0, 2.0, 5.0, 8.0, 11.0]);
        for select in [Select::Sample(3), Select::Budget(20.0)] {
            let mut seen = Vec::new();
            let mut of = 0;
            for round in 0..20u64 {
                let mut r = Report::default();
                let chosen = choose(&all, &select, 2, &(round, "test".into()), &mut r).unwrap();
                of = r.shard.1;
                assert_eq!(r.shard.0 as u64, round % of as u64 + 1);
                if round < of as u64 {
                    assert!(!chosen.is_empty(), "{select:?} round {round}");
                    seen.extend(chosen.into_iter().map(|(j, _)| j.key));
                }
            }
            assert!(of > 1, "{select:?}");
            seen.sort();
            let want: Vec<String> = all.iter().map(|(j, _)| j.key.clone()).collect();
            assert_eq!(seen, want, "{select:?}: each entry once in {of} rounds");
        }
    }

    /// Under a budget, an entry longer than the budget alone is never chosen (its round would
    /// overrun): it is named instead, and the rotation covers every other entry.
    #[test]
    fn a_budget_leaves_entries_longer_than_itself_to_the_full_audit() {
        let all = entries(&[40.0, 3.0, 9.0, 1.0, 12.0, 7.0, 30.0, 2.0, 5.0, 8.0, 11.0]);
        let select = Select::Budget(10.0); // 20 s on 2 cores
        let mut seen = Vec::new();
        let mut r = Report::default();
        choose(&all, &select, 2, &(0, "test".into()), &mut r).unwrap();
        let of = r.shard.1;
        for round in 0..of as u64 {
            let mut r = Report::default();
            let chosen = choose(&all, &select, 2, &(round, "test".into()), &mut r).unwrap();
            let names: Vec<&str> = r.over_budget.iter().map(|(n, _, _)| n.as_str()).collect();
            assert_eq!(names, ["r0", "r6"]);
            assert!(chosen.iter().all(|(_, s)| *s <= 20.0));
            seen.extend(chosen.into_iter().map(|(j, _)| j.run));
        }
        seen.sort();
        let mut want: Vec<String> = all
            .iter()
            .filter(|(_, s)| *s <= 20.0)
            .map(|(j, _)| j.run.clone())
            .collect();
        want.sort();
        assert_eq!(seen, want);
    }

    #[test]
    fn the_first_difference_is_named_by_its_path() {
        let a = serde_json::json!({"seed": 1, "train": {"losses": [2.5, 1.25, 0.5]}});
        let mut b = a.clone();
        b["train"]["losses"][1] = serde_json::json!(f64::from_bits(1.25f64.to_bits() + 1));
        let (at, x, _) = first_difference(&a, &b, String::new()).unwrap();
        assert_eq!((at.as_str(), x.as_str()), ("train.losses[1]", "1.25"));
        assert_eq!(first_difference(&a, &a.clone(), String::new()), None);
        let mut c = a.clone();
        c["train"]["losses"].as_array_mut().unwrap().pop();
        assert_eq!(
            first_difference(&a, &c, String::new()).unwrap().0,
            "train.losses (its length)"
        );
    }
}
