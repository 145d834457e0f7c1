//! What an author does, through the command line, outside this repository: start a book
//! with `init` in an empty folder (no templates, no static files: the theme is the
//! binary's) and build it; add a chapter with a run and an ensemble; look at a run
//! (`show`), train one by its id (`run ID --seeds`), ask why a run trains (`plan --why`)
//! after editing a key, and test the chapter's sentences under other seeds
//! (`check --seed-shift K`) and read them so (`build --seed-shift K --out DIR`).

use std::path::Path;
use std::process::Output;

const CHAPTER: &str = "# Second

```run short
base = \"reference\"
[train]
steps = 20
block = 10
[eval]
test_size = 24
long_size = 8
```

```run pair
base = \"short\"
seeds = [0, 1]
```

The single run trained at seed [0]{=short.seed}, and [its seed is below one]{? short.seed < 1}.
The ensemble's last seed is [1]{=pair.seeds[1]}.
";

fn cli(root: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(args)
        .args(["--root", root.to_str().unwrap()])
        .output()
        .unwrap()
}

/// `init` in an empty folder gives a book that builds, site and PDF, with warnings denied,
/// and a second `init` there overwrites nothing.
fn init_and_build(root: &Path) {
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["init", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made));
    assert!(!root.join("templates").exists() && !root.join("static").exists());
    let built = cli(root, &["build", "--deny-warnings"]);
    let said = text(&built);
    assert!(built.status.success(), "{said}");
    assert!(said.contains("2 checked (0 drifted), 1 asserted"), "{said}");
    assert!(said.contains("1 figures"), "{said}");
    for f in [
        "chapter-1.html",
        "static/style.css",
        "static/widget/model.js",
        "a-new-book.pdf",
    ] {
        assert!(root.join("site").join(f).is_file(), "site/{f}");
    }
    let toml = std::fs::read_to_string(root.join("book/book.toml")).unwrap();
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(["init", root.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert_eq!(
        std::fs::read_to_string(root.join("book/book.toml")).unwrap(),
        toml
    );
}

/// Every file under `dir` with its bytes, by path relative to it.
fn tree(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn init_show_run_why_and_seed_shift() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("my-book");
    init_and_build(&root);
    std::fs::write(root.join("book/chapter-2.md"), CHAPTER).unwrap();
    let toml = std::fs::read_to_string(root.join("book/book.toml")).unwrap();
    std::fs::write(
        root.join("book/book.toml"),
        toml.replace(
            "chapters = [\"chapter-1.md\"]",
            "chapters = [\"chapter-1.md\", \"chapter-2.md\"]",
        ),
    )
    .unwrap();
    let built = cli(&root, &["build"]);
    assert!(built.status.success(), "{}", text(&built));

    show_lists_every_path(&root);

    // run ID: a declared run at other seeds, into the book's cache; show is unchanged.
    let ran = cli(&root, &["run", "short", "--seeds", "3"]);
    let said = text(&ran);
    assert!(ran.status.success(), "{said}");
    assert!(said.contains("short seed 3: trained"), "{said}");
    let again = text(&cli(&root, &["run", "short", "--seeds", "3"]));
    assert!(again.contains("short seed 3: cached"), "{again}");
    run_refuses_what_it_cannot_train(&root);

    // plan --why: a cached run names its entry; after an edit, the nearest entry and the key.
    let why = text(&cli(&root, &["plan", "--why", "short"]));
    assert!(
        why.contains("short seed 0: cached, served by .revtx-cache/runs/"),
        "{why}"
    );
    let edited = CHAPTER.replacen("steps = 20", "steps = 21", 1);
    std::fs::write(root.join("book/chapter-2.md"), &edited).unwrap();
    let why = text(&cli(&root, &["plan", "--why"]));
    assert!(
        why.contains("short seed 0: trains: the nearest cached entry"),
        "{why}"
    );
    assert!(why.contains("train.steps: 20 there, 21 here"), "{why}");
    let unknown = cli(&root, &["plan", "--why", "nosuch"]);
    assert!(!unknown.status.success(), "{}", text(&unknown));
    std::fs::write(root.join("book/chapter-2.md"), CHAPTER).unwrap();

    // check --seed-shift 1: the figure moves (counted), the assertion about seed 0 fails
    // at its line, the source is untouched, and the chapter as it reads is written.
    let shifted = cli(&root, &["check", "--seed-shift", "1"]);
    let said = text(&shifted);
    assert!(!shifted.status.success(), "{said}");
    assert!(said.contains("error[assertion-false]"), "{said}");
    assert!(
        said.contains("chapter-2.md:18:"),
        "the assertion's line: {said}"
    );
    assert!(!said.contains("error[drift]"), "{said}");
    assert!(
        said.contains("every seed moved up by 1; 2 quoted figures read differently"),
        "{said}"
    );
    let source = std::fs::read_to_string(root.join("book/chapter-2.md")).unwrap();
    assert_eq!(source, CHAPTER, "the source is untouched");
    let read =
        std::fs::read_to_string(root.join(".revtx-cache/seed-shift/book/chapter-2.md")).unwrap();
    assert!(read.contains("trained at seed [1]{=short.seed}"), "{read}");
    assert!(read.contains("last seed is [2]{=pair.seeds[1]}"), "{read}");
    assert!(root.join(".revtx-cache/seed-shift/runs").is_dir());
    // Only the ensemble shifted: the single run's statement about its seed still holds.
    let some = cli(&root, &["check", "--seed-shift", "1", "--runs", "pair"]);
    let said = text(&some);
    assert!(some.status.success(), "{said}");
    assert!(
        said.contains(
            "the seeds of `pair` (no other run's) moved up by 1; 1 quoted figure read differently"
        ),
        "{said}"
    );
    let ghost = cli(&root, &["check", "--seed-shift", "1", "--runs", "ghost"]);
    assert!(
        text(&ghost).contains("error[unknown-run]"),
        "{}",
        text(&ghost)
    );
    let alone = cli(&root, &["check", "--runs", "pair"]);
    assert!(!alone.status.success(), "--runs needs --seed-shift");
    shift_past_the_largest_seed(&root);
    // The book itself still checks clean, from its own cache.
    let plain = cli(&root, &["check", "--offline"]);
    assert!(plain.status.success(), "{}", text(&plain));
    evaluate(&root);
    shifted_site(&root);
    claims_and_widget_budget(&root);
}

/// A shift that would carry a seed past the largest wraps round to the book's own seeds:
/// refused at the run, before anything trains.
fn shift_past_the_largest_seed(root: &Path) {
    let wraps = cli(root, &["check", "--seed-shift", "18446744073709551615"]);
    let said = text(&wraps);
    assert!(!wraps.status.success(), "{said}");
    assert!(said.contains("past the largest seed"), "{said}");
    // `pair`'s seed 1 is carried past the largest seed (its sum would wrap to 0, the book's
    // own seed); `short`'s seed 0 lands on the largest seed, which exists.
    assert!(said.contains("chapter-2.md:13:1"), "at the run: {said}");
    assert_eq!(said.matches("error[invalid-run]").count(), 1, "{said}");
    assert!(!said.contains("trained"), "{said}");
}

/// `run` says what it cannot do: a run the book does not declare (with the book's runs and
/// the presets), a seed that is not one, a seed listed twice; and `--help` is its own.
fn run_refuses_what_it_cannot_train(root: &Path) {
    let ghost = cli(root, &["run", "ghost"]);
    let said = text(&ghost);
    assert_eq!(ghost.status.code(), Some(2), "{said}");
    assert!(said.contains("declares no run `ghost`"), "{said}");
    assert!(
        said.contains("short, pair") && said.contains("reference, noscale"),
        "{said}"
    );
    let bad = cli(root, &["run", "short", "--seeds", "5,x"]);
    let said = text(&bad);
    assert_eq!(bad.status.code(), Some(2), "{said}");
    assert!(said.contains("`x` is not a seed"), "{said}");
    let twice = cli(root, &["run", "short", "--seeds", "5,5"]);
    let said = text(&twice);
    assert_eq!(twice.status.code(), Some(2), "{said}");
    assert!(
        said.contains("lists seed 5 twice") && !said.contains("trained"),
        "{said}"
    );
    let help = cli(root, &["run", "--help"]);
    let said = text(&help);
    assert!(help.status.success(), "{said}");
    assert!(
        said.contains("Train one run the book declares") && said.contains("--seeds"),
        "{said}"
    );
    assert!(!said.contains("revtx-engine"), "the engine's help: {said}");
}

/// `show`: every path with its value, per seed for the ensemble; a path narrows it.
fn show_lists_every_path(root: &Path) {
    let one = cli(root, &["show", "short"]);
    let shown = text(&one);
    assert!(one.status.success(), "{shown}");
    assert!(shown.contains("`short` is one run"), "{shown}");
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
    let pair = text(&cli(root, &["show", "pair", "train.test"]));
    assert!(pair.contains("seed 0") && pair.contains("seed 1"), "{pair}");
    assert!(
        pair.lines().any(|l| l.starts_with("train.test.accuracy")),
        "{pair}"
    );
    assert!(
        !pair.lines().any(|l| l.starts_with("params")),
        "narrowed: {pair}"
    );
    let json = cli(root, &["show", "pair", "seed", "--json"]);
    let seeds: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(seeds, serde_json::json!([0, 1]));
    show_values_per_seed(root);
    show_config_lists_every_value(root);
    let missing = cli(root, &["show", "nosuch"]);
    assert!(!missing.status.success());
    assert!(
        text(&missing).contains("unknown run `nosuch`"),
        "{}",
        text(&missing)
    );
}

/// Every value the engine reads is in the run's recorded config, defaults included.
fn show_config_lists_every_value(root: &Path) {
    let config = text(&cli(root, &["show", "short", "config"]));
    for path in [
        "config.data.task",
        "config.data.letters",
        "config.train.eps",
        "config.train.betas",
        "config.train.optimizer",
        "config.train.decay",
        "config.train.warmup",
        "config.model.norm",
        "config.model.position_encoding",
        "config.model.activation",
    ] {
        assert!(
            config.lines().any(|l| l.starts_with(path)),
            "no row for {path}:\n{config}"
        );
    }
}

/// `show pair`'s table gives each seed its own value: every row whose values differ
/// between the seeds' results (read from `show --json`) shows each seed's in its column.
fn show_values_per_seed(root: &Path) {
    let json = cli(root, &["show", "pair", "train", "--json"]);
    let results: Vec<serde_json::Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(results.len(), 2);
    let table = text(&cli(root, &["show", "pair", "train"]));
    let mut compared = 0;
    for line in table.lines() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let Some(path) = cells.first().and_then(|p| p.strip_prefix("train.")) else {
            continue;
        };
        if path.contains('[') || cells.len() != 3 {
            continue;
        }
        let at = |r: &serde_json::Value| path.split('.').fold(r, |v, k| &v[k]).as_f64();
        let (Some(a), Some(b)) = (at(&results[0]), at(&results[1])) else {
            continue;
        };
        if a.to_bits() == b.to_bits() {
            continue;
        }
        let shown: Vec<f64> = cells[1..].iter().map(|c| c.parse().unwrap()).collect();
        assert_eq!(shown, vec![a, b], "{line}");
        compared += 1;
    }
    assert!(
        compared >= 3,
        "only {compared} rows differ between the seeds:\n{table}"
    );
}

/// `build --seed-shift K --out DIR`: the book as the moved seeds have it, to read, every
/// figure showing its run's value; never into `site/`, and not while an assertion is false.
fn shifted_site(root: &Path) {
    let site_before = tree(&root.join("site"));
    assert!(
        site_before.len() > 10,
        "{} files in site/",
        site_before.len()
    );
    let absolute = root.join("site");
    let linked = root.join("site-link");
    std::os::unix::fs::symlink(&absolute, &linked).unwrap();
    // The book's own site, however it is spelt: refused before anything runs.
    for out in [
        None,
        Some("site"),
        Some("./site"),
        Some("site/"),
        Some(absolute.to_str().unwrap()),
        Some(linked.to_str().unwrap()),
    ] {
        let mut args = vec!["build", "--seed-shift", "1"];
        args.extend(out.map(|o| ["--out", o]).into_iter().flatten());
        let refused = cli(root, &args);
        let said = text(&refused);
        assert!(!refused.status.success(), "{out:?}: {said}");
        assert!(
            said.contains("error[out-dir]") && said.contains("it is the book's own site"),
            "{out:?}: {said}"
        );
        assert!(said.contains("give it an --out of its own"), "{said}");
    }
    std::fs::remove_file(&linked).unwrap();
    assert!(
        tree(&root.join("site")) == site_before,
        "site/ changed by a refused build"
    );
    let site_page = std::fs::read(root.join("site/chapter-1.html")).unwrap();
    let out = root.join("shifted");
    let out_arg = out.to_str().unwrap();
    // A false statement fails the build, but the shifted site is written to be read, the
    // statement marked as not holding.
    let false_now = cli(root, &["build", "--seed-shift", "1", "--out", out_arg]);
    assert!(!false_now.status.success(), "{}", text(&false_now));
    let page =
        std::fs::read_to_string(out.join("chapter-2.html")).expect("the shifted site, written");
    let at = page
        .find("its seed is below one")
        .expect("the false statement, on its page");
    let open = page[..at]
        .rfind("<span class=\"claim claim-assert")
        .unwrap();
    assert!(
        page[open..at].contains("claim-fail"),
        "marked: {}",
        &page[open..at]
    );
    assert!(
        page[at..].contains("asserted, does not hold"),
        "its tooltip says so"
    );

    let holds = CHAPTER.replacen("[its seed is below one]{? short.seed < 1}", "no more", 1);
    std::fs::write(root.join("book/chapter-2.md"), &holds).unwrap();
    let book_before = tree(&root.join("book"));
    let built = cli(root, &["build", "--seed-shift", "1", "--out", out_arg]);
    let said = text(&built);
    assert!(built.status.success(), "{said}");
    // A reading aid: the book's record (claims.json) and every other file under book/
    // stay as they were; the shifted claims are the shifted site's.
    assert!(
        tree(&root.join("book")) == book_before,
        "book/ changed by a shifted build"
    );
    let shifted_claims = std::fs::read_to_string(out.join("claims.json")).unwrap();
    assert!(shifted_claims.contains("short.seed"), "{shifted_claims}");
    assert!(said.contains("every seed moved up by 1"), "{said}");
    let page = std::fs::read_to_string(out.join("chapter-2.html")).unwrap();
    assert!(
        page.contains("does not match: written 0, now 1"),
        "the figure shows its run's value: {page}"
    );
    for (before, now) in [("trained at seed ", "1"), ("last seed is ", "2")] {
        let at = page.find(before).expect(before) + before.len();
        let shown = format!(r#"<span class="claim-value">{now}</span>"#);
        assert!(
            page[at..]
                .split("</span></span>")
                .next()
                .unwrap()
                .contains(&shown),
            "after {before:?}, the shifted value {now}: {page}"
        );
    }
    assert!(
        !out.join("a-new-book.pdf").exists(),
        "no print edition of a shift"
    );
    assert_eq!(
        std::fs::read(root.join("site/chapter-1.html")).unwrap(),
        site_page,
        "site/ untouched"
    );
    assert!(tree(&root.join("site")) == site_before, "site/ untouched");
    std::fs::write(root.join("book/chapter-2.md"), CHAPTER).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

/// `eval`: an expression's value against the cache, each seed alone and left out, and the
/// chapter's diagnostics pointing into the expression.
fn evaluate(root: &Path) {
    let mean = cli(root, &["eval", "mean(pair.runs | pluck('seed'))"]);
    let said = text(&mean);
    assert!(mean.status.success(), "{said}");
    for line in [
        "0.5\n",
        "pair seed 0 alone: 0\n",
        "pair seed 1 alone: 1\n",
        "pair seed 0 left out: 1\n",
    ] {
        assert!(said.contains(line), "{line:?} in {said}");
    }
    let wrong = cli(root, &["eval", "pair.train.first_loss"]);
    let said = text(&wrong);
    assert!(!wrong.status.success(), "{said}");
    assert!(said.contains("<eval>:1:1"), "{said}");
    assert!(said.contains("`pair` is an ensemble of 2 seeds"), "{said}");
    assert!(said.contains("pair.runs[0].train.first_loss"), "{said}");
}

/// `check` keeps the claims with their values, as `build` does; a widget of a model too
/// big for a page is an error at its directive.
fn claims_and_widget_budget(root: &Path) {
    let claims = std::fs::read_to_string(root.join("book/claims.json")).unwrap();
    assert!(claims.contains("short.seed"), "{claims}");

    // A widget of a model too big for a page is an error at its directive.
    let wide = "# Wide\n\n```run wide\nbase = \"reference\"\nmodel.d_model = 256\nmodel.d_mlp = 1024\n[train]\nsteps = 2\nbatch_size = 4\nblock = 1\nwindow = 1\n[eval]\ntest_size = 2\nlong_size = 2\n```\n\n```widget big\nmodels = [{ run = \"wide\" }]\n```\n";
    std::fs::write(root.join("book/chapter-3.md"), wide).unwrap();
    let toml = std::fs::read_to_string(root.join("book/book.toml")).unwrap();
    std::fs::write(
        root.join("book/book.toml"),
        toml.replace("\"chapter-2.md\"]", "\"chapter-2.md\", \"chapter-3.md\"]"),
    )
    .unwrap();
    let over = cli(root, &["check"]);
    let said = text(&over);
    assert!(!over.status.success(), "{said}");
    assert!(said.contains("error[widget-budget]"), "{said}");
    assert!(said.contains("chapter-3.md:17:1"), "at the widget: {said}");

    // The budget is the chapter's: two widgets, each under it, are over it together, and
    // the error is at the one that crosses it.
    let model = "base = \"reference\"\nmodel.d_model = 112\nmodel.d_mlp = 448\n[train]\nsteps = 2\nbatch_size = 4\nblock = 1\nwindow = 1\n[eval]\ntest_size = 2\nlong_size = 2\n";
    let two = format!(
        "# Two widgets\n\n```run mid_a\n{model}```\n\n```run mid_b\nseed = 1\n{model}```\n\n```widget first\nmodels = [{{ run = \"mid_a\" }}]\n```\n\n```widget second\nmodels = [{{ run = \"mid_b\" }}]\n```\n"
    );
    let line_of = |fence: &str| two.lines().position(|l| l == fence).unwrap() + 1;
    std::fs::write(root.join("book/chapter-3.md"), &two).unwrap();
    let over = cli(root, &["check"]);
    let said = text(&over);
    assert!(!over.status.success(), "{said}");
    assert_eq!(said.matches("error[widget-budget]").count(), 1, "{said}");
    let second = format!("chapter-3.md:{}:1", line_of("```widget second"));
    assert!(
        said.contains(&second),
        "at the second widget ({second}): {said}"
    );
    // Each alone is within it.
    let one = two.replace(
        "```widget second\nmodels = [{ run = \"mid_b\" }]\n```\n",
        "",
    );
    std::fs::write(root.join("book/chapter-3.md"), &one).unwrap();
    let alone = cli(root, &["check"]);
    assert!(alone.status.success(), "{}", text(&alone));
}
