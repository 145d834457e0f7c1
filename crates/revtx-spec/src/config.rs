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

/// How the switches describe themselves, so that the block diagram (its labels and its
/// alt text) needs no change when a switch is added: a new switch adds its words here.
impl AttnOptions {
    /// The score step's label: `q·kᵀ / √d_k`.
    pub fn scores_label(&self) -> &'static str {
        if self.scale {
            "q·kᵀ / √d_k"
        } else {
            "q·kᵀ (not divided)"
        }
    }

    /// The normalising step's label: `mask, softmax over keys`.
    pub fn softmax_label(&self) -> String {
        let mask = if self.causal { "mask" } else { "no mask" };
        format!("{mask}, softmax over {}", self.softmax.axis_name())
    }

    /// The score step in words, for alt text: "q times k transposed, divided by …".
    pub fn scores_words(&self) -> &'static str {
        if self.scale {
            "q times k transposed, divided by the square root of d_k"
        } else {
            "q times k transposed with no division"
        }
    }

    /// The normalising step in words: "masks later keys and takes the softmax over keys".
    pub fn softmax_words(&self) -> String {
        let mask = if self.causal {
            "masks later keys"
        } else {
            "masks nothing"
        };
        format!(
            "{mask} and takes the softmax over {}",
            self.softmax.axis_name()
        )
    }
}

impl SoftmaxAxis {
    /// `keys` or `queries`.
    pub fn axis_name(self) -> &'static str {
        match self {
            SoftmaxAxis::Keys => "keys",
            SoftmaxAxis::Queries => "queries",
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
