//! The reversal transformer, top to bottom: attention → MLP → block → model. Each choice
//! of the config is a small type (`PositionEncoding`, `NormPlacement`, `Activation`), and
//! the positions live in `position`.
//!
//! The model's configuration types live in `revtx_spec::config`; its kernels in `kernels`
//! (Rust) and `kernels/` (C++).
//!
//! Structs are built with `new(vs, &Config)` and applied with `forward`; VarStore paths
//! name the parts (`blocks.0.attn.qkv.weight`, ...), which is also how the trained weights
//! are laid out in the saved safetensors file.

pub mod attention;
pub mod kernels;
pub mod norm;
pub mod position;

pub use crate::config::{
    Activation, AttnOptions, ModelConfig, NormPlacement, PositionEncoding, SoftmaxAxis,
};
pub use attention::attention;
use norm::Norm;
use position::{Positions, Rope};
use std::sync::Mutex;
use tch::{nn, nn::Module, Tensor};

/// libtorch's random generator is global to the process; anything that seeds it and then
/// draws from it (weight initialisation, tests) holds this lock so runs stay reproducible.
pub static TORCH_RNG: Mutex<()> = Mutex::new(());

/// A linear layer, `x @ w^T + b` (see `kernels::linear`).
#[derive(Debug)]
pub struct Linear {
    pub ws: Tensor,
    pub bs: Tensor,
}

impl Linear {
    pub fn from_parts(ws: Tensor, bs: Tensor) -> Self {
        Linear { ws, bs }
    }
}

impl Module for Linear {
    fn forward(&self, x: &Tensor) -> Tensor {
        kernels::linear(x, &self.ws, &self.bs)
    }
}

/// Layer norm over the last axis with a learned scale and shift (see `kernels::layer_norm`).
#[derive(Debug)]
pub struct LayerNorm {
    pub ws: Tensor,
    pub bs: Tensor,
}

/// Layer norm's epsilon, PyTorch's default.
const LN_EPS: f64 = 1e-5;

impl Module for LayerNorm {
    fn forward(&self, x: &Tensor) -> Tensor {
        kernels::layer_norm(x, &self.ws, &self.bs, LN_EPS)
    }
}

/// A layer norm initialised as PyTorch's `nn.LayerNorm` is: scale one, shift zero.
pub(crate) fn layer_norm(vs: nn::Path, d: i64) -> LayerNorm {
    let ln = nn::layer_norm(vs, vec![d], Default::default());
    LayerNorm {
        ws: ln.ws.expect("created with a scale"),
        bs: ln.bs.expect("created with a shift"),
    }
}

/// A linear layer initialised as PyTorch's `nn.Linear` is: weights and biases uniform in
/// ±1/√in. (tch's default draws weights from ±√(6/in), 2.4 times wider, which would make
/// the untrained model confidently wrong instead of evenly unsure.)
fn linear(vs: nn::Path, in_dim: i64, out_dim: i64) -> Linear {
    let bound = 1.0 / (in_dim as f64).sqrt();
    let init = nn::Init::Uniform {
        lo: -bound,
        up: bound,
    };
    let l = nn::linear(
        vs,
        in_dim,
        out_dim,
        nn::LinearConfig {
            ws_init: init,
            bs_init: Some(init),
            bias: true,
        },
    );
    Linear::from_parts(l.ws, l.bs.expect("created with a bias"))
}

/// Multi-head causal self-attention: one Linear makes q, k and v, one mixes the heads.
/// Under rotary positions, queries and keys are turned by position before the scores.
#[derive(Debug)]
pub struct MultiHeadAttention {
    qkv: Linear,
    out: Linear,
    n_heads: i64,
    opts: AttnOptions,
    rope: Option<Rope>,
    /// ALiBi's biases `(heads, positions, positions)`.
    alibi: Option<Tensor>,
}

impl MultiHeadAttention {
    pub fn new(vs: nn::Path, cfg: &ModelConfig) -> Self {
        let d = cfg.d_model;
        MultiHeadAttention {
            qkv: linear(&vs / "qkv", d, 3 * d),
            out: linear(&vs / "out", d, d),
            n_heads: cfg.n_heads,
            opts: cfg.attn,
            rope: (cfg.position_encoding == PositionEncoding::Rope)
                .then(|| Rope::new(cfg.positions, cfg.d_head())),
            alibi: (cfg.position_encoding == PositionEncoding::Alibi)
                .then(|| position::alibi_bias(cfg.n_heads, cfg.positions)),
        }
    }

    /// q, k and v side by side, `(batch, tokens, 3·d_model)`, queries and keys rotated
    /// under rotary positions.
    fn project(&self, x: &Tensor) -> Tensor {
        let qkv = self.qkv.forward(x);
        match &self.rope {
            Some(rope) => rope.rotate_qkv(&qkv, self.n_heads),
            None => qkv,
        }
    }

    /// `x: (batch, tokens, d_model)` → output of the same shape, and weights
    /// `(batch, heads, tokens, tokens)`. Under the portable profile the heads run in one
    /// fused kernel (`kernels::attention`), which a test holds to `reference`.
    pub fn forward(&self, x: &Tensor) -> (Tensor, Tensor) {
        if let Some(bias) = &self.alibi {
            return self.biased(x, bias);
        }
        if kernels::fused() {
            let (y, w) = kernels::attention(&self.project(x), self.n_heads, self.opts);
            return (self.out.forward(&y), w); // y: (batch, tokens, d_model), heads side by side
        }
        self.reference(x)
    }

    /// The same computation spelled out in libtorch operations: what the fused kernel
    /// computes, and what the native profile runs.
    // ANCHOR: heads
    pub fn reference(&self, x: &Tensor) -> (Tensor, Tensor) {
        let (b, t, d) = x.size3().unwrap();
        let (h, d_k) = (self.n_heads, d / self.n_heads);
        let qkv = self.project(x).split(d, -1); // 3 × (batch, tokens, d_model): one matmul makes all three
        let heads = |z: &Tensor| z.view([b, t, h, d_k]).transpose(1, 2); // (batch, heads, tokens, d_k)
        let (q, k, v) = (heads(&qkv[0]), heads(&qkv[1]), heads(&qkv[2]));
        let (y, w) = attention(&q, &k, &v, self.opts); // every head at once: heads act as batch entries
        let y = y.transpose(1, 2).reshape([b, t, d]); // (batch, tokens, d_model): heads side by side again
        (self.out.forward(&y), w)
    }
    // ANCHOR_END: heads

    /// `reference` with ALiBi's biases on the scores.
    fn biased(&self, x: &Tensor, bias: &Tensor) -> (Tensor, Tensor) {
        let (b, t, d) = x.size3().unwrap();
        let (h, d_k) = (self.n_heads, d / self.n_heads);
        let qkv = self.project(x).split(d, -1);
        let heads = |z: &Tensor| z.view([b, t, h, d_k]).transpose(1, 2); // (batch, heads, tokens, d_k)
        let (q, k, v) = (heads(&qkv[0]), heads(&qkv[1]), heads(&qkv[2]));
        let bias = bias.narrow(1, 0, t).narrow(2, 0, t);
        let (y, w) = attention::biased_attention(&q, &k, &v, &bias, self.opts);
        let y = y.transpose(1, 2).reshape([b, t, d]);
        (self.out.forward(&y), w)
    }

    /// The raw scores `q · k` of every head, before any division: `(batch, heads, t, t)`.
    pub fn raw_scores(&self, x: &Tensor) -> Tensor {
        let (b, t, d) = x.size3().unwrap();
        let (h, d_k) = (self.n_heads, d / self.n_heads);
        let qkv = self.project(x).split(d, -1);
        let heads = |z: &Tensor| z.view([b, t, h, d_k]).transpose(1, 2); // (batch, heads, tokens, d_k)
        kernels::matmul(&heads(&qkv[0]), &heads(&qkv[1]).transpose(-2, -1))
    }
}

/// The position-wise feed-forward network: d_model → d_mlp → d_model, GELU or ReLU between.
#[derive(Debug)]
pub struct Mlp {
    up: Linear,
    down: Linear,
    activation: Activation,
}

impl Mlp {
    pub fn new(vs: nn::Path, cfg: &ModelConfig) -> Self {
        Mlp {
            up: linear(&vs / "up", cfg.d_model, cfg.d_mlp),
            down: linear(&vs / "down", cfg.d_mlp, cfg.d_model),
            activation: cfg.activation,
        }
    }

    pub fn forward(&self, x: &Tensor) -> Tensor {
        if kernels::fused() && self.activation == Activation::Gelu {
            // The same three operations in one node (a test holds it to the line below).
            let (up, down) = (&self.up, &self.down);
            return kernels::mlp(x, &up.ws, &up.bs, &down.ws, &down.bs);
        }
        let hidden = kernels::activation(self.activation, &self.up.forward(x));
        self.down.forward(&hidden)
    }
}

/// A block: attention, then the MLP, each added to the residual stream, with layer norms
/// where `NormPlacement` puts them (the chapter's: before each sublayer).
#[derive(Debug)]
pub struct Block {
    attn: MultiHeadAttention,
    mlp: Mlp,
    norms: Norms,
}

/// A block's two layer norms (`ln1`, `ln2`), by where they sit.
#[derive(Debug)]
enum Norms {
    Pre(Norm, Norm),
    Post(Norm, Norm),
    None,
}

impl Block {
    pub fn new(vs: nn::Path, cfg: &ModelConfig) -> Self {
        // Created in this order (ln1, attn, ln2, mlp) so the generator draws the
        // chapter's weights in the chapter's order.
        let ln1 = (cfg.norm != NormPlacement::None).then(|| norm::new(&vs / "ln1", cfg));
        let attn = MultiHeadAttention::new(&vs / "attn", cfg);
        let ln2 = (cfg.norm != NormPlacement::None).then(|| norm::new(&vs / "ln2", cfg));
        let mlp = Mlp::new(&vs / "mlp", cfg);
        let norms = match (cfg.norm, ln1, ln2) {
            (NormPlacement::Pre, Some(a), Some(b)) => Norms::Pre(a, b),
            (NormPlacement::Post, Some(a), Some(b)) => Norms::Post(a, b),
            _ => Norms::None,
        };
        Block { attn, mlp, norms }
    }

    /// What attention reads: the normalised stream under pre-norm, the stream otherwise.
    fn attn_input(&self, x: &Tensor) -> Tensor {
        match &self.norms {
            Norms::Pre(ln1, _) => ln1.forward(x),
            Norms::Post(..) | Norms::None => x.shallow_clone(),
        }
    }

    pub fn forward(&self, x: &Tensor) -> (Tensor, Tensor) {
        match &self.norms {
            Norms::Pre(ln1, ln2) => self.pre_norm(x, ln1, ln2),
            // The original transformer's: normalise after each addition.
            Norms::Post(ln1, ln2) => {
                let (a, weights) = self.attn.forward(x);
                let x = ln1.forward(&(x + a));
                let x = ln2.forward(&(&x + self.mlp.forward(&x)));
                (x, weights)
            }
            Norms::None => {
                let (a, weights) = self.attn.forward(x);
                let x = x + a;
                let x = &x + self.mlp.forward(&x);
                (x, weights)
            }
        }
    }

    // ANCHOR: block
    /// The pre-norm block: `x + attn(ln1(x))`, then `x + mlp(ln2(x))`.
    fn pre_norm(&self, x: &Tensor, ln1: &Norm, ln2: &Norm) -> (Tensor, Tensor) {
        let (a, weights) = self.attn.forward(&ln1.forward(x));
        let x = x + a;
        let x = &x + self.mlp.forward(&ln2.forward(&x));
        (x, weights)
    }
    // ANCHOR_END: block
}

/// Token embeddings and positions, the blocks, a final LayerNorm (under pre-norm) and an
/// untied head.
#[derive(Debug)]
pub struct Transformer {
    pub tok: nn::Embedding,
    pub pos: Positions,
    blocks: Vec<Block>,
    ln_f: Option<Norm>,
    head: Linear,
}

impl Transformer {
    pub fn new(vs: nn::Path, cfg: &ModelConfig) -> Self {
        let emb = Default::default();
        Transformer {
            tok: nn::embedding(&vs / "tok", cfg.vocab, cfg.d_model, emb),
            pos: Positions::new(vs.clone(), cfg),
            blocks: (0..cfg.n_layers)
                .map(|i| Block::new(&vs / "blocks" / i, cfg))
                .collect(),
            ln_f: (cfg.norm == NormPlacement::Pre).then(|| norm::new(&vs / "ln_f", cfg)),
            head: linear(&vs / "head", cfg.d_model, cfg.vocab),
        }
    }

    /// The tokens of `idx: (batch, tokens)` as vectors, with their positions added.
    fn embed(&self, idx: &Tensor) -> Tensor {
        self.pos.add(self.tok.forward(idx)) // (batch, tokens, d_model)
    }

    /// Each block's raw attention scores and weights for `idx` (see `raw_scores`).
    pub fn raw_scores(&self, idx: &Tensor) -> (Vec<Tensor>, Vec<Tensor>) {
        let mut x = self.embed(idx);
        let (mut scores, mut weights) = (Vec::new(), Vec::new());
        for block in &self.blocks {
            scores.push(block.attn.raw_scores(&block.attn_input(&x)));
            let (y, w) = block.forward(&x);
            x = y;
            weights.push(w);
        }
        (scores, weights)
    }

    /// `idx: (batch, tokens)` of token ids → logits `(batch, tokens, vocab)` and each
    /// block's attention weights `(batch, heads, tokens, tokens)`.
    pub fn forward(&self, idx: &Tensor) -> (Tensor, Vec<Tensor>) {
        let mut x = self.embed(idx);
        let mut weights = Vec::with_capacity(self.blocks.len());
        for block in &self.blocks {
            let (y, w) = block.forward(&x);
            x = y;
            weights.push(w);
        }
        let x = match &self.ln_f {
            Some(ln_f) => ln_f.forward(&x),
            None => x,
        };
        (self.head.forward(&x), weights)
    }
}

/// Builds a freshly initialised model from `seed`, holding the libtorch RNG lock.
pub fn init(cfg: &ModelConfig, seed: u64) -> (nn::VarStore, Transformer) {
    let _guard = TORCH_RNG.lock().unwrap_or_else(|e| e.into_inner());
    tch::manual_seed(seed as i64);
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let model = Transformer::new(vs.root(), cfg);
    (vs, model)
}

pub fn parameter_count(vs: &nn::VarStore) -> i64 {
    vs.trainable_variables()
        .iter()
        .map(|t| t.numel() as i64)
        .sum()
}
