//! Configuration of the model and of its attention: plain serde types, shared by the
//! engine (which builds the model from them) and the book compiler (which reads them from
//! run results), so neither needs the other's dependencies.

use serde::{Deserialize, Serialize};

/// Which axis the softmax normalises over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SoftmaxAxis {
    /// Over keys (the last axis): every row of weights sums to one. Correct.
    Keys,
    /// Over queries (the second-last axis): the fault that leaks later tokens.
    Queries,
}

/// The switches of `attention`. The correct setting is `AttnOptions::default()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttnOptions {
    /// Divide scores by √d_k, the head dimension.
    pub scale: bool,
    /// The axis the softmax normalises over.
    pub softmax: SoftmaxAxis,
    /// Hide later keys from each query.
    pub causal: bool,
}

impl Default for AttnOptions {
    fn default() -> Self {
        AttnOptions {
            scale: true,
            softmax: SoftmaxAxis::Keys,
            causal: true,
        }
    }
}

/// Shape of the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Tokens in the vocabulary: ten letters, the separator and the pad.
    pub vocab: i64,
    /// Rows of the learned position table: the longest sequence the model reads.
    pub positions: i64,
    /// Width of every token vector (the embedding and the residual stream).
    pub d_model: i64,
    /// Attention heads per block; each works in d_model / n_heads dimensions.
    pub n_heads: i64,
    /// Transformer blocks stacked on top of the embeddings.
    pub n_layers: i64,
    /// Hidden width of each block's MLP.
    pub d_mlp: i64,
    /// Switches of the attention function (the faults).
    pub attn: AttnOptions,
}

impl ModelConfig {
    /// The chapter's model: 2 blocks, width 64, 2 heads, 103,244 parameters.
    pub fn chapter() -> Self {
        ModelConfig {
            vocab: 12,
            positions: 25,
            d_model: 64,
            n_heads: 2,
            n_layers: 2,
            d_mlp: 256,
            attn: AttnOptions::default(),
        }
    }

    pub fn d_head(&self) -> i64 {
        self.d_model / self.n_heads
    }
}
