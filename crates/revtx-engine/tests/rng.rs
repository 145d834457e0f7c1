//! Tests of `src/rng.rs`.

use revtx_engine::rng::*;

#[test]
fn range_stays_in_bounds_and_covers_it() {
    let mut r = Rng::new(7);
    let mut seen = [0usize; 6];
    for _ in 0..6000 {
        let v = r.range(3, 8);
        assert!((3..=8).contains(&v));
        seen[v - 3] += 1;
    }
    // Each of the six values is drawn about 1000 times.
    assert!(seen.iter().all(|&c| (850..1150).contains(&c)), "{seen:?}");
}

#[test]
fn same_seed_same_stream() {
    let a: Vec<u64> = (0..5)
        .scan(Rng::new(3), |r, _| Some(r.next_u64()))
        .collect();
    let b: Vec<u64> = (0..5)
        .scan(Rng::new(3), |r, _| Some(r.next_u64()))
        .collect();
    let c: Vec<u64> = (0..5)
        .scan(Rng::new(4), |r, _| Some(r.next_u64()))
        .collect();
    assert_eq!(a, b);
    assert_ne!(a, c);
}
