//! `kind = "loss"`: training loss at every step (or a running mean, `smooth = N`) of one
//! or more runs, on a log scale; `series = "grad_norm"` or `"lr"` draws the gradient norm
//! or the learning rate of every step instead. An ensemble is drawn as the mean of its
//! seeds with a band from the best seed to the worst at each step, or one seed when the
//! figure names it (`seed = k`). Its log panel is also the left half of `faults`.

use super::alt::{fmt_log_tick, fmt_loss, fmt_step, run_name, summarize, trend};
use super::theme::{clean_points, de, mesh, render, series_legend, Area, Line, FONT, PALETTE};
use super::{drawn, smoothed, Figure, Series, Svg};
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use plotters::prelude::*;
use serde::Deserialize;

const LOSS_SIZE: (u32, u32) = (720, 360);

/// An ensemble's band: `(step, lowest seed, highest seed)` at each step.
type Band = Vec<(f64, f64, f64)>;

/// The fields of a loss figure.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Running-mean window; unsmoothed when absent or 1.
    #[serde(default)]
    pub smooth: Option<usize>,
    /// What is drawn at every step: the loss (the default), the gradient norm or the rate.
    #[serde(default)]
    pub series: PerStep,
    /// Draw this seed of every run (each must have it) instead of an ensemble's mean.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// A quantity every training step records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerStep {
    /// `train.losses`.
    #[default]
    Loss,
    /// `train.grad_norm`: the norm of all gradients, before clipping.
    GradNorm,
    /// `train.lr`: the learning rate the step used.
    Lr,
}

impl PerStep {
    fn values(self, t: &revtx_spec::result::TrainResult) -> &[f64] {
        match self {
            PerStep::Loss => &t.losses,
            PerStep::GradNorm => &t.grad_norm,
            PerStep::Lr => &t.lr,
        }
    }

    /// What the values are, for the axis and the alt text.
    fn measure(self) -> Measure {
        match self {
            PerStep::Loss => LOSS,
            PerStep::GradNorm => Measure {
                noun: "Gradient norm",
                title: "gradient norm",
                axis: "gradient norm (log scale)",
            },
            PerStep::Lr => Measure {
                noun: "Learning rate",
                title: "learning rate",
                axis: "learning rate (log scale)",
            },
        }
    }
}

/// How a curve's values are named: in the alt text, the title and the y axis.
#[derive(Clone, Copy, Debug)]
pub struct Measure {
    pub noun: &'static str,
    pub title: &'static str,
    pub axis: &'static str,
}

/// The training loss.
pub const LOSS: Measure = Measure {
    noun: "Training loss",
    title: "training loss",
    axis: "loss (log scale)",
};

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let mut series = Vec::new();
        let mut bands = Vec::new();
        for run in runs {
            let trains = run.trains("this figure")?;
            let picked = match self.seed {
                Some(s) => vec![trains[run.seed_index(Some(s))?]],
                None => trains,
            };
            let mut per_seed = Vec::new();
            for t in &picked {
                let values = self.series.values(t);
                if values.is_empty() {
                    return Err(Diagnostic::error(
                        crate::book::codes::Code::Figure,
                        None,
                        format!(
                            "run `{}` recorded no {} (its result predates them)",
                            run.id,
                            self.series.measure().title
                        ),
                    ));
                }
                per_seed.push(match self.smooth {
                    Some(w) if w > 1 => smoothed(run.label, values, w).points,
                    _ => (1..).zip(values).map(|(i, &v)| (f64::from(i), v)).collect(),
                });
            }
            let (points, band) = across_seeds(&per_seed);
            // A rate of zero (the end of a decay to 0) has no place on a log axis: it is
            // left out rather than drawn at the floor.
            let keep = |y: f64| self.series != PerStep::Lr || y > 0.0;
            series.push(Series {
                label: run.label.to_string(),
                points: points.into_iter().filter(|p| keep(p.1)).collect(),
            });
            bands.push(band.map(|b| b.into_iter().filter(|p| keep(p.1)).collect()));
        }
        let m = self.series.measure();
        drawn(curve_with_bands(&series, &bands, m.title, m))
    }
}

/// One seed's points as they are; several seeds' mean at each step they all have, with the
/// band `(step, lowest, highest)` across them.
fn across_seeds(per_seed: &[Vec<(f64, f64)>]) -> (Vec<(f64, f64)>, Option<Band>) {
    if let [one] = per_seed {
        return (one.clone(), None);
    }
    let n = per_seed.iter().map(Vec::len).min().unwrap_or(0);
    let mut mean = Vec::with_capacity(n);
    let mut band = Vec::with_capacity(n);
    for i in 0..n {
        let x = per_seed[0][i].0;
        let ys = per_seed.iter().map(|s| s[i].1);
        let (lo, hi) = ys.clone().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
        #[allow(clippy::cast_precision_loss, reason = "a handful of seeds")]
        let m = ys.sum::<f64>() / per_seed.len() as f64;
        mean.push((x, m));
        band.push((x, lo, hi));
    }
    (mean, Some(band))
}

/// Loss chart with a log10 y axis (the data are transformed, ticks at whole decades).
pub(super) fn draw_log_panel(
    area: &Area,
    lines: &[Line],
    caption: &str,
    legend: bool,
    axis: &str,
) -> Result<(), String> {
    draw_log_panel_with_bands(area, lines, &[], caption, legend, axis)
}

/// [`draw_log_panel`], with a band under each line that has one (`bands[i]` is line `i`'s:
/// finite `(step, low, high)` points, clamped like the lines).
fn draw_log_panel_with_bands(
    area: &Area,
    lines: &[Line],
    bands: &[Vec<(f64, f64, f64)>],
    caption: &str,
    legend: bool,
    axis: &str,
) -> Result<(), String> {
    let (mut xmin, mut xmax) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut ymin, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY);
    let band_points = bands.iter().flatten().flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]);
    for (x, y) in lines.iter().flat_map(|l| l.points.iter().copied()).chain(band_points) {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        ymin = ymin.min(y);
        ymax = ymax.max(y);
    }
    if !xmin.is_finite() {
        (xmin, xmax, ymin, ymax) = (0.0, 1.0, 1e-3, 10.0);
    }
    if xmin >= 0.0 && xmin <= 0.05 * xmax {
        xmin = 0.0;
    }
    if xmax - xmin < 1e-9 {
        xmin -= 1.0;
        xmax += 1.0;
    }
    let lo = ymin.log10().floor();
    let hi = ymax.log10().ceil().max(lo + 1.0);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // whole decades, hi > lo
    let decades = (hi - lo) as usize;

    let mut builder = ChartBuilder::on(area);
    builder
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64);
    if !caption.is_empty() {
        builder.caption(caption, (FONT, 19));
    }
    let mut chart = builder.build_cartesian_2d(xmin..xmax, lo..hi).map_err(de)?;
    mesh(&mut chart)
        .x_desc("training step")
        .y_desc(axis)
        .x_labels(8)
        .y_labels(decades + 1)
        .x_max_light_lines(1)
        .y_max_light_lines(0)
        .x_label_formatter(&|v| fmt_step(*v))
        .y_label_formatter(&|v| fmt_log_tick(*v))
        .draw()
        .map_err(de)?;

    // Minor log grid at 2..9 × 10^k, where it stays readable.
    if decades <= 6 {
        let minor = BLACK.mix(0.05);
        #[allow(clippy::cast_possible_truncation)] // whole decades of a loss
        for k in (lo as i32)..(hi as i32) {
            for m in 2..=9 {
                let y = f64::from(k) + f64::from(m).log10();
                chart
                    .draw_series(LineSeries::new([(xmin, y), (xmax, y)], minor))
                    .map_err(de)?;
            }
        }
    }

    for (band, line) in bands.iter().zip(lines) {
        if band.is_empty() {
            continue;
        }
        let mut poly: Vec<(f64, f64)> = band.iter().map(|&(x, _, hi)| (x, hi.log10())).collect();
        poly.extend(band.iter().rev().map(|&(x, lo, _)| (x, lo.log10())));
        chart
            .draw_series(std::iter::once(Polygon::new(poly, line.color.mix(0.16).filled())))
            .map_err(de)?;
    }
    for line in lines.iter().filter(|l| !l.points.is_empty()) {
        let pts: Vec<(f64, f64)> = line.points.iter().map(|&(x, y)| (x, y.log10())).collect();
        let color = line.color;
        let series = chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(de)?;
        if legend {
            series.label(line.label).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
        if let [only] = pts[..] {
            chart
                .draw_series(std::iter::once(Circle::new(only, 3, color.filled())))
                .map_err(de)?;
        }
    }
    if legend {
        series_legend(&mut chart)?;
    }
    Ok(())
}

fn loss_alt(series: &[Series], lines: &[Line], m: Measure) -> String {
    if let [line] = lines {
        if let Some(s) = summarize(&line.points) {
            return format!(
                "{} of {} over {} steps on a log scale: {}; lowest {}.",
                m.noun,
                run_name(line.label),
                fmt_step(s.last.0),
                trend(&s, "at the end"),
                fmt_loss(s.min)
            );
        }
    }
    let parts: Vec<String> = lines
        .iter()
        .map(|l| match summarize(&l.points) {
            Some(s) => format!(
                "{} {} (lowest {})",
                run_name(l.label),
                trend(&s, &format!("at step {}", fmt_step(s.last.0))),
                fmt_loss(s.min)
            ),
            None => format!("{} has no finite values", run_name(l.label)),
        })
        .collect();
    format!(
        "{} of {} runs on a log scale: {}.",
        m.noun,
        series.len(),
        parts.join("; ")
    )
}

/// Loss curve(s) on a log-scale y axis, x = training step. One series or several (legend when >1).
///
/// Non-finite points are skipped and losses below 1e-6 (including zero and
/// negative values) are drawn at 1e-6. `title` is drawn above the chart when
/// non-empty; it is not part of the alt text. Returns `Err` when no series has
/// a finite point. The SVG is 720×360 in user units.
pub fn loss_curve(series: &[Series], title: &str) -> Result<Svg, String> {
    curve(series, title, LOSS)
}

/// `loss_curve` for any per-step measure `m`.
pub fn curve(series: &[Series], title: &str, m: Measure) -> Result<Svg, String> {
    curve_with_bands(series, &[], title, m)
}

/// [`curve`] with a band per series that has one (an ensemble's seeds, best to worst).
fn curve_with_bands(
    series: &[Series],
    bands: &[Option<Band>],
    title: &str,
    m: Measure,
) -> Result<Svg, String> {
    let lines: Vec<Line> = series
        .iter()
        .enumerate()
        .map(|(i, s)| Line {
            label: &s.label,
            color: PALETTE[i % PALETTE.len()],
            points: clean_points(&s.points),
        })
        .collect();
    if lines.iter().all(|l| l.points.is_empty()) {
        return Err("loss_curve: no finite (step, loss) points to plot".to_string());
    }
    let clean: Vec<Vec<(f64, f64, f64)>> = (0..lines.len())
        .map(|i| match bands.get(i) {
            Some(Some(b)) => {
                let floor = |y: f64| y.max(super::theme::LOSS_FLOOR);
                b.iter()
                    .filter(|(x, lo, hi)| x.is_finite() && lo.is_finite() && hi.is_finite())
                    .map(|&(x, lo, hi)| (x, floor(lo), floor(hi)))
                    .collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let mut alt = loss_alt(series, &lines, m);
    let ensembles = clean.iter().filter(|b| !b.is_empty()).count();
    if ensembles > 0 {
        alt.pop(); // its full stop
        alt.push_str(if ensembles == 1 && lines.len() == 1 {
            ", the mean of its seeds with a band from the best seed to the worst."
        } else {
            "; an ensemble is the mean of its seeds, with a band from the best seed to the worst."
        });
    }
    render(LOSS_SIZE, alt, |root| {
        draw_log_panel_with_bands(root, &lines, &clean, title, lines.len() > 1, m.axis)
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn reference_series() -> Series {
        // 1500 steps, 2.5 at step 1, 1e-4 at step 1500, lowest 5.6e-5 at step 1400.
        let points = (1..=1500)
            .map(|step| {
                let loss = match step {
                    1 => 2.5,
                    1400 => 5.6e-5,
                    1500 => 1e-4,
                    s => 2.5 * (-(f64::from(s)) / 140.0).exp() + 1e-4,
                };
                (f64::from(step), loss)
            })
            .collect();
        Series {
            label: "reference".to_string(),
            points,
        }
    }

    #[test]
    fn loss_curve_single_series() {
        let svg = loss_curve(&[reference_series()], "reference run").unwrap();
        assert_themed(&svg, LOSS_SIZE);
        assert_eq!(
            svg.alt,
            "Training loss of reference over 1500 steps on a log scale: falls from 2.5 at step 1 \
             to 1e-4 at the end; lowest 5.6e-5."
        );
        assert!(svg.body.contains("<polyline"));
        assert!(svg.body.contains("#0072B2"));
        for label in [
            "training step",
            "loss (log scale)",
            "0.01",
            "1e-4",
            "1",
            "reference run",
        ] {
            let label = format!("\n{label}\n");
            assert!(svg.body.contains(&label), "missing {label}");
        }
    }

    #[test]
    fn loss_curve_several_series_has_legend() {
        let other = Series {
            label: "no-mask".to_string(),
            points: (1..=300)
                .map(|s| (f64::from(s), 0.35 + 2.0 / f64::from(s)))
                .collect(),
        };
        let svg = loss_curve(&[reference_series(), other], "").unwrap();
        assert_themed(&svg, LOSS_SIZE);
        assert!(svg.body.contains("\nno-mask\n") && svg.body.contains("\nreference\n"));
        assert!(svg.body.contains("#D55E00"));
        assert!(
            svg.alt.starts_with("Training loss of 2 runs"),
            "{}",
            svg.alt
        );
        assert!(svg
            .alt
            .contains("no-mask falls from 2.4 at step 1 to 0.36 at step 300"));
    }

    /// An ensemble is its seeds' mean with a band from the best to the worst; one seed
    /// named is drawn alone, without a band.
    #[test]
    fn an_ensemble_is_a_mean_with_a_band() {
        let seeds = vec![
            vec![(1.0, 1.0), (2.0, 0.1), (3.0, 0.01)],
            vec![(1.0, 3.0), (2.0, 0.3), (3.0, 0.03)],
        ];
        let (mean, band) = across_seeds(&seeds);
        assert_eq!(mean, [(1.0, 2.0), (2.0, 0.2), (3.0, 0.02)]);
        assert_eq!(band.clone().unwrap()[1], (2.0, 0.1, 0.3));
        let s = Series { label: "e".into(), points: mean };
        let svg = curve_with_bands(std::slice::from_ref(&s), &[band], "", LOSS).unwrap();
        assert_themed(&svg, LOSS_SIZE);
        assert!(svg.body.contains("<polygon"), "the band");
        assert!(svg.alt.ends_with("with a band from the best seed to the worst."), "{}", svg.alt);
        let (one, none) = across_seeds(&seeds[..1]);
        assert!(none.is_none());
        let svg = curve_with_bands(&[Series { label: "e".into(), points: one }], &[None], "", LOSS).unwrap();
        assert!(!svg.body.contains("<polygon") && !svg.alt.contains("band"));
    }

    #[test]
    fn loss_curve_survives_bad_values() {
        let bad = Series {
            label: "bad".to_string(),
            points: vec![
                (0.0, f64::NAN),
                (1.0, 0.0),
                (2.0, -3.0),
                (f64::INFINITY, 1.0),
                (3.0, f64::INFINITY),
                (4.0, 0.5),
            ],
        };
        let svg = loss_curve(&[bad], "").unwrap();
        assert_themed(&svg, LOSS_SIZE);
        assert!(!svg.body.contains("NaN") && !svg.body.contains("inf"));
        assert!(
            svg.alt.contains("rises from ≤ 1e-6 at step 1 to 0.5"),
            "{}",
            svg.alt
        );

        let single = Series {
            label: "one".to_string(),
            points: vec![(10.0, 0.3)],
        };
        let svg = loss_curve(&[single], "").unwrap();
        assert!(svg.body.contains("<circle"));
        assert!(
            svg.alt.contains("single value 0.3 at step 10"),
            "{}",
            svg.alt
        );

        let flat = Series {
            label: String::new(),
            points: vec![(1.0, 1.0), (2.0, 1.0)],
        };
        assert!(loss_curve(&[flat], "").unwrap().alt.contains("stays at 1"));

        assert!(loss_curve(&[], "x").is_err());
        let nan = Series {
            label: "nan".to_string(),
            points: vec![(1.0, f64::NAN)],
        };
        assert!(loss_curve(&[nan], "x").is_err());
    }
}
