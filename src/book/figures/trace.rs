//! `kind = "trace"`: what training did at every step, in three panels on shared steps: the
//! loss and the gradient norm before clipping (both on log scales) around the learning
//! rate, for one to three runs at one seed, over all steps or a window of them.

use super::alt::{fmt_log_tick, fmt_num, fmt_step, run_name, summarize, trend};
use super::theme::{clean_points, de, mesh, render, series_legend, Area, Line, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use crate::book::spikes;
use plotters::prelude::*;
use serde::Deserialize;

const SIZE: (u32, u32) = (760, 620);

/// The fields of a trace: which seed (the first when absent) and which steps (all when
/// absent; `[from, to]`, numbered from one, both drawn).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub steps: Option<[usize; 2]>,
}

/// One run's three series over the drawn steps: `(step, value)`.
struct Trace {
    label: String,
    loss: Vec<(f64, f64)>,
    lr: Vec<(f64, f64)>,
    grad: Vec<(f64, f64)>,
    /// Where spikes begin, by the book's rule, within the drawn steps.
    spikes: Vec<usize>,
}

fn fault(msg: String) -> Diagnostic {
    Diagnostic::error(Code::Figure, None, msg)
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        if runs.is_empty() || runs.len() > 3 {
            return Err(fault(format!(
                "a trace draws one to three runs on shared steps, and this lists {}",
                runs.len()
            )));
        }
        let mut traces = Vec::with_capacity(runs.len());
        for run in runs {
            traces.push(self.trace(run)?);
        }
        let seed = self.seed.unwrap_or(runs[0].first().seed);
        drawn(chart(&traces, seed))
    }
}

impl Spec {
    fn trace(&self, run: &RunData) -> Result<Trace, Diagnostic> {
        let index = run.seed_index(self.seed)?;
        let train = run.seeds[index]
            .train()
            .ok_or_else(|| fault(format!("a trace needs a training run, and `{}` is a probe", run.id)))?;
        let total = train.losses.len();
        if train.lr.len() != total || train.grad_norm.len() != total {
            return Err(fault(format!(
                "run `{}` recorded no learning rate or gradient norm per step (its result predates them)",
                run.id
            )));
        }
        let (from, to) = match self.steps {
            None => (1, total),
            Some([first, last]) if 1 <= first && first < last && last <= total => (first, last),
            Some([first, last]) => {
                return Err(fault(format!(
                    "`steps = [{first}, {last}]` is not a window of `{}`'s steps 1 to {total}",
                    run.id
                )))
            }
        };
        let pick = |xs: &[f64]| -> Vec<(f64, f64)> {
            (from..=to).map(|s| (s as f64, xs[s - 1])).collect()
        };
        let spikes = spikes::starts(&train.losses, &spikes::Rule::default())
            .into_iter()
            .filter(|s| (from..=to).contains(s))
            .collect();
        Ok(Trace {
            label: run.label.to_string(),
            loss: pick(&train.losses),
            lr: pick(&train.lr),
            grad: pick(&train.grad_norm),
            spikes,
        })
    }
}

/// The three panels' shares of the height, top to bottom.
const SHARES: [i32; 3] = [250, 150, 220];

fn chart(traces: &[Trace], seed: u64) -> Result<Svg, String> {
    let alt = alt(traces, seed);
    render(SIZE, alt, |root| {
        let (top, rest) = root.split_vertically(SHARES[0]);
        let (middle, bottom) = rest.split_vertically(SHARES[1]);
        let x = x_range(traces);
        let lines = |f: fn(&Trace) -> &Vec<(f64, f64)>| -> Vec<Line> {
            traces
                .iter()
                .enumerate()
                .map(|(i, t)| Line {
                    label: &t.label,
                    color: PALETTE[i % PALETTE.len()],
                    points: clean_points(f(t)),
                })
                .collect()
        };
        log_panel(&top, x, &lines(|t| &t.loss), "loss (log)", false, traces.len() > 1)?;
        linear_panel(&middle, x, &lines(|t| &t.lr), "learning rate")?;
        log_panel(&bottom, x, &lines(|t| &t.grad), "gradient norm (log)", true, false)
    })
}

fn x_range(traces: &[Trace]) -> (f64, f64) {
    let xs = traces.iter().flat_map(|t| t.loss.iter().map(|p| p.0));
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if lo < hi {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    }
}

/// A panel with a log10 axis: the data are transformed, ticks at whole decades. Only the
/// bottom panel labels the steps.
fn log_panel(
    area: &Area,
    x: (f64, f64),
    lines: &[Line],
    axis: &str,
    steps: bool,
    legend: bool,
) -> Result<(), String> {
    let ys = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (ymin, ymax) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    let (lo, hi) = if ymin.is_finite() {
        let lo = ymin.log10().floor();
        (lo, ymax.log10().ceil().max(lo + 1.0))
    } else {
        (-3.0, 1.0)
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // whole decades, hi > lo
    let decades = (hi - lo) as usize;
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(if steps { 44 } else { 6 })
        .y_label_area_size(72)
        .build_cartesian_2d(x.0..x.1, lo..hi)
        .map_err(de)?;
    let mut m = mesh(&mut chart);
    m.y_desc(axis)
        .y_labels(decades.min(8) + 1)
        .x_labels(8)
        .x_max_light_lines(1)
        .y_max_light_lines(0)
        .y_label_formatter(&|v| fmt_log_tick(*v));
    if steps {
        m.x_desc("training step").x_label_formatter(&|v| fmt_step(*v));
    } else {
        m.x_label_formatter(&|_| String::new());
    }
    m.draw().map_err(de)?;
    for line in lines.iter().filter(|l| !l.points.is_empty()) {
        let color = line.color;
        let pts = line.points.iter().map(|&(x, y)| (x, y.log10()));
        let s = chart
            .draw_series(LineSeries::new(pts, color.stroke_width(1)))
            .map_err(de)?;
        if legend {
            s.label(line.label).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        }
    }
    if legend {
        series_legend(&mut chart)?;
    }
    Ok(())
}

/// A panel with a linear axis from zero (the learning rate).
fn linear_panel(area: &Area, x: (f64, f64), lines: &[Line], axis: &str) -> Result<(), String> {
    let ymax = (lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))).fold(0.0, f64::max);
    let hi = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(6)
        .y_label_area_size(72)
        .build_cartesian_2d(x.0..x.1, 0.0..hi)
        .map_err(de)?;
    mesh(&mut chart)
        .y_desc(axis)
        .y_labels(4)
        .x_labels(8)
        .x_max_light_lines(1)
        .y_max_light_lines(0)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|v| fmt_num(*v))
        .draw()
        .map_err(de)?;
    for line in lines {
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                line.color.stroke_width(2),
            ))
            .map_err(de)?;
    }
    Ok(())
}

/// Per run: how the loss goes, its spikes, the rate's range and the largest gradient norm.
fn alt(traces: &[Trace], seed: u64) -> String {
    let Some(first) = traces.first() else {
        return String::new();
    };
    let (a, b) = (
        first.loss.first().map_or(0.0, |p| p.0),
        first.loss.last().map_or(0.0, |p| p.0),
    );
    let parts: Vec<String> = traces
        .iter()
        .map(|t| {
            let loss = summarize(&clean_points(&t.loss))
                .map_or_else(|| "no finite loss".to_string(), |s| format!("the loss {}", trend(&s, "at the end")));
            let spikes = match t.spikes.len() {
                0 => "no spike".to_string(),
                1 => format!("one spike, at step {}", t.spikes[0]),
                k => format!("{k} spikes, the first at step {}", t.spikes[0]),
            };
            let rate = |f: fn(f64, f64) -> f64, init| t.lr.iter().map(|p| p.1).fold(init, f);
            let (rmin, rmax) = (rate(f64::min, f64::INFINITY), rate(f64::max, 0.0));
            let rate = if (rmax - rmin).abs() <= f64::EPSILON * rmax {
                format!("a constant rate of {}", fmt_num(rmax))
            } else {
                format!("a rate between {} and {}", fmt_num(rmin), fmt_num(rmax))
            };
            let peak = t
                .grad
                .iter()
                .copied()
                .fold((0.0, 0.0), |m, p| if p.1 > m.1 { p } else { m });
            format!(
                "{}: {loss}, with {spikes}; {rate}; the gradient norm largest at step {}, {}",
                run_name(&t.label),
                fmt_step(peak.0),
                fmt_num(peak.1)
            )
        })
        .collect();
    format!(
        "Loss, learning rate and gradient norm at every step from {} to {}, seed {seed}, in three panels on shared steps. {}.",
        fmt_step(a),
        fmt_step(b),
        parts.join(". ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn trace(label: &str, spike_at: usize) -> Trace {
        let steps = 1..=300usize;
        let loss: Vec<(f64, f64)> = steps
            .clone()
            .map(|s| {
                let l = if s == spike_at { 0.5 } else { 2.0 * (-(s as f64) / 30.0).exp() + 1e-4 };
                (s as f64, l)
            })
            .collect();
        let lr = steps.clone().map(|s| (s as f64, 0.003 * (s.min(100) as f64) / 100.0)).collect();
        let grad = steps.map(|s| (s as f64, if s == spike_at { 9.0 } else { 1.0 })).collect();
        let spikes = spikes::starts(&loss.iter().map(|p| p.1).collect::<Vec<_>>(), &spikes::Rule::default());
        Trace { label: label.into(), loss, lr, grad, spikes }
    }

    #[test]
    fn three_panels_and_the_alt_text_say_what_happened() {
        let svg = chart(&[trace("warm-up", 200), trace("constant", 250)], 0).unwrap();
        assert_themed(&svg, SIZE);
        for label in ["loss (log)", "learning rate", "gradient norm (log)", "training step", "warm-up", "constant"] {
            assert!(svg.body.contains(&format!("\n{label}\n")), "missing {label}");
        }
        for colour in ["#0072B2", "#D55E00"] {
            let lines = (svg.body.lines())
                .filter(|l| l.contains("<polyline") && l.contains(colour))
                .count();
            assert!(lines >= 3, "{colour}: {lines} lines, and each run has three panels");
        }
        assert!(svg.alt.contains("warm-up: the loss falls from 1.9 at step 1"), "{}", svg.alt);
        assert!(svg.alt.contains("one spike, at step 200"), "{}", svg.alt);
        assert!(svg.alt.contains("a rate between 3e-5 and 0.003"), "{}", svg.alt);
        assert!(svg.alt.contains("the gradient norm largest at step 250, 9"), "{}", svg.alt);
    }
}
