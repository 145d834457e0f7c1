//! `revtx-book init [DIR]`: a new book that builds and checks clean at once: `book.toml`,
//! one chapter with one tiny run, a checked figure, an assertion, a figure and a citation,
//! a bibliography, and this machine's numerics fingerprint. The theme is the binary's
//! (`src/book/theme.rs`): a book overrides a file by adding its own under `templates/` or
//! `static/`. Nothing that exists is overwritten.

use revtx_book::book::{numerics, runs};
use revtx_spec::profile::Profile;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const BOOK_TOML: &str = r#"# The book's settings: every key is listed in the guide ("The book's settings").
title = "A new book"
author = "Its author"
chapters = ["chapter-1.md"]
bibliography = "references.bib"
"#;

const CHAPTER: &str = r#"# A first chapter

A run is declared in a fenced block; the build trains it (here for a few seconds) and
caches the result, keyed by its configuration and the engine that trains it.

```run tiny
base = "reference"
[train]
steps = 100
block = 20
window = 20
[eval]
test_size = 50
long_size = 10
```

The model has [103,244]{=tiny.params} parameters, a number the build recomputes and
checks: edit it and `revtx-book check` fails at its line. Its loss started at
[2.6]{=tiny.train.first_loss ~ 0.2} and [ended lower]{? tiny.train.last_block_mean < tiny.train.first_loss},
a sentence that holds only while its condition does. The model is the transformer of
@vaswani2017, small enough to train on one core.

```figure fig-loss
kind = "loss"
runs = ["tiny"]
caption = "The training loss of the run `tiny`, step by step."
```

{@fig-loss} is drawn from the run at build time, like every number above.
"#;

const REFERENCES: &str = r"@inproceedings{vaswani2017,
  author = {Vaswani, Ashish and Shazeer, Noam and Parmar, Niki and Uszkoreit, Jakob and Jones, Llion and Gomez, Aidan N. and Kaiser, {\L}ukasz and Polosukhin, Illia},
  title = {Attention Is All You Need},
  booktitle = {Advances in Neural Information Processing Systems},
  volume = {30},
  year = {2017},
  url = {https://arxiv.org/abs/1706.03762},
}
";

const GITIGNORE: &str = "/site/\n/.revtx-cache/\n";

/// The files a new book starts with, relative to its folder.
pub const FILES: &[(&str, &str)] = &[
    ("book/book.toml", BOOK_TOML),
    ("book/chapter-1.md", CHAPTER),
    ("book/references.bib", REFERENCES),
    (".gitignore", GITIGNORE),
];

pub fn init(dir: &Path) -> ExitCode {
    if let Some(taken) = FILES
        .iter()
        .map(|(rel, _)| dir.join(rel))
        .find(|p| p.exists())
    {
        eprintln!(
            "error[init]: {} exists: `init` writes a new book and never overwrites one\n  = help: choose an empty folder, e.g. `revtx-book init my-book`",
            taken.display()
        );
        return ExitCode::from(2);
    }
    let written: Result<Vec<PathBuf>, std::io::Error> = FILES
        .iter()
        .map(|(rel, text)| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap_or(dir))?;
            std::fs::write(&p, text)?;
            Ok(p)
        })
        .collect();
    if let Err(e) = written {
        eprintln!(
            "error[io]: cannot write the new book in {}: {e}",
            dir.display()
        );
        return ExitCode::FAILURE;
    }
    // This machine's numerics, so that the first build can tell whether another machine
    // computes the same bits.
    match numerics::measure(&runs::engine_path(), Profile::Portable)
        .and_then(|f| numerics::record(dir, &f).map_err(|e| e.to_string()))
    {
        Ok(_) => {}
        Err(e) => eprintln!(
            "warning: book/numerics.json not recorded ({e}); `revtx-book check --bless` records it"
        ),
    }
    println!(
        "a new book in {}: `revtx-book build --root {0}` trains its run and writes {0}/site",
        dir.display()
    );
    ExitCode::SUCCESS
}
