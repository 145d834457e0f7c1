//! End-to-end: a small fixture book with a short real run is built into a site, its HTML
//! fragments are compared with snapshots, and every internal link and asset must resolve
//! when the site is served under a sub-path.
//!
//! Snapshots live in tests/snapshots; `REVTX_UPDATE_SNAPSHOTS=1 cargo test` rewrites them.

mod common;
use common::*;
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

/// The first element starting with `start` and its matching close tag `end_tag`.
fn fragment<'a>(html: &'a str, start: &str, end_tag: &str) -> &'a str {
    let s = html
        .find(start)
        .unwrap_or_else(|| panic!("no `{start}` in the page"));
    let e = s + html[s..].find(end_tag).unwrap() + end_tag.len();
    &html[s..e]
}

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

fn snapshot(name: &str, actual: &str) {
    let path = repo().join("tests/snapshots").join(name);
    if std::env::var_os("REVTX_UPDATE_SNAPSHOTS").is_some() || !path.exists() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
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
            if let (Some(anchor), true) = (t.split('#').nth(1), file.ends_with(".html")) {
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
    std::fs::write(p.root().join("src/sample.rs"), "use std::fmt;\n\n// ANCHOR: demo\n/// Doubles `x`.\npub fn double(x: f64) -> f64 {\n    2.0 * x // \"twice\" & more\n}\n// ANCHOR_END: demo\n").unwrap();
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
    assert!(html.contains("<a class=\"xref\" href=\"#fig-loss\">Figure 1.1</a>"));
    assert!(html.contains("<a class=\"xref\" href=\"#eq-softmax\">(1.1)</a>"));
    assert!(
        html.contains("<a class=\"xref\" href=\"#tab-md\">Table 1.1</a>"),
        "a captioned markdown table is numbered in document order"
    );
    assert!(html.contains("<a class=\"xref\" href=\"#tab-acc\">Table 1.3</a>"));
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
