//! The numerics gate: before anything trains, this machine's numerics fingerprint is
//! measured and compared with the one of the machine that blessed the book.
//!
//! `book/numerics.json` records that fingerprint. The engine measures this machine's in
//! well under a second, so a machine that would compute other bits is stopped in seconds
//! instead of reporting drift after the whole training.

use super::diag::{Diagnostic, Sources, Span};
use crate::book::codes::Code;
use revtx_spec::profile::{Fingerprint, Platform, Profile};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The file, relative to the project root.
pub fn path(root: &Path) -> PathBuf {
    root.join("book").join("numerics.json")
}

/// What the gate decided.
#[derive(Clone, Debug)]
pub struct Gate {
    /// Whether results trained here can be compared with the book's figures.
    pub comparable: bool,
    /// Whether training may start.
    pub proceed: bool,
    /// This machine's fingerprint, if it was measured.
    pub measured: Option<Fingerprint>,
    /// One line for the build report.
    pub summary: String,
}

/// Measures this machine's fingerprint with the engine.
pub fn measure(engine: &Path, profile: Profile) -> Result<Fingerprint, String> {
    let out = Command::new(engine)
        .args(["numerics", "--profile", profile.id()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start the engine {}: {e}", engine.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.trim().trim_start_matches("error: ").to_string());
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the engine's fingerprint does not parse: {e}"))
}

/// Reads the recorded fingerprint, if any; a file that does not parse is an error.
pub fn recorded(
    root: &Path,
    sources: &mut Sources,
) -> Result<Option<(Fingerprint, Span)>, Diagnostic> {
    let p = path(root);
    let Ok(text) = std::fs::read_to_string(&p) else {
        return Ok(None);
    };
    let file = sources.add(p, text.clone());
    let whole = Span {
        file,
        range: 0..text.len().min(1),
    };
    match serde_json::from_str::<Fingerprint>(&text) {
        Ok(f) => Ok(Some((f, whole))),
        Err(e) => Err(Diagnostic::error(Code::NumericsFile, Some(whole), "book/numerics.json does not parse")
            .label(e.to_string())
            .hint("restore it from version control, or delete it and run `check --bless` to record it again")),
    }
}

/// Compares this machine with the book. `ignore` trains anyway (its figures are then
/// reported as not comparable); `blessing` expects a missing or foreign record (the bless
/// writes this machine's); `profile` other than portable is never compared.
pub fn gate(
    root: &Path,
    engine: &Path,
    profile: Profile,
    switches: (bool, bool),
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Gate {
    gate_on(
        &Platform::this(),
        root,
        engine,
        profile,
        switches,
        sources,
        diags,
    )
}

#[allow(
    clippy::too_many_lines,
    reason = "one decision, its cases read top to bottom"
)]
/// [`gate`] on the platform `here` (this machine's, but for a test of one that cannot
/// compute the book's bits).
pub fn gate_on(
    here: &Platform,
    root: &Path,
    engine: &Path,
    profile: Profile,
    (ignore, blessing): (bool, bool),
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) -> Gate {
    let mut g = Gate {
        comparable: true,
        proceed: true,
        measured: None,
        summary: String::new(),
    };
    if !profile.comparable() {
        g.comparable = false;
        g.summary = format!("numerics: profile `{profile}`: results hold on this machine only and are not compared with the book");
        return g;
    }
    if let Some(why) = here.unsupported(profile) {
        let d = Diagnostic::error(Code::NumericsUnsupported, None, "figures cannot be checked bit-for-bit on this platform")
            .note(why)
            .hint("train anyway with --ignore-numerics (drift is then reported as not comparable), draft with --profile native, or build from a run cache made on a supported machine (CI's)");
        return refuse_or_continue(g, d, ignore, diags);
    }
    let recorded = match recorded(root, sources) {
        Ok(r) => r,
        Err(d) => {
            diags.push(d);
            g.proceed = false;
            return g;
        }
    };
    let measured = match measure(engine, profile) {
        Ok(m) => m,
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    Code::NumericsProbe,
                    None,
                    "cannot measure this machine's numerics",
                )
                .note(e),
            );
            g.proceed = false;
            return g;
        }
    };
    let line = |verdict: &str| {
        format!(
            "numerics: profile {} on {}: {verdict} (probe {:.2} s)",
            measured.profile,
            measured.platform.describe(),
            measured.seconds
        )
    };
    match recorded {
        None => {
            g.summary = line("no fingerprint recorded in book/numerics.json yet");
            if !blessing {
                diags.push(unrecorded());
            }
        }
        Some((book, span)) if !recorded_by(&book, &measured.engine, &measured.profile) => {
            g.summary = line("the book's fingerprint was recorded by another engine or profile");
            if !blessing {
                diags.push(foreign(&book, &measured.engine, &measured.profile, span));
            }
        }
        Some((book, _)) if book.differences(&measured).is_empty() => {
            g.summary = line(&format!(
                "same bits as the machine that blessed the book ({})",
                book.platform.describe()
            ));
        }
        Some((book, span)) => {
            let ops = book.differences(&measured);
            let d = Diagnostic::error(Code::NumericsMismatch,
                Some(span),
                format!(
                    "this machine computes other bits than the one that blessed the book ({} of {} probed operations differ: {})",
                    ops.len(),
                    measured.digests.len(),
                    ops.join(", ")
                ),
            )
            .label("recorded here")
            .note(format!("profile: {}", measured.profile))
            .note(format!(
                "recorded on: {} with libtorch {} (ATen {}, MKL {})",
                book.platform.describe(),
                book.libtorch,
                book.aten,
                book.mkl
            ))
            .note(format!(
                "this machine: {} with libtorch {} (ATen {}, MKL {})",
                measured.platform.describe(),
                measured.libtorch,
                measured.aten,
                measured.mkl
            ))
            .hint("nothing was trained: build on a machine whose fingerprint matches, or take the run cache from CI (`--cache DIR`), or train anyway with --ignore-numerics (drift is then reported as not comparable)");
            g.summary = line("DIFFERENT bits from the machine that blessed the book");
            g.measured = Some(measured);
            return refuse_or_continue(g, d, ignore, diags);
        }
    }
    g.measured = Some(measured);
    g
}

/// Whether the book's record was made by `engine` under `profile`: only then do its
/// digests say anything about the bits this engine computes.
pub fn recorded_by(book: &Fingerprint, engine: &str, profile: &str) -> bool {
    book.engine == engine && book.profile == profile
}

/// `book/numerics.json` is missing: nothing says which bits the book's figures are.
fn unrecorded() -> Diagnostic {
    Diagnostic::warning(
        Code::NumericsUnrecorded,
        None,
        "book/numerics.json holds no numerics fingerprint",
    )
    .note("without it no build can tell whether this machine computes the book's bits")
    .hint("restore it from version control, or run `revtx-book check --bless` to record this machine's")
}

/// The record was made by another engine (or profile): the book was not blessed with the
/// engine that now trains it.
fn foreign(book: &Fingerprint, engine: &str, profile: &str, span: Span) -> Diagnostic {
    Diagnostic::warning(
        Code::NumericsEngine,
        Some(span),
        "book/numerics.json was recorded by another engine",
    )
    .label("recorded here")
    .note(format!(
        "recorded by engine {} under {}; this is engine {engine} under {profile}",
        book.engine, book.profile
    ))
    .hint("every run retrains under this engine; `revtx-book check --bless` retrains, checks and records the fingerprint again")
}

/// The check a build makes when it trains nothing (so measures nothing): the book records
/// a fingerprint, and this engine recorded it. Costs a file read.
pub fn recorded_by_this_engine(
    root: &Path,
    profile: Profile,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
) {
    if !profile.comparable() {
        return;
    }
    match recorded(root, sources) {
        Err(d) => diags.push(d),
        Ok(None) => diags.push(unrecorded()),
        Ok(Some((book, span))) => {
            let engine = crate::ENGINE.code;
            if !recorded_by(&book, engine, profile.id()) {
                diags.push(foreign(&book, engine, profile.id(), span));
            }
        }
    }
}

fn refuse_or_continue(
    mut g: Gate,
    d: Diagnostic,
    ignore: bool,
    diags: &mut Vec<Diagnostic>,
) -> Gate {
    if ignore {
        let mut d = d.note("--ignore-numerics: training anyway; figures that differ are reported as not comparable");
        d.severity = super::diag::Severity::Warning;
        diags.push(d);
        g.comparable = false;
    } else {
        diags.push(d);
        g.proceed = false;
    }
    if g.summary.is_empty() {
        g.summary = "numerics: this platform cannot reproduce the book bit for bit".into();
    }
    g
}

/// Records `f` as the book's fingerprint (when blessing). Unchanged digests keep the file.
pub fn record(root: &Path, f: &Fingerprint) -> std::io::Result<bool> {
    let text = serde_json::to_string_pretty(f).unwrap_or_default() + "\n";
    let p = path(root);
    if let Ok(old) = std::fs::read_to_string(&p) {
        if let Ok(old) = serde_json::from_str::<Fingerprint>(&old) {
            if old.differences(f).is_empty() && old.engine == f.engine && old.platform == f.platform
            {
                return Ok(false);
            }
        }
    }
    super::site::write_atomic(&p, text.as_bytes())?;
    Ok(true)
}
