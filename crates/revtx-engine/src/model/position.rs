//! How a token learns where it is (`PositionEncoding`): a trained table, a fixed table of
//! sines and cosines, a rotation of each head's queries and keys, biases on the scores,
//! or nothing.
//!
//! The fixed tables are computed once per model from `trig`'s portable sines and cosines,
//! rounded to float32, so every machine builds the same bits; applying them is additions
//! and multiplications, each rounded once.

use crate::config::{ModelConfig, PositionEncoding};
use crate::trig::{frequency, sin_cos};
use tch::{nn, nn::Module, Kind, Tensor};

/// The position part of the model, by kind.
#[derive(Debug)]
pub enum Positions {
    /// A trained vector per position (`pos`, `(positions, d_model)`).
    Learned(nn::Embedding),
    /// The sinusoidal table, fixed: `(positions, d_model)`, not trained.
    Sinusoidal(Tensor),
    /// Rotary or ALiBi: applied inside attention (each block holds its tables), nothing
    /// here.
    InAttention,
    /// Nothing.
    None,
}

impl Positions {
    /// The position part of `cfg`; a learned table is drawn from libtorch's generator at
    /// `vs / "pos"`, the others draw nothing.
    pub fn new(vs: nn::Path, cfg: &ModelConfig) -> Self {
        match cfg.position_encoding {
            PositionEncoding::Learned => Positions::Learned(nn::embedding(
                vs / "pos",
                cfg.positions,
                cfg.d_model,
                Default::default(),
            )),
            PositionEncoding::Sinusoidal => {
                Positions::Sinusoidal(sinusoidal_table(cfg.positions, cfg.d_model))
            }
            PositionEncoding::Rope | PositionEncoding::Alibi => Positions::InAttention,
            PositionEncoding::None => Positions::None,
        }
    }

    /// The token vectors `x: (batch, t, d_model)` with each position's vector added.
    pub fn add(&self, x: Tensor) -> Tensor {
        let t = x.size()[1];
        match self {
            Positions::Learned(table) => {
                let positions = Tensor::arange(t, (Kind::Int64, x.device()));
                x + table.forward(&positions)
            }
            Positions::Sinusoidal(table) => x + table.narrow(0, 0, t),
            Positions::InAttention | Positions::None => x,
        }
    }

    /// The trained table, if there is one.
    pub fn learned(&self) -> Option<&Tensor> {
        match self {
            Positions::Learned(table) => Some(&table.ws),
            _ => None,
        }
    }
}

/// Vaswani et al.'s table: row `p`, columns `2i` and `2i + 1` hold `sin(p·ωᵢ)` and
/// `cos(p·ωᵢ)` with `ωᵢ = 10000^(-2i/d)`. `d` is even (checked at plan time).
pub fn sinusoidal_table(rows: i64, d: i64) -> Tensor {
    let mut v = Vec::with_capacity((rows * d) as usize);
    for p in 0..rows {
        for c in 0..d {
            #[allow(clippy::cast_precision_loss, reason = "small positions")]
            let (s, co) = sin_cos(p as f64 * frequency(c / 2, d));
            v.push(if c % 2 == 0 { s } else { co } as f32);
        }
    }
    Tensor::from_slice(&v).view([rows, d])
}

/// Su et al.'s rotation, in the "rotate half" layout: dimension `i` of a head's first half
/// pairs with dimension `i + d_k/2`, and the pair turns by `p·ωᵢ` at position `p`.
#[derive(Debug)]
pub struct Rope {
    /// `(positions, d_k)`: `cos(p·ωᵢ)` in columns `i` and `i + d_k/2`.
    cos: Tensor,
    /// The same with sines.
    sin: Tensor,
}

impl Rope {
    pub fn new(rows: i64, d_k: i64) -> Self {
        let half = d_k / 2;
        let (mut c, mut s) = (Vec::new(), Vec::new());
        for p in 0..rows {
            for col in 0..d_k {
                #[allow(clippy::cast_precision_loss, reason = "small positions")]
                let (sn, cs) = sin_cos(p as f64 * frequency(col % half, d_k));
                c.push(cs as f32);
                s.push(sn as f32);
            }
        }
        Rope {
            cos: Tensor::from_slice(&c).view([rows, d_k]),
            sin: Tensor::from_slice(&s).view([rows, d_k]),
        }
    }

    // ANCHOR: rope
    /// Rotates `x: (batch, t, heads, d_k)`: `x·cos + rotate_half(x)·sin`, where
    /// `rotate_half([a, b]) = [-b, a]`. Each product and the sum are rounded once.
    pub fn rotate(&self, x: &Tensor) -> Tensor {
        let (t, d_k) = (x.size()[1], x.size()[3]);
        let half = d_k / 2;
        let cos = self.cos.narrow(0, 0, t).view([1, t, 1, d_k]);
        let sin = self.sin.narrow(0, 0, t).view([1, t, 1, d_k]);
        let turned = Tensor::cat(&[-x.narrow(3, half, half), x.narrow(3, 0, half)], 3);
        x * cos + turned * sin
    }
    // ANCHOR_END: rope

    /// Rotates the query and key thirds of a fused projection `qkv: (batch, t, 3·d)` with
    /// `heads` heads side by side in each third; the values pass unchanged.
    pub fn rotate_qkv(&self, qkv: &Tensor, heads: i64) -> Tensor {
        let (b, t, three_d) = qkv.size3().expect("qkv is (batch, tokens, 3·d_model)");
        let d = three_d / 3;
        let part = |i: i64| qkv.narrow(2, i * d, d).view([b, t, heads, d / heads]);
        let q = self.rotate(&part(0)).view([b, t, d]);
        let k = self.rotate(&part(1)).view([b, t, d]);
        Tensor::cat(&[q, k, qkv.narrow(2, 2 * d, d)], 2)
    }
}

/// ALiBi's slope of head `h` (from 1) of `heads`: `2^(-8h/heads)` by `trig::exp2`, so an
/// exact power of two whenever `8h/heads` is a whole number.
pub fn alibi_slope(h: i64, heads: i64) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "small head counts")]
    crate::trig::exp2(-8.0 * h as f64 / heads as f64)
}

/// Press et al.'s biases, `(heads, rows, rows)`: `-m_h·|i - j|` for query `i` and key `j`.
/// Under the causal mask only `j ≤ i` is ever seen; without it the bias is symmetric.
pub fn alibi_bias(heads: i64, rows: i64) -> Tensor {
    let mut v = Vec::with_capacity((heads * rows * rows) as usize);
    for h in 1..=heads {
        let m = alibi_slope(h, heads);
        for i in 0..rows {
            for j in 0..rows {
                #[allow(clippy::cast_precision_loss, reason = "small positions")]
                v.push((-m * (i - j).abs() as f64) as f32);
            }
        }
    }
    Tensor::from_slice(&v).view([heads, rows, rows])
}
