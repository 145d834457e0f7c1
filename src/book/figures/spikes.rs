//! `kind = "spikes"`: how many spikes each seed's loss had, one row per run with a dot per
//! seed and a tick at the mean, counted by the book's one rule (`crate::book::spikes`), the
//! rule the `spikes()` helper uses, so a quoted count is the count drawn.

use super::alt::{fmt_num, run_name};
use super::theme::{de, mesh, render, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use crate::book::spikes;
use plotters::prelude::*;
use serde::Deserialize;

const WIDTH: u32 = 760;
const ROW: u32 = 40;

/// The fields of a spikes figure: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

/// One row: a run's label and each seed's count.
struct Row {
    label: String,
    counts: Vec<usize>,
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let mut rows = Vec::with_capacity(runs.len());
        for run in runs {
            let counts = (run.trains("a spikes figure")?.iter())
                .map(|t| spikes::starts(&t.losses, &spikes::Rule::default()).len())
                .collect();
            rows.push(Row {
                label: run.label.to_string(),
                counts,
            });
        }
        drawn(chart(&rows))
    }
}

fn mean(xs: &[usize]) -> f64 {
    xs.iter().sum::<usize>() as f64 / xs.len().max(1) as f64
}

fn chart(rows: &[Row]) -> Result<Svg, String> {
    let n = rows.len();
    let size = (WIDTH, 90 + ROW * n as u32);
    let top = rows.iter().flat_map(|r| r.counts.iter()).copied().max().unwrap_or(0);
    let xmax = (top.max(4) as f64 * 1.08).ceil();
    render(size, alt(rows), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(190)
            .build_cartesian_2d(-0.5..xmax, -0.5..(n as f64 - 0.5))
            .map_err(de)?;
        // Row i is drawn at y = n - 1 - i, so the first run is at the top.
        let label_of = |y: &f64| -> String {
            let y = *y;
            let k = y.round();
            if (y - k).abs() > 1e-6 || k < 0.0 || k >= n as f64 {
                return String::new();
            }
            rows[n - 1 - k as usize].label.clone()
        };
        mesh(&mut chart)
            .x_desc("spikes per run (one dot per seed; tick: the mean)")
            .y_labels(n)
            .x_labels(8)
            .y_max_light_lines(0)
            .x_max_light_lines(1)
            .y_label_formatter(&label_of)
            .x_label_formatter(&|v| fmt_num(*v))
            .draw()
            .map_err(de)?;
        for (i, row) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let color = PALETTE[i % PALETTE.len()];
            let k = row.counts.len() as f64;
            for (j, &c) in row.counts.iter().enumerate() {
                // Seeds with one count sit side by side, not on top of one another.
                let dy = if k > 1.0 { 0.5 * (j as f64 / (k - 1.0) - 0.5) } else { 0.0 };
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (c as f64, y + dy),
                        5,
                        color.mix(0.85).filled(),
                    )))
                    .map_err(de)?;
            }
            let m = mean(&row.counts);
            chart
                .draw_series(LineSeries::new(
                    [(m, y - 0.38), (m, y + 0.38)],
                    BLACK.mix(0.75).stroke_width(2),
                ))
                .map_err(de)?;
        }
        Ok(())
    })
}

fn alt(rows: &[Row]) -> String {
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            let counts: Vec<String> = r.counts.iter().map(ToString::to_string).collect();
            format!(
                "{}: {} (mean {})",
                run_name(&r.label),
                counts.join(", "),
                fmt_num(mean(&r.counts))
            )
        })
        .collect();
    format!(
        "Spikes in each seed's training loss, one row per configuration: {}.",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    #[test]
    fn one_dot_per_seed_and_the_counts_in_words() {
        let rows = [
            Row { label: "constant".into(), counts: vec![32, 5, 6, 11, 25] },
            Row { label: "warm-up and cosine".into(), counts: vec![0, 1, 0, 2, 0] },
        ];
        let svg = chart(&rows).unwrap();
        assert_themed(&svg, (WIDTH, 170));
        assert_eq!(svg.body.matches("<circle").count(), 10);
        assert!(svg.body.contains("\nconstant\n") && svg.body.contains("\nwarm-up and cosine\n"));
        assert_eq!(
            svg.alt,
            "Spikes in each seed's training loss, one row per configuration: constant: 32, 5, 6, \
             11, 25 (mean 16); warm-up and cosine: 0, 1, 0, 2, 0 (mean 0.6)."
        );
    }
}
