//! What an author does between builds, through the command line: look at a run
//! (`show`), train one by its id (`run ID --seeds`), ask why a run trains (`plan --why`)
//! after editing a key, and test the chapter's sentences under other seeds
//! (`check --seed-shift K`). One fixture project, built once.

mod common;
use common::*;
use std::process::Output;

const CHAPTER: &str = "# Author

```run tiny
base = \"reference\"
[train]
steps = 20
block = 10
[eval]
test_size = 24
long_size = 8
```

```run pair
base = \"tiny\"
seeds = [0, 1]
```

The single run trained at seed [0]{=tiny.seed}, and [its seed is below one]{? tiny.seed < 1}.
The ensemble's last seed is [1]{=pair.seeds[1]}.
";

fn cli(p: &Project, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(args)
        .args(["--root", p.root().to_str().unwrap()])
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn show_run_why_and_seed_shift() {
    let p = Project::new(CHAPTER);
    let o = p.check();
    assert_eq!(o.errors(), 0, "{:?}", located(&o));

    // show: every path with its value, per seed for the ensemble; a path narrows it.
    let one = cli(&p, &["show", "tiny"]);
    let shown = text(&one);
    assert!(one.status.success(), "{shown}");
    assert!(shown.contains("`tiny` is one run"), "{shown}");
    for path in [
        "params",
        "seed",
        "train.test.accuracy",
        "train.losses[i]",
        "config.train.steps",
    ] {
        assert!(
            shown.lines().any(|l| l.starts_with(path)),
            "no row for {path}:\n{shown}"
        );
    }
    let pair = text(&cli(&p, &["show", "pair", "train.test"]));
    assert!(pair.contains("seed 0") && pair.contains("seed 1"), "{pair}");
    assert!(
        pair.lines().any(|l| l.starts_with("train.test.accuracy")),
        "{pair}"
    );
    assert!(
        !pair.lines().any(|l| l.starts_with("params")),
        "narrowed: {pair}"
    );
    let json = cli(&p, &["show", "pair", "seed", "--json"]);
    let seeds: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(seeds, serde_json::json!([0, 1]));
    let missing = cli(&p, &["show", "nosuch"]);
    assert!(!missing.status.success());
    assert!(
        text(&missing).contains("unknown run `nosuch`"),
        "{}",
        text(&missing)
    );

    // run ID: a declared run at other seeds, into the book's cache; show is unchanged.
    let ran = cli(&p, &["run", "tiny", "--seeds", "3"]);
    let said = text(&ran);
    assert!(ran.status.success(), "{said}");
    assert!(said.contains("tiny seed 3: trained"), "{said}");
    let again = text(&cli(&p, &["run", "tiny", "--seeds", "3"]));
    assert!(again.contains("tiny seed 3: cached"), "{again}");

    // plan --why: a cached run names its entry; after an edit, the nearest entry and the key.
    let why = text(&cli(&p, &["plan", "--why", "tiny"]));
    assert!(
        why.contains("tiny seed 0: cached, served by .revtx-cache/runs/"),
        "{why}"
    );
    let edited = p.chapter().replacen("steps = 20", "steps = 21", 1);
    std::fs::write(p.root().join("book/chapter.md"), &edited).unwrap();
    let why = text(&cli(&p, &["plan", "--why"]));
    assert!(
        why.contains("tiny seed 0: trains: the nearest cached entry"),
        "{why}"
    );
    assert!(why.contains("train.steps: 20 there, 21 here"), "{why}");
    let unknown = cli(&p, &["plan", "--why", "nosuch"]);
    assert!(!unknown.status.success(), "{}", text(&unknown));
    std::fs::write(p.root().join("book/chapter.md"), CHAPTER).unwrap();

    // check --seed-shift 1: the figure moves (counted), the assertion about seed 0 fails
    // at its line, the source is untouched, and the chapter as it reads is written.
    let shifted = cli(&p, &["check", "--seed-shift", "1"]);
    let said = text(&shifted);
    assert!(!shifted.status.success(), "{said}");
    assert!(said.contains("error[assertion-false]"), "{said}");
    assert!(
        said.contains("chapter.md:18:"),
        "the assertion's line: {said}"
    );
    assert!(!said.contains("error[drift]"), "{said}");
    assert!(
        said.contains("every seed moved up by 1; 2 quoted figures read differently"),
        "{said}"
    );
    assert_eq!(p.chapter(), CHAPTER, "the source is untouched");
    let read =
        std::fs::read_to_string(p.root().join(".revtx-cache/seed-shift/book/chapter.md")).unwrap();
    assert!(read.contains("trained at seed [1]{=tiny.seed}"), "{read}");
    assert!(read.contains("last seed is [2]{=pair.seeds[1]}"), "{read}");
    assert!(p.root().join(".revtx-cache/seed-shift/runs").is_dir());
    // The book itself still checks clean, from its own cache.
    let plain = cli(&p, &["check", "--offline"]);
    assert!(plain.status.success(), "{}", text(&plain));
}
