//! `kind = "patching"`: one patching run drawn as a map, a row per component (the stream
//! entering each block, each head, each MLP) and a column per position up to where the
//! answer letter is written; each cell is shaded by the share of the clean answer's margin
//! that taking that component's output there from the clean run restores, mean of the seeds.

use super::theme::{de, plated_text, render, text_style, Scale, HEAT};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::RunData;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

const CELL: (i32, i32) = (56, 44);
const LEFT: i32 = 178;
const TOP: i32 = 66;
const COLORBAR_H: i32 = 60;
/// A cell whose seeds' mean restores less than this (either way) shows no number.
const QUIET: f64 = 0.05;

/// A patching map has no fields of its own.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

/// The map: row names, column labels, and per row and column the seeds' values.
struct Map {
    rows: Vec<String>,
    columns: Vec<String>,
    corrupted: usize,
    /// A place corruption: the letters at `corrupted` and the next position swapped places
    /// (else the letter at `corrupted` was changed).
    swapped: bool,
    cells: Vec<Vec<Vec<f64>>>,
    seeds: usize,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let err = |m: String| Diagnostic::error(Code::Figure, None, m);
        let [run] = runs else {
            return Err(err(format!("a patching map draws one patching run, and this lists {}", runs.len())));
        };
        let patched: Vec<_> = run
            .seeds
            .iter()
            .filter_map(|r| r.ablated().and_then(|a| a.patched.as_ref()))
            .collect();
        if patched.len() != run.seeds.len() || patched.is_empty() {
            return Err(err(format!("`{}` patches nothing: a patching map draws a run with `from` and `patch`", run.id)));
        }
        let first = patched[0];
        // The separator's position is the string's length: letters before, answer after.
        let length = first
            .tokens
            .iter()
            .position(|t| t == "|")
            .ok_or_else(|| err(format!("`{}`'s patched tokens have no separator", run.id)))?;
        let columns = (0..=first.query)
            .map(|p| match p.cmp(&length) {
                std::cmp::Ordering::Less => format!("{}", p + 1),
                std::cmp::Ordering::Equal => "|".to_string(),
                std::cmp::Ordering::Greater => format!("a{}", p - length),
            })
            .collect();
        let cells = first
            .components
            .iter()
            .map(|c| {
                (0..=first.query)
                    .map(|p| patched.iter().map(|x| x.restored[c][p]).collect())
                    .collect()
            })
            .collect();
        drawn(chart(&Map {
            rows: first.components.clone(),
            columns,
            corrupted: first.corrupted,
            swapped: run.seeds[0]
                .config
                .intervene
                .as_ref()
                .and_then(|iv| iv.patch.as_ref())
                .is_some_and(|p| p.corrupt == revtx_spec::experiments::intervene::Corruption::Place),
            cells,
            seeds: patched.len(),
        }))
    }
}

/// A component's name as a row says it.
fn row_label(c: &str) -> String {
    if let Some(b) = c.strip_prefix("resid.b") {
        return if b == "0" { "embeddings".into() } else { format!("into block {b}") };
    }
    let (b, part) = c.split_once('.').unwrap_or((c, ""));
    let b = b.trim_start_matches('b');
    match part {
        "mlp" => format!("block {b} MLP"),
        h => format!("block {b} head {}", h.trim_start_matches('h')),
    }
}

fn chart(m: &Map) -> Result<Svg, String> {
    let (nr, nc) = (m.rows.len() as i32, m.columns.len() as i32);
    let width = LEFT + nc * CELL.0 + 20;
    let height = TOP + nr * CELL.1 + COLORBAR_H;
    render((width as u32, height as u32), alt(m), |root| {
        for (j, c) in m.columns.iter().enumerate() {
            let x = LEFT + j as i32 * CELL.0 + CELL.0 / 2;
            root.draw(&Text::new(c.clone(), (x, TOP - 8), text_style(17.0, HPos::Center, VPos::Bottom)))
                .map_err(de)?;
            let marked = j == m.corrupted || (m.swapped && j == m.corrupted + 1);
            if marked {
                let word = if m.swapped { "swapped" } else { "changed" };
                root.draw(&Text::new(word, (x, TOP - 28), text_style(15.0, HPos::Center, VPos::Bottom)))
                    .map_err(de)?;
            }
            if j + 1 == m.columns.len() {
                root.draw(&Text::new("written", (x, TOP - 28), text_style(15.0, HPos::Center, VPos::Bottom)))
                    .map_err(de)?;
            }
        }
        for (i, row) in m.cells.iter().enumerate() {
            let y = TOP + i as i32 * CELL.1;
            root.draw(&Text::new(row_label(&m.rows[i]), (LEFT - 10, y + CELL.1 / 2), text_style(17.0, HPos::Right, VPos::Center)))
                .map_err(de)?;
            for (j, seeds) in row.iter().enumerate() {
                let x = LEFT + j as i32 * CELL.0;
                let rect = [(x + 1, y + 1), (x + CELL.0 - 1, y + CELL.1 - 1)];
                let v = mean(seeds);
                root.draw(&Rectangle::new(rect, HEAT.mix(v.clamp(0.0, 1.0)).filled())).map_err(de)?;
                root.draw(&Rectangle::new(rect, BLACK.mix(0.15).stroke_width(1))).map_err(de)?;
                if v.abs() >= QUIET {
                    plated_text(root, format!("{v:.2}"), (x + CELL.0 / 2, y + CELL.1 / 2), 16.0)?;
                }
            }
        }
        Scale {
            width,
            top: TOP + nr * CELL.1 + 14,
            steps: 10,
            step: 24,
            range: (0.0, 1.0),
            ends: ("0", "1"),
            caption: "share of the clean answer's margin restored by the patch, mean of the seeds",
            font: 13.0,
        }
        .draw(root, |v| HEAT.mix(v).filled())
    })
}

fn alt(m: &Map) -> String {
    let mut notable = Vec::new();
    for (i, row) in m.cells.iter().enumerate() {
        for (j, seeds) in row.iter().enumerate() {
            let v = mean(seeds);
            if v.abs() >= QUIET {
                let (lo, hi) = range(seeds);
                notable.push(format!(
                    "{} at position {} restores {v:.2} ({lo:.2} to {hi:.2})",
                    row_label(&m.rows[i]),
                    m.columns[j]
                ));
            }
        }
    }
    format!(
        "A map of components by position: each cell the share of the clean answer's margin restored when that component's output at that position is taken from the clean run into the corrupted one, mean of {} seeds; {}, the answer letter is written at position {}. Cells of {QUIET} or more: {}. Every other cell is below {QUIET}.",
        m.seeds,
        if m.swapped {
            format!(
                "the letters at positions {} and {} swapped places",
                m.columns[m.corrupted],
                m.columns.get(m.corrupted + 1).map_or("", String::as_str)
            )
        } else {
            format!("the letter changed is at position {}", m.columns[m.corrupted])
        },
        m.columns.last().map_or("", String::as_str),
        notable.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    #[test]
    fn a_map_names_its_rows_and_shows_only_cells_that_move_the_answer() {
        let m = Map {
            rows: vec!["resid.b0".into(), "b0.h1".into(), "resid.b1".into(), "b1.mlp".into()],
            columns: vec!["1".into(), "2".into(), "|".into(), "a1".into()],
            corrupted: 1,
            swapped: false,
            cells: vec![
                vec![vec![0.0, 0.0], vec![1.0, 1.0], vec![0.0, 0.0], vec![0.0, 0.0]],
                vec![vec![0.0, 0.0], vec![0.0, 0.0], vec![0.0, 0.01], vec![0.3, 0.5]],
                vec![vec![0.0, 0.0], vec![0.9, 0.8], vec![0.0, 0.0], vec![0.1, 0.2]],
                vec![vec![0.0, 0.0], vec![0.0, 0.0], vec![0.0, 0.0], vec![0.02, 0.0]],
            ],
            seeds: 2,
        };
        let svg = chart(&m).unwrap();
        assert_themed(&svg, ((LEFT + 4 * CELL.0 + 20) as u32, (TOP + 4 * CELL.1 + COLORBAR_H) as u32));
        for t in ["embeddings", "block 0 head 1", "into block 1", "block 1 MLP", "1.00", "0.85", "0.40", "changed", "written"] {
            assert!(svg.body.contains(&format!("\n{t}\n")), "missing {t}");
        }
        assert!(!svg.body.contains("\n0.01\n") && !svg.body.contains("\n0.00\n"), "quiet cells show no number");
        assert!(svg.alt.contains("block 0 head 1 at position a1 restores 0.40 (0.30 to 0.50)"), "{}", svg.alt);
        assert!(svg.alt.contains("the letter changed is at position 2, the answer letter is written at position a1"), "{}", svg.alt);
        let place = chart(&Map { swapped: true, ..m }).unwrap();
        assert!(place.alt.contains("the letters at positions 2 and | swapped places"), "{}", place.alt);
        assert_eq!(place.body.matches("\nswapped\n").count(), 2);
        assert!(!place.body.contains("\nchanged\n"));
    }
}
