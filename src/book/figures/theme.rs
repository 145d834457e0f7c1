//! How every figure looks: the palette, fonts and sizes, the one mesh style of every chart,
//! and the rewrite that makes plotters' SVG follow the page's light or dark theme.
//!
//! Neutral elements (axes, grid, text) are drawn in black with partial opacity; the
//! rewrite turns black into `currentColor` and drops the white background, so they are
//! tints of the text colour on light and dark backgrounds alike. The root `<svg>` element
//! (size, accessible name, `<title>`) is written by `templates/partials/figure.html`.

use super::Svg;
use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Okabe–Ito colours, readable on light and dark backgrounds.
pub const PALETTE: [RGBColor; 6] = [
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
pub const HEAT: RGBColor = RGBColor(0x1F, 0x7A, 0xCC);
/// Losses at or below zero (or tiny) are drawn at this floor on the log axis.
pub const LOSS_FLOOR: f64 = 1e-6;
pub const FONT: &str = "sans-serif";

pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A plotting error, as the figure's diagnostic label.
#[allow(clippy::needless_pass_by_value)] // used as `map_err(de)`
pub fn de<E: std::fmt::Display>(e: E) -> String {
    format!("plotting failed: {e}")
}

/// Renders `draw` on a fresh SVG canvas of `size` and applies the theme rewrite.
pub fn render<F>(size: (u32, u32), alt: String, draw: F) -> Result<Svg, String>
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

/// Theme rewrite of plotters' output (one tag per line): the root element and the white
/// background go, black becomes `currentColor`.
fn finish(raw: &str, (width, height): (u32, u32), alt: String) -> Svg {
    let mut body = String::with_capacity(raw.len());
    let background = format!(r#"<rect x="0" y="0" width="{width}" height="{height}""#);
    let mut root_done = false;
    for line in raw.lines() {
        let tag = line.trim_start();
        if !root_done && tag.starts_with("<svg") {
            root_done = true;
            continue;
        }
        if tag.starts_with(&background) && tag.to_ascii_lowercase().contains("fill=\"#ffffff\"") {
            continue;
        }
        body.push_str(&replace_black(line));
        body.push('\n');
    }
    Svg {
        width,
        height,
        alt,
        body,
    }
}

/// Replaces `#000000` in any letter case by `currentColor`.
pub fn replace_black(line: &str) -> String {
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

pub fn text_style(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).pos(Pos::new(h, v))
}

/// The mesh of every chart: light grid, muted axes, one font.
pub fn mesh<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut m = chart.configure_mesh();
    m.bold_line_style(BLACK.mix(0.14))
        .light_line_style(BLACK.mix(0.06))
        .axis_style(BLACK.mix(0.7))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16));
    m
}

/// The legend of a chart's labelled series, as every line chart draws it: top right,
/// framed in a tint of the text colour.
pub fn series_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(TRANSPARENT)
        .border_style(BLACK.mix(0.25))
        .label_font((FONT, 15))
        .draw()
        .map_err(de)
}

/// A cleaned line with its colour.
pub struct Line<'a> {
    pub label: &'a str,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
}

/// Finite points only, losses clamped to [`LOSS_FLOOR`].
pub fn clean_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| (x, y.max(LOSS_FLOOR)))
        .collect()
}

/// A colour scale under a heatmap: `steps` swatches `step` wide for the values from `range.0`
/// to `range.1`, each coloured by `style`, framed, its ends labelled and `caption` beneath,
/// centred in a canvas `width` wide with its top at `top`.
/// Centred text on a light plate, so that it reads on any shade of a heat cell in both
/// themes (text straight on a dark cell would vanish in the light theme).
pub fn plated_text(
    root: &Area,
    text: String,
    (cx, cy): (i32, i32),
    size: f64,
) -> Result<(), String> {
    let w = (text.chars().count() as f64 * size * 0.55) as i32;
    let h = size as i32 + 2;
    root.draw(&Rectangle::new(
        [(cx - w / 2 - 3, cy - h / 2), (cx + w / 2 + 3, cy + h / 2)],
        RGBColor(0xFA, 0xFA, 0xFA).mix(0.85).filled(),
    ))
    .map_err(de)?;
    root.draw(&Text::new(
        text,
        (cx, cy),
        text_style(size, HPos::Center, VPos::Center).color(&RGBColor(0x20, 0x20, 0x20)),
    ))
    .map_err(de)
}

pub struct Scale<'a> {
    pub width: i32,
    pub top: i32,
    pub steps: i32,
    pub step: i32,
    pub range: (f64, f64),
    pub ends: (&'a str, &'a str),
    pub caption: &'a str,
    pub font: f64,
}

impl Scale<'_> {
    pub fn draw(&self, root: &Area, style: impl Fn(f64) -> ShapeStyle) -> Result<(), String> {
        let (bw, bh) = (self.step * self.steps, 12);
        let (bx, by) = ((self.width - bw) / 2, self.top);
        let (lo, hi) = self.range;
        for i in 0..self.steps {
            let v = lo + (hi - lo) * ((f64::from(i) + 0.5) / f64::from(self.steps));
            let x = bx + i * self.step;
            root.draw(&Rectangle::new(
                [(x, by), (x + self.step, by + bh)],
                style(v),
            ))
            .map_err(de)?;
        }
        root.draw(&Rectangle::new(
            [(bx, by), (bx + bw, by + bh)],
            BLACK.mix(0.3).stroke_width(1),
        ))
        .map_err(de)?;
        let mid = by + bh / 2;
        for (label, x, pos) in [
            (self.ends.0, bx - 6, HPos::Right),
            (self.ends.1, bx + bw + 6, HPos::Left),
        ] {
            root.draw(&Text::new(
                label,
                (x, mid),
                text_style(self.font, pos, VPos::Center),
            ))
            .map_err(de)?;
        }
        root.draw(&Text::new(
            self.caption,
            (self.width / 2, by + bh + 6),
            text_style(self.font, HPos::Center, VPos::Top),
        ))
        .map_err(de)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
