//! The presets, the run spec's merge and the seed lists.

use super::*;

#[test]
fn presets_are_distinct_and_each_changes_one_thing() {
    let mut seen = std::collections::BTreeSet::new();
    for p in PRESETS {
        assert!(seen.insert(p.name), "{} listed twice", p.name);
        let c = RunConfig::preset(p.name).unwrap();
        assert_eq!(
            c == RunConfig::reference(),
            p.name == "reference",
            "{}",
            p.name
        );
        c.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
    }
    assert!(RunConfig::preset("nope").is_none());
}

#[test]
fn spec_overrides_and_rejects_unknown_fields() {
    let spec: RunSpec =
        toml::from_str("base = \"reference\"\nseeds = [0, 1]\n[train]\nsteps = 30\n").unwrap();
    let c = spec.apply(&RunConfig::reference()).unwrap();
    assert_eq!(c.train.steps, 30);
    assert_eq!(spec.seed_list(), vec![0, 1]);
    let bad: RunSpec = toml::from_str("[train]\nstepz = 30\n").unwrap();
    let err = bad.apply(&RunConfig::reference()).unwrap_err();
    assert!(
        err.contains("[train]") && err.contains("unknown field `stepz`") && err.contains("`steps`"),
        "{err}"
    );
    let bad: RunSpec = toml::from_str("[model.attn]\nscal = false\n").unwrap();
    let err = bad.apply(&RunConfig::reference()).unwrap_err();
    assert!(
        err.contains("[model]") && err.contains("unknown field `scal`"),
        "{err}"
    );
    let wrong: RunSpec = toml::from_str("[train]\nsteps = \"many\"\n").unwrap();
    assert!(wrong.apply(&RunConfig::reference()).is_err());
}

#[test]
fn seed_ranges() {
    assert_eq!(parse_seeds("0..5").unwrap(), vec![0, 1, 2, 3, 4]);
    assert_eq!(parse_seeds("2..=3").unwrap(), vec![2, 3]);
    assert_eq!(parse_seeds("1,4").unwrap(), vec![1, 4]);
    assert!(parse_seeds("x..2").is_err());
}

/// Every member path of a JSON value's objects (`train.eps`, `model.attn`,
/// `model.attn.scale`), in order.
pub(crate) fn member_paths(v: &serde_json::Value, prefix: &str, out: &mut Vec<String>) {
    if let serde_json::Value::Object(m) = v {
        for (k, child) in m {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            out.push(path.clone());
            member_paths(child, &path, out);
        }
    }
}

/// The value at a member path, to change or remove.
pub(crate) fn parent_of<'a>(
    v: &'a mut serde_json::Value,
    path: &str,
) -> (&'a mut serde_json::Map<String, serde_json::Value>, String) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap().to_string();
    let mut at = v;
    for p in parts {
        at = &mut at[p];
    }
    (at.as_object_mut().unwrap(), last)
}

/// Every value a run's engine reads is written out: the canonical JSON (what the cache key
/// hashes and the result records) holds every field of every section, and a config that
/// lacks any one of them does not parse, so no field can fall back on a default that the
/// key does not see. A default changed in the code changes every key that uses it.
#[test]
fn every_value_is_written_out() {
    for p in PRESETS {
        let c = RunConfig::preset(p.name).unwrap();
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(serde_json::from_value::<RunConfig>(v.clone()).unwrap(), c);
        let mut paths = Vec::new();
        member_paths(&v, "", &mut paths);
        // 47 values: kind, 13 of the model (3 of them its attention's), 6 of the data,
        // 16 of the training and 11 of the evaluation; and 5 tables.
        assert!(paths.len() >= 52, "{}: {paths:?}", p.name);
        for path in &paths {
            let mut w = v.clone();
            let (parent, last) = parent_of(&mut w, path);
            parent.remove(&last);
            assert!(
                serde_json::from_value::<RunConfig>(w).is_err(),
                "{}: `{path}` may be left out, so a default would decide it unseen",
                p.name
            );
        }
    }
    let v = serde_json::to_value(RunConfig::reference()).unwrap();
    for (path, want) in [
        ("train.eps", serde_json::json!(DEFAULT_EPS)),
        ("train.betas", serde_json::json!(DEFAULT_BETAS)),
        ("data.letters", serde_json::json!(10)),
        ("data.task", serde_json::json!("reverse")),
        ("model.norm", serde_json::json!("pre")),
        ("train.decay", serde_json::json!("none")),
    ] {
        let got = path.split('.').fold(&v, |at, p| &at[p]);
        assert_eq!(got, &want, "{path}");
    }
}

/// `model.vocab` follows `data.letters` and `data.task` unless the block writes it, and a
/// written value that disagrees is refused at `model.vocab`.
#[test]
fn the_vocabulary_follows_the_letters() {
    let five = "[eval]\ndecode = [\"abcde\"]\nattention_input = \"edcab\"\n";
    let spec: RunSpec = toml::from_str(&format!("{five}[data]\nletters = 5\n")).unwrap();
    let c = spec.apply(&RunConfig::reference()).unwrap();
    assert_eq!(c.model.vocab, 7);
    assert!(c.problems().is_empty(), "{:?}", c.problems());
    let spec: RunSpec = toml::from_str("[data]\ntask = \"add\"\nletters = 5\n").unwrap();
    assert_eq!(spec.apply(&RunConfig::reference()).unwrap().model.vocab, 8);
    let spec: RunSpec = toml::from_str("[model]\nvocab = 12\n[data]\nletters = 5\n").unwrap();
    let c = spec.apply(&RunConfig::reference()).unwrap();
    assert_eq!(c.problems().first().map(|p| p.0), Some("model.vocab"));
    let spec: RunSpec =
        toml::from_str(&format!("{five}[model]\nvocab = 7\n[data]\nletters = 5\n")).unwrap();
    assert!(spec
        .apply(&RunConfig::reference())
        .unwrap()
        .problems()
        .is_empty());
}

/// Each choice's word is the one serde reads and writes, for every value its `ALL` lists.
#[test]
fn every_choice_writes_its_word() {
    use crate::config::{Activation, NormKind, NormPlacement, PositionEncoding};
    use crate::task::Task;
    fn words<T: Serialize + Copy>(all: &[T], name: fn(T) -> &'static str) -> usize {
        for &v in all {
            assert_eq!(serde_json::to_value(v).unwrap(), serde_json::json!(name(v)));
        }
        all.len()
    }
    let n = words(Task::ALL, Task::name)
        + words(PositionEncoding::ALL, PositionEncoding::name)
        + words(NormPlacement::ALL, NormPlacement::name)
        + words(NormKind::ALL, NormKind::name)
        + words(Activation::ALL, Activation::name)
        + words(Optimizer::ALL, Optimizer::name)
        + words(Decay::ALL, Decay::name);
    assert_eq!(n, 5 + 5 + 3 + 2 + 2 + 3 + 3);
}

/// A value that does not fit is traced to its key, nested or not.
#[test]
fn the_culprit_is_the_key() {
    let base = RunConfig::reference();
    for (toml_text, key) in [
        ("[data]\ntask = \"Reverse\"\n", Some("data.task")),
        (
            "[train]\nsteps = 30\noptimizer = \"AdamW\"\n",
            Some("train.optimizer"),
        ),
        ("[train]\nlr = \"fast\"\n", Some("train.lr")),
        (
            "[model]\nd_model = 32\n[model.mlp]\nwidth = 3\n",
            Some("model.mlp.width"),
        ),
        ("[model.attn]\nscale = 1\n", Some("model.attn.scale")),
        ("[train]\nsteps = 30\n", None),
    ] {
        let spec: RunSpec = toml::from_str(toml_text).unwrap();
        assert_eq!(spec.apply(&base).is_err(), key.is_some(), "{toml_text}");
        assert_eq!(spec.culprit(&base).as_deref(), key, "{toml_text}");
    }
}
