//! Blessing: drifted quoted figures rewritten to their recomputed values in the source, and
//! drift that cannot be compared (another platform's bits) turned into warnings. An
//! assertion is never rewritten: the false ones are listed for the author.

use super::claims::{ClaimKind, ClaimRecord, Verdict};
use super::codes::Code;
use super::diag::{Diagnostic, Severity, Sources, Span};
use super::site;

/// Results that cannot be compared with the book (another platform's bits, or the native
/// profile) do not break it: their drift, and the assertions they make false, become
/// warnings that say so.
pub fn not_comparable(diags: &mut [Diagnostic], profile: revtx_spec::profile::Profile) {
    for d in diags
        .iter_mut()
        .filter(|d| matches!(d.code, Code::Drift | Code::AssertionFalse))
    {
        d.severity = Severity::Warning;
        d.message = if d.code == Code::Drift {
            format!(
                "quoted figure differs from a run that is not comparable on this platform ({})",
                profile.id()
            )
        } else {
            format!(
                "asserted statement does not hold for a run that is not comparable on this platform ({})",
                profile.id()
            )
        };
        d.code = Code::NotComparable;
    }
}

/// Under `check --seed-shift K` the runs trained on other seeds, so quoted figures are
/// expected to read differently: their drift is dropped, and every chapter with a moved
/// figure is written as it reads under the shift into `dir` (`dir/book/chapter-1.md`),
/// for reading; the source is not touched. Returns a line for the run report. False
/// assertions stay errors: a sentence that holds only for the seeds drawn is what the
/// shift is for.
pub fn seed_shifted(
    diags: &mut Vec<Diagnostic>,
    shift: u64,
    only: &[String],
    claims: &[ClaimRecord],
    sources: &Sources,
    dir: &std::path::Path,
) -> String {
    diags.retain(|d| d.code != Code::Drift);
    let mut moved = 0;
    let mut written = Vec::new();
    for (f, text, edits) in rewritten(claims, sources) {
        moved += edits.len();
        let shown = sources.display_path(f);
        let to = dir.join(&shown);
        let wrote = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| site::write_atomic(&to, text.as_bytes()));
        match wrote {
            Ok(()) => written.push(to.display().to_string()),
            Err(e) => diags.push(Diagnostic::error(
                Code::Io,
                None,
                format!("cannot write {}: {e}", to.display()),
            )),
        }
    }
    let false_now = diags
        .iter()
        .filter(|d| d.code == Code::AssertionFalse)
        .count();
    let s = |n: usize| if n == 1 { "" } else { "s" };
    let read = if written.is_empty() {
        String::new()
    } else {
        format!("; as they read now: {}", written.join(", "))
    };
    let which = if only.is_empty() {
        "every seed".to_string()
    } else {
        let ids: Vec<String> = only.iter().map(|r| format!("`{r}`")).collect();
        format!("the seeds of {} (no other run's)", ids.join(", "))
    };
    format!(
        "seed shift: {which} moved up by {shift}; {moved} quoted figure{} read differently (expected), {false_now} asserted statement{} false{read}",
        s(moved),
        s(false_now),
    )
}

/// One quoted figure `--bless` rewrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlessEdit {
    /// The source file, as diagnostics show it.
    pub file: String,
    pub line: usize,
    /// The quote as it read, and as it reads now.
    pub old: String,
    pub new: String,
}

/// Rewrites drifted quoted figures in their source files, returning the edits in source
/// order. False assertions stay errors, and one more error lists them as the assertions
/// to rewrite by hand.
pub fn bless(
    claims: &[ClaimRecord],
    sources: &Sources,
    diags: &mut Vec<Diagnostic>,
) -> Vec<BlessEdit> {
    let mut report = Vec::new();
    for (f, text, edits) in rewritten(claims, sources) {
        report.extend(edits);
        if let Err(e) = site::write_atomic(sources.path(f), text.as_bytes()) {
            diags.push(Diagnostic::error(
                Code::Io,
                None,
                format!("cannot bless {}: {e}", sources.display_path(f)),
            ));
        }
    }
    // Blessed drifts are no longer errors.
    diags.retain(|d| d.code != Code::Drift);
    let false_ones: Vec<&ClaimRecord> = claims
        .iter()
        .filter(|c| c.kind == ClaimKind::Asserted && c.verdict == Verdict::False)
        .collect();
    if !false_ones.is_empty() {
        let mut d = Diagnostic::error(
            Code::AssertionsToRewrite,
            None,
            format!(
                "{} assertion{} to rewrite by hand (`--bless` rewrites figures, never statements)",
                false_ones.len(),
                if false_ones.len() == 1 { "" } else { "s" }
            ),
        );
        for c in false_ones {
            let text = c.quoted.as_deref().unwrap_or("(the sentence before it)");
            let short: String = text.chars().take(90).collect();
            let more = if short.len() < text.len() { "…" } else { "" };
            d = d.note(format!("{}:{}:{}: {short}{more}", c.file, c.line, c.col));
        }
        diags.push(d);
    }
    report
}

/// Every source file with a drifted quoted figure, as it reads with each such figure
/// rewritten to its recomputed value, and the edits in source order.
fn rewritten(claims: &[ClaimRecord], sources: &Sources) -> Vec<(usize, String, Vec<BlessEdit>)> {
    // (where, the new text), last first within a file so earlier offsets stay valid.
    let mut edits: Vec<(&Span, String)> = claims
        .iter()
        .filter(|c| c.verdict == Verdict::Drift)
        .filter_map(|c| Some((c.quoted_span.as_ref()?, c.formatted.clone()?)))
        .collect();
    edits.sort_by_key(|(span, _)| (span.file, std::cmp::Reverse(span.range.start)));
    let mut files: Vec<usize> = edits.iter().map(|(span, _)| span.file).collect();
    files.dedup();
    files
        .into_iter()
        .map(|f| {
            let mut text = sources.text(f).to_string();
            let mut report = Vec::new();
            for (span, new) in edits.iter().filter(|(span, _)| span.file == f) {
                let (line, _) = sources.line_col(f, span.range.start);
                report.push(BlessEdit {
                    file: sources.display_path(f),
                    line,
                    old: text[span.range.clone()].to_string(),
                    new: new.clone(),
                });
                text.replace_range(span.range.clone(), new);
            }
            report.reverse();
            (f, text, report)
        })
        .collect()
}
