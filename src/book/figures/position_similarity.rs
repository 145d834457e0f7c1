//! `kind = "position-similarity"`: how alike the position vectors are, one heatmap per run of
//! the cosine similarity of every pair of positions: a learned table read from the trained
//! weights (`weights.rs`), or the fixed sinusoids computed from the formula.

use super::alt::fmt_num;
use super::theme::{de, render, text_style, Area, Scale, HEAT, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use crate::book::weights;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use revtx_spec::config::PositionEncoding;
use serde::Deserialize;
use std::fmt::Write as _;

const PANEL: (i32, i32) = (380, 384);
const COLORBAR_H: i32 = 56;

/// The fields of a position-similarity figure: which seed's table (the first when absent).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    #[serde(default)]
    pub seed: Option<u64>,
}

/// One panel: its title and its matrix of cosines.
struct Panel {
    title: String,
    cos: Vec<Vec<f64>>,
    /// Rows that got a gradient (learned tables), for the alt text.
    trained: Option<usize>,
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        if runs.is_empty() || runs.len() > 3 {
            return Err(fault(format!(
                "a position-similarity figure draws one to three runs side by side, and this lists {}",
                runs.len()
            )));
        }
        let mut panels = Vec::with_capacity(runs.len());
        for run in runs {
            panels.push(self.panel(run)?);
        }
        drawn(chart(&panels))
    }
}

impl Spec {
    fn panel(&self, run: &RunData) -> Result<Panel, Diagnostic> {
        let i = run.seed_index(self.seed)?;
        let result = run.seeds[i];
        let model = &result.config.model;
        let rows = usize::try_from(model.positions).unwrap_or(0);
        match model.position_encoding {
            PositionEncoding::Learned => {
                let table = weights::position_table(run.entries[i]).map_err(fault)?;
                let table = table.ok_or_else(|| {
                    fault(format!("`{}` has no saved position table", run.id))
                })?;
                let trained = result.train().and_then(|t| t.positions.as_ref());
                Ok(Panel {
                    title: format!("{} (seed {})", run.label, result.seed),
                    cos: weights::cosine(&table),
                    trained: trained.map(|p| p.trained_rows),
                })
            }
            PositionEncoding::Sinusoidal => Ok(Panel {
                title: run.label.to_string(),
                cos: weights::sinusoidal_cosine(usize::try_from(model.d_model).unwrap_or(0), rows),
                trained: None,
            }),
            other => Err(fault(format!(
                "a position-similarity figure compares position vectors, and `{}` adds none (position_encoding = \"{}\")",
                run.id,
                other.name()
            ))),
        }
    }
}

fn fault(message: String) -> Diagnostic {
    Diagnostic::error(Code::Figure, None, message)
}

/// Colour of a cosine: blue for alike, orange for opposed, the strength as opacity.
fn cell_style(c: f64) -> ShapeStyle {
    let a = 0.04 + 0.96 * c.abs().clamp(0.0, 1.0).powf(0.8);
    if c >= 0.0 {
        HEAT.mix(a).filled()
    } else {
        PALETTE[1].mix(a).filled()
    }
}

fn chart(panels: &[Panel]) -> Result<Svg, String> {
    let n = panels.len() as i32;
    let size = ((PANEL.0 * n) as u32, (PANEL.1 + COLORBAR_H) as u32);
    render(size, alt(panels), |root| {
        for (k, p) in (0..).zip(panels) {
            heatmap(root, (k * PANEL.0, 0), p)?;
        }
        colorbar(root, (size.0 as i32, size.1 as i32))
    })
}

fn heatmap(root: &Area, (x0, y0): (i32, i32), p: &Panel) -> Result<(), String> {
    let rows = p.cos.len().max(1) as i32;
    let (top, bottom, left, right) = (34, 40, 44, 16);
    let avail = (PANEL.0 - left - right).min(PANEL.1 - top - bottom);
    let cell = (avail / rows).max(1);
    let side = cell * rows;
    let mx = x0 + left + (PANEL.0 - left - right - side) / 2;
    let my = y0 + top;
    root.draw(&Text::new(
        p.title.clone(),
        (mx + side / 2, y0 + 8),
        text_style(16.0, HPos::Center, VPos::Top),
    ))
    .map_err(de)?;
    for (i, row) in (0..).zip(&p.cos) {
        for (j, &c) in (0..).zip(row) {
            if c.is_finite() {
                let (cx, cy) = (mx + j * cell, my + i * cell);
                root.draw(&Rectangle::new([(cx, cy), (cx + cell, cy + cell)], cell_style(c)))
                    .map_err(de)?;
            }
        }
    }
    root.draw(&Rectangle::new(
        [(mx, my), (mx + side, my + side)],
        BLACK.mix(0.3).stroke_width(1),
    ))
    .map_err(de)?;
    // Position ticks every eight rows.
    for t in (0..rows).step_by(8) {
        let mid = t * cell + cell / 2;
        root.draw(&Text::new(
            t.to_string(),
            (mx - 5, my + mid),
            text_style(12.0, HPos::Right, VPos::Center),
        ))
        .map_err(de)?;
        root.draw(&Text::new(
            t.to_string(),
            (mx + mid, my + side + 4),
            text_style(12.0, HPos::Center, VPos::Top),
        ))
        .map_err(de)?;
    }
    root.draw(&Text::new(
        "position",
        (mx + side / 2, my + side + 20),
        text_style(13.0, HPos::Center, VPos::Top),
    ))
    .map_err(de)?;
    Ok(())
}

fn colorbar(root: &Area, (w, h): (i32, i32)) -> Result<(), String> {
    let scale = Scale {
        width: w,
        top: h - COLORBAR_H + 8,
        steps: 20,
        step: 12,
        range: (-1.0, 1.0),
        ends: ("-1", "1"),
        caption: "cosine similarity of two positions' vectors",
        font: 13.0,
    };
    scale.draw(root, cell_style)
}

/// Mean cosine of positions `dist` apart, over the rows `0..upto`.
fn mean_at(cos: &[Vec<f64>], dist: usize, upto: usize) -> Option<f64> {
    let v: Vec<f64> = (0..upto.min(cos.len()).saturating_sub(dist))
        .map(|i| cos[i][i + dist])
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn alt(panels: &[Panel]) -> String {
    let mut alt = format!(
        "{} of the cosine similarity between every two positions' vectors",
        if panels.len() == 1 { "Heatmap" } else { "Heatmaps side by side" }
    );
    for p in panels {
        let rows = p.cos.len();
        let _ = write!(alt, ". {}: {rows} positions", p.title);
        let upto = p.trained.unwrap_or(rows);
        if let Some(trained) = p.trained {
            let _ = write!(alt, ", of which the first {trained} received a gradient");
        }
        if let (Some(one), Some(four)) = (mean_at(&p.cos, 1, upto), mean_at(&p.cos, 4, upto)) {
            let _ = write!(
                alt,
                "; {}neighbours average {} and positions four apart {}",
                if p.trained.is_some() { "among those, " } else { "" },
                fmt_num(one),
                fmt_num(four)
            );
        }
        if let Some(trained) = p.trained.filter(|&t| t + 1 < rows) {
            if let Some(rest) = mean_at(&p.cos[trained..].iter().map(|r| r[trained..].to_vec()).collect::<Vec<_>>(), 1, rows) {
                let _ = write!(alt, "; neighbours among the others average {}", fmt_num(rest));
            }
        }
    }
    alt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_panel_per_run_and_describes_it() {
        let cos = weights::sinusoidal_cosine(64, 17);
        let p = Panel {
            title: "sinusoidal".into(),
            cos,
            trained: None,
        };
        let svg = chart(&[p]).unwrap();
        super::super::tests::assert_themed(&svg, (PANEL.0 as u32, (PANEL.1 + COLORBAR_H) as u32));
        assert!(svg.body.matches("<rect").count() >= 17 * 17, "a cell per pair");
        assert!(svg.alt.contains("sinusoidal: 17 positions; neighbours average"), "{}", svg.alt);
    }
}
