//! `kind = "position-norms"`: the norm of each row of one run's learned position table
//! before and after training, rows that got a gradient apart from rows that never did
//! (`train.positions`: `norm_before`, `norm_after`, `trained`).

use super::alt::fmt_num;
use super::theme::{de, mesh, render, text_style, Area, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use revtx_spec::result::PositionTable;
use serde::Deserialize;
use std::fmt::Write as _;

const SIZE: (u32, u32) = (720, 360);
const LEGEND_H: i32 = 34;

/// The fields of a position-norms figure: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let run = single(runs, "position-norms")?;
        let table = run.train("a position-norms figure")?.positions.as_ref();
        let table = table.ok_or_else(|| {
            Diagnostic::error(
                Code::Figure,
                None,
                format!(
                    "a position-norms figure draws a learned position table, and `{}` has none (position_encoding = \"{}\")",
                    run.id,
                    run.first().config.model.position_encoding.name()
                ),
            )
        })?;
        drawn(norms(table))
    }
}

/// The mean of `xs` at the rows where `pick` holds, or `None` when there is none.
fn mean_at(xs: &[f64], trained: &[bool], pick: bool) -> Option<f64> {
    let v: Vec<f64> = (xs.iter().zip(trained))
        .filter(|(x, t)| **t == pick && x.is_finite())
        .map(|(x, _)| *x)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// "Rows 0 to 15" when the rows where `trained == pick` are one run of positions, else
/// "9 rows".
fn which_rows(trained: &[bool], pick: bool) -> String {
    let idx: Vec<usize> = (0..trained.len()).filter(|&i| trained[i] == pick).collect();
    match (idx.first(), idx.last()) {
        (Some(&a), Some(&b)) if b - a + 1 == idx.len() && a != b => format!("Rows {a} to {b}"),
        (Some(&a), Some(_)) if idx.len() == 1 => format!("Row {a}"),
        _ => format!("{} rows", idx.len()),
    }
}

fn norms_alt(p: &PositionTable) -> String {
    let mut alt = format!(
        "Bar chart of the norm of each of the {} rows of the position table before training \
         (outlined) and after (filled)",
        p.rows
    );
    for (pick, did) in [(true, "received a gradient"), (false, "never received one")] {
        if let (Some(b), Some(a)) = (
            mean_at(&p.norm_before, &p.trained, pick),
            mean_at(&p.norm_after, &p.trained, pick),
        ) {
            let _ = write!(
                alt,
                ". {} {did}; their mean norm went from {} to {}",
                which_rows(&p.trained, pick),
                fmt_num(b),
                fmt_num(a)
            );
        } else if !pick {
            alt += ". Every row received a gradient";
        }
    }
    alt.push('.');
    alt
}

/// The legend: filled = after, outlined = before; blue = trained, grey = never trained.
fn draw_legend(root: &Area) -> Result<(), String> {
    let items: [(&str, RGBColor, bool); 3] = [
        ("after training, rows with a gradient", PALETTE[0], true),
        ("rows without", RGBColor(0x8A, 0x90, 0x99), true),
        ("before training", PALETTE[0], false),
    ];
    let mut x = 70;
    for (name, color, filled) in items {
        let y = LEGEND_H / 2;
        let style = if filled {
            color.filled()
        } else {
            color.stroke_width(2)
        };
        root.draw(&Rectangle::new([(x, y - 7), (x + 14, y + 7)], style))
            .map_err(de)?;
        root.draw(&Text::new(
            name,
            (x + 20, y),
            text_style(16.0, HPos::Left, VPos::Center),
        ))
        .map_err(de)?;
        x += 28 + 8 * name.len() as i32;
    }
    Ok(())
}

/// One bar per row: filled to its norm after training, outlined to its norm before.
/// `Err` when the table is empty.
fn norms(p: &PositionTable) -> Result<Svg, String> {
    let n = p.rows.min(p.norm_before.len()).min(p.norm_after.len());
    if n == 0 {
        return Err("position-norms: the run has no position table".to_string());
    }
    let top = (p.norm_before.iter().chain(&p.norm_after))
        .copied()
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.08;
    render(SIZE, norms_alt(p), |root| {
        let (legend, body) = root.split_vertically(LEGEND_H);
        draw_legend(&legend)?;
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .margin_top(4)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
            .map_err(de)?;
        let x_fmt = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize).is_multiple_of(4) {
                format!("{i}")
            } else {
                String::new()
            }
        };
        mesh(&mut chart)
            .disable_x_mesh()
            .x_desc("position (row of the table)")
            .y_desc("norm of the row")
            .x_labels(n)
            .y_labels(6)
            .x_label_formatter(&x_fmt)
            .draw()
            .map_err(de)?;
        let grey = RGBColor(0x8A, 0x90, 0x99);
        let finite = |x: f64| if x.is_finite() { x.max(0.0) } else { 0.0 };
        let after = (0..n).map(|i| {
            let c = if p.trained.get(i).copied().unwrap_or(false) {
                PALETTE[0]
            } else {
                grey
            };
            Rectangle::new(
                [(i as f64 - 0.34, 0.0), (i as f64 + 0.34, finite(p.norm_after[i]))],
                c.filled(),
            )
        });
        chart.draw_series(after).map_err(de)?;
        let before = (0..n).map(|i| {
            Rectangle::new(
                [(i as f64 - 0.42, 0.0), (i as f64 + 0.42, finite(p.norm_before[i]))],
                PALETTE[0].stroke_width(2),
            )
        });
        chart.draw_series(before).map_err(de)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn table(rows: usize, trained: usize) -> PositionTable {
        PositionTable {
            rows,
            norm_before: vec![8.0; rows],
            norm_after: (0..rows)
                .map(|i| if i < trained { 5.0 } else { 7.6 })
                .collect(),
            trained: (0..rows).map(|i| i < trained).collect(),
            trained_rows: trained,
            first_untrained: (trained < rows).then_some(trained),
            untrained_shrink_pct: (trained < rows).then_some(5.0),
        }
    }

    #[test]
    fn a_bar_per_row_and_the_untrained_rows_named() {
        let svg = norms(&table(25, 16)).unwrap();
        assert_themed(&svg, SIZE);
        // Three legend swatches, then a filled and an outlined bar per row.
        assert_eq!(svg.body.matches("<rect").count(), 3 + 2 * 25, "{}", svg.body);
        assert_eq!(
            svg.alt,
            "Bar chart of the norm of each of the 25 rows of the position table before \
             training (outlined) and after (filled). Rows 0 to 15 received a gradient; their \
             mean norm went from 8 to 5. Rows 16 to 24 never received one; their mean norm \
             went from 8 to 7.6."
        );
        for label in ["0", "16", "24", "norm of the row"] {
            assert!(svg.body.contains(&format!("\n{label}\n")), "missing {label}");
        }
    }

    #[test]
    fn every_row_trained_and_odd_inputs() {
        let svg = norms(&table(25, 25)).unwrap();
        assert!(svg.alt.ends_with("Every row received a gradient."), "{}", svg.alt);
        let mut t = table(6, 6);
        t.trained = vec![true, false, true, false, true, true];
        let alt = norms_alt(&t);
        assert!(alt.contains(". 4 rows received a gradient;"), "{alt}");
        assert!(alt.contains(". 2 rows never received one;"), "{alt}");
        assert!(norms(&table(0, 0)).is_err());
        let mut t = table(4, 2);
        t.norm_after[1] = f64::NAN;
        assert!(!norms(&t).unwrap().body.contains("NaN"));
    }
}
