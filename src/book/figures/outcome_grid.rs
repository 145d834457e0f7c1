//! `kind = "outcome-grid"`: a grid of configurations (`rows` × `columns`, the runs listed
//! row by row), each cell shaded by its seeds' mean exact match on the training lengths and
//! marked with how many seeds' running mean crossed the threshold.

use super::alt::fmt_pct;
use super::theme::{de, plated_text, render, text_style, Scale, HEAT};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

const CELL: (i32, i32) = (150, 64);
const LEFT: i32 = 210;
const TOP: i32 = 56;
const COLORBAR_H: i32 = 60;

/// The fields of an outcome grid: the row and column labels, and what the columns vary.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub rows: Vec<String>,
    pub columns: Vec<String>,
    #[serde(default)]
    pub columns_title: Option<String>,
}

/// One cell: mean exact match (0 to 1) and seeds crossed of seeds.
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    accuracy: f64,
    crossed: usize,
    seeds: usize,
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let want = self.rows.len() * self.columns.len();
        if want == 0 || runs.len() != want {
            return Err(Diagnostic::error(
                Code::Figure,
                None,
                format!(
                    "an outcome grid of {} rows and {} columns draws {want} runs, row by row, and this lists {}",
                    self.rows.len(),
                    self.columns.len(),
                    runs.len()
                ),
            ));
        }
        let mut cells = Vec::with_capacity(want);
        for run in runs {
            let t = run.trains("an outcome grid")?;
            cells.push(Cell {
                accuracy: t.iter().map(|t| t.test.accuracy).sum::<f64>() / t.len() as f64,
                crossed: t.iter().filter(|t| t.first_below.is_some()).count(),
                seeds: t.len(),
            });
        }
        drawn(chart(self, &cells))
    }
}

fn chart(spec: &Spec, cells: &[Cell]) -> Result<Svg, String> {
    let (nr, nc) = (spec.rows.len() as i32, spec.columns.len() as i32);
    let width = LEFT + nc * CELL.0 + 20;
    let height = TOP + nr * CELL.1 + COLORBAR_H;
    let size = (width as u32, height as u32);
    render(size, alt(spec, cells), |root| {
        let grid_w = nc * CELL.0;
        if let Some(t) = &spec.columns_title {
            root.draw(&Text::new(
                t.as_str(),
                (LEFT + grid_w / 2, 6),
                text_style(16.0, HPos::Center, VPos::Top),
            ))
            .map_err(de)?;
        }
        for (j, c) in spec.columns.iter().enumerate() {
            root.draw(&Text::new(
                c.as_str(),
                (LEFT + j as i32 * CELL.0 + CELL.0 / 2, TOP - 8),
                text_style(15.0, HPos::Center, VPos::Bottom),
            ))
            .map_err(de)?;
        }
        for (i, r) in spec.rows.iter().enumerate() {
            let y = TOP + i as i32 * CELL.1;
            root.draw(&Text::new(
                r.as_str(),
                (LEFT - 10, y + CELL.1 / 2),
                text_style(15.0, HPos::Right, VPos::Center),
            ))
            .map_err(de)?;
            for j in 0..nc {
                let cell = &cells[i * nc as usize + j as usize];
                let x = LEFT + j * CELL.0;
                let rect = [(x + 2, y + 2), (x + CELL.0 - 2, y + CELL.1 - 2)];
                root.draw(&Rectangle::new(rect, HEAT.mix(cell.accuracy.clamp(0.0, 1.0)).filled()))
                    .map_err(de)?;
                root.draw(&Rectangle::new(rect, BLACK.mix(0.2).stroke_width(1)))
                    .map_err(de)?;
                // Text on a dark cell would vanish in the light theme: put it on a plate.
                let cx = x + CELL.0 / 2;
                for (text, dy, size) in [
                    (format!("{}%", fmt_pct(100.0 * cell.accuracy)), -9, 17.0),
                    (format!("{} of {} crossed", cell.crossed, cell.seeds), 12, 13.0),
                ] {
                    plated_text(root, text, (cx, y + CELL.1 / 2 + dy), size)?;
                }
            }
        }
        Scale {
            width,
            top: TOP + nr * CELL.1 + 14,
            steps: 10,
            step: 24,
            range: (0.0, 1.0),
            ends: ("0%", "100%"),
            caption: "mean exact match of the seeds on the training lengths",
            font: 13.0,
        }
        .draw(root, |v| HEAT.mix(v).filled())
    })
}

fn alt(spec: &Spec, cells: &[Cell]) -> String {
    let nc = spec.columns.len();
    let rows: Vec<String> = (spec.rows.iter().enumerate())
        .map(|(i, r)| {
            let parts: Vec<String> = (spec.columns.iter().enumerate())
                .map(|(j, c)| {
                    let cell = &cells[i * nc + j];
                    format!(
                        "{c}: {}%, {} of {} crossed",
                        fmt_pct(100.0 * cell.accuracy),
                        cell.crossed,
                        cell.seeds
                    )
                })
                .collect();
            format!("{r}: {}", parts.join(", "))
        })
        .collect();
    format!(
        "A grid of {} configurations, {} rows by {} columns{}, each cell the seeds' mean exact match on the training lengths and how many seeds' running mean crossed the loss threshold. {}.",
        cells.len(),
        spec.rows.len(),
        nc,
        spec.columns_title.as_ref().map_or_else(String::new, |t| format!(" ({t})")),
        rows.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    #[test]
    fn every_cell_says_its_accuracy_and_its_seeds() {
        let spec = Spec {
            rows: vec!["pre-norm".into(), "post-norm".into()],
            columns: vec!["2 blocks".into(), "6 blocks".into()],
            columns_title: Some("depth".into()),
        };
        let cell = |accuracy, crossed| Cell { accuracy, crossed, seeds: 3 };
        let cells = [cell(1.0, 3), cell(0.58, 1), cell(0.995, 2), cell(0.0, 0)];
        let svg = chart(&spec, &cells).unwrap();
        assert_themed(&svg, (LEFT as u32 + 320, (TOP + 128 + COLORBAR_H) as u32));
        for t in ["100%", "58%", "99.5%", "0%", "3 of 3 crossed", "0 of 3 crossed", "depth", "post-norm", "6 blocks"] {
            assert!(svg.body.contains(&format!("\n{t}\n")), "missing {t}");
        }
        assert!(svg.alt.contains("post-norm: 2 blocks: 99.5%, 2 of 3 crossed, 6 blocks: 0%, 0 of 3 crossed"), "{}", svg.alt);
    }
}
