//! Tests of `src/probes.rs`.

use revtx_engine::probes::*;

#[test]
fn worked_example_and_variance_probe() {
    let w = worked_example();
    let r2 = |x: f64| (x * 100.0).round() / 100.0;
    assert_eq!(
        w.scores.iter().map(|&s| r2(s)).collect::<Vec<_>>(),
        vec![0.0, 3.54, 0.71, 1.41]
    );
    let v = dot_variance(&[32], 20_000, 0);
    assert!((v[0].variance - 32.0).abs() < 2.0, "{}", v[0].variance);
    assert!((v[0].scaled_variance - 1.0).abs() < 0.07);
}
