//! The fixture book `tests/fixtures/vocabulary/` declares one tiny run for each value of
//! each model and optimiser choice beside the chapter's, and quotes and asserts what they
//! did. Built here with warnings denied; then each run's recorded result is read to check
//! that it did what its key says.

#![allow(clippy::float_cmp, reason = "recorded values are compared to the bit")]

mod common;
use common::*;
use std::collections::BTreeMap;

/// Every run result in the project's cache, by the run's choices as its config writes
/// them (the keys it sets beyond the tiny base).
fn results(p: &Project) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p.root().join(".revtx-cache/runs")).unwrap() {
        let f = e.unwrap().path().join("result.json");
        if let Ok(text) = std::fs::read_to_string(f) {
            out.push(serde_json::from_str(&text).unwrap());
        }
    }
    out
}

/// The one result whose config has `key` (a JSON pointer) equal to `value`.
fn the<'a>(
    all: &'a [serde_json::Value],
    key: &str,
    value: &serde_json::Value,
) -> &'a serde_json::Value {
    let found: Vec<_> = all
        .iter()
        .filter(|r| r.pointer(key) == Some(value))
        .collect();
    assert_eq!(found.len(), 1, "{key} = {value}: {} results", found.len());
    found[0]
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn every_choice_runs_and_does_what_its_key_says() {
    let chapter =
        std::fs::read_to_string(repo().join("tests/fixtures/vocabulary/chapter.md")).unwrap();
    let p = Project::new(&chapter);
    let mut opts = p.options(false);
    opts.deny_warnings = true;
    let o = revtx_book::book::build(&opts);
    assert_eq!(o.errors(), 0, "{:?}", located(&o));
    assert_eq!(o.counts.checked, 9, "the nine quoted parameter counts");
    assert_eq!(
        o.counts.figures, 2,
        "the gradient norms and the rates, drawn"
    );
    let all = results(&p);
    assert_eq!(all.len(), 17, "seventeen runs, one result each");

    // Positions: only a learned table is recorded; the others train none.
    // The base: the one run of 30 steps that sets none of the choices.
    let plain: Vec<_> = all
        .iter()
        .filter(|r| {
            // Every value is written out: the base holds each choice's default.
            let (m, t) = (&r["config"]["model"], &r["config"]["train"]);
            [
                ("position_encoding", "learned"),
                ("norm", "pre"),
                ("norm_kind", "layer"),
                ("activation", "gelu"),
            ]
            .iter()
            .all(|(k, v)| m[k] == *v)
                && t["optimizer"] == "adamw"
                && t["clip"] == 0.0
                && r["config"]["data"]["task"] == "reverse"
                && t["steps"] == 30
        })
        .collect();
    assert_eq!(plain.len(), 1);
    let base = plain[0];
    assert!(base["train"]["positions"]["rows"] == 25);
    for kind in ["sinusoidal", "rope", "alibi", "none"] {
        let r = the(&all, "/config/model/position_encoding", &kind.into());
        assert_eq!(r["params"], 101_644, "{kind}");
        assert!(
            r["train"].get("positions").is_none(),
            "{kind} records no table"
        );
    }
    let params: BTreeMap<&str, i64> = [("post", 103_116), ("none", 102_604)].into();
    for (norm, want) in params {
        assert_eq!(
            the(&all, "/config/model/norm", &norm.into())["params"],
            want
        );
    }
    let relu = the(&all, "/config/model/activation", &"relu".into());
    assert_eq!(relu["params"], 103_244);
    assert_ne!(
        relu["train"]["losses"], base["train"]["losses"],
        "relu changed the model"
    );

    let rms = the(&all, "/config/model/norm_kind", &"rms".into());
    assert_eq!(rms["params"], 102_924);

    // Every run records a rate and a gradient norm per step, all finite and positive.
    for r in &all {
        let steps = usize::try_from(r["config"]["train"]["steps"].as_u64().unwrap()).unwrap();
        let norms = floats(&r["train"]["grad_norm"]);
        assert_eq!(norms.len(), steps);
        assert!(norms.iter().all(|n| n.is_finite() && *n > 0.0), "{norms:?}");
        assert_eq!(floats(&r["train"]["lr"]).len(), steps);
    }

    each_task_answers_with_its_own_answers(&all);

    // Clipping: the same run without the clip has the same first gradient (same seed,
    // same weights, same batch); the clip then changes the first step, so every later
    // loss differs, and the first gradient was over the clip.
    let clipped = the(&all, "/config/train/clip", &0.5.into());
    let first = |r: &serde_json::Value| floats(&r["train"]["grad_norm"])[0];
    assert_eq!(
        first(clipped),
        first(base),
        "the same gradient before clipping"
    );
    assert!(first(clipped) > 0.5);
    let (lc, lb) = (
        floats(&clipped["train"]["losses"]),
        floats(&base["train"]["losses"]),
    );
    assert_eq!(lc[0], lb[0], "the first loss comes before any step");
    assert_ne!(
        lc[1], lb[1],
        "the clipped step moved the weights differently"
    );

    // The optimisers: each its own rule, from the same start.
    for opt in ["adam", "sgd"] {
        let r = the(&all, "/config/train/optimizer", &opt.into());
        let l = floats(&r["train"]["losses"]);
        assert_eq!(l[0], lb[0], "{opt}: the same first loss");
        assert_ne!(l[1], lb[1], "{opt}: another step than AdamW's");
    }
}

/// Each task's test problems decode to its own answers, computed here from the problem's
/// text: the copying model's correct outputs are their inputs, the sorting model's are
/// sorted, the adding model's are base-four sums written least significant digit first,
/// and the recalling model's are the queried key's value.
fn each_task_answers_with_its_own_answers(all: &[serde_json::Value]) {
    for (task, answer) in [
        ("copy", (|s: &str| s.to_string()) as fn(&str) -> String),
        ("sort", |s: &str| {
            let mut v: Vec<char> = s.chars().collect();
            v.sort_unstable();
            v.into_iter().collect()
        }),
        ("add", |s: &str| {
            let (a, b) = s.split_once('+').unwrap();
            let n = a.len();
            let (a, b) = (
                u64::from_str_radix(a, 4).unwrap(),
                u64::from_str_radix(b, 4).unwrap(),
            );
            let mut sum = a + b;
            (0..=n)
                .map(|_| {
                    let d = sum % 4;
                    sum /= 4;
                    char::from_digit(d as u32, 4).unwrap()
                })
                .collect()
        }),
        ("recall", |s: &str| {
            let c: Vec<char> = s.chars().collect();
            let query = c[c.len() - 1];
            let pair = c.chunks(2).find(|kv| kv.len() == 2 && kv[0] == query);
            pair.unwrap()[1].to_string()
        }),
    ] {
        let t = &the(all, "/config/data/task", &task.into())["train"]["test"];
        let (inputs, outputs) = (
            t["inputs"].as_array().unwrap(),
            t["outputs"].as_array().unwrap(),
        );
        let right = inputs
            .iter()
            .zip(outputs)
            .filter(|(i, o)| answer(i.as_str().unwrap()) == o.as_str().unwrap())
            .count();
        assert_eq!(
            right,
            usize::try_from(t["correct"].as_u64().unwrap()).unwrap(),
            "{task}"
        );
        assert!(right >= 90, "{task}: {right} of 100");
    }
}
