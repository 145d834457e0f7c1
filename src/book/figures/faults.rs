//! `kind = "faults"`: the runs of a fault study side by side, smoothed training loss on
//! the left (`smooth`, default 25 steps) and exact match by string length on the right.

use super::alt::{describe_lengths, fmt_loss, fmt_pct, fmt_step, plural, run_name, summarize};
use super::loss::{draw_log_panel, LOSS};
use super::theme::{clean_points, de, mesh, render, text_style, Area, Line, FONT, PALETTE};
use super::{drawn, smoothed, Bars, Figure, Series, Svg};
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

const FAULT_SIZE: (u32, u32) = (960, 380);

/// The fields of a fault comparison.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Running-mean window of the loss curves, in steps.
    #[serde(default = "window")]
    pub smooth: usize,
}

fn window() -> usize {
    25
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let mut curves = Vec::new();
        let mut bars = Vec::new();
        for run in runs {
            let t = run.train("this figure")?;
            curves.push(smoothed(run.label, &t.losses, self.smooth));
            bars.push(Bars {
                label: run.label.to_string(),
                values: t
                    .test
                    .by_length
                    .iter()
                    .map(|b| (b.len, 100.0 * b.accuracy))
                    .collect(),
            });
        }
        drawn(fault_comparison(&curves, &bars))
    }
}

/// Rough width of `text` at plotters font size `size` (the SVG backend writes
/// `size / 1.24` px and cannot measure text).
fn text_width(text: &str, size: f64) -> i32 {
    (text.chars().count() as f64 * size / 1.24 * 0.6).ceil() as i32
}

/// Shared legend: colour swatch and label per run, centred rows. Returns the rows.
fn legend_rows(entries: &[(&str, RGBColor)], width: i32) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut used = 0;
    for (i, (label, _)) in entries.iter().enumerate() {
        let item = 14 + 6 + text_width(label, 15.0) + 24;
        if used > 0 && used + item > width - 40 {
            rows.push(Vec::new());
            used = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, item));
        }
        used += item;
    }
    rows
}

fn draw_legend(
    root: &Area,
    entries: &[(&str, RGBColor)],
    rows: &[Vec<(usize, i32)>],
    width: i32,
) -> Result<(), String> {
    for (r, row) in (0..).zip(rows) {
        let total: i32 = row.iter().map(|&(_, w)| w).sum();
        let mut x = (width - total) / 2;
        let y = 14 + 20 * r;
        for &(i, item) in row {
            let (label, color) = entries[i];
            root.draw(&Rectangle::new(
                [(x, y - 5), (x + 14, y + 5)],
                color.filled(),
            ))
            .map_err(de)?;
            root.draw(&Text::new(
                label.to_string(),
                (x + 20, y),
                text_style(15.0, HPos::Left, VPos::Center),
            ))
            .map_err(de)?;
            x += item;
        }
    }
    Ok(())
}

/// Grouped bars of exact match by string length.
fn draw_bar_panel(
    area: &Area,
    bars: &[(&Bars, RGBColor)],
    lengths: &[usize],
) -> Result<(), String> {
    let groups = lengths.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption("exact match by string length", (FONT, 19))
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5..(groups as f64 - 0.5), 0.0..100.0)
        .map_err(de)?;
    let x_fmt = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            lengths
                .get(i as usize)
                .map(ToString::to_string)
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    mesh(&mut chart)
        .disable_x_mesh()
        .x_desc("string length")
        .y_desc("exact match (%)")
        .x_labels(groups)
        .y_labels(6)
        .y_max_light_lines(1)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(de)?;

    let group = 0.8;
    let bw = group / bars.len().max(1) as f64;
    for (j, &(run, color)) in bars.iter().enumerate() {
        let rects = run.values.iter().filter_map(|&(len, v)| {
            if !v.is_finite() {
                return None;
            }
            let i = lengths.binary_search(&len).ok()? as f64;
            let x0 = i - group / 2.0 + j as f64 * bw;
            Some(Rectangle::new(
                [(x0 + 0.06 * bw, 0.0), (x0 + 0.94 * bw, v.clamp(0.0, 100.0))],
                color.filled(),
            ))
        });
        chart.draw_series(rects).map_err(de)?;
    }
    Ok(())
}

/// Unweighted mean of the finite accuracies of a run.
fn mean_accuracy(b: &Bars) -> Option<f64> {
    let vals: Vec<f64> = b
        .values
        .iter()
        .map(|&(_, v)| v)
        .filter(|v| v.is_finite())
        .map(|v| v.clamp(0.0, 100.0))
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
}

fn fault_alt(labels: &[&str], curves: &[Series], bars: &[Bars], lengths: &[usize]) -> String {
    let longest = curves
        .iter()
        .filter_map(|s| summarize(&clean_points(&s.points)))
        .map(|s| s.last.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let parts: Vec<String> = labels
        .iter()
        .map(|&label| {
            let name = run_name(label);
            let loss = curves
                .iter()
                .find(|s| s.label == label)
                .and_then(|s| summarize(&clean_points(&s.points)));
            let acc = bars
                .iter()
                .find(|b| b.label == label)
                .and_then(mean_accuracy);
            let loss_part = loss.map(|s| {
                let stop = if s.last.0 < longest {
                    " (stopped early)"
                } else {
                    ""
                };
                format!(
                    "ends at smoothed loss {} at step {}{stop}",
                    fmt_loss(s.last.1),
                    fmt_step(s.last.0)
                )
            });
            let acc_part = acc.map(|a| format!("{}% exact match", fmt_pct(a)));
            match (loss_part, acc_part) {
                (Some(l), Some(a)) => format!("{name} {l} with {a}"),
                (Some(l), None) => format!("{name} {l}"),
                (None, Some(a)) => format!("{name} has {a}"),
                (None, None) => format!("{name} has no data"),
            }
        })
        .collect();
    let range = describe_lengths(lengths);
    let lengths_desc = if range.is_empty() {
        String::new()
    } else {
        format!(" ({range})")
    };
    format!(
        "Smoothed training loss on a log scale and exact match by string length{lengths_desc} \
         for {} (exact match averaged over lengths): {}.",
        plural(labels.len(), "run"),
        parts.join("; ")
    )
}

/// Left panel: several smoothed loss curves on log y (e.g. 25-step running means; runs may have different lengths,
/// e.g. one stops at 300 steps). Right panel: grouped bars of accuracy (%) by string length (x groups = lengths 3..8,
/// one bar per run, same colors as the left panel, legend shared).
///
/// Curves are plotted as given (smooth them before calling). Colours are
/// assigned by label in order of first appearance across `curves` then
/// `bars`, so a run keeps its colour in both panels; the shared legend sits
/// above the panels. Length groups are the union of lengths in `bars`, sorted.
/// The alt text gives each run's final loss and its unweighted mean accuracy
/// over lengths. Returns `Err` only when both slices are empty. 960×380 (more
/// if the legend wraps).
pub fn fault_comparison(curves: &[Series], bars: &[Bars]) -> Result<Svg, String> {
    if curves.is_empty() && bars.is_empty() {
        return Err("fault_comparison: no curves and no bars".to_string());
    }
    let mut labels: Vec<&str> = Vec::new();
    for label in curves
        .iter()
        .map(|s| s.label.as_str())
        .chain(bars.iter().map(|b| b.label.as_str()))
    {
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    let color_of = |label: &str| {
        let i = labels.iter().position(|l| *l == label).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let entries: Vec<(&str, RGBColor)> = labels.iter().map(|&l| (l, color_of(l))).collect();
    let lines: Vec<Line> = curves
        .iter()
        .map(|s| Line {
            label: &s.label,
            color: color_of(&s.label),
            points: clean_points(&s.points),
        })
        .collect();
    let colored_bars: Vec<(&Bars, RGBColor)> =
        bars.iter().map(|b| (b, color_of(&b.label))).collect();
    let mut lengths: Vec<usize> = bars
        .iter()
        .flat_map(|b| b.values.iter().map(|&(len, _)| len))
        .collect();
    lengths.sort_unstable();
    lengths.dedup();

    let width = FAULT_SIZE.0 as i32;
    let rows = legend_rows(&entries, width);
    let legend_h = 8 + 20 * rows.len() as i32;
    let height = FAULT_SIZE.1 as i32 + legend_h - 28;
    let alt = fault_alt(&labels, curves, bars, &lengths);
    render((width as u32, height as u32), alt, |root| {
        draw_legend(root, &entries, &rows, width)?;
        let (_, body) = root.split_vertically(legend_h);
        let (left, right) = body.split_horizontally(width * 53 / 100);
        draw_log_panel(&left, &lines, "smoothed training loss", false, LOSS.axis)?;
        draw_bar_panel(&right, &colored_bars, &lengths)
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn fault_inputs() -> (Vec<Series>, Vec<Bars>) {
        let run = |label: &str, steps: u32, end: f64| Series {
            label: label.to_string(),
            points: (25..=steps)
                .map(|s| {
                    let t = f64::from(s) / f64::from(steps);
                    (f64::from(s), 2.3 * (end / 2.3).powf(t))
                })
                .collect(),
        };
        let curves = vec![
            run("reference", 1500, 1e-4),
            run("no mask", 300, 0.35),
            run("no positions", 1500, 0.8),
        ];
        let bars = vec![
            Bars {
                label: "reference".to_string(),
                values: (3..=8).map(|l| (l, 100.0)).collect(),
            },
            Bars {
                label: "no mask".to_string(),
                values: (3..=8).map(|l| (l, 60.0 - 10.0 * l as f64)).collect(),
            },
            Bars {
                label: "no positions".to_string(),
                values: (3..=8).map(|l| (l, 40.0 / l as f64)).collect(),
            },
        ];
        (curves, bars)
    }

    #[test]
    fn fault_comparison_shares_colours_and_describes_runs() {
        let (curves, bars) = fault_inputs();
        let svg = fault_comparison(&curves, &bars).unwrap();
        assert_themed(&svg, FAULT_SIZE);
        for label in [
            "string length",
            "exact match (%)",
            "training step",
            "loss (log scale)",
        ] {
            assert!(svg.body.contains(label), "missing {label}");
        }
        for len in 3..=8 {
            assert!(
                svg.body.contains(&format!("\n{len}\n")),
                "missing length {len}"
            );
        }
        // The second run is vermillion in both panels.
        let line = svg
            .body
            .lines()
            .find(|l| l.contains("<polyline") && l.contains("#D55E00"));
        let bar = svg
            .body
            .lines()
            .find(|l| l.contains("<rect") && l.contains("#D55E00"));
        assert!(line.is_some() && bar.is_some());
        assert!(
            svg.alt.contains(
                "reference ends at smoothed loss 1e-4 at step 1500 with 100% exact match"
            ),
            "{}",
            svg.alt
        );
        assert!(svg.alt.contains("no mask ends at smoothed loss 0.35 at step 300 (stopped early) with 10% exact match"), "{}", svg.alt);
        assert!(svg.alt.contains("(3 to 8)"), "{}", svg.alt);
    }

    #[test]
    fn fault_comparison_survives_bad_values() {
        let curves = vec![Series {
            label: "a".to_string(),
            points: vec![(1.0, f64::NAN), (2.0, 0.0), (3.0, -1.0)],
        }];
        let bars = vec![Bars {
            label: "b".to_string(),
            values: vec![(3, f64::NAN), (4, 150.0), (5, -3.0)],
        }];
        let svg = fault_comparison(&curves, &bars).unwrap();
        assert_themed(&svg, FAULT_SIZE);
        assert!(svg.alt.contains("b has 50% exact match"), "{}", svg.alt);
        assert!(fault_comparison(&[], &bars).is_ok());
        assert!(fault_comparison(&curves, &[]).is_ok());
        let empty = Series {
            label: "empty".to_string(),
            points: Vec::new(),
        };
        assert!(fault_comparison(&[empty], &[])
            .unwrap()
            .alt
            .contains("empty has no data"));
        assert!(fault_comparison(&[], &[]).is_err());
    }
}
