//! `kind = "block-diagram"`: the model's path from tokens to logits, one transformer block
//! opened up, with the shape of the tensor at every step, symbolic and in numbers, all
//! from the run's own configuration (`config.model`, `config.train.batch_size` and the
//! width its batches train at), so the diagram follows the config when it changes.

use super::theme::{de, render, text_style, Area, PALETTE};
use super::{drawn, Figure, Svg};
use crate::book::codes::Code;
use crate::book::diag::Diagnostic;
use crate::book::kinds::{single, RunData};
use revtx_spec::experiments::RunConfig;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::Deserialize;

/// The fields of a block diagram: none beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {}

impl Figure for Spec {
    fn draw(&self, runs: &[RunData]) -> Result<Svg, Diagnostic> {
        let run = single(runs, "block-diagram")?;
        let config = &run.first().config;
        // The diagram draws the chapter's pre-norm block with learned positions and GELU;
        // another choice would be drawn wrongly, so it is refused, naming the choice.
        if let Some(what) = config.model.differs_from_chapter() {
            return Err(Diagnostic::error(
                Code::Figure,
                None,
                format!(
                    "a block diagram draws the pre-norm block with learned positions and GELU, and `{}` has {what}",
                    run.id
                ),
            ));
        }
        drawn(block_diagram(config))
    }
}

const WIDTH: i32 = 720;
/// Vertical distance between two steps, and the height of a step's box.
const PITCH: i32 = 34;
const BOX_H: i32 = 24;
/// The boxes' column, the residual stream's skip line left of it, the two shape columns.
const BOX_X: (i32, i32) = (70, 330);
const SKIP_X: i32 = 38;
const SYM_X: i32 = 356;
const NUM_X: i32 = 548;
const TOP: i32 = 34;
/// Room above and below the repeated block for its frame and label.
const FRAME_GAP: i32 = 30;
const FOOTER: i32 = 62;
const FONT_SIZE: f64 = 18.0;

/// What a step does, for its colour.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Part {
    /// Tokens, embeddings and the head.
    Io,
    Norm,
    Attention,
    Mlp,
    /// A residual addition.
    Add,
}

impl Part {
    fn color(self) -> RGBColor {
        match self {
            Part::Io => PALETTE[2],
            Part::Norm => PALETTE[5],
            Part::Attention => PALETTE[0],
            Part::Mlp => PALETTE[1],
            Part::Add => PALETTE[4],
        }
    }
}

/// The steps of the forward pass, as the alt text names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepId {
    Tokens,
    Embed,
    Ln1,
    Qkv,
    Split,
    Scores,
    Softmax,
    Weighted,
    Concat,
    Out,
    Residual1,
    Ln2,
    MlpUp,
    MlpDown,
    Residual2,
    LnF,
    Head,
}

/// One step of the forward pass and the shape of what it produces.
#[derive(Clone, Debug, PartialEq)]
struct Step {
    id: StepId,
    part: Part,
    label: String,
    /// The shape in symbols, e.g. `(b, h, t, d_k)`.
    symbolic: String,
    /// The same shape in this configuration's numbers.
    numeric: String,
    /// Inside the repeated block.
    in_block: bool,
}

/// The sizes a diagram names, from a run's config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sizes {
    b: usize,
    t: usize,
    d: i64,
    h: i64,
    d_k: i64,
    d_mlp: i64,
    vocab: i64,
    layers: i64,
}

impl Sizes {
    fn of(c: &RunConfig) -> Self {
        let m = &c.model;
        Sizes {
            b: c.train.batch_size,
            t: c.trained_width(),
            d: m.d_model,
            h: m.n_heads,
            d_k: m.d_head(),
            d_mlp: m.d_mlp,
            vocab: m.vocab,
            layers: m.n_layers,
        }
    }
}

fn tuple(xs: &[String]) -> String {
    format!("({})", xs.join(", "))
}

/// Every step from tokens to logits, with the block's attention switches in its labels.
fn steps(c: &RunConfig) -> Vec<Step> {
    let s = Sizes::of(c);
    let attn = &c.model.attn;
    let (b, t) = (s.b.to_string(), s.t.to_string());
    let num = |x: i64| x.to_string();
    let shape = |sym: &[&str], num: &[String]| {
        (
            tuple(&sym.iter().map(ToString::to_string).collect::<Vec<_>>()),
            tuple(num),
        )
    };
    let btd = shape(&["b", "t", "d"], &[b.clone(), t.clone(), num(s.d)]);
    let heads = shape(
        &["b", "h", "t", "d_k"],
        &[b.clone(), num(s.h), t.clone(), num(s.d_k)],
    );
    let scores = shape(
        &["b", "h", "t", "t"],
        &[b.clone(), num(s.h), t.clone(), t.clone()],
    );
    let softmax = attn.softmax_label();
    let step = |id, part, label: &str, (symbolic, numeric): (String, String), in_block| Step {
        id,
        part,
        label: label.to_string(),
        symbolic,
        numeric,
        in_block,
    };
    let three = |(sym, num): (String, String)| (format!("3 × {sym}"), format!("3 × {num}"));
    vec![
        step(
            StepId::Tokens, Part::Io,
            "tokens",
            shape(&["b", "t"], &[b.clone(), t.clone()]),
            false,
        ),
        step(StepId::Embed, Part::Io, "tok + pos embeddings", btd.clone(), false),
        step(StepId::Ln1, Part::Norm, "ln1 (LayerNorm)", btd.clone(), true),
        step(
            StepId::Qkv, Part::Attention,
            "qkv (linear)",
            shape(&["b", "t", "3d"], &[b.clone(), t.clone(), num(3 * s.d)]),
            true,
        ),
        step(
            StepId::Split, Part::Attention,
            "split: q, k, v by head",
            three(heads.clone()),
            true,
        ),
        step(StepId::Scores, Part::Attention, attn.scores_label(), scores.clone(), true),
        step(StepId::Softmax, Part::Attention, &softmax, scores, true),
        step(StepId::Weighted, Part::Attention, "weights · v", heads, true),
        step(StepId::Concat, Part::Attention, "concat heads", btd.clone(), true),
        step(StepId::Out, Part::Attention, "out (linear)", btd.clone(), true),
        step(StepId::Residual1, Part::Add, "+ residual", btd.clone(), true),
        step(StepId::Ln2, Part::Norm, "ln2 (LayerNorm)", btd.clone(), true),
        step(
            StepId::MlpUp, Part::Mlp,
            "mlp.up (linear), GELU",
            shape(&["b", "t", "d_mlp"], &[b.clone(), t.clone(), num(s.d_mlp)]),
            true,
        ),
        step(StepId::MlpDown, Part::Mlp, "mlp.down (linear)", btd.clone(), true),
        step(StepId::Residual2, Part::Add, "+ residual", btd.clone(), true),
        step(StepId::LnF, Part::Norm, "ln_f (LayerNorm)", btd, false),
        step(
            StepId::Head, Part::Io,
            "head (linear): logits",
            shape(&["b", "t", "vocab"], &[b, t, num(s.vocab)]),
            false,
        ),
    ]
}

/// Why the batches are `t` tokens wide.
fn width_note(c: &RunConfig, t: usize) -> String {
    let max = c.data.max_len;
    if t == 2 * max + 1 {
        format!("t = {t} tokens: {max} letters, |, {max} reversed")
    } else {
        format!("t = {t} tokens: every position")
    }
}

fn diagram_alt(c: &RunConfig, steps: &[Step]) -> String {
    let s = Sizes::of(c);
    let a = &c.model.attn;
    let at = |id: StepId| {
        let x = steps
            .iter()
            .find(|x| x.id == id)
            .expect("every step the alt text names is drawn");
        format!("{} = {}", x.symbolic, x.numeric)
    };
    format!(
        "Diagram of the model with the tensor shape at every step, for b = {} sequences of \
         t = {} tokens, width d = {}, h = {} heads of width d_k = {}: tokens {} become \
         embeddings {}; each of the {} blocks applies LayerNorm and qkv {}, splits q, k and v \
         by head, each {}, takes scores {} as {}, {}, multiplies the weights by v, \
         concatenates the heads back to {}, applies out and adds the residual; then \
         LayerNorm, the MLP widens to {} and narrows back, and the residual is added again; \
         a final LayerNorm and the head give logits {}.",
        s.b,
        s.t,
        s.d,
        s.h,
        s.d_k,
        at(StepId::Tokens),
        at(StepId::Embed),
        s.layers,
        at(StepId::Qkv),
        at(StepId::Weighted),
        at(StepId::Scores),
        a.scores_words(),
        a.softmax_words(),
        at(StepId::Concat),
        at(StepId::MlpUp),
        at(StepId::Head),
    )
}

/// The y of the top of step `i`'s box: the repeated block has a gap above (for its
/// label) and a smaller one below.
fn row_y(steps: &[Step], i: usize) -> i32 {
    let gaps: i32 = steps[..=i]
        .windows(2)
        .map(|w| match (w[0].in_block, w[1].in_block) {
            (false, true) => FRAME_GAP,
            (true, false) => FRAME_GAP / 2,
            _ => 0,
        })
        .sum();
    TOP + i as i32 * PITCH + gaps
}

fn text(
    root: &Area,
    s: &str,
    at: (i32, i32),
    size: f64,
    h: HPos,
    opacity: f64,
) -> Result<(), String> {
    let ink = BLACK.mix(opacity);
    let style = text_style(size, h, VPos::Center).color(&ink);
    root.draw(&Text::new(s.to_string(), at, style)).map_err(de)
}

/// A downward arrow from `from` to `to` (same x).
fn arrow(root: &Area, x: i32, from: i32, to: i32) -> Result<(), String> {
    let style = BLACK.mix(0.55);
    root.draw(&PathElement::new(
        vec![(x, from), (x, to - 1)],
        style.stroke_width(1),
    ))
    .map_err(de)?;
    root.draw(&Polygon::new(
        vec![(x - 4, to - 5), (x + 4, to - 5), (x, to)],
        style.filled(),
    ))
    .map_err(de)
}

/// The forward pass with the shape of every step: the model's configuration drawn.
/// 720 user units wide; the height follows the number of steps.
fn block_diagram(c: &RunConfig) -> Result<Svg, String> {
    let steps = steps(c);
    let sizes = Sizes::of(c);
    let last = steps.len() - 1;
    let height = row_y(&steps, last) + BOX_H + FOOTER;
    let alt = diagram_alt(c, &steps);
    let mid = i32::midpoint(BOX_X.0, BOX_X.1);
    render((WIDTH as u32, height as u32), alt, |root| {
        // Column heads.
        text(root, "step", (mid, 14), 15.0, HPos::Center, 0.7)?;
        text(root, "shape", (SYM_X, 14), 15.0, HPos::Left, 0.7)?;
        text(root, "this model", (NUM_X, 14), 15.0, HPos::Left, 0.7)?;

        // The repeated block's frame and its label.
        let first_in = steps.iter().position(|s| s.in_block);
        let last_in = steps.iter().rposition(|s| s.in_block);
        if let (Some(a), Some(z)) = (first_in, last_in) {
            let y0 = row_y(&steps, a) - FRAME_GAP + 6;
            let y1 = row_y(&steps, z) + BOX_H + 8;
            root.draw(&Rectangle::new(
                [(SKIP_X - 22, y0), (WIDTH - 8, y1)],
                BLACK.mix(0.35).stroke_width(1),
            ))
            .map_err(de)?;
            let times = format!(
                "one block, repeated {} × (n_layers = {})",
                sizes.layers, sizes.layers
            );
            text(root, &times, (WIDTH - 18, y0 + 12), 15.0, HPos::Right, 0.75)?;
        }

        for (i, s) in steps.iter().enumerate() {
            let y = row_y(&steps, i);
            let color = s.part.color();
            if s.part == Part::Add {
                root.draw(&Rectangle::new(
                    [(BOX_X.0, y), (BOX_X.1, y + BOX_H)],
                    color.stroke_width(2),
                ))
                .map_err(de)?;
            } else {
                root.draw(&Rectangle::new(
                    [(BOX_X.0, y), (BOX_X.1, y + BOX_H)],
                    color.mix(0.18).filled(),
                ))
                .map_err(de)?;
                root.draw(&Rectangle::new(
                    [(BOX_X.0, y), (BOX_X.1, y + BOX_H)],
                    color.stroke_width(1),
                ))
                .map_err(de)?;
            }
            let cy = y + BOX_H / 2;
            text(root, &s.label, (mid, cy), FONT_SIZE, HPos::Center, 1.0)?;
            text(root, &s.symbolic, (SYM_X, cy), FONT_SIZE, HPos::Left, 1.0)?;
            // Long numbers shrink to stay inside the figure.
            let fit = FONT_SIZE.min(FONT_SIZE * 19.0 / s.numeric.chars().count() as f64);
            text(root, &s.numeric, (NUM_X, cy), fit, HPos::Left, 0.8)?;
            if i < last {
                arrow(root, mid, y + BOX_H, row_y(&steps, i + 1))?;
            }
        }

        // Residual connections: from the stream a sublayer starts at, around it, into the
        // addition that ends it.
        let mut start = None;
        for (i, s) in steps.iter().enumerate() {
            if s.part == Part::Norm && s.in_block {
                start = Some(i);
            }
            if s.part != Part::Add {
                continue;
            }
            if let Some(a) = start.take() {
                let color = Part::Add.color();
                let y0 = row_y(&steps, a) - (PITCH - BOX_H) / 2;
                let y1 = row_y(&steps, i) + BOX_H / 2;
                let path = vec![(mid, y0), (SKIP_X, y0), (SKIP_X, y1), (BOX_X.0 - 1, y1)];
                root.draw(&PathElement::new(path, color.stroke_width(2)))
                    .map_err(de)?;
                root.draw(&Polygon::new(
                    vec![(BOX_X.0 - 7, y1 - 5), (BOX_X.0 - 7, y1 + 5), (BOX_X.0, y1)],
                    color.filled(),
                ))
                .map_err(de)?;
            }
        }

        // What the symbols stand for.
        let y = row_y(&steps, last) + BOX_H + 22;
        let line1 = format!(
            "b = {} sequences per batch · {}",
            sizes.b,
            width_note(c, sizes.t)
        );
        let line2 = format!(
            "d = {} · h = {} heads · d_k = d / h = {} · d_mlp = {} · vocab = {}",
            sizes.d, sizes.h, sizes.d_k, sizes.d_mlp, sizes.vocab
        );
        text(root, &line1, (WIDTH / 2, y), 16.0, HPos::Center, 0.8)?;
        text(root, &line2, (WIDTH / 2, y + 22), 16.0, HPos::Center, 0.8)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::assert_themed;
    use super::*;

    #[test]
    fn the_reference_model_with_its_numbers() {
        let c = RunConfig::reference();
        let svg = block_diagram(&c).unwrap();
        let height = svg.height;
        assert_themed(&svg, (720, height));
        for s in [
            "(64, 17)",
            "(64, 17, 64)",
            "(64, 17, 192)",
            "3 × (64, 2, 17, 32)",
            "(64, 2, 17, 17)",
            "(64, 17, 256)",
            "(64, 17, 12)",
            "(b, h, t, d_k)",
            "(b, t, d_mlp)",
            "q·kᵀ / √d_k",
            "mask, softmax over keys",
            "one block, repeated 2 × (n_layers = 2)",
            "t = 17 tokens: 8 letters, |, 8 reversed",
            "d = 64 · h = 2 heads · d_k = d / h = 32 · d_mlp = 256 · vocab = 12",
        ] {
            assert!(
                svg.body.contains(&format!("\n{s}\n")) || svg.body.contains(s),
                "missing {s}"
            );
        }
        assert!(
            svg.alt.starts_with(
                "Diagram of the model with the tensor shape at every step, for b = 64 sequences \
                 of t = 17 tokens, width d = 64, h = 2 heads of width d_k = 32: tokens (b, t) = \
                 (64, 17) become embeddings (b, t, d) = (64, 17, 64); each of the 2 blocks"
            ),
            "{}",
            svg.alt
        );
        assert!(
            svg.alt.contains("logits (b, t, vocab) = (64, 17, 12)."),
            "{}",
            svg.alt
        );
        // Two residual connections, each a path with an arrowhead.
        assert_eq!(
            svg.body.matches("<polyline").count(),
            16 + 2,
            "arrows and skips"
        );
    }

    /// The diagram is the config's: another width, head count, depth and length change it.
    #[test]
    fn another_config_draws_another_diagram() {
        let mut c = RunConfig::reference();
        c.model.d_model = 96;
        c.model.n_heads = 3;
        c.model.n_layers = 4;
        c.model.d_mlp = 384;
        c.data.max_len = 10;
        c.train.batch_size = 32;
        c.model.attn.scale = false;
        let svg = block_diagram(&c).unwrap();
        for s in [
            "(32, 21, 96)",
            "(32, 21, 288)",
            "3 × (32, 3, 21, 32)",
            "(32, 3, 21, 21)",
            "(32, 21, 384)",
            "one block, repeated 4 × (n_layers = 4)",
            "q·kᵀ (not divided)",
        ] {
            assert!(svg.body.contains(s), "missing {s}");
        }
        assert!(!svg.body.contains("(64, 17, 64)"));
        assert_ne!(svg, block_diagram(&RunConfig::reference()).unwrap());

        // Without the mask the batches run every position.
        let mut open = RunConfig::reference();
        open.model.attn.causal = false;
        let svg = block_diagram(&open).unwrap();
        assert!(svg.body.contains("(64, 2, 25, 25)"));
        assert!(svg.body.contains("t = 25 tokens: every position"));
        assert!(svg.body.contains("no mask, softmax over keys"));
    }
}
