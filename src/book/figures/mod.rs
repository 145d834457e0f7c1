//! Figures: one file per figure kind, drawn with plotters into themed SVG, plus the theme
//! (`theme.rs`) and the alt text (`alt.rs`) they share. Nothing here knows about HTML.
//!
//! To add a kind, write `pie.rs` with `pub struct Spec` (its own TOML fields) implementing
//! [`Figure`], and register it with one line in the list below.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "pixel geometry: small counts and sizes move between usize, i32 and f64"
)]

mod alt;
mod theme;

use super::diag::Diagnostic;
use super::kinds::{kinds, RunData};
use crate::book::codes::Code;

kinds! {
    /// A figure directive's `kind`, with that kind's own fields.
    pub enum FigureKind: "figure", dyn Figure {
        Loss(loss) = "loss",
        Attention(attention) = "attention",
        Faults(faults) = "faults",
        BlockDiagram(block_diagram) = "block-diagram",
        Sharpening(sharpening) = "sharpening",
        PositionNorms(position_norms) = "position-norms",
        LengthCurve(length_curve) = "length-curve",
        PositionSimilarity(position_similarity) = "position-similarity",
        Trace(trace) = "trace",
        Spikes(spikes) = "spikes",
        OutcomeGrid(outcome_grid) = "outcome-grid",
        Ablation(ablation) = "ablation",
        Patching(patching) = "patching",
    }
}

/// What a figure kind does: draw its runs.
pub trait Figure {
    /// Draws the figure; a problem is reported at the directive's fence.
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic>;
}

/// A drawn figure: the inside of its `<svg>` element, its size and alt text written from
/// the data. `templates/partials/figure.html` writes the root element around it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Svg {
    /// User units of the `viewBox`.
    pub width: u32,
    pub height: u32,
    /// Plain-text description of what the figure shows: its accessible name and `<title>`.
    pub alt: String,
    /// The SVG elements, one per line, ending with `</svg>`.
    pub body: String,
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

/// The running mean of `losses` over `w` steps, at the window's last step.
fn smoothed(label: &str, losses: &[f64], w: usize) -> Series {
    let w = w.min(losses.len()).max(1);
    #[allow(clippy::cast_precision_loss)] // step counts are far below 2^52
    let points = losses
        .windows(w)
        .enumerate()
        .map(|(i, win)| ((i + w) as f64, win.iter().sum::<f64>() / w as f64))
        .collect();
    Series {
        label: label.to_string(),
        points,
    }
}

/// A plotting failure as the figure's diagnostic.
fn drawn(svg: Result<Svg, String>) -> Result<Svg, Diagnostic> {
    svg.map_err(|e| Diagnostic::error(Code::Figure, None, "cannot draw this figure").label(e))
}

#[cfg(test)]
mod tests {
    use super::Svg;

    /// The body follows the theme: no root element, no black, no white background.
    pub fn assert_themed(svg: &Svg, size: (u32, u32)) {
        let s = &svg.body;
        assert_eq!((svg.width, svg.height), size);
        assert!(!s.contains("<svg"), "{}", &s[..s.len().min(200)]);
        assert!(s.contains("currentColor"));
        assert!(!s.to_ascii_lowercase().contains("#000000"));
        assert!(!s.to_ascii_lowercase().contains("#ffffff"));
        assert!(s.trim_end().ends_with("</svg>"));
        assert!(!svg.alt.is_empty());
        dump(svg);
    }

    /// With `REVTX_FIGURE_DIR` set, writes each checked figure there as a standalone SVG
    /// (named by a hash of its alt text), for looking at it.
    fn dump(svg: &Svg) {
        let Some(dir) = std::env::var_os("REVTX_FIGURE_DIR") else {
            return;
        };
        let name = format!("{}.svg", &blake3::hash(svg.alt.as_bytes()).to_hex()[..12]);
        let text = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">\n<title>{}</title>\n{}",
            svg.width,
            svg.height,
            svg.width,
            svg.height,
            svg.alt.replace('&', "&amp;").replace('<', "&lt;"),
            svg.body
        );
        let dir = std::path::Path::new(&dir);
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(dir.join(name), text);
    }
}
