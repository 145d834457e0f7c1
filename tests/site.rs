//! End-to-end: a small fixture book with a short real run is built into a site, its HTML
//! fragments are compared with snapshots, and every internal link and asset must resolve
//! when the site is served under a sub-path.
//!
//! Snapshots live in tests/snapshots; `REVTX_UPDATE_SNAPSHOTS=1 cargo test` rewrites them.
//! A missing snapshot is a failure, not a silent pass.
//!
//! `fixed_book_renders_the_same_bytes` builds a book from fixed cache entries (results in
//! tests/fixtures/results/, made once by the engine) twice and compares the site's bytes
//! with each other and with the digests in tests/snapshots/site-digest.txt: any change to
//! what the compiler writes shows there, file by file.

mod common;
use common::*;
use revtx_spec::entry;
use revtx_spec::profile::Profile;
use revtx_spec::result::RunResult;
use std::path::Path;

fn chapter() -> String {
    format!(
        r#"# A small chapter

{TINY_RUN}

```run worked
base = "worked-example"
```

## Results

The model has [103,244]{{=tiny.params}} parameters; see {{@fig-loss}}, {{@tab-acc}}, {{@tab-md}} and {{@eq-softmax}}.

$$ w_{{ij}} = \frac{{\exp(s_{{ij}})}}{{\sum_{{j'}} \exp(s_{{ij'}})}} $$ {{#eq-softmax}}

| key | weight |
|---|---:|
| cat | [0.83]{{=worked.worked.weights[1]}} |

Table: The weight on *cat*. {{#tab-md}}

```table tab-worked
kind = "worked-example"
runs = ["worked"]
caption = "The worked example."
```

```table tab-acc
kind = "accuracy-by-length"
runs = ["tiny"]
caption = "Accuracy by length."
```

```figure fig-loss
kind = "loss"
runs = ["tiny"]
caption = "Training loss."
```

```include src/sample.rs:demo
```
"#
    )
}

/// The source the chapter includes, fixed so that the listing does not move with the model.
const SAMPLE: &str = "use std::fmt;\n\n// ANCHOR: demo\n/// Doubles `x`.\npub fn double(x: f64) -> f64 {\n    2.0 * x // \"twice\" & more\n}\n// ANCHOR_END: demo\n";

/// Numbers in SVG coordinates depend on the run's floats; keep the structure only.
fn mask_numbers(s: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in s.chars() {
        if c.is_ascii_digit() || (in_num && c == '.') {
            if !in_num {
                out.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

/// Whether to rewrite the snapshots: only when `REVTX_UPDATE_SNAPSHOTS=1`, and never under
/// CI, where a rewritten snapshot would pass for one that held. Any other value is a
/// mistake worth stopping on (`0` or an empty value used to rewrite them too).
fn updating() -> bool {
    update_mode(
        std::env::var("REVTX_UPDATE_SNAPSHOTS").ok().as_deref(),
        common::under_ci(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn update_mode(value: Option<&str>, ci: bool) -> Result<bool, String> {
    match value {
        None => Ok(false),
        Some("1") if ci => Err("REVTX_UPDATE_SNAPSHOTS=1 under CI: snapshots are recorded on a developer's machine and committed, never rewritten by CI".into()),
        Some("1") => Ok(true),
        Some(v) => Err(format!(
            "REVTX_UPDATE_SNAPSHOTS={v:?}: set it to 1 to rewrite the snapshots, or unset it"
        )),
    }
}

#[test]
fn snapshots_are_rewritten_only_when_asked_and_never_under_ci() {
    assert_eq!(update_mode(None, false), Ok(false));
    assert_eq!(update_mode(None, true), Ok(false));
    assert_eq!(update_mode(Some("1"), false), Ok(true));
    assert!(update_mode(Some("1"), true).is_err());
    for v in ["0", "", "true", "yes"] {
        assert!(update_mode(Some(v), false).is_err(), "{v:?}");
    }
}

fn snapshot(name: &str, actual: &str) {
    let path = repo().join("tests/snapshots").join(name);
    if updating() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("no snapshot {name}; run with REVTX_UPDATE_SNAPSHOTS=1 to record it")
    });
    assert!(want == actual, "snapshot {name} differs; rerun with REVTX_UPDATE_SNAPSHOTS=1 to accept\n--- want\n{want}\n--- got\n{actual}");
}

/// Every `href`, `src` and CSS `url()` in the site resolves to a file inside it, and none
/// is absolute or external (the site must work under /<repo>/ with no network).
fn broken_links(site: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for e in walkdir::WalkDir::new(site) {
        let e = e.unwrap();
        let path = e.path();
        let ext = path.extension().and_then(|x| x.to_str()).unwrap_or("");
        if !matches!(ext, "html" | "css") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let mut targets = Vec::new();
        for attr in ["href=\"", "src=\""] {
            for part in text.split(attr).skip(1) {
                // Attribute values are HTML: decode the entities a browser would.
                let raw = part.split('"').next().unwrap();
                targets.push(
                    raw.replace("&#x2f;", "/")
                        .replace("&#x3d;", "=")
                        .replace("&amp;", "&"),
                );
            }
        }
        for part in text.split("url(").skip(1) {
            targets.push(
                part.split(')')
                    .next()
                    .unwrap()
                    .trim_matches(['"', '\''])
                    .to_string(),
            );
        }
        for t in targets {
            if t.starts_with('#') || t.starts_with("data:") || t.is_empty() {
                continue;
            }
            if t.starts_with('/') || t.contains("://") || t.starts_with("//") {
                bad.push(format!("{}: `{t}` is absolute or external", path.display()));
                continue;
            }
            let file = t.split(['#', '?']).next().unwrap();
            let resolved = path.parent().unwrap().join(file);
            if !resolved.exists() {
                bad.push(format!("{}: `{t}` does not resolve", path.display()));
            }
            // Anchors into HTML pages must exist too.
            let html = Path::new(file).extension().is_some_and(|x| x == "html");
            if let (Some(anchor), true) = (t.split('#').nth(1), html) {
                let target = std::fs::read_to_string(&resolved).unwrap_or_default();
                if !target.contains(&format!("id=\"{anchor}\"")) {
                    bad.push(format!("{}: anchor `{t}` not found", path.display()));
                }
            }
        }
    }
    bad
}

#[test]
fn small_book_builds_into_a_working_site() {
    let p = Project::new(&chapter());
    // A fixed source file, so the listing snapshot does not move with the model code.
    std::fs::create_dir_all(p.root().join("src")).unwrap();
    std::fs::write(p.root().join("src/sample.rs"), SAMPLE).unwrap();
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert_eq!(out.counts.checked, 2);
    assert_eq!(
        (
            out.counts.figures,
            out.counts.tables,
            out.counts.equations,
            out.counts.listings
        ),
        (1, 3, 1, 1)
    );
    let site = p.root().join("site");
    for f in [
        "index.html",
        "chapter-1.html",
        "runs.html",
        ".nojekyll",
        "claims.json",
        "search-index.json",
        "static/style.css",
        "static/highlight.css",
        "static/katex/katex.min.css",
    ] {
        assert!(site.join(f).exists(), "missing {f}");
    }
    assert!(site.join("runs/tiny-s0.safetensors").exists());
    assert!(site.join("runs/tiny-s0-loss.csv").exists());
    let claims: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(site.join("claims.json")).unwrap()).unwrap();
    assert!(claims
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["verdict"] == "ok"));
    let bad = broken_links(&site);
    assert!(bad.is_empty(), "{}", bad.join("\n"));

    let html = std::fs::read_to_string(site.join("chapter-1.html")).unwrap();
    assert!(has_xref(&html, "#fig-loss", "Figure 1.1"));
    assert!(has_xref(&html, "#eq-softmax", "(1.1)"));
    assert!(
        has_xref(&html, "#tab-md", "Table 1.1"),
        "a captioned markdown table is numbered in document order"
    );
    assert!(has_xref(&html, "#tab-acc", "Table 1.3"));
    snapshot(
        "math.html",
        fragment(
            &html,
            "<span class=\"math-display\"",
            "<span class=\"eq-num\">(1.1)</span></span>",
        ),
    );
    snapshot(
        "include.html",
        fragment(&html, "<figure class=\"listing\">", "</figure>"),
    );
    snapshot(
        "table-worked.html",
        fragment(
            &html,
            "<figure class=\"table\" id=\"tab-worked\">",
            "</figure>",
        ),
    );
    snapshot(
        "table-markdown.html",
        fragment(&html, "<figure class=\"table\" id=\"tab-md\">", "</figure>"),
    );
    // The plot's inner geometry follows the run's floats; the wrapper, the accessible name
    // and the caption are stable.
    let fig = mask_numbers(fragment(
        &html,
        "<figure class=\"plot\" id=\"fig-loss\">",
        "</figure>",
    ));
    let outline: Vec<&str> = fig
        .lines()
        .filter(|l| {
            ["<figure", "<div", "<title", "<figcaption", "</figure"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    snapshot("figure-outline.html", &(outline.join("\n") + "\n"));
    // The worked example quoted in the markdown table is a checked figure.
    assert!(html.contains("<span class=\"claim-value\">0.83</span>"));
}

/// Every construct the compiler renders, over three fixed runs: [`chapter`] and more.
fn fixed_chapter() -> String {
    chapter()
        + r#"
```run tinyseeds
base = "tiny"
seeds = [0, 1]
```

## More {#sec-more}

Inline $a_{ij} \le 1$ math, an insert of {=tiny.config.train.steps} steps, *emphasis* and a
claim within a tolerance, [0.0%]{=tiny.train.test.accuracy ~ 100%}; see {@fig-faults}.

| a | b |
|---|---|
| `x < y` | 'quoted' & "double" |

### Tables and figures of every kind

```table tab-two
kind = "accuracy-by-length"
runs = ["tiny", "tinyseeds"]
labels = ["tiny", "tiny <again>"]
caption = "Accuracy by length; {=tiny.train.test.correct} correct."
```

```table tab-keys
kind = "strongest-keys"
runs = ["tiny"]
caption = "Strongest keys."
```

```table tab-spread
kind = "seed-spread"
runs = ["tinyseeds"]
caption = "Seeds."
columns = [["correct", "run.train.test.correct"], ["first below 0.01", "run.train.first_below"]]
```

```figure fig-smooth
kind = "loss"
runs = ["tiny", "tinyseeds"]
labels = ["seed 0", "seeds 0, 1"]
smooth = 5
caption = "Smoothed loss with `code` and a claim [30]{=tiny.config.train.steps}."
```

```figure fig-attention
kind = "attention"
runs = ["tiny"]
caption = "Attention."
```

```figure fig-faults
kind = "faults"
runs = ["tiny", "tinyseeds"]
caption = "Faults."
```

```python
def f(x): return x < 1 and "s"
```
"#
}

fn fixed_project() -> Project {
    let p = Project::new(&fixed_chapter());
    std::fs::create_dir_all(p.root().join("src")).unwrap();
    std::fs::write(p.root().join("src/sample.rs"), SAMPLE).unwrap();
    p
}

/// Fixed bytes standing in for the weights of a training run.
const WEIGHTS: &[u8] = b"fixture weights, not a tensor";

/// A site's files with the build's own facts masked: the build time, the engine's code
/// fingerprint and the libtorch version. Assets copied from static/ are left out.
fn site_files(site: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(site).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(site)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if !e.file_type().is_file() || rel.starts_with("static/") {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        let bytes = match String::from_utf8(bytes) {
            Ok(text) => mask(&text).into_bytes(),
            Err(e) => e.into_bytes(),
        };
        out.push((rel, bytes));
    }
    out
}

fn mask(text: &str) -> String {
    let mut t = text
        .replace(revtx_book::ENGINE.code, "FINGERPRINT")
        .replace(revtx_book::ENGINE.libtorch, "LIBTORCH");
    if let Some(k) = t.find("data-unix=\"") {
        let end = t[k..].find("</time>").map_or(t.len(), |e| k + e);
        t.replace_range(k..end, "data-unix=\"TIME\">Unix time TIME");
    }
    t
}

/// Writes each fixture result into the project's cache, as the engine would.
fn fill_cache(p: &Project) {
    let dir = repo().join("tests/fixtures/results");
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let r: RunResult = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; REVTX_UPDATE_SNAPSHOTS=1 makes it again",
                path.display()
            )
        });
        let key = entry::key(&r.config, r.seed, Profile::Portable, revtx_book::ENGINE);
        let out = p.root().join(".revtx-cache/runs").join(key);
        entry::write(&out, |d| {
            std::fs::write(d.join(entry::RESULT_FILE), &bytes)?;
            if r.train().is_some() {
                std::fs::write(d.join(entry::WEIGHTS_FILE), WEIGHTS)?;
            }
            Ok(())
        })
        .unwrap();
    }
}

/// Trains the fixed chapter's runs and keeps their results, with the facts of this machine
/// (timings, CPU, start time, fingerprint) replaced by fixed ones.
fn make_results(p: &Project) {
    let out = p.check();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let dir = repo().join("tests/fixtures/results");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(p.root().join(".revtx-cache/runs")).unwrap() {
        let entry_dir = e.unwrap().path();
        let Ok(text) = std::fs::read_to_string(entry_dir.join(entry::RESULT_FILE)) else {
            continue;
        };
        let mut r: RunResult = serde_json::from_str(&text).unwrap();
        let env = &mut r.env;
        (env.train_seconds, env.eval_seconds, env.steps_per_second) = (1.5, 0.25, 20.0);
        env.cpu = "Fixture CPU".into();
        env.vendor = "fixture".into();
        env.isa = "avx2 fma".into();
        env.code_fingerprint = "fixture".into();
        env.started_unix = 1_700_000_000;
        env.phases = revtx_spec::result::StepPhases::default();
        let name = format!("{:?}-s{}.json", r.config.kind, r.seed).to_lowercase();
        std::fs::write(
            dir.join(name),
            serde_json::to_string_pretty(&r).unwrap() + "\n",
        )
        .unwrap();
    }
}

/// The bytes the compiler writes for a fixed book do not change unnoticed: two builds are
/// identical, and each generated file matches its committed digest.
#[test]
fn fixed_book_renders_the_same_bytes() {
    if updating() {
        make_results(&fixed_project());
    }
    let p = fixed_project();
    fill_cache(&p);
    let mut opts = p.options(true);
    opts.runs.offline = true;
    let first = revtx_book::book::build(&opts);
    assert_eq!(
        first.errors(),
        0,
        "{:?}\nif the engine's configs changed, REVTX_UPDATE_SNAPSHOTS=1 makes the results again",
        located(&first)
    );
    let site = p.root().join("site");
    let one = site_files(&site);
    let again = revtx_book::book::build(&opts);
    assert_eq!(again.errors(), 0);
    let two = site_files(&site);
    assert_eq!(one.len(), two.len());
    for ((a, x), (b, y)) in one.iter().zip(&two) {
        assert_eq!(a, b);
        assert!(x == y, "{a} differs between two builds of the same book");
    }
    let digests: String = one
        .iter()
        .map(|(f, b)| format!("{}  {f}", blake3::hash(b).to_hex()))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let path = repo().join("tests/snapshots/site-digest.txt");
    if updating() {
        std::fs::write(&path, &digests).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .expect("no tests/snapshots/site-digest.txt; REVTX_UPDATE_SNAPSHOTS=1 records it");
    let changed: Vec<&str> = digests
        .lines()
        .filter(|l| !want.lines().any(|w| w == *l))
        .chain(want.lines().filter(|w| !digests.lines().any(|l| l == *w)))
        .collect();
    assert!(
        changed.is_empty(),
        "the site's bytes changed (REVTX_UPDATE_SNAPSHOTS=1 accepts):\n{}",
        changed.join("\n")
    );
}

/// A partial that does not render is an error that names it, and no site is written.
#[test]
fn a_broken_template_is_an_error() {
    let p = Project::new("# T\n\n$$x$$ {#eq-x}\n");
    std::fs::write(
        p.root().join("templates/partials/equation.html"),
        "{{ nope( }}",
    )
    .unwrap();
    let out = p.build();
    let bad: Vec<_> = out
        .diags
        .iter()
        .filter(|d| d.code == revtx_book::book::codes::Code::Template)
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", located(&out));
    assert!(
        bad[0].message.contains("partials/equation.html"),
        "{}",
        bad[0].message
    );
    assert!(!p.root().join("site").exists(), "a site was written");
}

/// An attention figure draws the blocks, heads and seed it names, and only those.
#[test]
fn an_attention_figure_draws_the_blocks_heads_and_seed_it_names() {
    let chapter = "# A\n\n```run pair\nbase = \"reference\"\nseeds = [0, 1]\n[train]\nsteps = 5\nblock = 1\nwindow = 1\n[eval]\ntest_size = 4\nlong_size = 2\n```\n\n```figure fig-one\nkind = \"attention\"\nruns = [\"pair\"]\nblocks = [2]\nheads = [1]\nseed = 1\ninput = \"fgcabe\"\ncaption = \"One head.\"\n```\n\n```figure fig-all\nkind = \"attention\"\nruns = [\"pair\"]\ncaption = \"Every head.\"\n```\n";
    let p = Project::new(chapter);
    let (_, html) = p.built_page();
    let one = &html[html.find("id=\"fig-one\"").unwrap()..html.find("id=\"fig-all\"").unwrap()];
    let all = &html[html.find("id=\"fig-all\"").unwrap()..];
    assert_eq!(one.matches("block 2, head 1").count(), 1, "{one}");
    for absent in ["block 1, head 1", "block 1, head 2", "block 2, head 2"] {
        assert!(!one.contains(absent), "{absent} drawn");
    }
    assert!(
        one.contains("in block 2 "),
        "the alt text names the block: {one}"
    );
    for title in [
        "block 1, head 1",
        "block 1, head 2",
        "block 2, head 1",
        "block 2, head 2",
    ] {
        assert!(all.contains(title), "{title} missing from the full figure");
    }
}

/// A results table: one row per run (a single run and an ensemble side by side), each
/// column an expression with `run` bound to the row's run and every listed run by its id.
#[test]
fn a_results_table_computes_every_cell() {
    let chapter = "# R\n\n```run one\nbase = \"reference\"\n[train]\nsteps = 5\nblock = 1\nwindow = 1\n[eval]\ntest_size = 4\nlong_size = 2\n```\n\n```run pair\nbase = \"one\"\nseeds = [0, 1]\n```\n\n```table tab-r\nkind = \"results\"\nruns = [\"one\", \"pair\"]\nlabels = [\"One seed\", \"Two seeds\"]\ncolumns = [[\"Parameters\", \"num(run.params if run.params is defined else run.runs[0].params)\"], [\"Seeds\", \"(run.seeds | length) if run.seeds is defined else 1\"], [\"Steps of one\", \"one.config.train.steps\"]]\ncaption = \"Computed.\"\n```\n";
    let p = Project::new(chapter);
    let (_, html) = p.built_page();
    for want in [
        r#"<th scope="row">One seed</th><td class="num">103,244</td><td class="num">1</td><td class="num">5</td>"#,
        r#"<th scope="row">Two seeds</th><td class="num">103,244</td><td class="num">2</td><td class="num">5</td>"#,
    ] {
        assert!(html.contains(want), "{want} not in the table");
    }
}
