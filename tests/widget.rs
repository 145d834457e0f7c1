//! The second edition's figure kinds (`block-diagram`, `sharpening`) and the reader's
//! widget (```` ```widget ````): fixture books built from fixed cache entries, their
//! errors at the right lines, and a real build whose exported models round-trip to the
//! weights in their cache entries.

mod common;
use common::*;
use revtx_spec::entry;
use revtx_spec::profile::Profile;
use revtx_spec::result::RunResult;
use std::path::Path;

/// Fixed bytes standing in for the weights of a training run.
const FAKE_WEIGHTS: &[u8] = b"fixture weights, not a tensor";

/// Writes each fixture result (tests/fixtures/results) into the project's cache, as the
/// engine would: the tiny run at seeds 0 and 1, and the worked example.
fn fill_cache(p: &Project) {
    let dir = repo().join("tests/fixtures/results");
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let r: RunResult =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let key = entry::key(&r.config, r.seed, Profile::Portable, revtx_book::ENGINE);
        let out = p.root().join(".revtx-cache/runs").join(key);
        entry::write(&out, |d| {
            std::fs::write(d.join(entry::RESULT_FILE), &bytes)?;
            if r.train().is_some() {
                std::fs::write(d.join(entry::WEIGHTS_FILE), FAKE_WEIGHTS)?;
            }
            Ok(())
        })
        .unwrap();
    }
}

/// Builds `chapter` offline from the fixture results.
fn build_fixed(chapter: &str, site: bool) -> (Project, revtx_book::book::Outcome) {
    let p = Project::new(chapter);
    fill_cache(&p);
    let mut opts = p.options(site);
    opts.runs.offline = true;
    let out = revtx_book::book::build(&opts);
    (p, out)
}

fn runs() -> String {
    format!("# Figures\n\n{TINY_RUN}\n\n```run worked\nbase = \"worked-example\"\n```\n")
}

/// Every `(line, text)` is reported (at that line, containing that text), and nothing else.
fn assert_errors(out: &revtx_book::book::Outcome, want: &[(usize, &str)]) {
    let got = located(out);
    let mut problems = Vec::new();
    for (line, text) in want {
        if !got.iter().any(|(l, _, m)| l == line && m.contains(text)) {
            problems.push(format!("expected `{text}` at line {line}"));
        }
    }
    for (l, c, m) in &got {
        if !want.iter().any(|(_, text)| m.contains(text)) {
            problems.push(format!("unexpected {l}:{c}: {m}"));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\ngot: {got:#?}",
        problems.join("\n")
    );
}

/// The line of the first occurrence of `needle` in `text`, 1-based.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text.find(needle).unwrap_or_else(|| panic!("no `{needle}`"));
    text[..at].matches('\n').count() + 1
}

/// The value of the first `attr="…"` after `start` in `html`.
fn attr_after<'a>(html: &'a str, start: &str, attr: &str) -> &'a str {
    let s = html.find(start).unwrap_or_else(|| panic!("no `{start}`"));
    let a = s + html[s..].find(&format!("{attr}=\"")).unwrap() + attr.len() + 2;
    &html[a..a + html[a..].find('"').unwrap()]
}

#[test]
fn block_diagram_and_sharpening_render_from_their_runs() {
    let chapter = runs()
        + r#"
See {@fig-block} and {@fig-sharpening}.

```figure fig-block
kind = "block-diagram"
runs = ["tiny"]
caption = "The block, width [64]{=tiny.config.model.d_model}."
```

```figure fig-sharpening
kind = "sharpening"
runs = ["worked"]
caption = "Sharpening."
```
"#;
    let (p, out) = build_fixed(&chapter, true);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    assert_eq!(out.counts.figures, 2);
    let site = p.root().join("site");
    let html = std::fs::read_to_string(site.join("chapter-1.html")).unwrap();
    assert!(has_xref(&html, "#fig-block", "Figure 1.1"));
    assert!(has_xref(&html, "#fig-sharpening", "Figure 1.2"));

    let block = attr_after(
        &html,
        "<figure class=\"plot\" id=\"fig-block\">",
        "aria-label",
    );
    assert!(
        block.starts_with(
            "Diagram of the model with the tensor shape at every step, for b = 64 sequences \
             of t = 17 tokens, width d = 64, h = 2 heads of width d_k = 32"
        ),
        "{block}"
    );
    for s in [
        "(64, 17, 192)",
        "3 × (64, 2, 17, 32)",
        "(64, 2, 17, 17)",
        "(64, 17, 12)",
    ] {
        assert!(html.contains(&format!("\n{s}\n")), "no {s} in the diagram");
    }

    let sharp = attr_after(
        &html,
        "<figure class=\"plot\" id=\"fig-sharpening\">",
        "aria-label",
    );
    assert!(
        sharp.contains("with the scores as given the weights are 2.4%, 83%, 4.9% and 9.9%"),
        "{sharp}"
    );
    assert!(sharp.contains("at d_k = 4 cat takes 98.16%"), "{sharp}");
    assert!(
        sharp.ends_with("the softmax is a hard maximum on cat."),
        "{sharp}"
    );
    assert!(html.contains("\nentropy 0.62\n"));
    // The groups are named by the factor the scores are multiplied by: the example's own
    // scores (computed at d_k = 2) are "as given", not "d_k = 1".
    assert!(html.contains("\nas given\n") && html.contains("\n×2 (d_k = 4)\n"));

    // No widget, no models and no widget script.
    assert!(!site.join("models").exists());
    assert!(!html.contains("widget/main.js") && !html.contains("widget.css"));
}

#[test]
fn figure_kind_errors_are_at_their_fences() {
    let chapter = runs()
        + r#"
```figure fig-a
kind = "sharpening"
runs = ["tiny"]
caption = "A training run has no worked example."
```

```figure fig-b
kind = "block-diagram"
runs = ["tiny", "worked"]
caption = "Two runs."
```

```figure fig-c
kind = "sharpening"
runs = ["worked"]
caption = "An unknown field."
bins = 3
```
"#;
    let (_, out) = build_fixed(&chapter, false);
    assert_errors(
        &out,
        &[
            (
                line_of(&chapter, "```figure fig-a"),
                "`tiny` is not a worked-example run",
            ),
            (
                line_of(&chapter, "```figure fig-b"),
                "`block-diagram` draws one run, and this lists 2",
            ),
            (line_of(&chapter, "bins = 3"), "unknown field `bins`"),
        ],
    );
}

#[test]
fn widget_errors_are_at_their_fences() {
    let chapter = runs()
        + r#"
```widget empty
models = []
```

```widget nobody
```

```widget nomodels
label = "no list"
```

```widget unknown
models = [{ run = "tiny" }, { run = "nope", label = "Nope" }]
```

```widget probe
models = [{ run = "worked", label = "Worked" }]
```

```widget typo
models = [
  { run = "tiny", lable = "Tiny" },
]
```

```widget twice
models = [{ run = "tiny" }, { run = "tiny", label = "again" }]
```

```widget two words
```
"#;
    let (p, out) = build_fixed(&chapter, true);
    assert_errors(
        &out,
        &[
            (
                line_of(&chapter, "```widget empty"),
                "[no-runs] this widget has no models",
            ),
            (
                line_of(&chapter, "```widget nobody"),
                "[no-runs] this widget has no models",
            ),
            (
                line_of(&chapter, "label = \"no list\""),
                "unknown field `label`, expected `models`",
            ),
            (
                line_of(&chapter, "```widget unknown"),
                "[unknown-run] this widget uses unknown run `nope`",
            ),
            (
                line_of(&chapter, "```widget probe"),
                "[probe-run] this widget runs trained models, and `worked` is a probe",
            ),
            (line_of(&chapter, "lable = "), "unknown field `lable`"),
            (
                line_of(&chapter, "```widget twice"),
                "this widget lists run `tiny` twice",
            ),
            (
                line_of(&chapter, "```widget two words"),
                "unexpected text after `widget two`",
            ),
        ],
    );
    assert!(!p.root().join("site").exists());
}

/// The float32 values of every tensor of a safetensors file, in name order.
fn safetensors_floats(path: &Path) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names: Vec<String> = st.names().into_iter().cloned().collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let t = st.tensor(&n).unwrap();
            let xs = t
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            (n, t.shape().to_vec(), xs)
        })
        .collect()
}

/// A `models/<id>.bin` back to floats (the export's own inverse of its packing).
fn unpack(path: &Path) -> Vec<f32> {
    revtx_book::book::export::unpack(&std::fs::read(path).unwrap()).unwrap()
}

/// Two tiny models trained for real: the widget's page, the manifest, the engine's decodes,
/// and weights files that unpack to exactly the floats of each run's cache entry.
#[test]
#[allow(
    clippy::too_many_lines,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "one end-to-end check, step by step; sizes of a few hundred KB"
)]
fn widget_exports_models_that_round_trip() {
    let chapter = format!(
        "# Widget\n\n{TINY_RUN}\n\n```run tiny_noscale\nbase = \"tiny\"\n[model.attn]\nscale = false\n```\n\n\
         Try it.\n\n```widget reverse\nmodels = [\n  {{ run = \"tiny\", label = \"Tiny <reference>\" }},\n  \
         {{ run = \"tiny_noscale\" }},\n]\n```\n"
    );
    let p = Project::new(&chapter);
    let out = p.build();
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let site = p.root().join("site");
    let models = site.join("models");

    // The page holds the widget and loads its script and styles; other pages do not.
    let html = std::fs::read_to_string(site.join("chapter-1.html")).unwrap();
    assert!(html.contains(
        "<section class=\"reverse-widget\" id=\"reverse\" data-models=\"models/manifest.json\""
    ));
    assert!(html.contains("<link rel=\"stylesheet\" href=\"static/widget.css\">"));
    assert!(html.contains("<script type=\"module\" src=\"static/widget/main.js\"></script>"));
    assert!(html.contains("<span>Tiny &lt;reference&gt;</span>"));
    assert!(html.contains("value=\"tiny_noscale\" data-rw-model>"));
    assert!(html.contains("Up to 8 letters is what the models trained on"));
    let css = html.find("static/style.css").unwrap();
    assert!(
        html.find("static/widget.css").unwrap() > css,
        "widget.css comes after style.css"
    );
    for page in ["index.html", "runs.html"] {
        let other = std::fs::read_to_string(site.join(page)).unwrap();
        assert!(
            !other.contains("widget/main.js") && !other.contains("widget.css"),
            "{page}"
        );
    }
    assert!(site.join("static/widget/main.js").exists() && site.join("static/widget.css").exists());

    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(models.join("manifest.json")).unwrap()).unwrap();
    let decodes: serde_json::Value =
        serde_json::from_slice(&std::fs::read(models.join("decodes.json")).unwrap()).unwrap();
    assert_eq!(manifest["format"], 1);
    let list = manifest["models"].as_array().unwrap();
    let ids: Vec<&str> = list.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["tiny", "tiny_noscale"]);
    assert_eq!(list[0]["label"], "Tiny <reference>");
    assert_eq!(
        list[1]["label"], "tiny_noscale",
        "the label defaults to the run id"
    );
    assert_eq!(list[1]["config"]["attn"]["scale"], false);

    let mut total = 0;
    for m in list {
        let id = m["id"].as_str().unwrap();
        let result: RunResult = serde_json::from_slice(
            &std::fs::read(site.join(format!("runs/{id}-s0.json"))).unwrap(),
        )
        .unwrap();
        let train = result.train().unwrap();

        // Sizes: the file is what the manifest says, every parameter is in it, packed.
        let bin = models.join(m["file"].as_str().unwrap());
        assert_eq!(m["file"], format!("{id}.bin"));
        let bytes = std::fs::metadata(&bin).unwrap().len() as usize;
        assert_eq!(m["bytes"].as_u64().unwrap() as usize, bytes, "{id}");
        let floats = m["floats"].as_u64().unwrap() as usize;
        assert_eq!(
            floats as i64, result.params,
            "{id}: every trainable parameter"
        );
        assert!(
            bytes < 4 * floats * 95 / 100,
            "{id}: {bytes} bytes for {floats} floats"
        );
        total += bytes;

        // The cache entry's identity and what the widget needs to know.
        let key = entry::key(&result.config, 0, Profile::Portable, revtx_book::ENGINE);
        assert_eq!(m["key"], key.as_str());
        assert_eq!(m["seed"], 0);
        assert_eq!(m["train_lengths"], serde_json::json!([3, 8]));
        assert_eq!(
            m["first_untrained"],
            serde_json::to_value(
                train
                    .positions
                    .as_ref()
                    .expect("a learned table")
                    .first_untrained
            )
            .unwrap()
        );
        assert_eq!(m["attention"]["input"], train.attention.input.as_str());

        // Round trip: the packed floats are the entry's, bit for bit, tensor by tensor.
        let entry_weights = p
            .root()
            .join(".revtx-cache/runs")
            .join(&key)
            .join(entry::WEIGHTS_FILE);
        let tensors = safetensors_floats(&entry_weights);
        let back = unpack(&bin);
        assert_eq!(back.len(), floats);
        let infos = m["tensors"].as_array().unwrap();
        assert_eq!(infos.len(), tensors.len());
        for (info, (name, shape, xs)) in infos.iter().zip(&tensors) {
            assert_eq!(info["name"], name.as_str());
            assert_eq!(info["shape"], serde_json::to_value(shape).unwrap());
            let at = info["offset"].as_u64().unwrap() as usize;
            let got = &back[at..at + xs.len()];
            assert!(
                got.iter().zip(xs).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{id}: tensor {name} differs after the round trip"
            );
        }
        let all: usize = tensors.iter().map(|t| t.2.len()).sum();
        assert_eq!(all, floats);

        // The engine's own answers, for the browser's parity test.
        let d = &decodes[id];
        assert_eq!(
            d["test"]["inputs"],
            serde_json::to_value(&train.test.inputs).unwrap()
        );
        assert_eq!(
            d["test"]["outputs"],
            serde_json::to_value(&train.test.outputs).unwrap()
        );
        assert_eq!(
            d["long"]["outputs"],
            serde_json::to_value(&train.long.outputs).unwrap()
        );
        // (serde_json reads floats to within an ulp, so they are compared as numbers.)
        let engine: Vec<f64> = train
            .attention
            .weights
            .iter()
            .flatten()
            .flatten()
            .flatten()
            .copied()
            .collect();
        assert_eq!(d["attention"]["input"], train.attention.input.as_str());
        assert_eq!(
            d["attention"]["tokens"],
            serde_json::to_value(&train.attention.tokens).unwrap()
        );
        let exported: Vec<f64> = d["attention"]["weights"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l.as_array().unwrap())
            .flat_map(|h| h.as_array().unwrap())
            .flat_map(|q| q.as_array().unwrap())
            .map(|k| k.as_f64().unwrap())
            .collect();
        assert_eq!(engine.len(), exported.len());
        assert!(engine
            .iter()
            .zip(&exported)
            .all(|(a, b)| (a - b).abs() <= 1e-12 * a.abs().max(1e-300)));
    }
    assert!(total <= revtx_book::book::export::BUDGET);
}

/// The chapter's four models from the real run cache: what the reader downloads. Run with
/// `cargo test --test widget -- --ignored --nocapture` once the cache holds them.
#[test]
#[ignore = "needs the chapter's runs in .revtx-cache"]
fn chapter_models_fit_the_budget() {
    let chapter = "# Models\n\n```run reference\nbase = \"reference\"\n```\n\n\
        ```run noscale\nbase = \"noscale\"\n```\n\n```run softq\nbase = \"softmax-queries\"\n```\n\n\
        ```run nomask\nbase = \"nomask\"\n```\n\n```widget reverse\nmodels = [{ run = \"reference\" }, \
        { run = \"noscale\" }, { run = \"softq\" }, { run = \"nomask\" }]\n```\n";
    let p = Project::new(chapter);
    let mut opts = p.options(true);
    opts.runs.cache_dir = repo().join(".revtx-cache");
    opts.runs.offline = true;
    let out = revtx_book::book::build(&opts);
    assert_eq!(out.errors(), 0, "{:?}", located(&out));
    let models = p.root().join("site/models");
    let mut total = 0;
    for id in ["reference", "noscale", "softq", "nomask"] {
        let n = std::fs::metadata(models.join(format!("{id}.bin")))
            .unwrap()
            .len();
        println!("{id}.bin: {n} bytes");
        total += n;
    }
    for f in ["manifest.json", "decodes.json"] {
        let n = std::fs::metadata(models.join(f)).unwrap().len();
        println!("{f}: {n} bytes");
    }
    println!(
        "weights in all: {total} bytes (budget {})",
        revtx_book::book::export::BUDGET
    );
    assert!(total <= revtx_book::book::export::BUDGET as u64);
}
