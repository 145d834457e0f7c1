//! `kind = "sharpening"`: the worked example's attention weights with its scores multiplied
//! by √d_k (as they would be at head width d_k without the division), one group of bars
//! per d_k, one bar per key: the softmax turning into a hard maximum. From a run with
//! `base = "worked-example"` (`worked.sharpening`, computed by the engine's `attention`).

use super::alt::fmt_num;
use crate::book::codes::Code;
use super::theme::{de, mesh, render, text_style, Area, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use revtx_spec::result::Sharpening;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;
use std::fmt::Write as _;

const SIZE: (u32, u32) = (720, 400);
const LEGEND_H: i32 = 34;
/// Weights at least this large count as a hard maximum in the alt text.
const HARD: f64 = 0.999;

/// The tokens of the chapter's worked example, in key order (as its table names them).
const TOKENS: [&str; 4] = ["the", "cat", "sat", "on"];

/// The fields of a sharpening figure: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let run = single(runs, "sharpening")?;
        let Some(w) = run.first().worked() else {
            return Err(Diagnostic::error(
                Code::Figure,
                None,
                format!("`{}` is not a worked-example run", run.id),
            )
            .hint("use a run with base = \"worked-example\""));
        };
        drawn(sharpening(&w.sharpening))
    }
}

fn key_name(k: usize) -> String {
    TOKENS
        .get(k)
        .map_or_else(|| format!("key {}", k + 1), ToString::to_string)
}

/// A weight as a percentage that does not round a near-certain weight up to 100%.
fn fmt_weight(w: f64) -> String {
    let pct = 100.0 * w;
    if w < 1.0 && pct >= 99.995 {
        "more than 99.99%".to_string()
    } else if pct >= 90.0 {
        let s = format!("{pct:.2}");
        format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
    } else {
        format!("{}%", fmt_num(pct))
    }
}

fn sharpening_alt(rows: &[Sharpening], keys: usize) -> String {
    let names: Vec<String> = (0..keys).map(key_name).collect();
    let mut alt = format!(
        "Bar chart of the worked example's attention weights over {} as its scores are \
         multiplied by the square root of d_k",
        list(&names)
    );
    for (i, r) in rows.iter().enumerate() {
        let (top, w) = heaviest(r);
        let sep = if i == 0 { ": " } else { "; " };
        if i == 0 {
            let ws: Vec<String> = r.weights.iter().map(|&w| fmt_weight(w)).collect();
            let _ = write!(
                alt,
                "{sep}{} the weights are {} (entropy {} nats)",
                group_phrase(r),
                list(&ws),
                fmt_num(r.entropy)
            );
        } else {
            let _ = write!(
                alt,
                "{sep}{} {} takes {} (entropy {} nats)",
                group_phrase(r),
                key_name(top),
                fmt_weight(w),
                fmt_num(r.entropy)
            );
        }
    }
    if let Some(r) = rows.last().filter(|r| r.max_weight >= HARD) {
        let _ = write!(
            alt,
            ". By d_k = {} the softmax is a hard maximum on {}",
            r.d_k,
            key_name(heaviest(r).0)
        );
    }
    alt.push('.');
    alt
}

/// A group's tick label: the worked example's own scores are "as given" (they were divided
/// by √d_k of its own head, d_k = 2), the others "×2 (d_k = 4)": the factor the scores are
/// multiplied by and the head width that, undivided, would multiply them so.
#[allow(clippy::float_cmp)] // the engine writes 1.0 for the scores as given
fn group_label(r: &Sharpening) -> String {
    if r.factor == 1.0 {
        "as given".to_string()
    } else {
        format!("×{} (d_k = {})", fmt_num(r.factor), r.d_k)
    }
}

/// A group in the alternative text: "with the scores as given", "at d_k = 4".
#[allow(clippy::float_cmp)] // as in `group_label`
fn group_phrase(r: &Sharpening) -> String {
    if r.factor == 1.0 {
        "with the scores as given".to_string()
    } else {
        format!("at d_k = {}", r.d_k)
    }
}

/// "a, b and c"
fn list(xs: &[String]) -> String {
    match xs {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The key with the largest weight, and its weight.
fn heaviest(r: &Sharpening) -> (usize, f64) {
    r.weights
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, w)| w.is_finite())
        .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a })
}

/// Swatch and name of each key, in one row over the plot, and what the entropies above
/// the groups are measured against.
fn draw_legend(root: &Area, keys: usize) -> Result<(), String> {
    let item = 76;
    let x0 = 84;
    for k in 0..keys {
        let x = x0 + item * k as i32;
        let y = LEGEND_H / 2;
        root.draw(&Rectangle::new(
            [(x, y - 7), (x + 14, y + 7)],
            PALETTE[k % PALETTE.len()].filled(),
        ))
        .map_err(de)?;
        root.draw(&Text::new(
            key_name(k),
            (x + 20, y),
            text_style(17.0, HPos::Left, VPos::Center),
        ))
        .map_err(de)?;
    }
    let even = format!("entropy in nats (even weights: {:.2})", (keys as f64).ln());
    let mut muted = text_style(15.0, HPos::Right, VPos::Center);
    muted.color = BLACK.mix(0.8).to_backend_color();
    root.draw(&Text::new(even, (SIZE.0 as i32 - 14, LEGEND_H / 2), muted))
        .map_err(de)?;
    Ok(())
}

/// Grouped bars: one group per d_k, one bar per key, weight 0 to 1, the entropy above
/// each group. 720×400 user units. `Err` when there is nothing to draw.
fn sharpening(rows: &[Sharpening]) -> Result<Svg, String> {
    let keys = rows.iter().map(|r| r.weights.len()).max().unwrap_or(0);
    if rows.is_empty() || keys == 0 {
        return Err("sharpening: the run has no sharpened weights".to_string());
    }
    let alt = sharpening_alt(rows, keys);
    render(SIZE, alt, |root| {
        let (top, body) = root.split_vertically(LEGEND_H);
        draw_legend(&top, keys)?;
        let groups = rows.len();
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .margin_top(4)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(groups as f64 - 0.5), 0.0..1.13)
            .map_err(de)?;
        let x_fmt = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                rows.get(i as usize)
                    .map(group_label)
                    .unwrap_or_default()
            } else {
                String::new()
            }
        };
        let y_fmt = |v: &f64| {
            if *v > 1.0 + 1e-9 {
                String::new()
            } else {
                format!("{v:.1}")
            }
        };
        mesh(&mut chart)
            .disable_x_mesh()
            .x_desc("the scores multiplied by √d_k, as an undivided head of width d_k would")
            .y_desc("attention weight")
            .x_labels(groups)
            .y_labels(7)
            .y_max_light_lines(1)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()
            .map_err(de)?;

        let group = 0.84;
        let bw = group / keys as f64;
        for k in 0..keys {
            let color = PALETTE[k % PALETTE.len()];
            let bars = rows.iter().enumerate().filter_map(|(i, r)| {
                let w = *r.weights.get(k)?;
                if !w.is_finite() || w <= 0.0 {
                    return None;
                }
                let x0 = i as f64 - group / 2.0 + k as f64 * bw;
                Some(Rectangle::new(
                    [(x0 + 0.06 * bw, 0.0), (x0 + 0.94 * bw, w.min(1.0))],
                    color.filled(),
                ))
            });
            chart.draw_series(bars).map_err(de)?;
        }
        let ink = BLACK.mix(0.8);
        let labels = rows.iter().enumerate().map(|(i, r)| {
            Text::new(
                format!("entropy {}", fmt_num(r.entropy)),
                (i as f64, 1.075),
                text_style(15.0, HPos::Center, VPos::Center).color(&ink),
            )
        });
        chart.draw_series(labels).map_err(de)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn softmax(scores: &[f64], factor: f64) -> Vec<f64> {
        let m = scores
            .iter()
            .fold(f64::NEG_INFINITY, |a, &b| a.max(b * factor));
        let e: Vec<f64> = scores.iter().map(|s| (s * factor - m).exp()).collect();
        let z: f64 = e.iter().sum();
        e.iter().map(|x| x / z).collect()
    }

    /// The chapter's example: scores (0, 5, 1, 2) / √2 sharpened at d_k = 1, 4, …, 256.
    fn rows() -> Vec<Sharpening> {
        let scores: Vec<f64> = [0.0, 5.0, 1.0, 2.0]
            .iter()
            .map(|s| s / 2f64.sqrt())
            .collect();
        [1, 4, 16, 64, 256]
            .iter()
            .map(|&d_k: &i64| {
                let factor = (d_k as f64).sqrt();
                let weights = softmax(&scores, factor);
                let max_weight = weights.iter().copied().fold(0.0, f64::max);
                let entropy = -weights
                    .iter()
                    .filter(|&&w| w > 0.0)
                    .map(|w| w * w.ln())
                    .sum::<f64>();
                Sharpening {
                    d_k,
                    factor,
                    weights,
                    max_weight,
                    entropy,
                }
            })
            .collect()
    }

    #[test]
    fn bars_per_key_and_a_hard_maximum() {
        let rows = rows();
        let svg = sharpening(&rows).unwrap();
        assert_themed(&svg, SIZE);
        for label in [
            "the",
            "cat",
            "sat",
            "on",
            "as given",
            "×2 (d_k = 4)",
            "×4 (d_k = 16)",
            "×8 (d_k = 64)",
            "×16 (d_k = 256)",
            "attention weight",
        ] {
            assert!(
                svg.body.contains(&format!("\n{label}\n")),
                "missing {label}"
            );
        }
        assert!(svg.body.contains("\nentropy 0.62\n"), "{}", svg.body);
        assert_eq!(
            svg.alt,
            "Bar chart of the worked example's attention weights over the, cat, sat and on as \
             its scores are multiplied by the square root of d_k: with the scores as given the \
             weights are 2.4%, 83%, 4.9% and 9.9% (entropy 0.62 nats); at d_k = 4 cat takes 98.16% \
             (entropy 0.1 nats); at d_k = 16 cat takes 99.98% (entropy 0.0021 nats); at d_k = \
             64 cat takes more than 99.99% (entropy 7.7e-7 nats); at d_k = 256 cat takes more \
             than 99.99% (entropy 6.3e-14 nats). By d_k = 256 the softmax is a hard maximum on \
             cat."
        );
        // 4 legend swatches, and a bar for every weight that is not exactly zero (a
        // weight of 1e-25 is drawn, with no height).
        let bars = rows
            .iter()
            .flat_map(|r| &r.weights)
            .filter(|&&w| w > 0.0)
            .count();
        assert_eq!(svg.body.matches("<rect").count(), 4 + bars);
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        assert!(sharpening(&[]).is_err());
        let mut rows = rows();
        rows[1].weights = vec![f64::NAN, 0.5, 0.5, 0.0, 0.0];
        let svg = sharpening(&rows).unwrap();
        assert!(!svg.body.contains("NaN"));
        assert!(svg.body.contains("\nkey 5\n"));
        assert!(
            svg.alt.contains("over the, cat, sat, on and key 5"),
            "{}",
            svg.alt
        );
    }
}
