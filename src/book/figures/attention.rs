//! `kind = "attention"`: the attention weights of one trained run as a grid of heatmaps,
//! one per block and head, for the probe sequence the engine records.

use super::alt::plural;
use super::theme::{de, render, text_style, Area, Scale, FONT, HEAT};
use super::{drawn, Figure, Svg};
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::Deserialize;
use std::fmt::Write as _;

/// One row of the grid: a block's number (from 0) and its chosen heads, each with its
/// number and its (query, key) weights.
pub type Row<'a> = (usize, Vec<(usize, &'a Vec<Vec<f64>>)>);

/// One attention panel.
const PANEL: (i32, i32) = (360, 320);
const GRID_MARGIN: i32 = 20;
const COLORBAR_H: i32 = 60;
const COLORBAR_STEPS: i32 = 20;

/// The fields of an attention figure: which blocks and heads to draw (numbered from 1;
/// all when absent), which seed of an ensemble (its first when absent), and the input the
/// reader should expect (the run records attention for its `eval.attention_input`; a
/// figure that names another input is an error that says where to set it).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    #[serde(default)]
    pub blocks: Option<Vec<usize>>,
    #[serde(default)]
    pub heads: Option<Vec<usize>>,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub input: Option<String>,
}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let run = single(runs, "attention")?;
        let result = run.seeds[run.seed_index(self.seed)?];
        let t = result.train().ok_or_else(|| {
            fault(format!("this figure needs a training run, and `{}` is a probe", run.id))
        })?;
        let a = &t.attention;
        if let Some(input) = &self.input {
            if *input != a.input {
                return Err(fault(format!(
                    "`{}` recorded its attention for `{}`, not `{input}`",
                    run.id, a.input
                ))
                .hint(format!(
                    "set `eval.attention_input = \"{input}\"` in the run block of `{}` (it trains again), or drop `input`",
                    run.id
                )));
            }
        }
        let pick = |asked: &Option<Vec<usize>>, have: usize, what: &str| -> Result<Vec<usize>, Diagnostic> {
            match asked {
                None => Ok((0..have).collect()),
                Some(list) if list.is_empty() => Err(fault(format!("`{what}s` lists no {what}"))),
                Some(list) => list
                    .iter()
                    .map(|&n| {
                        (1..=have).contains(&n).then(|| n - 1).ok_or_else(|| {
                            fault(format!(
                                "`{}` has {what}s 1 to {have}, and `{what}s` asks for {what} {n}",
                                run.id
                            ))
                        })
                    })
                    .collect(),
            }
        };
        let blocks = pick(&self.blocks, a.weights.len(), "block")?;
        let heads = pick(
            &self.heads,
            a.weights.first().map_or(0, Vec::len),
            "head",
        )?;
        let chosen: Vec<Row> = blocks
            .iter()
            .map(|&b| (b, heads.iter().map(|&h| (h, &a.weights[b][h])).collect()))
            .collect();
        let subset = self.blocks.is_some() || self.heads.is_some();
        drawn(attention_panels(&a.tokens, &chosen, subset))
    }
}

fn fault(message: String) -> Diagnostic {
    Diagnostic::error(crate::book::codes::Code::Figure, None, message)
}

/// Fill opacity of a heatmap cell of weight `w` in (0, 1]; the gamma lifts
/// middling weights off the background.
fn heat_opacity(w: f64) -> f64 {
    0.05 + 0.95 * w.clamp(0.0, 1.0).powf(0.75)
}

/// One attention panel with its top-left corner at `(x0, y0)`.
fn draw_heatmap(
    root: &Area,
    (x0, y0): (i32, i32),
    title: &str,
    tokens: &[String],
    matrix: &[Vec<f64>],
) -> Result<(), String> {
    let n = tokens.len() as i32;
    let (top, bottom, left, right) = (30, 44, 48, 12);
    let avail = (PANEL.0 - left - right).min(PANEL.1 - top - bottom);
    let cell = (avail / n).max(1);
    let side = cell * n;
    let mx = x0 + left + (PANEL.0 - left - right - side) / 2;
    let my = y0 + top;

    root.draw(&Text::new(
        title.to_string(),
        (mx + side / 2, y0 + 6),
        text_style(17.0, HPos::Center, VPos::Top),
    ))
    .map_err(de)?;

    let mut cy = my;
    for row in matrix {
        let mut cx = mx;
        for &w in row {
            // Masked (exactly zero) and non-finite cells stay blank.
            if w.is_finite() && w > 0.0 {
                root.draw(&Rectangle::new(
                    [(cx, cy), (cx + cell, cy + cell)],
                    HEAT.mix(heat_opacity(w)).filled(),
                ))
                .map_err(de)?;
            }
            cx += cell;
        }
        cy += cell;
    }
    root.draw(&Rectangle::new(
        [(mx, my), (mx + side, my + side)],
        BLACK.mix(0.3).stroke_width(1),
    ))
    .map_err(de)?;

    if cell >= 7 {
        let font = (f64::from(cell) * 0.9).clamp(8.0, 15.0);
        for (i, tok) in (0..).zip(tokens) {
            let mid = i * cell + cell / 2;
            root.draw(&Text::new(
                tok.clone(),
                (mx - 5, my + mid),
                text_style(font, HPos::Right, VPos::Center),
            ))
            .map_err(de)?;
            root.draw(&Text::new(
                tok.clone(),
                (mx + mid, my + side + 4),
                text_style(font, HPos::Center, VPos::Top),
            ))
            .map_err(de)?;
        }
    }
    root.draw(&Text::new(
        "key",
        (mx + side / 2, my + side + 22),
        text_style(14.0, HPos::Center, VPos::Top),
    ))
    .map_err(de)?;
    root.draw(&Text::new(
        "query",
        (mx - 30, my + side / 2),
        TextStyle::from((FONT, 14.0).into_font().transform(FontTransform::Rotate270))
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))
    .map_err(de)?;
    Ok(())
}

/// Weight scale under the attention grid.
fn draw_colorbar(root: &Area, (w, h): (i32, i32)) -> Result<(), String> {
    let scale = Scale {
        width: w,
        top: h - COLORBAR_H + 12,
        steps: COLORBAR_STEPS,
        step: 10,
        range: (0.0, 1.0),
        ends: ("0", "1"),
        caption: "attention weight (blank: masked future position)",
        font: 14.0,
    };
    scale.draw(root, |v| HEAT.mix(heat_opacity(v)).filled())
}

/// Largest finite weight of a row (0 when none).
fn row_max(row: &[f64]) -> f64 {
    row.iter()
        .copied()
        .filter(|w| w.is_finite())
        .fold(0.0, f64::max)
}

/// The alt text; `shown`, for a figure of chosen blocks and heads, is the last drawn
/// block's number and its heads' numbers (from 0), to name them right.
fn attention_alt(
    tokens: &[String],
    weights: &[Vec<Vec<Vec<f64>>>],
    heads: usize,
    shown: Option<(usize, &[usize])>,
) -> String {
    let mut alt = format!(
        "Attention weights for {} in {} × {}",
        tokens.join(" "),
        plural(weights.len(), "block"),
        plural(heads, "head")
    );
    // Rows from the separator to the second-last position: the ones that predict
    // an output letter (the last row predicts past the end). Same rows as
    // `AttentionMap::last_layer_min/max` in the engine.
    let sep = tokens.iter().position(|t| t == "|");
    let rows_desc = match sep {
        Some(_) => "each row from | to the second-last",
        None => "each row but the last",
    };
    let first_row = sep.unwrap_or(0);
    let row_count = tokens.len().saturating_sub(1).saturating_sub(first_row);
    let last = weights.last().map(Vec::as_slice).unwrap_or_default();
    // (head number, min and max over those rows of the row maximum) in the last block.
    let ranges: Vec<(usize, f64, f64)> = last
        .iter()
        .enumerate()
        .map(|(h, m)| {
            let (lo, hi) = m
                .iter()
                .skip(first_row)
                .take(row_count)
                .map(|r| row_max(r))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                });
            (shown.and_then(|s| s.1.get(h)).map_or(h, |&n| n) + 1, lo, hi)
        })
        .filter(|&(_, lo, _)| lo.is_finite())
        .collect();
    let block = match (shown, weights.len() > 1) {
        (Some((b, _)), true) => format!("in block {}, the last shown,", b + 1),
        (Some((b, _)), false) => format!("in block {}", b + 1),
        (None, true) => "in the last block".to_string(),
        (None, false) => "in this block".to_string(),
    };
    if ranges.is_empty() {
        // nothing to summarise
    } else if ranges.iter().all(|&(_, lo, _)| lo >= 0.5) {
        let lo = ranges.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        let hi = ranges.iter().map(|r| r.2).fold(f64::NEG_INFINITY, f64::max);
        let _ = write!(
            alt,
            "; {block} {rows_desc} puts most weight on one key (weights {lo:.2} to {hi:.2})"
        );
    } else {
        let per_head: Vec<String> = ranges
            .iter()
            .map(|(h, lo, hi)| format!("{lo:.2} to {hi:.2} in head {h}"))
            .collect();
        let _ = write!(
            alt,
            "; {block} the heaviest weight of {rows_desc} ranges from {}",
            per_head.join(", ")
        );
    }
    alt.push('.');
    alt
}

/// Grid of attention heatmaps, rows = layers, columns = heads; weights[layer][head][query][key] in 0..=1;
/// tokens label both axes (e.g. `["f", "g", "c", "a", "b", "e", "|", "e", …]`); masked
/// (upper-triangle, exactly 0) cells left blank; darker = heavier; panel titles "block 1, head 1" etc.
///
/// Each weight sets the opacity of one blue (#1F7ACC), so heavy cells are
/// saturated and light ones fade into the page background in either theme.
/// Cells that are exactly zero, negative or non-finite are not drawn. Every
/// matrix must be `tokens.len()` × `tokens.len()`, otherwise `Err`; layers may
/// have fewer heads than others (their slots stay empty). The SVG is
/// `40 + 360·heads` × `60 + 320·layers` user units (760×700 for 2×2).
pub fn attention_grid(tokens: &[String], weights: &[Vec<Vec<Vec<f64>>>]) -> Result<Svg, String> {
    let all: Vec<Row> = weights
        .iter()
        .enumerate()
        .map(|(l, layer)| (l, layer.iter().enumerate().collect()))
        .collect();
    attention_panels(tokens, &all, false)
}

/// The panels of the chosen blocks and heads (their indices from 0, each with its
/// matrix), one row per block; `subset` when they are not all of them (the alt text then
/// names the blocks and heads by number).
pub fn attention_panels(
    tokens: &[String],
    chosen: &[Row],
    subset: bool,
) -> Result<Svg, String> {
    let n = tokens.len();
    if n == 0 {
        return Err("attention_grid: no tokens".to_string());
    }
    let heads = chosen.iter().map(|(_, hs)| hs.len()).max().unwrap_or(0);
    if heads == 0 {
        return Err("attention_grid: no attention matrices".to_string());
    }
    for (l, layer) in chosen {
        for (h, m) in layer {
            if m.len() != n || m.iter().any(|r| r.len() != n) {
                return Err(format!(
                    "attention_grid: block {} head {} is not {n}×{n} (one row per token)",
                    l + 1,
                    h + 1
                ));
            }
        }
    }
    let cols = i32::try_from(heads).map_err(de)?;
    let rows = i32::try_from(chosen.len()).map_err(de)?;
    let w = 2 * GRID_MARGIN + PANEL.0 * cols;
    let h = PANEL.1 * rows + COLORBAR_H;
    let size = (w as u32, h as u32);
    let weights: Vec<Vec<Vec<Vec<f64>>>> = chosen
        .iter()
        .map(|(_, hs)| hs.iter().map(|(_, m)| (*m).clone()).collect())
        .collect();
    let last_heads: Vec<usize> = chosen
        .last()
        .map(|(_, hs)| hs.iter().map(|(h, _)| *h).collect())
        .unwrap_or_default();
    let last_block = chosen.last().map_or(0, |(b, _)| *b);
    let alt = attention_alt(
        tokens,
        &weights,
        heads,
        subset.then_some((last_block, last_heads.as_slice())),
    );
    render(size, alt, |root| {
        for (row, (l, layer)) in (0..).zip(chosen) {
            for (col, (hd, m)) in (0..).zip(layer) {
                let title = format!("block {}, head {}", l + 1, hd + 1);
                let corner = (GRID_MARGIN + col * PANEL.0, row * PANEL.1);
                draw_heatmap(root, corner, &title, tokens, m)?;
            }
        }
        draw_colorbar(root, (w, h))
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    fn tokens() -> Vec<String> {
        "f g c a b e | e b a c g f"
            .split(' ')
            .map(str::to_string)
            .collect()
    }

    /// Causal weights; the last block attends sharply from the separator on.
    fn causal(n: usize, sharp: bool) -> Vec<Vec<f64>> {
        (0..n)
            .map(|q| {
                (0..n)
                    .map(|k| {
                        if k > q {
                            0.0
                        } else if sharp && q >= 6 {
                            let target = 12 - q.min(12);
                            let peak = (0.97 + 0.029 * (q as f64 - 6.0) / 5.0).min(0.999);
                            if k == target.min(q) {
                                peak
                            } else {
                                (1.0 - peak) / q as f64
                            }
                        } else {
                            1.0 / (q + 1) as f64
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn count_rects(svg: &str) -> usize {
        svg.matches("<rect").count()
    }

    #[test]
    fn attention_grid_draws_only_unmasked_cells() {
        let toks = tokens();
        let n = toks.len();
        let mut weights = vec![
            vec![causal(n, false), causal(n, false)],
            vec![causal(n, true), causal(n, true)],
        ];
        // The last row predicts past the end and is left out of the summary.
        weights[1][0][n - 1] = vec![1.0 / n as f64; n];
        let svg = attention_grid(&toks, &weights).unwrap();
        assert_themed(&svg, (760, 700));
        for title in [
            "block 1, head 1",
            "block 1, head 2",
            "block 2, head 1",
            "block 2, head 2",
        ] {
            assert!(svg.body.contains(title), "missing {title}");
        }
        assert_eq!(
            svg.alt,
            "Attention weights for f g c a b e | e b a c g f in 2 blocks × 2 heads; in the last \
             block each row from | to the second-last puts most weight on one key (weights 0.97 to 1.00)."
        );
        // Constant furniture: 4 matrix frames + colour bar steps + its frame.
        let furniture = 4 + COLORBAR_STEPS as usize + 1;
        let lower = n * (n + 1) / 2;
        assert_eq!(count_rects(&svg.body), furniture + 4 * lower);

        // One more zero cell below the diagonal: one rect fewer.
        let mut holed = weights;
        holed[0][0][5][2] = 0.0;
        let svg2 = attention_grid(&toks, &holed).unwrap();
        assert_eq!(count_rects(&svg2.body), count_rects(&svg.body) - 1);
    }

    #[test]
    fn attention_grid_handles_bad_input() {
        let toks = tokens();
        let n = toks.len();
        let mut m = causal(n, false);
        m[3][1] = f64::NAN;
        m[4][0] = f64::INFINITY;
        m[5][0] = 7.0;
        let svg = attention_grid(&toks, &[vec![m]]).unwrap();
        assert!(!svg.body.contains("NaN"));
        assert!(svg.alt.contains("1 block × 1 head"), "{}", svg.alt);
        assert!(svg.alt.contains("ranges from"), "{}", svg.alt);

        assert!(attention_grid(&[], &[]).is_err());
        assert!(attention_grid(&toks, &[]).is_err());
        assert!(attention_grid(&toks, &[vec![vec![vec![1.0]]]]).is_err());

        // Many tokens: labels are dropped, nothing panics.
        let many: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        let svg = attention_grid(&many, &[vec![causal(200, false)]]).unwrap();
        assert!(svg.body.contains("<rect"));
    }
}
