//! The trained model with its parts open: the engine's forward pass, composed again from
//! the engine's own kernels and the trained weights, with a hook where each component's
//! output is formed (the residual stream entering a block, each head's output before the
//! block's output projection, each MLP's output). Patching replaces one of them; a place
//! corruption (`forward_at`) also moves which row of the position table a token gets.
//!
//! Nothing here computes anything the engine does not: every operation is the engine's
//! (`revtx_engine::model::kernels`, `Rope`, the norms), called in the engine's order, so the
//! logits are the engine's to the bit; `patch::run` checks that on every string before it
//! patches anything, and fails otherwise.

use anyhow::{Context, Result};
use revtx_engine::config::NormKind;
use revtx_engine::model::{
    self, kernels, norm, position, Activation, LayerNorm, Linear, ModelConfig, NormPlacement,
    PositionEncoding, Transformer,
};
use std::collections::HashMap;
use tch::{nn::Module, Tensor};

/// A component whose output a hook sees: `Resid(b)` the stream entering block `b`,
/// `Heads(b)` block `b`'s heads side by side before its output projection
/// `(batch, tokens, d_model)`, `Attn(b)` the attention sublayer's output (after that
/// projection), `Mlp(b)` block `b`'s MLP output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Resid(usize),
    Heads(usize),
    Attn(usize),
    Mlp(usize),
}

/// One block's parts, as the engine's `Block` holds them.
struct Block {
    ln1: Option<norm::Norm>,
    qkv: Linear,
    out: Linear,
    ln2: Option<norm::Norm>,
    up: Linear,
    down: Linear,
}

/// The open model. `engine` is the engine's own, for the embeddings and the check.
pub struct Open<'m> {
    engine: &'m Transformer,
    cfg: ModelConfig,
    blocks: Vec<Block>,
    ln_f: Option<norm::Norm>,
    head: Linear,
    rope: Option<position::Rope>,
    alibi: Option<Tensor>,
}

impl<'m> Open<'m> {
    /// The parts of `engine` (whose trained weights `vars` holds, by `VarStore` name).
    pub fn new<S: std::hash::BuildHasher>(
        engine: &'m Transformer,
        vars: &HashMap<String, Tensor, S>,
        cfg: &ModelConfig,
    ) -> Result<Self> {
        let var = |name: String| -> Result<Tensor> {
            vars.get(&name)
                .map(Tensor::shallow_clone)
                .with_context(|| format!("the trained model has no `{name}`"))
        };
        let linear = |at: &str| -> Result<Linear> {
            Ok(Linear::from_parts(
                var(format!("{at}.weight"))?,
                var(format!("{at}.bias"))?,
            ))
        };
        let norm = |at: &str| -> Result<norm::Norm> {
            Ok(match cfg.norm_kind {
                NormKind::Layer => norm::Norm::Layer(LayerNorm {
                    ws: var(format!("{at}.weight"))?,
                    bs: var(format!("{at}.bias"))?,
                }),
                NormKind::Rms => norm::Norm::Rms(norm::RmsNorm {
                    ws: var(format!("{at}.weight"))?,
                }),
            })
        };
        let normed = cfg.norm != NormPlacement::None;
        let mut blocks = Vec::new();
        for b in 0..cfg.n_layers {
            let at = format!("blocks.{b}");
            blocks.push(Block {
                ln1: normed.then(|| norm(&format!("{at}.ln1"))).transpose()?,
                qkv: linear(&format!("{at}.attn.qkv"))?,
                out: linear(&format!("{at}.attn.out"))?,
                ln2: normed.then(|| norm(&format!("{at}.ln2"))).transpose()?,
                up: linear(&format!("{at}.mlp.up"))?,
                down: linear(&format!("{at}.mlp.down"))?,
            });
        }
        Ok(Open {
            engine,
            cfg: cfg.clone(),
            blocks,
            ln_f: (cfg.norm == NormPlacement::Pre)
                .then(|| norm("ln_f"))
                .transpose()?,
            head: linear("head")?,
            rope: (cfg.position_encoding == PositionEncoding::Rope)
                .then(|| position::Rope::new(cfg.positions, cfg.d_head())),
            alibi: (cfg.position_encoding == PositionEncoding::Alibi)
                .then(|| position::alibi_bias(cfg.n_heads, cfg.positions)),
        })
    }

    /// The logits of `idx: (batch, tokens)`, each component's output passed through
    /// `hook(site, output)` (which returns it, or what replaces it).
    pub fn forward(&self, idx: &Tensor, hook: &mut dyn FnMut(Site, Tensor) -> Tensor) -> Tensor {
        self.forward_at(idx, None, hook)
    }

    /// `forward`, with each token given the position signal of `places[i]` instead of its
    /// own position `i` (`places: (tokens,)`), for a model whose positions are rows of a
    /// table added to the tokens; `None` is the engine's own addition. The rows are the
    /// engine's table's, copied, and added as the engine adds them, so `places` in order
    /// gives the engine's logits to the bit (a unit test holds it).
    ///
    /// # Panics
    /// With `places`, if the model's positions are not a table (a plan-time error first).
    pub fn forward_at(
        &self,
        idx: &Tensor,
        places: Option<&Tensor>,
        hook: &mut dyn FnMut(Site, Tensor) -> Tensor,
    ) -> Tensor {
        let tokens = self.engine.tok.forward(idx);
        let mut x = match places {
            None => self.engine.pos.add(tokens),
            Some(places) => match &self.engine.pos {
                position::Positions::Learned(table) => tokens + table.ws.index_select(0, places),
                position::Positions::Sinusoidal(table) => tokens + table.index_select(0, places),
                _ => panic!("the model's positions are not a table: no place to swap"),
            },
        };
        for (b, block) in self.blocks.iter().enumerate() {
            x = hook(Site::Resid(b), x);
            x = self.block(b, block, &x, hook);
        }
        let x = match &self.ln_f {
            Some(ln_f) => ln_f.forward(&x),
            None => x,
        };
        self.head.forward(&x)
    }

    /// `Block::forward`, in each placement.
    #[allow(
        clippy::many_single_char_names,
        reason = "the engine's names: block b, stream x, MLP output m"
    )]
    fn block(
        &self,
        b: usize,
        block: &Block,
        x: &Tensor,
        hook: &mut dyn FnMut(Site, Tensor) -> Tensor,
    ) -> Tensor {
        match (self.cfg.norm, &block.ln1, &block.ln2) {
            (NormPlacement::Pre, Some(ln1), Some(ln2)) => {
                let x = x + self.attention(b, block, &ln1.forward(x), hook);
                let m = hook(Site::Mlp(b), self.mlp(block, &ln2.forward(&x)));
                &x + m
            }
            (NormPlacement::Post, Some(ln1), Some(ln2)) => {
                let x = ln1.forward(&(x + self.attention(b, block, x, hook)));
                let m = hook(Site::Mlp(b), self.mlp(block, &x));
                ln2.forward(&(&x + m))
            }
            _ => {
                let x = x + self.attention(b, block, x, hook);
                let m = hook(Site::Mlp(b), self.mlp(block, &x));
                &x + m
            }
        }
    }

    /// `MultiHeadAttention::forward`: the fused kernel under the portable profile, the
    /// reference operations otherwise, `ALiBi`'s biased path always; the heads' outputs
    /// pass the hook before the output projection.
    #[allow(
        clippy::many_single_char_names,
        reason = "the engine's names: batch b, tokens t, width d, heads h, q, k and v"
    )]
    fn attention(
        &self,
        b: usize,
        block: &Block,
        x: &Tensor,
        hook: &mut dyn FnMut(Site, Tensor) -> Tensor,
    ) -> Tensor {
        let h = self.cfg.n_heads;
        let qkv = block.qkv.forward(x);
        let qkv = match &self.rope {
            Some(rope) => rope.rotate_qkv(&qkv, h),
            None => qkv,
        };
        let y = if self.alibi.is_none() && kernels::fused() {
            kernels::attention(&qkv, h, self.cfg.attn).0
        } else {
            let (bs, t, d) = x.size3().expect("(batch, tokens, d_model)");
            let d_k = d / h;
            let parts = qkv.split(d, -1);
            let heads = |z: &Tensor| z.view([bs, t, h, d_k]).transpose(1, 2);
            let (q, k, v) = (heads(&parts[0]), heads(&parts[1]), heads(&parts[2]));
            let y = match &self.alibi {
                Some(bias) => {
                    let bias = bias.narrow(1, 0, t).narrow(2, 0, t);
                    model::attention::biased_attention(&q, &k, &v, &bias, self.cfg.attn).0
                }
                None => model::attention(&q, &k, &v, self.cfg.attn).0,
            };
            y.transpose(1, 2).reshape([bs, t, d])
        };
        let y = hook(Site::Heads(b), y);
        hook(Site::Attn(b), block.out.forward(&y))
    }

    /// `Mlp::forward`.
    fn mlp(&self, block: &Block, x: &Tensor) -> Tensor {
        if kernels::fused() && self.cfg.activation == Activation::Gelu {
            let (up, down) = (&block.up, &block.down);
            return kernels::mlp(x, &up.ws, &up.bs, &down.ws, &down.bs);
        }
        let hidden = kernels::activation(self.cfg.activation, &block.up.forward(x));
        block.down.forward(&hidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use revtx_engine::experiments::RunConfig;

    /// Every token given its own place is the engine's forward pass, to the bit, for a
    /// learned table and for sinusoids; a swap of two places changes the logits.
    #[test]
    fn places_in_order_are_the_engines_positions() {
        for encoding in [PositionEncoding::Learned, PositionEncoding::Sinusoidal] {
            let mut cfg = RunConfig::reference();
            cfg.model.position_encoding = encoding;
            let (vs, engine) = model::init(&cfg.model, 7);
            let vars = vs.variables();
            let open = Open::new(&engine, &vars, &cfg.model).unwrap();
            let x = Tensor::from_slice(&[1i64, 2, 3, 4, 5, 0, 5, 4, 3, 2, 1]).view([1, 11]);
            let mut places: Vec<i64> = (0..11).collect();
            let ordered = Tensor::from_slice(&places);
            tch::no_grad(|| {
                let want = engine.forward(&x).0;
                assert!(open
                    .forward_at(&x, Some(&ordered), &mut |_, t| t)
                    .equal(&want));
                places.swap(2, 3);
                let swapped = Tensor::from_slice(&places);
                let moved = open.forward_at(&x, Some(&swapped), &mut |_, t| t);
                assert!(!moved.equal(&want), "{encoding:?}");
                // Before the swap the two passes are the same tokens at the same places.
                assert!(moved.narrow(1, 0, 2).equal(&want.narrow(1, 0, 2)));
            });
        }
    }
}
