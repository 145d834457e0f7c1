//! Alt text, written from the data: how numbers, steps and runs read in a sentence, and
//! the summary of a loss curve that every figure's description starts from.

use super::theme::LOSS_FLOOR;

/// Two significant digits; scientific (`5.6e-5`) below 1e-3 or from 1e5.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.1e}");
        return match s.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim_zeros(mantissa)),
            None => s,
        };
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0..=4 here
    let decimals = (1.0 - a.log10().floor()).max(0.0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Training step: an integer where it is one.
pub fn fmt_step(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        #[allow(clippy::cast_possible_truncation)] // a whole number below 1e15
        let whole = v as i64;
        format!("{whole}")
    } else {
        fmt_num(v)
    }
}

/// Percentage with at most one decimal.
pub fn fmt_pct(v: f64) -> String {
    trim_zeros(&format!("{v:.1}")).to_string()
}

/// Label of the tick at `10^k`: 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1e3, ...
fn pow10_label(k: i32) -> String {
    match k {
        -2 => "0.01".to_string(),
        -1 => "0.1".to_string(),
        0 => "1".to_string(),
        1 => "10".to_string(),
        2 => "100".to_string(),
        k => format!("1e{k}"),
    }
}

/// Tick label on an axis that carries `log10(value)`; only whole decades are labelled.
pub fn fmt_log_tick(v: f64) -> String {
    let k = v.round();
    if (v - k).abs() < 1e-6 && k.abs() < 1000.0 {
        #[allow(clippy::cast_possible_truncation)] // below 1000 in magnitude
        let k = k as i32;
        pow10_label(k)
    } else {
        String::new()
    }
}

pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// First, last and lowest point of a cleaned run.
pub struct RunSummary {
    pub first: (f64, f64),
    pub last: (f64, f64),
    pub min: f64,
}

pub fn summarize(points: &[(f64, f64)]) -> Option<RunSummary> {
    let first = *points.first()?;
    let last = *points.last()?;
    let min = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    Some(RunSummary { first, last, min })
}

pub fn fmt_loss(v: f64) -> String {
    if v <= LOSS_FLOOR {
        format!("≤ {}", fmt_num(LOSS_FLOOR))
    } else {
        fmt_num(v)
    }
}

/// "falls from 2.5 at step 1 to 1e-4 {end}"
pub fn trend(s: &RunSummary, end: &str) -> String {
    let (a, b) = (fmt_loss(s.first.1), fmt_loss(s.last.1));
    let start = fmt_step(s.first.0);
    #[allow(clippy::float_cmp)] // the same step, read from the same data
    let single = s.first.0 == s.last.0;
    if single {
        format!("has a single value {a} at step {start}")
    } else if a == b {
        format!("stays at {a} from step {start} {end}")
    } else {
        let verb = if s.last.1 < s.first.1 {
            "falls"
        } else {
            "rises"
        };
        format!("{verb} from {a} at step {start} to {b} {end}")
    }
}

pub fn run_name(label: &str) -> &str {
    if label.trim().is_empty() {
        "the run"
    } else {
        label
    }
}

/// "3 to 8" for a range, "3, 5" otherwise.
pub fn describe_lengths(lengths: &[usize]) -> String {
    match lengths {
        [] => String::new(),
        [one] => format!("{one}"),
        [first, .., last] if last - first + 1 == lengths.len() => format!("{first} to {last}"),
        _ => lengths
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_like_the_prose() {
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(1e-4), "1e-4");
        assert_eq!(fmt_num(5.6e-5), "5.6e-5");
        assert_eq!(fmt_num(0.0123), "0.012");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(9.96), "10");
        assert_eq!(fmt_num(123.4), "123");
        assert_eq!(fmt_num(f64::NAN), "n/a");
        assert_eq!(fmt_step(1500.0), "1500");
        assert_eq!(fmt_pct(100.0), "100");
        assert_eq!(fmt_pct(99.54), "99.5");
        let ticks: Vec<String> = (-4..=1).map(|k| fmt_log_tick(f64::from(k))).collect();
        assert_eq!(ticks, ["1e-4", "1e-3", "0.01", "0.1", "1", "10"]);
        assert_eq!(fmt_log_tick(-2.5), "");
        assert_eq!(describe_lengths(&[3, 4, 5, 6, 7, 8]), "3 to 8");
        assert_eq!(describe_lengths(&[3, 5]), "3, 5");
    }
}
