//! Notebooks: a chapter's `chapter-N.ipynb` (nbformat 4.5), rendered from the book's
//! template (book.toml's `[notebook]`), carrying the book's Python package as cells.
//!
//! The template is a Python file in the "percent" format that Jupytext, VS Code and Spyder
//! read: `# %%` starts a code cell, `# %% [markdown]` a text cell whose lines are comments.
//! It is rendered with minijinja first; its context is [`Input`]'s (the run's resolved
//! configuration as JSON, the chapter, the book, and the package's modules).

use crate::book::parse::BookConfig;
use minijinja::context;
use revtx_spec::experiments::RunConfig;
use serde_json::{json, Value};
use std::path::Path;

/// What one chapter's notebook is made from.
pub struct Input<'a> {
    pub config: &'a BookConfig,
    /// The project root, which the package's path is relative to; the book folder, which
    /// the template's is relative to.
    pub root: &'a Path,
    pub book_dir: &'a Path,
    pub chapter_title: &'a str,
    /// `Chapter 2`, or empty for an unnumbered page.
    pub chapter_number: &'a str,
    pub slug: &'a str,
    pub run: &'a str,
    pub seed: u64,
    pub run_config: &'a RunConfig,
}

/// The notebook's file name beside its chapter's page: `chapter-2.html` → `chapter-2.ipynb`.
#[must_use]
pub fn file_name(slug: &str) -> String {
    format!("{}.ipynb", slug.strip_suffix(".html").unwrap_or(slug))
}

/// Where Colab opens a published notebook: the book's GitHub repository, on the branch
/// that holds the site (`[notebook] branch`); `None` without a repository.
#[must_use]
pub fn colab_url(config: &BookConfig, slug: &str) -> Option<String> {
    let repo = config.github()?;
    let branch = config.notebook.as_ref()?.branch.as_str();
    Some(format!(
        "https://colab.research.google.com/github/{repo}/blob/{branch}/{}",
        file_name(slug)
    ))
}

/// The notebook, as the bytes of its `.ipynb`; `Err` says what is wrong, for a diagnostic
/// at the directive.
pub fn render(input: &Input) -> Result<Vec<u8>, String> {
    let Some(nb) = &input.config.notebook else {
        return Err(
            "this book has no notebook template: add `[notebook]` with `template = \"notebook.py\"` to book.toml"
                .into(),
        );
    };
    let template_path = input.book_dir.join(&nb.template);
    let template = crate::book::render::reads::read_to_string(&template_path).map_err(|e| {
        format!(
            "cannot read the notebook template `book/{}`: {e}",
            nb.template
        )
    })?;
    let modules = match &nb.package {
        Some(p) => modules(input.root, p)?,
        None => Vec::new(),
    };
    let config = serde_json::to_string_pretty(input.run_config).map_err(|e| e.to_string())?;
    let page_url = input
        .config
        .url
        .as_ref()
        .map(|u| format!("{}/{}", u.trim_end_matches('/'), input.slug));
    let mut env = minijinja::Environment::new();
    env.set_keep_trailing_newline(true);
    env.add_template("notebook", &template)
        .map_err(|e| format!("the notebook template `book/{}`: {e}", nb.template))?;
    let text = env
        .get_template("notebook")
        .and_then(|t| {
            t.render(context! {
                book => context! { title => &input.config.title, url => &input.config.url },
                chapter => context! {
                    title => input.chapter_title,
                    number => input.chapter_number,
                    page => input.slug,
                    url => page_url,
                    notebook => file_name(input.slug),
                },
                run => context! { id => input.run, seed => input.seed, config => config },
                modules => modules,
            })
        })
        .map_err(|e| format!("the notebook template `book/{}`: {e:#}", nb.template))?;
    let cells = cells(&text);
    if !cells.iter().any(|c| c.code) {
        return Err(format!(
            "the notebook template `book/{}` has no code cell: start one with `# %%`",
            nb.template
        ));
    }
    let mut out = serde_json::to_vec_pretty(&notebook(&cells)).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(out)
}

/// The package's modules, by name (`__init__.py` first, so the package imports): each
/// `{ package, name, path, code }`.
fn modules(root: &Path, package: &str) -> Result<Vec<Value>, String> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let dir = std::fs::canonicalize(root.join(package))
        .map_err(|e| format!("cannot read the notebook package `{package}`: {e}"))?;
    if !dir.starts_with(&root) {
        return Err(format!(
            "refusing the notebook package `{package}`: it is outside the project"
        ));
    }
    let mut names: Vec<String> = crate::book::render::reads::folder_names(&dir)
        .map_err(|e| format!("cannot read the notebook package `{package}`: {e}"))?
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|e| e == "py"))
        .collect();
    names.sort_by_key(|n| (n != "__init__.py", n.clone()));
    if names.is_empty() {
        return Err(format!(
            "the notebook package `{package}` has no `.py` module"
        ));
    }
    let name_of_package = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    names
        .into_iter()
        .map(|name| {
            let code = crate::book::render::reads::read_to_string(&dir.join(&name))
                .map_err(|e| format!("cannot read `{package}/{name}`: {e}"))?;
            Ok(json!({
                "package": name_of_package,
                "name": name,
                "path": format!("{}/{name}", package.trim_end_matches('/')),
                "code": code.trim_end(),
            }))
        })
        .collect()
}

/// One cell of the notebook.
#[derive(Debug, PartialEq)]
struct Cell {
    code: bool,
    text: String,
}

/// Splits percent-format text into cells: `# %%` opens a code cell, `# %% [markdown]` (or
/// `[md]`) a text cell whose `# ` prefixes are removed. Blank cells are dropped.
fn cells(text: &str) -> Vec<Cell> {
    let mut out = Vec::new();
    let mut current: Option<(bool, Vec<&str>)> = None;
    let flush = |c: Option<(bool, Vec<&str>)>, out: &mut Vec<Cell>| {
        if let Some((code, lines)) = c {
            let text = lines.join("\n").trim_matches('\n').trim_end().to_string();
            if !text.trim().is_empty() {
                out.push(Cell { code, text });
            }
        }
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# %%") {
            flush(current.take(), &mut out);
            let kind = rest.trim();
            let markdown = kind.starts_with("[markdown]") || kind.starts_with("[md]");
            current = Some((!markdown, Vec::new()));
            continue;
        }
        let (code, lines) = current.get_or_insert_with(|| (true, Vec::new()));
        if *code {
            lines.push(line);
        } else {
            let l = line.strip_prefix("# ").unwrap_or(line);
            lines.push(if l == "#" { "" } else { l });
        }
    }
    flush(current, &mut out);
    out
}

/// The nbformat 4.5 document of `cells`, with a Python 3 kernel and stable cell ids.
fn notebook(cells: &[Cell]) -> Value {
    let cells: Vec<Value> = cells
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let source = source_lines(&c.text);
            let id = format!("cell-{}", k + 1);
            if c.code {
                json!({
                    "cell_type": "code",
                    "id": id,
                    "metadata": {},
                    "execution_count": null,
                    "outputs": [],
                    "source": source,
                })
            } else {
                json!({ "cell_type": "markdown", "id": id, "metadata": {}, "source": source })
            }
        })
        .collect();
    json!({
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": { "name": "python3", "display_name": "Python 3", "language": "python" },
            "language_info": { "name": "python" },
        },
        "cells": cells,
    })
}

/// A cell's text as nbformat stores it: lines, each but the last with its newline.
fn source_lines(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len() - 1;
    lines
        .iter()
        .enumerate()
        .map(|(k, l)| {
            if k == last {
                (*l).to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_text_becomes_cells() {
        let text = "# %% [markdown]\n# # Title\n#\n# Some *prose*.\n\n# %%\nimport torch\nx = 1\n\n\n# %%\n\n# %% [md]\n# more\n";
        let got = cells(text);
        assert_eq!(
            got,
            vec![
                Cell {
                    code: false,
                    text: "# Title\n\nSome *prose*.".into()
                },
                Cell {
                    code: true,
                    text: "import torch\nx = 1".into()
                },
                Cell {
                    code: false,
                    text: "more".into()
                },
            ]
        );
        let nb = notebook(&got);
        assert_eq!(nb["nbformat"], 4);
        assert_eq!(nb["cells"][1]["source"], json!(["import torch\n", "x = 1"]));
        assert_eq!(nb["cells"][1]["id"], "cell-2");
        assert_eq!(nb["cells"][0]["cell_type"], "markdown");
    }

    #[test]
    fn colab_links_need_a_github_repository() {
        let mut config: BookConfig = toml::from_str(
            "title = \"t\"\nauthor = \"a\"\nchapters = []\n[notebook]\ntemplate = \"n.py\"\n",
        )
        .unwrap();
        assert_eq!(colab_url(&config, "chapter-1.html"), None);
        config.url = Some("https://someone.github.io/book/".into());
        assert_eq!(
            colab_url(&config, "chapter-1.html").as_deref(),
            Some("https://colab.research.google.com/github/someone/book/blob/gh-pages/chapter-1.ipynb")
        );
        config.repository = Some("https://github.com/org/repo.git".into());
        assert_eq!(
            colab_url(&config, "chapter-2.html").as_deref(),
            Some("https://colab.research.google.com/github/org/repo/blob/gh-pages/chapter-2.ipynb")
        );
        config.url = Some("https://example.org/book/".into());
        config.repository = None;
        assert_eq!(colab_url(&config, "chapter-2.html"), None);
    }
}
