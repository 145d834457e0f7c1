//! `revtx-book numerics`: this machine's numerics fingerprint against the one the book
//! records, one line per probed operation; fails if they differ.

use revtx_book::book::{self, diag, runs};
use revtx_spec::profile::Profile;
use std::process::ExitCode;

/// `revtx-book numerics`: this machine's fingerprint against the book's, one line per
/// probed operation; fails if they differ.
pub fn numerics(root: &std::path::Path, profile: Profile) -> ExitCode {
    let here = match book::numerics::measure(&runs::engine_path(), profile) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("profile   {}", here.profile);
    println!("machine   {}", here.platform.describe());
    println!(
        "libtorch  {} (ATen {}, MKL {}), engine {}",
        here.libtorch, here.aten, here.mkl, here.engine
    );
    let mut sources = diag::Sources::default();
    let book = book::numerics::recorded(root, &mut sources)
        .ok()
        .flatten()
        .map(|(f, _)| f);
    if let Some(b) = &book {
        println!("book      {} (engine {})", b.platform.describe(), b.engine);
    }
    for (op, d) in &here.digests {
        let verdict = match book.as_ref().and_then(|b| b.digests.get(op)) {
            Some(r) if r == d => "same",
            Some(_) => "DIFFERS",
            None => "not recorded",
        };
        println!("  {op:<24} {d}  {verdict}");
    }
    println!("probe     {:.2} s", here.seconds);
    match book {
        None => {
            println!("numerics: the book records no fingerprint (book/numerics.json is missing or does not parse)");
            println!("numerics: restore it from version control, or run `revtx-book check --bless` to record this machine's");
            ExitCode::FAILURE
        }
        Some(b) if !book::numerics::recorded_by(&b, &here.engine, &here.profile) => {
            println!(
                "numerics: the book was blessed by engine {} under {}; this is engine {} under {}",
                b.engine, b.profile, here.engine, here.profile
            );
            println!("numerics: run `revtx-book check --bless` to retrain, check and record this engine's fingerprint");
            ExitCode::FAILURE
        }
        Some(b) if b.differences(&here).is_empty() => {
            println!("numerics: same bits as the machine that blessed the book");
            ExitCode::SUCCESS
        }
        Some(b) => {
            println!(
                "numerics: {} operations differ from the book's fingerprint",
                b.differences(&here).len()
            );
            ExitCode::FAILURE
        }
    }
}
