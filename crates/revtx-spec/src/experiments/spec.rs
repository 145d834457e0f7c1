//! The file format an author writes: a named base plus overrides (TOML in a `run` block,
//! JSON on the command line), merged into a [`RunConfig`]; and the seed lists of `--seeds`.

use super::{DataConfig, EvalConfig, RunConfig, RunKind, TrainConfig};
use crate::config::ModelConfig;
use serde::{Deserialize, Serialize};

/// A run as an author writes it: a base (a preset or another run) plus overrides.
///
/// ```toml
/// base = "reference"        # optional, defaults to "reference"
/// seed = 0                  # or: seeds = [0, 1, 2, 3, 4]
/// [train]
/// steps = 300
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub base: Option<String>,
    pub seed: Option<u64>,
    pub seeds: Option<Vec<u64>>,
    /// Overrides, merged field by field into the base config.
    pub kind: Option<RunKind>,
    pub model: Option<toml::Table>,
    pub data: Option<toml::Table>,
    pub train: Option<toml::Table>,
    pub eval: Option<toml::Table>,
}

impl RunSpec {
    /// Merges the overrides into `base`. Errors name the offending field.
    pub fn apply(&self, base: &RunConfig) -> Result<RunConfig, String> {
        let mut v = serde_json::to_value(base).map_err(|e| e.to_string())?;
        if let Some(k) = self.kind {
            v["kind"] = serde_json::to_value(k).unwrap();
        }
        for (name, table) in [
            ("model", &self.model),
            ("data", &self.data),
            ("train", &self.train),
            ("eval", &self.eval),
        ] {
            if let Some(t) = table {
                let patch = serde_json::to_value(t).map_err(|e| e.to_string())?;
                merge(&mut v[name], &patch);
                // The schema is the config's type: its structs deny unknown fields.
                let checked = match name {
                    "model" => check::<ModelConfig>(&v[name]),
                    "data" => check::<DataConfig>(&v[name]),
                    "train" => check::<TrainConfig>(&v[name]),
                    _ => check::<EvalConfig>(&v[name]),
                };
                checked.map_err(|e| format!("[{name}] {e}"))?;
            }
        }
        let mut c: RunConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
        // The vocabulary follows from the task and its letters; a value written in the
        // block is kept, and `problems` refuses it unless it agrees.
        let vocab_written = self.model.as_ref().is_some_and(|m| m.contains_key("vocab"));
        if !vocab_written && c.data.alphabet().problem().is_none() {
            c.model.vocab = c.data.alphabet().vocab();
        }
        Ok(c)
    }

    /// The key whose value [`RunSpec::apply`] refuses (`data.task`, `model.attn.scale`,
    /// `model.mlp` for a table the model has no such field for): each key the spec writes
    /// is tried alone on `base`, and the first that does not fit is it. `None` when every
    /// key fits alone.
    pub fn culprit(&self, base: &RunConfig) -> Option<String> {
        let v = serde_json::to_value(base).ok()?;
        for (name, table) in [
            ("model", &self.model),
            ("data", &self.data),
            ("train", &self.train),
            ("eval", &self.eval),
        ] {
            let Some(t) = table else { continue };
            let patch = serde_json::to_value(t).ok()?;
            let mut leaves = Vec::new();
            leaf_patches(&patch, &mut Vec::new(), &mut leaves);
            for (path, one) in leaves {
                let mut section = v[name].clone();
                merge(&mut section, &one);
                let fits = match name {
                    "model" => check::<ModelConfig>(&section),
                    "data" => check::<DataConfig>(&section),
                    "train" => check::<TrainConfig>(&section),
                    _ => check::<EvalConfig>(&section),
                };
                if fits.is_err() {
                    return Some(format!("{name}.{}", path.join(".")));
                }
            }
        }
        None
    }

    /// The seeds this spec asks for (default: seed 0).
    pub fn seed_list(&self) -> Vec<u64> {
        match (&self.seeds, self.seed) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => vec![s],
            (None, None) => vec![0],
        }
    }
}

/// Recursively overwrites `dst` with `patch`. Keys `dst` lacks are added: whether the
/// config has such a field is its type's to say (`check`), not its default's JSON.
fn merge(dst: &mut serde_json::Value, patch: &serde_json::Value) {
    match (dst, patch) {
        (serde_json::Value::Object(d), serde_json::Value::Object(p)) => {
            for (k, pv) in p {
                merge(d.entry(k.clone()).or_insert(serde_json::Value::Null), pv);
            }
        }
        (d, p) => *d = p.clone(),
    }
}

/// Every leaf of `patch` (a value that is not a table) as its path and a patch of it alone.
fn leaf_patches(
    patch: &serde_json::Value,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, serde_json::Value)>,
) {
    match patch {
        serde_json::Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                path.push(k.clone());
                leaf_patches(child, path, out);
                path.pop();
            }
        }
        leaf => {
            let alone = path.iter().rev().fold(
                leaf.clone(),
                |inner, k| serde_json::json!({ k.as_str(): inner }),
            );
            out.push((path.clone(), alone));
        }
    }
}

/// Whether `v` is a valid `T`: serde's error names an unknown field and the known ones.
fn check<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Result<(), String> {
    T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
}

/// Parses `"0..5"` (half-open), `"0..=4"` or `"1,3,7"` into seeds.
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let num = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|_| format!("`{x}` is not a seed"))
    };
    if let Some((a, b)) = s.split_once("..=") {
        Ok((num(a)?..=num(b)?).collect())
    } else if let Some((a, b)) = s.split_once("..") {
        Ok((num(a)?..num(b)?).collect())
    } else {
        s.split(',').map(num).collect()
    }
}
