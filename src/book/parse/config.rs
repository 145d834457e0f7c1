//! `book/book.toml`: its keys as a typed config, where a key's value lies in its text, and
//! the rules for the files and addresses it names (inside `book/`; an absolute site URL).

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `book/book.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BookConfig {
    /// Title of the book, shown on every page.
    pub title: String,
    /// Author line.
    pub author: String,
    /// One paragraph for the index page.
    #[serde(default)]
    pub description: String,
    /// Where the site is published (`https://…/`): the print edition links its interactive
    /// parts there. Without it, print names the page.
    #[serde(default)]
    pub url: Option<String>,
    /// Language of the text (`lang` attribute).
    #[serde(default = "default_language")]
    pub language: String,
    /// Unnumbered front matter (a preface), before the chapters: files relative to `book/`.
    #[serde(default)]
    pub front: Vec<toml::Spanned<String>>,
    /// Chapter files, in order, relative to `book/`, each with its place in `book.toml`.
    pub chapters: Vec<toml::Spanned<String>>,
    /// Appendices after the chapters, lettered A, B, …: files relative to `book/`.
    #[serde(default)]
    pub appendices: Vec<toml::Spanned<String>>,
    /// The bibliography (BibLaTeX or BibTeX), relative to `book/`; `references.bib` if
    /// there is one.
    #[serde(default)]
    pub bibliography: Option<toml::Spanned<String>>,
    /// The citation style: a CSL style by name (`apa`, the default; `chicago-author-date`,
    /// `ieee`, …), or a `.csl` file relative to `book/`.
    #[serde(default)]
    pub csl: Option<toml::Spanned<String>>,
    /// Where answers to exercises (`### Answer {.answer}`) go: `"inline"` (the default),
    /// shut where they are written; `"end"`, shut in an "Answers" section at the end of
    /// their chapter, with a link in their place.
    #[serde(default)]
    pub answers: AnswerPlace,
    /// Make every warning about the text (e.g. `unbound-number`) an error, as
    /// `--deny-warnings` does.
    #[serde(default)]
    pub deny_warnings: bool,
    /// The repository of the book's source (`https://github.com/owner/name`): the
    /// notebooks' "Open in Colab" links point there. Without it, a GitHub Pages `url`
    /// (`https://owner.github.io/name/`) names the repository.
    #[serde(default)]
    pub repository: Option<String>,
    /// How a chapter's notebook (```` ```notebook run ````) is written.
    #[serde(default)]
    pub notebook: Option<NotebookConfig>,
    /// The results kept with the book: a folder relative to `book/` (e.g. `"results"`), one
    /// compressed, checksummed file per run and seed. A build reads it before it trains and
    /// writes what it trains into it; `revtx-book audit` retrains entries and compares.
    #[serde(default)]
    pub store: Option<toml::Spanned<String>>,
    /// The book's earlier editions, oldest first (`[[editions]]`, each a `name` and a git
    /// `rev` or a saved record `claims`): the site's "Changes in this edition" page and
    /// the PDF's last appendix compare this edition with the last of them.
    #[serde(default)]
    pub editions: Vec<toml::Spanned<EditionConfig>>,
    /// Expressions named once and used anywhere (`[expressions.name]`, with `params` and
    /// `expr`): `name(args…)` in any chapter's expression. The Runs appendix lists them.
    #[serde(default)]
    pub expressions: std::collections::BTreeMap<String, toml::Spanned<NamedExpr>>,
    /// How a lint about the reasoning of the text is reported (`[lints]`, e.g.
    /// `fragile = "allow"`): `warn` (the default), `deny` (an error) or `allow` (not reported
    /// one by one, but counted on the summary line of every build).
    #[serde(default)]
    pub lints: std::collections::BTreeMap<toml::Spanned<String>, LintLevel>,
    /// One file's lint levels over `[lints]` (`[lints-for."chapter-2.md"]`, the same keys):
    /// a chapter awaiting its next edition can be allowed its findings while the rest of
    /// the book is held to them.
    #[serde(default, rename = "lints-for")]
    pub lints_for: std::collections::BTreeMap<
        toml::Spanned<String>,
        std::collections::BTreeMap<toml::Spanned<String>, LintLevel>,
    >,
}

/// A lint's level in book.toml's `[lints]`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LintLevel {
    Allow,
    Warn,
    Deny,
}

/// One `[expressions.NAME]` of book.toml: an expression with parameters.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamedExpr {
    /// The parameters' names, bound to the arguments in order (`["run"]`).
    #[serde(default)]
    pub params: Vec<String>,
    /// The expression, over its parameters and the book's runs.
    pub expr: String,
    /// One line on what it computes, for the Runs appendix.
    #[serde(default)]
    pub about: String,
}

/// One `[[editions]]` entry of book.toml.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditionConfig {
    /// How the changes page names it ("First edition").
    pub name: String,
    /// A git revision of this repository (a tag, a commit): its `book/` is that edition.
    #[serde(default)]
    pub rev: Option<String>,
    /// Or a record `revtx-book changes --save` wrote, relative to `book/`.
    #[serde(default)]
    pub claims: Option<String>,
}

/// `[notebook]` in book.toml: the template every chapter's notebook is rendered from, and
/// the package whose modules it carries.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotebookConfig {
    /// A Python file in the "percent" format (`# %%` starts a code cell, `# %% [markdown]`
    /// a text cell), relative to `book/`, rendered with minijinja.
    pub template: String,
    /// A folder of Python modules, relative to the project root: each one is a
    /// `%%writefile` cell of the notebook, so that it runs with nothing but PyTorch.
    #[serde(default)]
    pub package: Option<String>,
    /// The branch of `repository` that holds the published site, where Colab finds the
    /// notebooks (default `gh-pages`).
    #[serde(default = "default_branch")]
    pub branch: String,
}

fn default_branch() -> String {
    "gh-pages".into()
}

impl BookConfig {
    /// `owner/name` of the book's GitHub repository: `repository`, or a GitHub Pages `url`.
    #[must_use]
    pub fn github(&self) -> Option<String> {
        if let Some(r) = &self.repository {
            let rest = r.strip_prefix("https://github.com/")?;
            let mut parts = rest
                .trim_end_matches('/')
                .trim_end_matches(".git")
                .split('/');
            let (owner, name) = (parts.next()?, parts.next()?);
            return (!owner.is_empty() && !name.is_empty()).then(|| format!("{owner}/{name}"));
        }
        let url = self.url.as_deref()?;
        let host_path = url.strip_prefix("https://")?;
        let (host, path) = host_path.split_once('/').unwrap_or((host_path, ""));
        let owner = host.strip_suffix(".github.io")?;
        let name = path.split('/').next().filter(|n| !n.is_empty())?;
        Some(format!("{owner}/{name}"))
    }
}

/// Where answers go (`answers` in book.toml).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AnswerPlace {
    #[default]
    Inline,
    End,
}

fn default_language() -> String {
    "en".into()
}

/// Where `key = …` starts in a TOML text: at the key itself, not at a comment that
/// mentions it (the first byte when it is not there).
pub(super) fn key_range(text: &str, key: &str) -> std::ops::Range<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.strip_prefix(key)
            .is_some_and(|r| r.trim_start().starts_with('='))
        {
            let start = offset + (line.len() - t.len());
            return start..start + key.len();
        }
        offset += line.len();
    }
    0..1
}

/// Whether `url` is an absolute `http(s)` address with a host: the print edition links
/// the site's interactive parts there, and a relative link would lead nowhere.
pub(super) fn check_url(url: &str) -> Result<(), String> {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Err(format!(
            "`{url}` does not start with `https://` or `http://`"
        ));
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    if !host_ok {
        return Err(format!("`{url}` has no host name"));
    }
    if url.chars().any(char::is_whitespace) {
        return Err(format!("`{url}` holds a space"));
    }
    Ok(())
}

/// Where the value of `key = value` lies in a TOML text (a quoted string with its quotes),
/// or the key when the value cannot be found.
pub(super) fn value_range(text: &str, key: &str) -> std::ops::Range<usize> {
    let k = key_range(text, key);
    let after = &text[k.end..];
    let Some(eq) = after.find('=') else { return k };
    let v = after[eq + 1..].trim_start();
    let start = text.len() - after.len() + eq + 1 + (after[eq + 1..].len() - v.len());
    let len = if let Some(body) = v.strip_prefix('"') {
        body.find('"').map_or(v.len(), |e| e + 2)
    } else {
        v.find(['\n', '#']).unwrap_or(v.len()).max(1)
    };
    start..start + len
}

/// A file book.toml names (a chapter, the bibliography, a style): relative to `book/`, and
/// inside it once symlinks are resolved (the rule `include` applies to the project). Gives
/// the path to read and the file's identity (its canonical path, when it exists); `Err`
/// says why not.
pub fn book_file(book_dir: &Path, rel: &str) -> Result<(PathBuf, PathBuf), &'static str> {
    let p = Path::new(rel);
    if p.is_absolute() {
        return Err("the path is absolute");
    }
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err("the path leaves the book directory (`..`)");
    }
    let joined = book_dir.join(p);
    // A file that does not exist is reported when it is read; one that does must not be a
    // link out of the book.
    if let (Ok(canon), Ok(dir)) = (
        std::fs::canonicalize(&joined),
        std::fs::canonicalize(book_dir),
    ) {
        if !canon.starts_with(&dir) {
            return Err("it is a link to a file outside the book directory");
        }
        return Ok((joined, canon));
    }
    Ok((joined.clone(), joined))
}
