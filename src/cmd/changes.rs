//! `revtx-book changes`: what changed between two editions of the book, claim by claim,
//! with why; `--save FILE` keeps this edition's record for a later `[[editions]]` entry.

use clap::Args;
use revtx_book::book::editions::{self, record, text::clean, Record};
use revtx_book::book::{diag, parse};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ChangesArgs {
    /// Project root (holding book/).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// The older edition: the name of a `[[editions]]` entry, or a git revision (default:
    /// the entry book.toml lists last).
    #[arg(long)]
    from: Option<String>,
    /// The newer edition, the same way (default: the book as it is, with the claims its
    /// last `check` or `build` wrote to book/claims.json).
    #[arg(long)]
    to: Option<String>,
    /// Print the changes as JSON.
    #[arg(long)]
    json: bool,
    /// Write the record of the edition `--from` names (default: this edition) to FILE,
    /// inside the project (gzipped when it ends in `.gz`), for an `[[editions]]` entry's
    /// `claims`; compare nothing.
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
}

/// `revtx-book changes`.
pub fn changes(args: &ChangesArgs) -> ExitCode {
    match run(args) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("error[edition]: {why}");
            ExitCode::FAILURE
        }
    }
}

/// `--save FILE`: the record of `from` (a revision), or of this edition, into FILE.
fn save(
    root: &std::path::Path,
    from: Option<&str>,
    path: &std::path::Path,
) -> Result<ExitCode, String> {
    let this = match from {
        Some(rev) => record::at_revision(root, rev, rev)?,
        None => record::of_folder(root, "this edition")?,
    };
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    let inside = path
        .parent()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .zip(std::fs::canonicalize(root).ok())
        .is_some_and(|(p, r)| p.starts_with(r));
    if !inside {
        return Err(format!(
            "refusing to write {}: outside the project (or its folder does not exist)",
            path.display()
        ));
    }
    if path.exists() && record::from_file(&path).is_err() {
        return Err(format!(
            "refusing to overwrite {}: it is not an edition record",
            path.display()
        ));
    }
    revtx_book::book::site::write_atomic(&path, &record::to_bytes(&this, &path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    println!(
        "changes: wrote the record of {} ({} claims, {} runs) to {}",
        this.name,
        this.claims.len(),
        this.runs.len(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn run(args: &ChangesArgs) -> Result<ExitCode, String> {
    let root = &args.root;
    let mut sources = diag::Sources {
        root: root.clone(),
        ..Default::default()
    };
    let mut diags = Vec::new();
    let book = parse::load(root, &mut sources, &mut diags);
    diag::emit_stderr(&diags, &sources);
    let book = book.ok_or("the book does not parse")?;
    if let Some(path) = &args.save {
        return save(root, args.from.as_deref(), path);
    }
    let pick = |which: Option<&String>, default_last: bool| -> Result<Record, String> {
        match which {
            Some(w) => match book.editions.iter().find(|(e, _)| &e.name == w) {
                Some((e, _)) => editions::of(root, e),
                None => record::at_revision(root, w, w),
            },
            None if default_last => {
                let (e, _) = book
                    .editions
                    .last()
                    .ok_or("book.toml lists no `[[editions]]`: say which with --from")?;
                editions::of(root, e)
            }
            None => record::of_folder(root, "this edition"),
        }
    };
    let old = pick(args.from.as_ref(), true)?;
    let new = pick(args.to.as_ref(), false)?;
    let c = editions::compare(&old, &new);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&c).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "changes from {} to {}: {} changed, {} appeared, {} disappeared, {} as they were",
        c.from,
        c.to,
        c.changed.len(),
        c.appeared.len(),
        c.disappeared.len(),
        c.same
    );
    for ch in &c.changed {
        println!(
            "\n{}:{}:{}  {}{}\n  \"{}\"\n  {}: {} -> {}",
            ch.new.file,
            ch.new.line,
            ch.new.col,
            ch.new.chapter,
            ch.new
                .section
                .as_ref()
                .map(|(s, _)| format!(", {s}"))
                .unwrap_or_default(),
            clean(&ch.new.sentence),
            ch.new.expr,
            ch.old.value,
            ch.new.value
        );
        for cause in &ch.causes {
            println!("  because {}", cause.describe());
        }
    }
    for (what, list) in [("appeared", &c.appeared), ("disappeared", &c.disappeared)] {
        for claim in list {
            println!(
                "\n{what}: {}:{}:{}  {} = {}",
                claim.file, claim.line, claim.col, claim.expr, claim.value
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
