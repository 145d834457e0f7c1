//! `kind = "length-curve"`: exact match by string length over both test sets, one line per
//! run through its seeds' mean, a band from its worst seed to its best, and a dashed rule
//! after the longest length the runs trained on: how far each run carries past training.

use super::alt::{fmt_pct, run_name};
use super::theme::{de, mesh, render, text_style, Area, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const SIZE: (u32, u32) = (760, 400);
const LEGEND_ROW: i32 = 22;

/// The fields of a length curve: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

/// One run's curve: per string length, the seeds' mean, least and greatest exact match in
/// percent.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub label: String,
    pub seeds: usize,
    /// `(length, mean, least, greatest)`, lengths ascending.
    pub points: Vec<(usize, f64, f64, f64)>,
    /// The longest training string.
    pub trained_max: usize,
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let mut curves = Vec::with_capacity(runs.len());
        for run in runs {
            curves.push(curve(run)?);
        }
        drawn(chart(&curves))
    }
}

/// A run's curve, both test sets pooled per seed and length (correct over tested).
fn curve(run: &RunData) -> Result<Curve, Diagnostic> {
    let mut per_len: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for t in run.trains("a length-curve figure")? {
        let mut pooled: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for b in t.test.by_length.iter().chain(&t.long.by_length) {
            let e = pooled.entry(b.len).or_default();
            e.0 += b.correct;
            e.1 += b.total;
        }
        for (len, (correct, total)) in pooled.into_iter().filter(|(_, (_, n))| *n > 0) {
            per_len
                .entry(len)
                .or_default()
                .push(100.0 * correct as f64 / total as f64);
        }
    }
    let points = per_len
        .into_iter()
        .map(|(len, v)| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (len, mean, lo, hi)
        })
        .collect();
    Ok(Curve {
        label: run.label.to_string(),
        seeds: run.seeds.len(),
        points,
        trained_max: run.first().config.data.max_len,
    })
}

/// The alt text: per run, its mean at the trained lengths, the longest length it reaches
/// with any string right, and where its mean falls to zero.
fn alt(curves: &[Curve]) -> String {
    let mut s = String::from(
        "Line chart of exact match by string length, one line per run through its seeds' mean",
    );
    if curves.iter().any(|c| c.seeds > 1) {
        s += ", with a band from the worst seed to the best";
    }
    if let Some(c) = curves.first() {
        let _ = write!(
            s,
            "; a dashed rule follows length {}, the longest trained",
            c.trained_max
        );
    }
    for c in curves {
        let inside: Vec<f64> = (c.points.iter())
            .filter(|p| p.0 <= c.trained_max)
            .map(|p| p.1)
            .collect();
        let name = run_name(&c.label);
        let mut chars = name.chars();
        let first = chars.next().map(|f| f.to_uppercase().collect::<String>());
        let _ = write!(s, ". {}{}", first.unwrap_or_default(), chars.as_str());
        if c.seeds > 1 {
            let _ = write!(s, " ({} seeds)", c.seeds);
        }
        if !inside.is_empty() {
            let mean = inside.iter().sum::<f64>() / inside.len() as f64;
            let _ = write!(s, ": {}% at the trained lengths", fmt_pct(mean));
        }
        let longest = (c.points.iter())
            .filter(|p| p.0 > c.trained_max && p.3 > 0.0)
            .map(|p| p.0)
            .max();
        match longest {
            Some(l) => {
                let _ = write!(s, ", some strings right up to length {l}");
            }
            None => s += ", none right beyond them",
        }
    }
    s.push('.');
    s
}

fn chart(curves: &[Curve]) -> Result<Svg, String> {
    let lengths: Vec<usize> = curves.iter().flat_map(|c| c.points.iter().map(|p| p.0)).collect();
    let (Some(&lo), Some(&hi)) = (lengths.iter().min(), lengths.iter().max()) else {
        return Err("length-curve: the runs tested no strings".to_string());
    };
    let legend_rows = curves.len().div_ceil(3) as i32;
    render(SIZE, alt(curves), |root| {
        let (legend, body) = root.split_vertically(8 + LEGEND_ROW * legend_rows);
        draw_legend(&legend, curves)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .margin_top(4)
            .x_label_area_size(48)
            .y_label_area_size(60)
            .build_cartesian_2d((lo as f64 - 0.5)..(hi as f64 + 0.5), 0.0..100.0)
            .map_err(de)?;
        let x_fmt = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                format!("{i}")
            } else {
                String::new()
            }
        };
        mesh(&mut chart)
            .x_desc("string length")
            .y_desc("exact match (%)")
            .x_labels(hi - lo + 1)
            .y_labels(6)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(de)?;
        let mut rules: Vec<usize> = curves.iter().map(|c| c.trained_max).collect();
        rules.sort_unstable();
        rules.dedup();
        for t in rules {
            let x = t as f64 + 0.5;
            let dashes = (0..20).map(|k| {
                let y0 = f64::from(k) * 5.0;
                PathElement::new(vec![(x, y0), (x, y0 + 2.5)], BLACK.mix(0.55).stroke_width(2))
            });
            chart.draw_series(dashes).map_err(de)?;
        }
        for (i, c) in curves.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            if c.seeds > 1 {
                let mut band: Vec<(f64, f64)> = c.points.iter().map(|p| (p.0 as f64, p.3)).collect();
                band.extend(c.points.iter().rev().map(|p| (p.0 as f64, p.2)));
                chart
                    .draw_series(std::iter::once(Polygon::new(band, color.mix(0.16).filled())))
                    .map_err(de)?;
            }
            let line: Vec<(f64, f64)> = c.points.iter().map(|p| (p.0 as f64, p.1)).collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(3)))
                .map_err(de)?;
            chart
                .draw_series(line.into_iter().map(|p| Circle::new(p, 4, color.filled())))
                .map_err(de)?;
        }
        Ok(())
    })
}

fn draw_legend(root: &Area, curves: &[Curve]) -> Result<(), String> {
    for (i, c) in curves.iter().enumerate() {
        let (row, col) = ((i / 3) as i32, (i % 3) as i32);
        let (x, y) = (70 + 230 * col, 4 + LEGEND_ROW / 2 + LEGEND_ROW * row);
        let color = PALETTE[i % PALETTE.len()];
        root.draw(&Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()))
            .map_err(de)?;
        root.draw(&Text::new(
            run_name(&c.label).to_string(),
            (x + 20, y),
            text_style(15.0, HPos::Left, VPos::Center),
        ))
        .map_err(de)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn curve(label: &str, seeds: usize, values: &[(usize, f64, f64, f64)]) -> Curve {
        Curve {
            label: label.to_string(),
            seeds,
            points: values.to_vec(),
            trained_max: 8,
        }
    }

    #[test]
    fn draws_bands_lines_and_the_trained_rule() {
        let a = curve(
            "learned",
            5,
            &[(3, 100.0, 100.0, 100.0), (8, 100.0, 100.0, 100.0), (9, 0.0, 0.0, 0.0), (16, 0.0, 0.0, 0.0)],
        );
        let b = curve(
            "rope",
            5,
            &[(3, 98.0, 96.0, 100.0), (8, 95.0, 90.0, 99.0), (9, 70.0, 60.0, 90.0), (16, 0.0, 0.0, 0.0)],
        );
        let svg = chart(&[a, b]).unwrap();
        assert_themed(&svg, SIZE);
        assert!(svg.body.contains("<polygon"), "a band per ensemble");
        assert!(svg.body.matches("<polyline").count() >= 2, "a line per run");
        assert!(svg.alt.contains("Learned (5 seeds): 100% at the trained lengths, none right beyond them"), "{}", svg.alt);
        assert!(svg.alt.contains("Rope (5 seeds): 96.5% at the trained lengths, some strings right up to length 9"), "{}", svg.alt);
        assert!(svg.alt.contains("follows length 8"), "{}", svg.alt);
    }

    #[test]
    fn a_single_run_has_no_band() {
        let svg = chart(&[curve("one", 1, &[(3, 50.0, 50.0, 50.0), (4, 25.0, 25.0, 25.0)])]).unwrap();
        assert!(!svg.body.contains("<polygon"));
        assert!(!svg.alt.contains("band"));
    }

    #[test]
    fn no_strings_is_an_error() {
        assert!(chart(&[curve("none", 1, &[])]).is_err());
    }
}
