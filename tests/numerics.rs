//! The numeric profile, tested: no result passes through MKL (the fingerprint does not
//! change with MKL's code branch), and a machine whose fingerprint differs from the book's
//! is stopped before it trains anything, with one diagnostic that says why.

mod common;

use common::Project;
use revtx_book::book::codes::Code;
use revtx_book::book::diag::Severity;
use revtx_spec::profile::Fingerprint;
use std::process::Command;

fn fingerprint(mkl_branch: Option<&str>) -> Fingerprint {
    fingerprint_with(mkl_branch, "widest")
}

fn fingerprint_with(mkl_branch: Option<&str>, isa: &str) -> Fingerprint {
    let mut c = Command::new(common::engine_exe());
    c.args(["numerics", "--profile", "portable", "--isa", isa]);
    if let Some(b) = mkl_branch {
        c.args(["--mkl-cbwr", b]);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Design (b) of the profile, proven on one machine: MKL's branch (AUTO picks per vendor
/// and model, COMPATIBLE is vendor-neutral, `SSE4_2` is another path again) changes no bit
/// of any probed operation or of four real training steps.
#[test]
fn no_result_depends_on_mkl() {
    let base = fingerprint(None);
    assert_eq!(base.mkl, "COMPATIBLE");
    assert_eq!(base.aten, "AVX2");
    for branch in ["AUTO", "SSE4_2"] {
        let other = fingerprint(Some(branch));
        assert_ne!(other.mkl, "COMPATIBLE", "the branch was switched");
        assert_eq!(
            base.differences(&other),
            Vec::<String>::new(),
            "MKL_CBWR={branch} changed some bits"
        );
    }
}

/// The matrix product's AVX2 kernel, which an AVX2-only machine runs, gives every digest
/// the widest kernel gives, the linear layers' and four real training steps' included. On
/// a machine with AVX-512 this compares the two kernels through the whole model; on one
/// without, both runs use the AVX2 kernel, and the unit test that holds each kernel to the
/// scalar chain (`every_gemm_kernel_computes_the_fused_multiply_add_chain_bit_for_bit`) is
/// the check.
#[test]
fn the_avx2_kernel_computes_the_widest_kernels_bits() {
    let widest = fingerprint(None);
    let avx2 = fingerprint_with(None, "avx2");
    assert!(widest.digests.contains_key("train_weights"));
    assert_eq!(
        widest.differences(&avx2),
        Vec::<String>::new(),
        "the AVX2 matrix-product kernel changed some bits"
    );
}

#[test]
fn a_different_fingerprint_stops_the_build_before_training() {
    let p = Project::new(&format!("# N\n\n{}\n", common::TINY_RUN));
    // The book was "blessed" on a machine whose attention and training differ from ours.
    let mut recorded = fingerprint(None);
    recorded.platform.cpu = "Intel(R) Xeon(R) Platinum 8370C".into();
    recorded.platform.vendor = "GenuineIntel".into();
    recorded.platform.isa = "avx2 fma avx512f".into();
    for op in ["attention", "train_weights"] {
        recorded
            .digests
            .insert(op.into(), "0000000000000000".into());
    }
    std::fs::write(
        p.root().join("book/numerics.json"),
        serde_json::to_string_pretty(&recorded).unwrap(),
    )
    .unwrap();

    let started = std::time::Instant::now();
    let o = p.check();
    let secs = started.elapsed().as_secs_f64();
    let mismatch: Vec<_> = o
        .diags
        .iter()
        .filter(|d| d.code == Code::NumericsMismatch)
        .collect();
    assert_eq!(mismatch.len(), 1, "{:?}", common::located(&o));
    assert_eq!(
        mismatch[0].severity,
        Severity::Error,
        "a machine that computes other bits is an error, not a warning"
    );
    let text = revtx_book::book::diag::to_plain_text(&o.diags, &o.sources);
    for needle in [
        "attention, train_weights",
        "portable-avx2-v2",
        "Intel(R) Xeon(R) Platinum 8370C",
        "nothing was trained",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    assert!(
        !p.root().join(".revtx-cache/runs").exists()
            || std::fs::read_dir(p.root().join(".revtx-cache/runs"))
                .unwrap()
                .next()
                .is_none(),
        "nothing may be trained"
    );
    assert!(secs < 30.0, "the gate took {secs:.1} s");

    // With --ignore-numerics it trains, and drift is "not comparable", not a broken book.
    let mut opts = p.options(false);
    opts.ignore_numerics = true;
    let o = revtx_book::book::build(&opts);
    assert!(o.diags.iter().any(|d| d.code == Code::NumericsMismatch
        && d.severity == revtx_book::book::diag::Severity::Warning));
    assert!(!o.comparable);
    assert_eq!(o.errors(), 0, "{:?}", common::located(&o));
}

/// `revtx-book numerics` and `check --deny-warnings` on a project: exit status and output.
fn cli(p: &Project, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_revtx-book"))
        .args(args)
        .arg("--root")
        .arg(p.root())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A project without runs, so that `check` measures nothing and trains nothing.
fn prose_only() -> Project {
    Project::new("# N\n\nText without runs.\n")
}

/// The repo's record is this engine's: `numerics` passes on it, and a project that keeps
/// it checks clean with warnings denied. (The control for the two tests below.)
#[test]
fn the_books_record_passes_the_gate() {
    let p = prose_only();
    let (ok, text) = cli(&p, &["numerics"]);
    assert!(ok, "{text}");
    assert!(text.contains("same bits"), "{text}");
    let (ok, text) = cli(&p, &["check", "-q", "--deny-warnings"]);
    assert!(ok, "{text}");
}

/// Deleting book/numerics.json switches no gate off: `numerics` fails, `check` warns, and
/// with warnings denied (as `make test` runs it) `check` fails.
#[test]
fn a_missing_record_fails_the_gate() {
    let p = prose_only();
    std::fs::remove_file(p.root().join("book/numerics.json")).unwrap();
    let (ok, text) = cli(&p, &["numerics"]);
    assert!(!ok, "numerics passed without a record:\n{text}");
    assert!(text.contains("records no fingerprint"), "{text}");

    let o = p.check();
    let d: Vec<_> = o
        .diags
        .iter()
        .filter(|d| d.code == Code::NumericsUnrecorded)
        .collect();
    assert_eq!(d.len(), 1, "{:?}", o.diags);
    assert_eq!(d[0].severity, Severity::Warning);
    let (ok, text) = cli(&p, &["check", "-q", "--deny-warnings"]);
    assert!(
        !ok,
        "check --deny-warnings passed without a record:\n{text}"
    );
    assert!(text.contains("error[numerics-unrecorded]"), "{text}");

    // The book's own `deny_warnings` is about its text, and leaves the machine's alone.
    let toml = p.root().join("book/book.toml");
    let t = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{t}deny_warnings = true\n")).unwrap();
    let (ok, text) = cli(&p, &["check", "-q"]);
    assert!(ok, "{text}");
    assert!(text.contains("warning[numerics-unrecorded]"), "{text}");
}

/// A record made by another engine fails the same way, at the record's file.
#[test]
fn a_record_from_another_engine_fails_the_gate() {
    let p = prose_only();
    let path = p.root().join("book/numerics.json");
    let mut rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    rec["engine"] = "0123456789abcdef".into();
    std::fs::write(&path, serde_json::to_string_pretty(&rec).unwrap()).unwrap();
    let (ok, text) = cli(&p, &["numerics"]);
    assert!(!ok, "numerics passed on another engine's record:\n{text}");
    assert!(
        text.contains("blessed by engine 0123456789abcdef"),
        "{text}"
    );
    let (ok, text) = cli(&p, &["check", "-q", "--deny-warnings"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!("error[{}]", Code::NumericsEngine)),
        "{text}"
    );
    assert!(text.contains("book/numerics.json"), "{text}");
}

/// A book/numerics.json that does not parse is an error at the file, before any run.
#[test]
fn an_unreadable_numerics_record_is_an_error() {
    let p = Project::new(&format!("# T\n\n{}\n", common::TINY_RUN));
    std::fs::write(p.root().join("book/numerics.json"), "{").unwrap();
    let o = revtx_book::book::build(&p.options(false));
    assert!(
        o.diags
            .iter()
            .any(|d| d.code == Code::NumericsFile && d.severity == Severity::Error),
        "{:?}",
        common::located(&o)
    );
    assert!(!p.root().join(".revtx-cache/runs").exists(), "it trained");
}

/// An engine that cannot measure this machine's numerics stops the build, before any run.
#[test]
fn a_numerics_probe_that_cannot_run_is_an_error() {
    let p = Project::new(&format!("# T\n\n{}\n", common::TINY_RUN));
    let mut opts = p.options(false);
    opts.runs.engine = p.root().join("no-such-engine");
    let o = revtx_book::book::build(&opts);
    assert!(
        o.diags.iter().any(|d| d.code == Code::NumericsProbe),
        "{:?}",
        common::located(&o)
    );
    assert!(!p.root().join(".revtx-cache/runs").exists(), "it trained");
}

/// A platform without AVX2 and FMA cannot compute the book's bits: the gate stops the
/// build with an error before anything trains (`--ignore-numerics` goes on, as a warning).
#[test]
fn a_platform_without_avx2_is_refused() {
    use revtx_spec::profile::{Platform, Profile};
    let p = Project::new("# T\n");
    let old = Platform {
        arch: "x86_64".into(),
        os: "linux".into(),
        vendor: "GenuineIntel".into(),
        cpu: "an old CPU".into(),
        isa: "sse4_2".into(),
    };
    for (ignore, severity, proceed) in [
        (false, Severity::Error, false),
        (true, Severity::Warning, true),
    ] {
        let (mut sources, mut diags) = (revtx_book::book::diag::Sources::default(), Vec::new());
        let gate = revtx_book::book::numerics::gate_on(
            &old,
            p.root(),
            &common::engine_exe(),
            Profile::Portable,
            (ignore, false),
            &mut sources,
            &mut diags,
        );
        assert_eq!(gate.proceed, proceed);
        let codes: Vec<_> = diags.iter().map(|d| (d.code, d.severity)).collect();
        assert_eq!(codes, vec![(Code::NumericsUnsupported, severity)]);
    }
}
