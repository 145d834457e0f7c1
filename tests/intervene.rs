//! Intervening runs: a trained run's weights evaluated with heads and sublayers switched
//! off, retraining nothing, keyed on the trained run, cached like any run.

mod common;
use common::*;

const ABLATE: &str = "```run off\nfrom = \"tiny\"\nablate = [\"b0.h0\", \"b0.h1\", \"b1.attn\", \"b0.mlp\", \"b0.h0+b0.h1\"]\n```";

/// `TINY_RUN` trained long enough to answer some strings right: a model that writes the
/// same letters whatever is switched off would test nothing.
fn trained() -> String {
    TINY_RUN.replace("steps = 30", "steps = 400")
}

fn chapter(ablate: &str, prose: &str) -> String {
    format!("# C\n\n{}\n\n{ablate}\n\n{prose}\n", trained())
}

fn result(p: &Project, file: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(p.root().join("site/runs").join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The intervening run reads the trained weights (which its trained run keeps), checks
/// they decode as the trained run did, and scores each target; prose reads its scores.
#[test]
fn an_ablation_reads_the_trained_weights_and_scores_each_target() {
    let p = Project::new(&chapter(
        ABLATE,
        "Untouched, [24]{=off.ablated.baseline.test.total} strings were scored.",
    ));
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let ran: Vec<&str> = runs_of(&out)
        .into_iter()
        .filter(|l| l.contains(" seed "))
        .collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(ran.iter().all(|l| l.contains("ran")), "{ran:?}");

    let trained = result(&p, "tiny-s0.json");
    let off = result(&p, "off-s0.json");
    let a = &off["ablated"];
    // The baseline is the trained model read back: every decode as the trained run recorded.
    assert_eq!(
        a["baseline"]["test"]["outputs"],
        trained["train"]["test"]["outputs"]
    );
    assert_eq!(
        a["baseline"]["long"]["outputs"],
        trained["train"]["long"]["outputs"]
    );
    assert_eq!(
        a["baseline"]["test"]["correct"],
        trained["train"]["test"]["correct"]
    );
    // One score per target, in the block's order (as the file has them: serde_json's map
    // here sorts its keys), each over the same 24 strings.
    let targets = ["b0.h0", "b0.h1", "b1.attn", "b0.mlp", "b0.h0+b0.h1"];
    assert_eq!(a["targets"].as_object().unwrap().len(), targets.len());
    let text = std::fs::read_to_string(p.root().join("site/runs/off-s0.json")).unwrap();
    let at: Vec<usize> = targets
        .iter()
        .map(|t| text.find(&format!("\"{t}\":{{")).unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
    for t in &targets {
        let s = &a["targets"][t]["test"];
        assert_eq!(s["total"], 24, "{t}");
        assert_eq!(s["outputs"].as_array().unwrap().len(), 24, "{t}");
        let by_len: u64 = s["by_length"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["correct"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(by_len), s["correct"].as_u64(), "{t}");
    }
    // Switching parts off changes what the model writes (a model whose decodes no target
    // moved would make every check above vacuous).
    let moved = targets
        .iter()
        .filter(|t| a["targets"][**t]["test"]["outputs"] != a["baseline"]["test"]["outputs"])
        .count();
    assert!(moved >= 4, "only {moved} of 5 targets changed any decode");
    // Nothing trains twice: the intervening run has no weights, the trained run keeps its.
    assert!(off["config"]["intervene"]["from"] == "tiny");
    assert_eq!(off["params"], trained["params"]);

    // A second build: both cached.
    let again = p.build();
    assert_eq!(again.errors(), 0, "{:?}", located(&again));
    let cached: Vec<&str> = runs_of(&again)
        .into_iter()
        .filter(|l| l.contains(" seed "))
        .collect();
    assert_eq!(cached, ["tiny seed 0: cached", "off seed 0: cached"]);
}

/// The intervening run's key holds the trained run's key and the intervention: another
/// target list runs the intervention again and trains nothing; a change of the trained run
/// runs both.
#[test]
fn an_ablation_is_keyed_on_its_trained_run_and_its_targets() {
    let p = Project::new(&chapter(ABLATE, "Text."));
    assert_eq!(p.check().errors(), 0);
    std::fs::write(
        p.root().join("book/chapter.md"),
        chapter(&ABLATE.replace("\"b0.mlp\", ", ""), "Text."),
    )
    .unwrap();
    let fewer = p.check();
    assert_eq!(fewer.errors(), 0, "{:?}", located(&fewer));
    let ran: Vec<&str> = runs_of(&fewer)
        .into_iter()
        .filter(|l| l.contains("ran"))
        .collect();
    assert_eq!(ran.len(), 1, "{:?}", fewer.run_report);
    assert!(ran[0].starts_with("off "), "{ran:?}");

    std::fs::write(
        p.root().join("book/chapter.md"),
        chapter(ABLATE, "Text.").replace("steps = 400", "steps = 401"),
    )
    .unwrap();
    let retrained = p.check();
    assert_eq!(retrained.errors(), 0, "{:?}", located(&retrained));
    let ran = runs_of(&retrained)
        .into_iter()
        .filter(|l| l.contains("ran"))
        .count();
    assert_eq!(ran, 2, "{:?}", retrained.run_report);
}

/// An ablation added to a book whose run has trained runs the intervention alone: the
/// trained entry and its weights are read, not made again.
#[test]
fn adding_an_ablation_trains_nothing_again() {
    let p = Project::new(&chapter("", "Text."));
    assert_eq!(p.check().errors(), 0);
    let runs = p.root().join(".revtx-cache/runs");
    let entry = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| d.join("result.json").is_file())
        .unwrap();
    assert!(entry.join("weights.safetensors").is_file());
    std::fs::write(p.root().join("book/chapter.md"), chapter(ABLATE, "Text.")).unwrap();
    let out = p.check();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let ran = runs_of(&out)
        .into_iter()
        .filter(|l| l.contains("ran"))
        .count();
    assert_eq!(ran, 1, "{:?}", out.run_report);
}
