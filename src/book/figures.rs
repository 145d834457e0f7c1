//! SVG figures for the chapter: loss curves, attention heatmaps and the fault
//! comparison.
//!
//! Every figure is drawn with plotters' SVG backend and then post-processed so
//! that it follows the page theme: black becomes `currentColor`, there is no
//! background rectangle, the root `<svg>` has a `viewBox` but no fixed size, and
//! the alt text (written from the data) is both the `aria-label` and the
//! `<title>` of the image. Neutral elements (axes, grid, text) are drawn in
//! black with partial opacity, so after the rewrite they are tints of the text
//! colour on light and dark backgrounds alike.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

/// A rendered figure: inline SVG markup and alt text written from the data.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Svg {
    /// Complete `<svg>` element, ready to inline into HTML.
    pub svg: String,
    /// Plain-text description of what the figure shows (also embedded in the SVG).
    pub alt: String,
}

/// One line on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Run name, shown in the legend and the alt text.
    pub label: String,
    /// `(step, loss)` pairs in drawing order.
    pub points: Vec<(f64, f64)>,
}

/// Accuracy by string length for one run: (length, accuracy in percent 0..=100).
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// Run name; a run with the same label in the loss panel gets the same colour.
    pub label: String,
    /// `(string length, exact match in percent)` pairs.
    pub values: Vec<(usize, f64)>,
}

/// Okabe–Ito colours, readable on light and dark backgrounds.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x7B, 0x61, 0xFF),
    RGBColor(0x8C, 0x8C, 0x8C),
];
/// Hue of the attention heatmap; the weight sets the opacity. A slightly
/// lighter blue than the palette's, so full weight contrasts about equally
/// with white (4.4:1) and with a near-black page (3.8:1).
const HEAT: RGBColor = RGBColor(0x1F, 0x7A, 0xCC);
/// Losses at or below zero (or tiny) are drawn at this floor on the log axis.
const LOSS_FLOOR: f64 = 1e-6;
const FONT: &str = "sans-serif";

const LOSS_SIZE: (u32, u32) = (720, 360);
const FAULT_SIZE: (u32, u32) = (960, 380);
/// One attention panel.
const PANEL: (i32, i32) = (360, 320);
const GRID_MARGIN: i32 = 20;
const COLORBAR_H: i32 = 60;
const COLORBAR_STEPS: i32 = 20;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn de<E: std::fmt::Display>(e: E) -> String {
    format!("plotting failed: {e}")
}

/// Render `draw` on a fresh SVG canvas of `size` and apply the theme rewrite.
fn render<F>(size: (u32, u32), alt: String, draw: F) -> Result<Svg, String>
where
    F: FnOnce(&Area) -> Result<(), String>,
{
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(de)?;
    }
    Ok(finish(&buf, size, alt))
}

/// Theme rewrite of plotters' output (one tag per line).
fn finish(raw: &str, (w, h): (u32, u32), alt: String) -> Svg {
    let mut out = String::with_capacity(raw.len() + 2 * alt.len() + 200);
    let background = format!(r#"<rect x="0" y="0" width="{w}" height="{h}""#);
    let label = escape_xml(&alt);
    let mut root_done = false;
    for line in raw.lines() {
        let tag = line.trim_start();
        if !root_done && tag.starts_with("<svg") {
            let _ = writeln!(
                out,
                r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" role="img" aria-label="{label}">"#
            );
            let _ = writeln!(out, "<title>{label}</title>");
            root_done = true;
            continue;
        }
        if tag.starts_with(&background) && tag.to_ascii_lowercase().contains("fill=\"#ffffff\"") {
            continue;
        }
        out.push_str(&replace_black(line));
        out.push('\n');
    }
    Svg { svg: out, alt }
}

/// Replace `#000000` in any letter case by `currentColor`.
fn replace_black(line: &str) -> String {
    const BLACK_HEX: &str = "#000000";
    // ASCII lowercasing keeps byte offsets, so indices found in `lower` hold in `line`.
    let lower = line.to_ascii_lowercase();
    let mut out = String::with_capacity(line.len() + 16);
    let mut last = 0;
    for (i, _) in lower.match_indices(BLACK_HEX) {
        out.push_str(&line[last..i]);
        out.push_str("currentColor");
        last = i + BLACK_HEX.len();
    }
    out.push_str(&line[last..]);
    out
}

/// XML escaping for text and attributes: the same rules as the page's HTML.
fn escape_xml(s: &str) -> String {
    super::render::esc(s)
}

/// Two significant digits; scientific (`5.6e-5`) below 1e-3 or from 1e5.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".to_string();
    }
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{v:.1e}");
        return match s.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim_zeros(mantissa)),
            None => s,
        };
    }
    let decimals = (1.0 - a.log10().floor()).max(0.0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Training step: an integer where it is one.
fn fmt_step(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        fmt_num(v)
    }
}

/// Percentage with at most one decimal.
fn fmt_pct(v: f64) -> String {
    trim_zeros(&format!("{v:.1}")).to_string()
}

/// Label of the tick at `10^k`: 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1e3, ...
fn pow10_label(k: i32) -> String {
    match k {
        -2 => "0.01".to_string(),
        -1 => "0.1".to_string(),
        0 => "1".to_string(),
        1 => "10".to_string(),
        2 => "100".to_string(),
        k => format!("1e{k}"),
    }
}

/// Tick label on an axis that carries `log10(value)`; only whole decades are labelled.
fn fmt_log_tick(v: f64) -> String {
    let k = v.round();
    if (v - k).abs() < 1e-6 && k.abs() < 1000.0 {
        pow10_label(k as i32)
    } else {
        String::new()
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Finite points only, losses clamped to [`LOSS_FLOOR`].
fn clean_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| (x, y.max(LOSS_FLOOR)))
        .collect()
}

/// A cleaned line with its colour.
struct Line<'a> {
    label: &'a str,
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

fn text_style(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).pos(Pos::new(h, v))
}

/// Loss chart with a log10 y axis (the data are transformed, ticks at whole decades).
fn draw_log_panel(area: &Area, lines: &[Line], caption: &str, legend: bool) -> Result<(), String> {
    let (mut xmin, mut xmax) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut ymin, mut ymax) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in lines.iter().flat_map(|l| l.points.iter()) {
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
    chart
        .configure_mesh()
        .x_desc("training step")
        .y_desc("loss (log scale)")
        .x_labels(8)
        .y_labels(decades + 1)
        .x_max_light_lines(1)
        .y_max_light_lines(0)
        .bold_line_style(BLACK.mix(0.14))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(BLACK.mix(0.7))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .x_label_formatter(&|v| fmt_step(*v))
        .y_label_formatter(&|v| fmt_log_tick(*v))
        .draw()
        .map_err(de)?;

    // Minor log grid at 2..9 × 10^k, where it stays readable.
    if decades <= 6 {
        let minor = BLACK.mix(0.05);
        for k in (lo as i32)..(hi as i32) {
            for m in 2..=9 {
                let y = f64::from(k) + f64::from(m).log10();
                chart
                    .draw_series(LineSeries::new([(xmin, y), (xmax, y)], minor))
                    .map_err(de)?;
            }
        }
    }

    for line in lines.iter().filter(|l| !l.points.is_empty()) {
        let pts: Vec<(f64, f64)> = line.points.iter().map(|&(x, y)| (x, y.log10())).collect();
        let color = line.color;
        let drawn = chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(de)?;
        if legend {
            drawn.label(line.label).legend(move |(x, y)| {
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(TRANSPARENT)
            .border_style(BLACK.mix(0.25))
            .label_font((FONT, 15))
            .draw()
            .map_err(de)?;
    }
    Ok(())
}

/// First, last and lowest point of a cleaned run.
struct RunSummary {
    first: (f64, f64),
    last: (f64, f64),
    min: f64,
}

fn summarize(points: &[(f64, f64)]) -> Option<RunSummary> {
    let first = *points.first()?;
    let last = *points.last()?;
    let min = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    Some(RunSummary { first, last, min })
}

fn fmt_loss(v: f64) -> String {
    if v <= LOSS_FLOOR {
        format!("≤ {}", fmt_num(LOSS_FLOOR))
    } else {
        fmt_num(v)
    }
}

/// "falls from 2.5 at step 1 to 1e-4 {end}"
fn trend(s: &RunSummary, end: &str) -> String {
    let (a, b) = (fmt_loss(s.first.1), fmt_loss(s.last.1));
    let start = fmt_step(s.first.0);
    if s.first.0 == s.last.0 {
        format!("has a single value {a} at step {start}")
    } else if a == b {
        format!("stays at {a} from step {start} {end}")
    } else {
        let verb = if s.last.1 < s.first.1 {
            "falls"
        } else {
            "rises"
        };
        format!("{verb} from {a} at step {start} to {b} {end}")
    }
}

fn run_name(label: &str) -> &str {
    if label.trim().is_empty() {
        "the run"
    } else {
        label
    }
}

fn loss_alt(series: &[Series], lines: &[Line]) -> String {
    if let [line] = lines {
        // Caller guarantees at least one finite point overall.
        let s = summarize(&line.points).expect("non-empty");
        return format!(
            "Training loss of {} over {} steps on a log scale: {}; lowest {}.",
            run_name(line.label),
            fmt_step(s.last.0),
            trend(&s, "at the end"),
            fmt_loss(s.min)
        );
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
        "Training loss of {} runs on a log scale: {}.",
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
    let alt = loss_alt(series, &lines);
    render(LOSS_SIZE, alt, |root| {
        draw_log_panel(root, &lines, title, lines.len() > 1)
    })
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
        let size = (f64::from(cell) * 0.9).clamp(8.0, 15.0);
        for (i, tok) in (0..).zip(tokens) {
            let mid = i * cell + cell / 2;
            root.draw(&Text::new(
                tok.clone(),
                (mx - 5, my + mid),
                text_style(size, HPos::Right, VPos::Center),
            ))
            .map_err(de)?;
            root.draw(&Text::new(
                tok.clone(),
                (mx + mid, my + side + 4),
                text_style(size, HPos::Center, VPos::Top),
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
    let step = 10;
    let bw = step * COLORBAR_STEPS;
    let bx = (w - bw) / 2;
    let by = h - COLORBAR_H + 12;
    let bh = 12;
    for i in 0..COLORBAR_STEPS {
        let v = (f64::from(i) + 0.5) / f64::from(COLORBAR_STEPS);
        let x = bx + i * step;
        root.draw(&Rectangle::new(
            [(x, by), (x + step, by + bh)],
            HEAT.mix(heat_opacity(v)).filled(),
        ))
        .map_err(de)?;
    }
    root.draw(&Rectangle::new(
        [(bx, by), (bx + bw, by + bh)],
        BLACK.mix(0.3).stroke_width(1),
    ))
    .map_err(de)?;
    let mid = by + bh / 2;
    root.draw(&Text::new(
        "0",
        (bx - 6, mid),
        text_style(14.0, HPos::Right, VPos::Center),
    ))
    .map_err(de)?;
    root.draw(&Text::new(
        "1",
        (bx + bw + 6, mid),
        text_style(14.0, HPos::Left, VPos::Center),
    ))
    .map_err(de)?;
    root.draw(&Text::new(
        "attention weight (blank: masked future position)",
        (w / 2, by + bh + 6),
        text_style(14.0, HPos::Center, VPos::Top),
    ))
    .map_err(de)?;
    Ok(())
}

/// Largest finite weight of a row (0 when none).
fn row_max(row: &[f64]) -> f64 {
    row.iter()
        .copied()
        .filter(|w| w.is_finite())
        .fold(0.0, f64::max)
}

fn attention_alt(tokens: &[String], weights: &[Vec<Vec<Vec<f64>>>], heads: usize) -> String {
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
            (h + 1, lo, hi)
        })
        .filter(|&(_, lo, _)| lo.is_finite())
        .collect();
    let block = if weights.len() > 1 {
        "in the last block"
    } else {
        "in this block"
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
/// tokens label both axes (e.g. ["f","g","c","a","b","e","|","e","b","a","c","g","f"]); masked
/// (upper-triangle, exactly 0) cells left blank; darker = heavier; panel titles "block 1, head 1" etc.
///
/// Each weight sets the opacity of one blue (#1F7ACC), so heavy cells are
/// saturated and light ones fade into the page background in either theme.
/// Cells that are exactly zero, negative or non-finite are not drawn. Every
/// matrix must be `tokens.len()` × `tokens.len()`, otherwise `Err`; layers may
/// have fewer heads than others (their slots stay empty). The SVG is
/// `40 + 360·heads` × `60 + 320·layers` user units (760×700 for 2×2).
pub fn attention_grid(tokens: &[String], weights: &[Vec<Vec<Vec<f64>>>]) -> Result<Svg, String> {
    let n = tokens.len();
    if n == 0 {
        return Err("attention_grid: no tokens".to_string());
    }
    let heads = weights.iter().map(Vec::len).max().unwrap_or(0);
    if heads == 0 {
        return Err("attention_grid: no attention matrices".to_string());
    }
    for (l, layer) in weights.iter().enumerate() {
        for (h, m) in layer.iter().enumerate() {
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
    let rows = i32::try_from(weights.len()).map_err(de)?;
    let w = 2 * GRID_MARGIN + PANEL.0 * cols;
    let h = PANEL.1 * rows + COLORBAR_H;
    let size = (w as u32, h as u32);
    let alt = attention_alt(tokens, weights, heads);
    render(size, alt, |root| {
        for (l, layer) in (0..).zip(weights) {
            for (hd, m) in (0..).zip(layer) {
                let title = format!("block {}, head {}", l + 1, hd + 1);
                let corner = (GRID_MARGIN + hd * PANEL.0, l * PANEL.1);
                draw_heatmap(root, corner, &title, tokens, m)?;
            }
        }
        draw_colorbar(root, (w, h))
    })
}

/// Rough width of `text` at plotters font size `size` (the SVG backend writes
/// `size / 1.24` px and cannot measure text).
fn text_width(text: &str, size: f64) -> i32 {
    (text.chars().count() as f64 * size / 1.24 * 0.6).ceil() as i32
}

/// Shared legend: colour swatch and label per run, centred rows. Returns the rows.
fn legend_rows(entries: &[(&str, RGBColor)], width: i32) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = vec![Vec::new()];
    let mut used = 0;
    for (i, (label, _)) in entries.iter().enumerate() {
        let item = 14 + 6 + text_width(label, 15.0) + 24;
        if used > 0 && used + item > width - 40 {
            rows.push(Vec::new());
            used = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, item));
        }
        used += item;
    }
    rows
}

fn draw_legend(
    root: &Area,
    entries: &[(&str, RGBColor)],
    rows: &[Vec<(usize, i32)>],
    width: i32,
) -> Result<(), String> {
    for (r, row) in (0..).zip(rows) {
        let total: i32 = row.iter().map(|&(_, w)| w).sum();
        let mut x = (width - total) / 2;
        let y = 14 + 20 * r;
        for &(i, item) in row {
            let (label, color) = entries[i];
            root.draw(&Rectangle::new(
                [(x, y - 5), (x + 14, y + 5)],
                color.filled(),
            ))
            .map_err(de)?;
            root.draw(&Text::new(
                label.to_string(),
                (x + 20, y),
                text_style(15.0, HPos::Left, VPos::Center),
            ))
            .map_err(de)?;
            x += item;
        }
    }
    Ok(())
}

/// Grouped bars of exact match by string length.
fn draw_bar_panel(
    area: &Area,
    bars: &[(&Bars, RGBColor)],
    lengths: &[usize],
) -> Result<(), String> {
    let groups = lengths.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption("exact match by string length", (FONT, 19))
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5..(groups as f64 - 0.5), 0.0..100.0)
        .map_err(de)?;
    let x_fmt = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            lengths
                .get(i as usize)
                .map(ToString::to_string)
                .unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("string length")
        .y_desc("exact match (%)")
        .x_labels(groups)
        .y_labels(6)
        .y_max_light_lines(1)
        .bold_line_style(BLACK.mix(0.14))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(BLACK.mix(0.7))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(de)?;

    let group = 0.8;
    let bw = group / bars.len().max(1) as f64;
    for (j, &(run, color)) in bars.iter().enumerate() {
        let rects = run.values.iter().filter_map(|&(len, v)| {
            if !v.is_finite() {
                return None;
            }
            let i = lengths.binary_search(&len).ok()? as f64;
            let x0 = i - group / 2.0 + j as f64 * bw;
            Some(Rectangle::new(
                [(x0 + 0.06 * bw, 0.0), (x0 + 0.94 * bw, v.clamp(0.0, 100.0))],
                color.filled(),
            ))
        });
        chart.draw_series(rects).map_err(de)?;
    }
    Ok(())
}

/// Unweighted mean of the finite accuracies of a run.
fn mean_accuracy(b: &Bars) -> Option<f64> {
    let vals: Vec<f64> = b
        .values
        .iter()
        .map(|&(_, v)| v)
        .filter(|v| v.is_finite())
        .map(|v| v.clamp(0.0, 100.0))
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
}

fn describe_lengths(lengths: &[usize]) -> String {
    match lengths {
        [] => String::new(),
        [one] => format!("{one}"),
        [first, .., last] if last - first + 1 == lengths.len() => format!("{first} to {last}"),
        _ => lengths
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn fault_alt(labels: &[&str], curves: &[Series], bars: &[Bars], lengths: &[usize]) -> String {
    let longest = curves
        .iter()
        .filter_map(|s| summarize(&clean_points(&s.points)))
        .map(|s| s.last.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let parts: Vec<String> = labels
        .iter()
        .map(|&label| {
            let name = run_name(label);
            let loss = curves
                .iter()
                .find(|s| s.label == label)
                .and_then(|s| summarize(&clean_points(&s.points)));
            let acc = bars
                .iter()
                .find(|b| b.label == label)
                .and_then(mean_accuracy);
            let loss_part = loss.map(|s| {
                let stop = if s.last.0 < longest {
                    " (stopped early)"
                } else {
                    ""
                };
                format!(
                    "ends at smoothed loss {} at step {}{stop}",
                    fmt_loss(s.last.1),
                    fmt_step(s.last.0)
                )
            });
            let acc_part = acc.map(|a| format!("{}% exact match", fmt_pct(a)));
            match (loss_part, acc_part) {
                (Some(l), Some(a)) => format!("{name} {l} with {a}"),
                (Some(l), None) => format!("{name} {l}"),
                (None, Some(a)) => format!("{name} has {a}"),
                (None, None) => format!("{name} has no data"),
            }
        })
        .collect();
    let range = describe_lengths(lengths);
    let lengths_desc = if range.is_empty() {
        String::new()
    } else {
        format!(" ({range})")
    };
    format!(
        "Smoothed training loss on a log scale and exact match by string length{lengths_desc} \
         for {} (exact match averaged over lengths): {}.",
        plural(labels.len(), "run"),
        parts.join("; ")
    )
}

/// Left panel: several smoothed loss curves on log y (e.g. 25-step running means; runs may have different lengths,
/// e.g. one stops at 300 steps). Right panel: grouped bars of accuracy (%) by string length (x groups = lengths 3..8,
/// one bar per run, same colors as the left panel, legend shared).
///
/// Curves are plotted as given (smooth them before calling). Colours are
/// assigned by label in order of first appearance across `curves` then
/// `bars`, so a run keeps its colour in both panels; the shared legend sits
/// above the panels. Length groups are the union of lengths in `bars`, sorted.
/// The alt text gives each run's final loss and its unweighted mean accuracy
/// over lengths. Returns `Err` only when both slices are empty. 960×380 (more
/// if the legend wraps).
pub fn fault_comparison(curves: &[Series], bars: &[Bars]) -> Result<Svg, String> {
    if curves.is_empty() && bars.is_empty() {
        return Err("fault_comparison: no curves and no bars".to_string());
    }
    let mut labels: Vec<&str> = Vec::new();
    for label in curves
        .iter()
        .map(|s| s.label.as_str())
        .chain(bars.iter().map(|b| b.label.as_str()))
    {
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    let color_of = |label: &str| {
        let i = labels.iter().position(|l| *l == label).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    };
    let entries: Vec<(&str, RGBColor)> = labels.iter().map(|&l| (l, color_of(l))).collect();
    let lines: Vec<Line> = curves
        .iter()
        .map(|s| Line {
            label: &s.label,
            color: color_of(&s.label),
            points: clean_points(&s.points),
        })
        .collect();
    let colored_bars: Vec<(&Bars, RGBColor)> =
        bars.iter().map(|b| (b, color_of(&b.label))).collect();
    let mut lengths: Vec<usize> = bars
        .iter()
        .flat_map(|b| b.values.iter().map(|&(len, _)| len))
        .collect();
    lengths.sort_unstable();
    lengths.dedup();

    let width = FAULT_SIZE.0 as i32;
    let rows = legend_rows(&entries, width);
    let legend_h = 8 + 20 * rows.len() as i32;
    let height = FAULT_SIZE.1 as i32 + legend_h - 28;
    let alt = fault_alt(&labels, curves, bars, &lengths);
    render((width as u32, height as u32), alt, |root| {
        draw_legend(root, &entries, &rows, width)?;
        let (_, body) = root.split_vertically(legend_h);
        let (left, right) = body.split_horizontally(width * 53 / 100);
        draw_log_panel(&left, &lines, "smoothed training loss", false)?;
        draw_bar_panel(&right, &colored_bars, &lengths)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_themed(svg: &Svg, size: (u32, u32)) {
        let s = &svg.svg;
        assert!(s.starts_with("<svg"), "{}", &s[..s.len().min(200)]);
        assert!(s.contains(&format!(r#"viewBox="0 0 {} {}""#, size.0, size.1)));
        assert!(s.contains("currentColor"));
        assert!(!s.to_ascii_lowercase().contains("#000000"));
        assert!(!s.to_ascii_lowercase().contains("#ffffff"));
        assert!(s.contains(r#"role="img""#));
        let root = s.lines().next().unwrap();
        assert!(
            !root.contains("width=") && !root.contains("height="),
            "{root}"
        );
        assert!(root.contains(&format!(r#"aria-label="{}""#, escape_xml(&svg.alt))));
        let second = s.lines().nth(1).unwrap();
        assert_eq!(second, format!("<title>{}</title>", escape_xml(&svg.alt)));
        assert!(s.trim_end().ends_with("</svg>"));
    }

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
    fn numbers_format_like_the_prose() {
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(1e-4), "1e-4");
        assert_eq!(fmt_num(5.6e-5), "5.6e-5");
        assert_eq!(fmt_num(0.0123), "0.012");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(9.96), "10");
        assert_eq!(fmt_num(123.4), "123");
        assert_eq!(fmt_num(f64::NAN), "n/a");
        assert_eq!(fmt_step(1500.0), "1500");
        assert_eq!(fmt_pct(100.0), "100");
        assert_eq!(fmt_pct(99.54), "99.5");
        let ticks: Vec<String> = (-4..=1).map(|k| fmt_log_tick(f64::from(k))).collect();
        assert_eq!(ticks, ["1e-4", "1e-3", "0.01", "0.1", "1", "10"]);
        assert_eq!(fmt_log_tick(-2.5), "");
        assert_eq!(describe_lengths(&[3, 4, 5, 6, 7, 8]), "3 to 8");
        assert_eq!(describe_lengths(&[3, 5]), "3, 5");
    }

    #[test]
    fn black_is_rewritten_in_any_case() {
        assert_eq!(
            replace_black(r##"<line stroke="#000000" fill="#00000a"/><text fill="#000000">"##),
            r##"<line stroke="currentColor" fill="#00000a"/><text fill="currentColor">"##
        );
        assert_eq!(
            replace_black("a #000000 b #000000"),
            "a currentColor b currentColor"
        );
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
        assert!(svg.svg.contains("<polyline"));
        assert!(svg.svg.contains("#0072B2"));
        for label in [
            "training step",
            "loss (log scale)",
            "0.01",
            "1e-4",
            "1",
            "reference run",
        ] {
            let label = format!("\n{label}\n");
            assert!(svg.svg.contains(&label), "missing {label}");
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
        assert!(svg.svg.contains("\nno-mask\n") && svg.svg.contains("\nreference\n"));
        assert!(svg.svg.contains("#D55E00"));
        assert!(
            svg.alt.starts_with("Training loss of 2 runs"),
            "{}",
            svg.alt
        );
        assert!(svg
            .alt
            .contains("no-mask falls from 2.4 at step 1 to 0.36 at step 300"));
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
        assert!(!svg.svg.contains("NaN") && !svg.svg.contains("inf"));
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
        assert!(svg.svg.contains("<circle"));
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
            assert!(svg.svg.contains(title), "missing {title}");
        }
        assert_eq!(
            svg.alt,
            "Attention weights for f g c a b e | e b a c g f in 2 blocks × 2 heads; in the last \
             block each row from | to the second-last puts most weight on one key (weights 0.97 to 1.00)."
        );
        // Constant furniture: 4 matrix frames + colour bar steps + its frame.
        let furniture = 4 + COLORBAR_STEPS as usize + 1;
        let lower = n * (n + 1) / 2;
        assert_eq!(count_rects(&svg.svg), furniture + 4 * lower);

        // One more zero cell below the diagonal: one rect fewer.
        let mut holed = weights;
        holed[0][0][5][2] = 0.0;
        let svg2 = attention_grid(&toks, &holed).unwrap();
        assert_eq!(count_rects(&svg2.svg), count_rects(&svg.svg) - 1);
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
        assert!(!svg.svg.contains("NaN"));
        assert!(svg.alt.contains("1 block × 1 head"), "{}", svg.alt);
        assert!(svg.alt.contains("ranges from"), "{}", svg.alt);

        assert!(attention_grid(&[], &[]).is_err());
        assert!(attention_grid(&toks, &[]).is_err());
        assert!(attention_grid(&toks, &[vec![vec![vec![1.0]]]]).is_err());

        // Many tokens: labels are dropped, nothing panics.
        let many: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        let svg = attention_grid(&many, &[vec![causal(200, false)]]).unwrap();
        assert!(svg.svg.contains("<rect"));
    }

    fn fault_inputs() -> (Vec<Series>, Vec<Bars>) {
        let run = |label: &str, steps: u32, end: f64| Series {
            label: label.to_string(),
            points: (25..=steps)
                .map(|s| {
                    let t = f64::from(s) / f64::from(steps);
                    (f64::from(s), 2.3 * (end / 2.3).powf(t))
                })
                .collect(),
        };
        let curves = vec![
            run("reference", 1500, 1e-4),
            run("no mask", 300, 0.35),
            run("no positions", 1500, 0.8),
        ];
        let bars = vec![
            Bars {
                label: "reference".to_string(),
                values: (3..=8).map(|l| (l, 100.0)).collect(),
            },
            Bars {
                label: "no mask".to_string(),
                values: (3..=8).map(|l| (l, 60.0 - 10.0 * l as f64)).collect(),
            },
            Bars {
                label: "no positions".to_string(),
                values: (3..=8).map(|l| (l, 40.0 / l as f64)).collect(),
            },
        ];
        (curves, bars)
    }

    #[test]
    fn fault_comparison_shares_colours_and_describes_runs() {
        let (curves, bars) = fault_inputs();
        let svg = fault_comparison(&curves, &bars).unwrap();
        assert_themed(&svg, FAULT_SIZE);
        for label in [
            "string length",
            "exact match (%)",
            "training step",
            "loss (log scale)",
        ] {
            assert!(svg.svg.contains(label), "missing {label}");
        }
        for len in 3..=8 {
            assert!(
                svg.svg.contains(&format!("\n{len}\n")),
                "missing length {len}"
            );
        }
        // The second run is vermillion in both panels.
        let line = svg
            .svg
            .lines()
            .find(|l| l.contains("<polyline") && l.contains("#D55E00"));
        let bar = svg
            .svg
            .lines()
            .find(|l| l.contains("<rect") && l.contains("#D55E00"));
        assert!(line.is_some() && bar.is_some());
        assert!(
            svg.alt.contains(
                "reference ends at smoothed loss 1e-4 at step 1500 with 100% exact match"
            ),
            "{}",
            svg.alt
        );
        assert!(svg.alt.contains("no mask ends at smoothed loss 0.35 at step 300 (stopped early) with 10% exact match"), "{}", svg.alt);
        assert!(svg.alt.contains("(3 to 8)"), "{}", svg.alt);
    }

    #[test]
    fn fault_comparison_survives_bad_values() {
        let curves = vec![Series {
            label: "a".to_string(),
            points: vec![(1.0, f64::NAN), (2.0, 0.0), (3.0, -1.0)],
        }];
        let bars = vec![Bars {
            label: "b".to_string(),
            values: vec![(3, f64::NAN), (4, 150.0), (5, -3.0)],
        }];
        let svg = fault_comparison(&curves, &bars).unwrap();
        assert_themed(&svg, FAULT_SIZE);
        assert!(svg.alt.contains("b has 50% exact match"), "{}", svg.alt);
        assert!(fault_comparison(&[], &bars).is_ok());
        assert!(fault_comparison(&curves, &[]).is_ok());
        let empty = Series {
            label: "empty".to_string(),
            points: Vec::new(),
        };
        assert!(fault_comparison(&[empty], &[])
            .unwrap()
            .alt
            .contains("empty has no data"));
        assert!(fault_comparison(&[], &[]).is_err());
    }
}
