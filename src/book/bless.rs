//! Blessing: drifted quoted figures rewritten to their recomputed values in the source, and
//! drift that cannot be compared (another platform's bits) turned into warnings. An
//! assertion is never rewritten: the false ones are listed for the author.

use super::claims::{ClaimKind, ClaimRecord, Verdict};
use super::diag::{Diagnostic, Severity, Sources};
use super::site;

/// Results that cannot be compared with the book (another platform's bits, or the native
/// profile) do not break it: their drift, and the assertions they make false, become
/// warnings that say so.
pub fn not_comparable(diags: &mut [Diagnostic], profile: crate::engine::profile::Profile) {
    for d in diags
        .iter_mut()
        .filter(|d| matches!(d.code, "drift" | "assertion-false"))
    {
        d.severity = Severity::Warning;
        d.message = if d.code == "drift" {
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
        d.code = "not-comparable";
    }
}

/// Rewrites drifted quoted figures in their source files, returning the edits:
/// (file, line, old, new). False assertions stay errors, and one more error lists them as
/// the assertions to rewrite by hand.
pub fn bless(
    claims: &[ClaimRecord],
    sources: &Sources,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(String, usize, String, String)> {
    let mut edits: Vec<(usize, std::ops::Range<usize>, String)> = claims
        .iter()
        .filter(|c| c.verdict == Verdict::Drift)
        .filter_map(|c| {
            let span = c.quoted_span.as_ref()?;
            Some((span.file, span.range.clone(), c.formatted.clone()?))
        })
        .collect();
    edits.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1.start)));
    let mut report = Vec::new();
    let mut files: Vec<usize> = edits.iter().map(|e| e.0).collect();
    files.dedup();
    for f in files {
        let mut text = sources.text(f).to_string();
        for (_, range, new) in edits.iter().filter(|e| e.0 == f) {
            let (line, _) = sources.line_col(f, range.start);
            report.push((
                sources.display_path(f),
                line,
                text[range.clone()].to_string(),
                new.clone(),
            ));
            text.replace_range(range.clone(), new);
        }
        if let Err(e) = site::write_atomic(sources.path(f), text.as_bytes()) {
            diags.push(Diagnostic::error(
                "io",
                None,
                format!("cannot bless {}: {e}", sources.display_path(f)),
            ));
        }
    }
    // Blessed drifts are no longer errors.
    diags.retain(|d| d.code != "drift");
    let false_ones: Vec<&ClaimRecord> = claims
        .iter()
        .filter(|c| c.kind == ClaimKind::Asserted && c.verdict == Verdict::False)
        .collect();
    if !false_ones.is_empty() {
        let mut d = Diagnostic::error(
            "assertions-to-rewrite",
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
    report.reverse();
    report
}
