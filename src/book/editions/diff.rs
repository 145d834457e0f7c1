//! Two editions compared: every claim whose value or truth changed, with why (the config
//! keys of its runs that changed, the engine, the profile, an edit of its sentence), and the
//! claims that appeared or disappeared.

use super::record::{Claim, Record};
use super::text::{masked, shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What changed between two editions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Changes {
    pub from: String,
    pub to: String,
    /// Claims in both whose value or truth differs.
    pub changed: Vec<Change>,
    /// Claims only the new edition has.
    pub appeared: Vec<Claim>,
    /// Claims only the old edition had.
    pub disappeared: Vec<Claim>,
    /// How many claims both have with the same value.
    pub same: usize,
    /// The engine and profile of both, when they differ.
    pub engine: Option<(String, String)>,
    pub profile: Option<(String, String)>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Change {
    pub old: Claim,
    pub new: Claim,
    pub causes: Vec<Cause>,
}

/// Why a claim's value changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "kebab-case")]
pub enum Cause {
    /// A key of a run's resolved configuration, with its two values.
    Config {
        run: String,
        key: String,
        old: String,
        new: String,
    },
    /// A run's seeds.
    Seeds {
        run: String,
        old: String,
        new: String,
    },
    /// A run it reads is new (the old edition had none of that name).
    NewRun { run: String },
    /// The engine's code fingerprint.
    Engine { old: String, new: String },
    /// The numeric profile.
    Profile { old: String, new: String },
    /// Its sentence was edited (beyond the figures a retrain rewrites).
    Sentence { old: String, new: String },
    /// Its figure is written another way (`0.52` became `52%`).
    Quote { old: String, new: String },
    /// It is a measurement of how a run ran (`env`: its time, its machine), not of what it
    /// computed: it differs from machine to machine and from run to run.
    Measured,
    /// Nothing the two records hold explains it.
    Unexplained,
}

impl Changes {
    /// One paragraph on the whole: how many claims changed, appeared, disappeared or stayed,
    /// and whether the engine or the profile changed. The site and the PDF both open with it.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "This edition against {}: {} of the figures, inserted values and asserted statements changed, {} appeared and {} disappeared; {} are as they were.",
            self.from,
            self.changed.len(),
            self.appeared.len(),
            self.disappeared.len(),
            self.same
        );
        if let Some((a, b)) = &self.engine {
            let _ = write!(
                s,
                " The engine changed between them (fingerprint {a} to {b})."
            );
        }
        if let Some((a, b)) = &self.profile {
            let _ = write!(s, " The numeric profile changed ({a} to {b}).");
        }
        s
    }
}

/// `new` against `old`.
pub fn compare(old: &Record, new: &Record) -> Changes {
    let key = |c: &Claim| (c.file.clone(), c.kind.clone(), c.expr.clone());
    let mut old_by: BTreeMap<(String, String, String), Vec<&Claim>> = BTreeMap::new();
    for c in &old.claims {
        old_by.entry(key(c)).or_default().push(c);
    }
    let mut seen: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    let mut out = Changes {
        from: old.name.clone(),
        to: new.name.clone(),
        changed: Vec::new(),
        appeared: Vec::new(),
        disappeared: Vec::new(),
        same: 0,
        engine: (old.engine != new.engine).then(|| (old.engine.clone(), new.engine.clone())),
        profile: (old.profile != new.profile).then(|| (old.profile.clone(), new.profile.clone())),
    };
    for c in &new.claims {
        let k = key(c);
        let n = seen.entry(k.clone()).or_insert(0);
        let before = old_by.get(&k).and_then(|v| v.get(*n)).copied();
        *n += 1;
        match before {
            None => out.appeared.push(c.clone()),
            Some(o) if o.value == c.value => out.same += 1,
            Some(o) => out.changed.push(Change {
                causes: causes(o, c, old, new),
                old: o.clone(),
                new: c.clone(),
            }),
        }
    }
    for (k, v) in &old_by {
        let used = seen.get(k).copied().unwrap_or(0);
        out.disappeared
            .extend(v.iter().skip(used).map(|c| (*c).clone()));
    }
    out
}

/// Why `o` (of `old`) became `c` (of `new`).
fn causes(o: &Claim, c: &Claim, old: &Record, new: &Record) -> Vec<Cause> {
    let mut out = Vec::new();
    for run in &c.runs {
        let Some(now) = new.runs.get(run) else {
            continue;
        };
        let Some(then) = old.runs.get(run) else {
            out.push(Cause::NewRun { run: run.clone() });
            continue;
        };
        let (mut was, mut is) = (Vec::new(), Vec::new());
        leaves(&then.config, "", &mut was);
        leaves(&now.config, "", &mut is);
        let was: BTreeMap<String, String> = was.into_iter().collect();
        let is: BTreeMap<String, String> = is.into_iter().collect();
        let mut keys: Vec<&String> = was.keys().chain(is.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let (before, after) = (was.get(key), is.get(key));
            if before != after {
                let show = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(none)".into());
                out.push(Cause::Config {
                    run: run.clone(),
                    key: key.clone(),
                    old: show(before),
                    new: show(after),
                });
            }
        }
        if then.seeds != now.seeds {
            out.push(Cause::Seeds {
                run: run.clone(),
                old: format!("{:?}", then.seeds),
                new: format!("{:?}", now.seeds),
            });
        }
    }
    if !c.runs.is_empty() && old.engine != new.engine {
        out.push(Cause::Engine {
            old: old.engine.clone(),
            new: new.engine.clone(),
        });
    }
    if !c.runs.is_empty() && old.profile != new.profile {
        out.push(Cause::Profile {
            old: old.profile.clone(),
            new: new.profile.clone(),
        });
    }
    if c.expr.contains(".env.") {
        out.push(Cause::Measured);
    }
    if masked(&o.sentence) != masked(&c.sentence) {
        out.push(Cause::Sentence {
            old: o.sentence.clone(),
            new: c.sentence.clone(),
        });
    }
    if c.kind == "checked" {
        if let (Some(a), Some(b)) = (&o.quoted, &c.quoted) {
            if shape(a) != shape(b) {
                out.push(Cause::Quote {
                    old: a.clone(),
                    new: b.clone(),
                });
            }
        }
    }
    if out.is_empty() {
        out.push(Cause::Unexplained);
    }
    out
}

/// Every leaf of a configuration, `model.n_heads = 2`, in path order.
fn leaves(v: &serde_json::Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        _ => out.push((at.to_string(), v.to_string())),
    }
}

impl Cause {
    /// One line a reader can follow.
    pub fn describe(&self) -> String {
        match self {
            Cause::Config { run, key, old, new } => {
                format!("run `{run}`: `{key}` changed from {old} to {new}")
            }
            Cause::Seeds { run, old, new } => {
                format!("run `{run}`: its seeds changed from {old} to {new}")
            }
            Cause::NewRun { run } => format!("run `{run}` is new in this edition"),
            Cause::Engine { old, new } => {
                format!("the engine changed (fingerprint {old} to {new})")
            }
            Cause::Profile { old, new } => {
                format!("the numeric profile changed ({old} to {new})")
            }
            Cause::Sentence { .. } => "its sentence was edited".into(),
            Cause::Quote { old, new } => {
                format!("the figure is written another way (`{old}` became `{new}`)")
            }
            Cause::Measured => "it measures how the run ran (its env: its time or its machine), which differs from one training to the next".into(),
            Cause::Unexplained => {
                "no change of its runs, the engine, the profile or its sentence explains it"
                    .into()
            }
        }
    }
}
