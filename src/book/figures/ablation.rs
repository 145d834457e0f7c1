//! `kind = "ablation"`: one intervening run drawn as a grid, a row per block and a column
//! per head (then the block's attention and MLP, where the run switched them off), each
//! cell shaded by the exact match the seeds lost when that part was zeroed, with the range
//! over the seeds. Every loss is paired: the same weights with and without the part.

use super::alt::fmt_pct;
use super::theme::{de, plated_text, render, text_style, Scale, HEAT};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

const CELL: (i32, i32) = (132, 64);
const LEFT: i32 = 110;
const TOP: i32 = 40;
const COLORBAR_H: i32 = 60;

/// The fields of an ablation grid: which test set (`test`, the training lengths, or
/// `long`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    #[serde(default = "test")]
    pub set: String,
}

fn test() -> String {
    "test".into()
}

/// One cell: exact match lost, in points, per seed (baseline minus ablated).
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    lost: Vec<f64>,
}

impl Cell {
    fn mean(&self) -> f64 {
        self.lost.iter().sum::<f64>() / self.lost.len() as f64
    }
    fn range(&self) -> (f64, f64) {
        let lo = self.lost.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.lost.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }
}

/// The grid: column names, and a cell (or none, not switched off) per block and column.
struct Grid {
    columns: Vec<String>,
    rows: Vec<Vec<Option<Cell>>>,
    seeds: usize,
    set: String,
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let err = |m: String| Diagnostic::error(Code::Figure, None, m);
        if self.set != "test" && self.set != "long" {
            return Err(err(format!("`set = \"{}\"`: an ablation grid draws `test` or `long`", self.set)));
        }
        let [run] = runs else {
            return Err(err(format!("an ablation grid draws one intervening run, and this lists {}", runs.len())));
        };
        let first = run.seeds[0];
        let Some(iv) = &first.config.intervene else {
            return Err(err(format!("`{}` switches nothing off: an ablation grid draws a run with `from` and `ablate`", run.id)));
        };
        let m = &first.config.model;
        let mut columns: Vec<String> = (0..m.n_heads).map(|h| format!("h{h}")).collect();
        for sub in ["attn", "mlp"] {
            if iv.ablate.iter().any(|t| t.to_string().ends_with(&format!(".{sub}")) && t.parts.len() == 1) {
                columns.push(sub.into());
            }
        }
        let mut rows = Vec::new();
        for b in 0..m.n_layers {
            let mut row = Vec::new();
            for c in &columns {
                let name = format!("b{b}.{c}");
                let mut lost = Vec::new();
                for r in &run.seeds {
                    let a = r.ablated().ok_or_else(|| err(format!("`{}` has no ablations", run.id)))?;
                    let Some((_, s)) = a.targets.0.iter().find(|(t, _)| *t == name) else {
                        break;
                    };
                    let pick = |x: &revtx_spec::result::Scored| if self.set == "long" { x.long.accuracy } else { x.test.accuracy };
                    lost.push(100.0 * (pick(&a.baseline) - pick(s)));
                }
                row.push((lost.len() == run.seeds.len()).then_some(Cell { lost }));
            }
            rows.push(row);
        }
        if rows.iter().flatten().all(Option::is_none) {
            return Err(err(format!("`{}` switches off no single head, attention or MLP: the grid would be empty", run.id)));
        }
        drawn(chart(&Grid { columns, rows, seeds: run.seeds.len(), set: self.set.clone() }))
    }
}

fn chart(grid: &Grid) -> Result<Svg, String> {
    let (nr, nc) = (grid.rows.len() as i32, grid.columns.len() as i32);
    let width = LEFT + nc * CELL.0 + 20;
    let height = TOP + nr * CELL.1 + COLORBAR_H;
    render((width as u32, height as u32), alt(grid), |root| {
        for (j, c) in grid.columns.iter().enumerate() {
            let label = match c.as_str() {
                "attn" => "all heads".to_string(),
                "mlp" => "MLP".to_string(),
                h => format!("head {}", &h[1..]),
            };
            root.draw(&Text::new(label, (LEFT + j as i32 * CELL.0 + CELL.0 / 2, TOP - 8), text_style(15.0, HPos::Center, VPos::Bottom)))
                .map_err(de)?;
        }
        for (i, row) in grid.rows.iter().enumerate() {
            let y = TOP + i as i32 * CELL.1;
            root.draw(&Text::new(format!("block {i}"), (LEFT - 10, y + CELL.1 / 2), text_style(15.0, HPos::Right, VPos::Center)))
                .map_err(de)?;
            for (j, cell) in row.iter().enumerate() {
                let x = LEFT + j as i32 * CELL.0;
                let rect = [(x + 2, y + 2), (x + CELL.0 - 2, y + CELL.1 - 2)];
                let Some(cell) = cell else {
                    root.draw(&Rectangle::new(rect, BLACK.mix(0.2).stroke_width(1))).map_err(de)?;
                    continue;
                };
                let shade = (cell.mean() / 100.0).clamp(0.0, 1.0);
                root.draw(&Rectangle::new(rect, HEAT.mix(shade).filled())).map_err(de)?;
                root.draw(&Rectangle::new(rect, BLACK.mix(0.2).stroke_width(1))).map_err(de)?;
                let (lo, hi) = cell.range();
                let cx = x + CELL.0 / 2;
                for (text, dy, size) in [
                    (drop(cell.mean()), -9, 17.0),
                    (format!("{} to {}", fmt_pct(lo), fmt_pct(hi)), 12, 13.0),
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
            ends: ("0", "100 points"),
            caption: "exact match lost when the part is zeroed, mean of the seeds",
            font: 13.0,
        }
        .draw(root, |v| HEAT.mix(v).filled())
    })
}

/// A mean drop in points as the cell says it: `−12.4 pts`, `+0.2 pts` for a part whose
/// zeroing helped, `0 pts` for none that shows at one decimal.
fn drop(points: f64) -> String {
    let shown = fmt_pct(points.abs());
    if shown == "0" {
        "0 pts".into()
    } else if points > 0.0 {
        format!("−{shown} pts")
    } else {
        format!("+{shown} pts")
    }
}

fn alt(g: &Grid) -> String {
    let rows: Vec<String> = g
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let cells: Vec<String> = row
                .iter()
                .zip(&g.columns)
                .filter_map(|(c, name)| {
                    let c = c.as_ref()?;
                    let (lo, hi) = c.range();
                    Some(format!(
                        "{name} loses {} points ({} to {})",
                        fmt_pct(c.mean()),
                        fmt_pct(lo),
                        fmt_pct(hi)
                    ))
                })
                .collect();
            format!("block {i}: {}", cells.join(", "))
        })
        .collect();
    format!(
        "A grid of the model's blocks and heads: each cell the exact match on the {} set lost when that part's output is set to zero, mean of {} seeds with the lowest and highest. {}.",
        if g.set == "long" { "long" } else { "training lengths'" },
        g.seeds,
        rows.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    #[test]
    fn every_cell_says_its_mean_loss_and_its_range() {
        let cell = |v: &[f64]| Some(Cell { lost: v.to_vec() });
        let g = Grid {
            columns: vec!["h0".into(), "h1".into(), "mlp".into()],
            rows: vec![
                vec![cell(&[74.2, 60.0]), cell(&[68.2, 70.0]), None],
                vec![cell(&[0.4, 0.0]), cell(&[0.4, 1.0]), cell(&[0.0, 0.0])],
            ],
            seeds: 2,
            set: "test".into(),
        };
        let svg = chart(&g).unwrap();
        assert_themed(&svg, ((LEFT + 3 * CELL.0 + 20) as u32, (TOP + 2 * CELL.1 + COLORBAR_H) as u32));
        assert_eq!(drop(0.0), "0 pts");
        assert_eq!(drop(0.04), "0 pts");
        assert_eq!(drop(-0.4), "+0.4 pts");
        for t in ["−67.1 pts", "60 to 74.2", "−0.2 pts", "0 pts", "head 1", "MLP", "block 1"] {
            assert!(svg.body.contains(&format!("\n{t}\n")), "missing {t}");
        }
        assert!(svg.alt.contains("block 0: h0 loses 67.1 points (60 to 74.2), h1 loses 69.1 points (68.2 to 70); block 1: h0 loses 0.2 points"), "{}", svg.alt);
    }
}
