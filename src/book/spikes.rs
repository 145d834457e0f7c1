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
    let w = rule.window.max(1);
    let mut out = Vec::new();
    let mut inside = false;
    let mut before: Vec<f64> = Vec::with_capacity(w);
    for t in w..losses.len() {
        before.clear();
        before.extend_from_slice(&losses[t - w..t]);
        before.sort_by(f64::total_cmp);
        let median = median_of_sorted(&before);
        let spiking = losses[t] > rule.factor * median && losses[t] > rule.floor;
        if spiking && !inside {
            out.push(t + 1);
        }
        inside = spiking;
    }
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
