//! What the book calls a spike in a loss curve, in one place: the `spikes` helper of
//! expressions and the `spikes` figure both count with [`starts`], so a quoted count is the
//! count drawn.

/// When a step's loss is a spike: more than `factor` times the median loss of the `window`
/// steps before it, and above `floor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub factor: f64,
    pub floor: f64,
    pub window: usize,
}

impl Default for Rule {
    /// Ten times the median of the 25 steps before, and above 0.01, the threshold the
    /// book's runs must cross: a jump a log-scale plot shows and a loss that matters.
    fn default() -> Self {
        Rule {
            factor: 10.0,
            floor: 0.01,
            window: 25,
        }
    }
}

/// The steps (numbered from one, as `first_below` is) at which a spike begins: a run of
/// consecutive spiking steps counts once, at its first. The first `window` steps have no
/// median before them and never spike.
pub fn starts(losses: &[f64], rule: &Rule) -> Vec<usize> {
    spans(losses, rule).iter().map(|s| s.start).collect()
}

/// One spike: where it begins, how long the rule keeps flagging it, and how high it goes.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Spike {
    /// The step it begins at, numbered from one.
    pub start: usize,
    /// How many consecutive steps the rule flags, from `start` on.
    pub steps: usize,
    /// The highest loss among those steps, and the step it is at.
    pub peak: f64,
    pub peak_step: usize,
}

/// Every spike of a loss curve by `rule`: the runs of consecutive flagged steps of which
/// [`starts`] counts the first.
pub fn spans(losses: &[f64], rule: &Rule) -> Vec<Spike> {
    let w = rule.window.max(1);
    let mut out: Vec<Spike> = Vec::new();
    let mut inside = false;
    if losses.len() <= w {
        return out;
    }
    // The window before step t, kept sorted as it slides: one element out, one in (the
    // same values in the same order as sorting each window afresh, at a fraction of it).
    let mut before: Vec<f64> = losses[..w].to_vec();
    before.sort_by(f64::total_cmp);
    for t in w..losses.len() {
        if t > w {
            let (gone, came) = (losses[t - w - 1], losses[t - 1]);
            let at = before.partition_point(|x| x.total_cmp(&gone).is_lt());
            before.remove(at);
            let to = before.partition_point(|x| x.total_cmp(&came).is_le());
            before.insert(to, came);
        }
        let median = median_of_sorted(&before);
        let spiking = losses[t] > rule.factor * median && losses[t] > rule.floor;
        match out.last_mut() {
            Some(s) if spiking && inside => {
                s.steps += 1;
                if losses[t] > s.peak {
                    (s.peak, s.peak_step) = (losses[t], t + 1);
                }
            }
            _ if spiking => out.push(Spike {
                start: t + 1,
                steps: 1,
                peak: losses[t],
                peak_step: t + 1,
            }),
            _ => {}
        }
        inside = spiking;
    }
    out
}

/// [`starts`], remembered: a build counts the same run's spikes again for every claim,
/// table cell and seed left out that reads them, so each (curve, rule) is counted once per
/// process. A hit compares the whole curve bit for bit, not only its hash.
pub fn starts_remembered(losses: &[f64], rule: &Rule) -> Vec<usize> {
    type Seen = std::collections::HashMap<u64, Vec<(Vec<u64>, [u64; 3], Vec<usize>)>>;
    thread_local! {
        static SEEN: std::cell::RefCell<Seen> = std::cell::RefCell::new(Seen::new());
    }
    let bits: Vec<u64> = losses.iter().map(|x| x.to_bits()).collect();
    let r = [
        rule.factor.to_bits(),
        rule.floor.to_bits(),
        rule.window as u64,
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &w in bits.iter().chain(&r) {
        h = (h ^ w).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    if let Some(found) = SEEN.with(|s| {
        s.borrow().get(&h).and_then(|v| {
            v.iter()
                .find(|(b, rr, _)| *b == bits && *rr == r)
                .map(|(_, _, out)| out.clone())
        })
    }) {
        return found;
    }
    let out = starts(losses, rule);
    SEEN.with(|s| {
        s.borrow_mut()
            .entry(h)
            .or_default()
            .push((bits, r, out.clone()));
    });
    out
}

/// The middle value of an ascending, non-empty slice (of an even count, the mean of the two
/// middle ones); the `median()` helper of expressions uses it too.
pub fn median_of_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_counts_once_where_it_starts() {
        let mut l = vec![0.001; 100];
        (l[40], l[41], l[42]) = (0.5, 0.2, 0.05);
        l[80] = 0.02;
        assert_eq!(starts(&l, &Rule::default()), vec![41, 81]);
        let s = spans(&l, &Rule::default());
        assert_eq!(
            s.iter()
                .map(|s| (s.start, s.steps, s.peak_step))
                .collect::<Vec<_>>(),
            vec![(41, 3, 41), (81, 1, 81)]
        );
        assert!((s[0].peak - 0.5).abs() < 1e-12);
    }

    /// The sliding window gives what sorting each window afresh gives, on a noisy curve
    /// with repeated values, spikes and a NaN.
    #[test]
    fn the_sliding_window_is_the_sorted_window() {
        let mut x = 0x9e37_79b9_u64;
        let mut l: Vec<f64> = (0..3000)
            .map(|i| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let u = f64::from(u32::try_from(x >> 40).unwrap()) / f64::from(1u32 << 24);
                let base = 1.0 / f64::from(i + 1);
                if u > 0.995 {
                    base * 40.0
                } else {
                    (base * (1.0 + u) * 64.0).round() / 64.0
                }
            })
            .collect();
        l[1234] = f64::NAN;
        for window in [1, 2, 5, 25, 100] {
            let rule = Rule {
                window,
                floor: 0.0,
                ..Rule::default()
            };
            let w = rule.window;
            let mut naive = Vec::new();
            let mut inside = false;
            for t in w..l.len() {
                let mut b = l[t - w..t].to_vec();
                b.sort_by(f64::total_cmp);
                let spiking = l[t] > rule.factor * median_of_sorted(&b) && l[t] > rule.floor;
                if spiking && !inside {
                    naive.push(t + 1);
                }
                inside = spiking;
            }
            assert!(!naive.is_empty(), "window {window}");
            assert_eq!(starts(&l, &rule), naive, "window {window}");
        }
    }

    #[test]
    fn the_floor_and_the_factor_hold() {
        let mut l = vec![0.0001; 60];
        l[30] = 0.005; // fifty times, but below the floor
        l[50] = 0.0009; // nine times
        assert!(starts(&l, &Rule::default()).is_empty());
        let relative = Rule {
            floor: 0.0,
            ..Rule::default()
        };
        assert_eq!(starts(&l, &relative), vec![31]);
        // A falling loss never spikes, and a short series has no window to judge by.
        let falling: Vec<f64> = (0..200).map(|i| 2.0 / f64::from(i + 1)).collect();
        assert!(starts(&falling, &Rule::default()).is_empty());
        assert!(starts(&[1.0, 50.0], &Rule::default()).is_empty());
    }
}
