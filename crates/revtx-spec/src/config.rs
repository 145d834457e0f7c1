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
    /// How a token learns where it is (`learned`: a trained table of `positions` rows).
    pub position_encoding: PositionEncoding,
    /// Where each block normalises its residual stream.
    pub norm: NormPlacement,
    /// How it normalises: layer norm, or RMS norm.
    pub norm_kind: NormKind,
    /// The MLP's nonlinearity.
    pub activation: Activation,
}

crate::choice! {
    /// How positions enter the model (`model.position_encoding`). `model.positions` is the
    /// longest sequence the model reads, under every kind; only `learned` trains a table of
    /// that many rows.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum PositionEncoding {
        /// A trained vector per position, added to the token's (the chapter's).
        #[default]
        Learned = "learned",
        /// A fixed vector per position of sines and cosines at geometric wavelengths, added to
        /// the token's (Vaswani et al.); nothing trained.
        Sinusoidal = "sinusoidal",
        /// Rotary: each head's query and key pairs rotated by an angle proportional to the
        /// position (Su et al.), so scores depend on the offset between tokens.
        Rope = "rope",
        /// Linear biases on the scores (Press et al.): head `h` of `H` adds `-m_h·|i - j|` to
        /// query `i`'s score for key `j`, `m_h = 2^(-8h/H)`; nothing added to the tokens.
        Alibi = "alibi",
        /// No position information at all: only the causal mask tells tokens apart.
        None = "none",
    }
}

impl PositionEncoding {
    pub fn is_learned(&self) -> bool {
        *self == PositionEncoding::Learned
    }

    /// Whether the page's widget (`static/widget/model.js`) runs this value: a widget
    /// naming a run with a value it does not run is a `widget-model` error.
    pub fn in_widget(self) -> bool {
        match self {
            PositionEncoding::Learned
            | PositionEncoding::Sinusoidal
            | PositionEncoding::Rope
            | PositionEncoding::Alibi
            | PositionEncoding::None => true,
        }
    }

    /// Whether a vector is added to each token before the first block.
    pub fn adds_vectors(self) -> bool {
        matches!(
            self,
            PositionEncoding::Learned | PositionEncoding::Sinusoidal
        )
    }
}

crate::choice! {
    /// Where a block's layer norms sit (`model.norm`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum NormPlacement {
        /// Before each sublayer, inside the residual branch, plus one before the head:
        /// `x + f(norm(x))` (the chapter's).
        #[default]
        Pre = "pre",
        /// After each addition, as in the original transformer: `norm(x + f(x))`; no final
        /// norm, since the last block's output is normalised already.
        Post = "post",
        /// No normalisation anywhere: `x + f(x)`.
        None = "none",
    }
}

impl NormPlacement {
    pub fn is_pre(&self) -> bool {
        *self == NormPlacement::Pre
    }

    /// Whether the page's widget (`static/widget/model.js`) runs this value: a widget
    /// naming a run with a value it does not run is a `widget-model` error.
    pub fn in_widget(self) -> bool {
        match self {
            NormPlacement::Pre | NormPlacement::Post | NormPlacement::None => true,
        }
    }
}

crate::choice! {
    /// What a norm computes (`model.norm_kind`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum NormKind {
        /// Subtract the mean, divide by the standard deviation, then a learned scale and shift
        /// (Ba et al.; the chapter's).
        #[default]
        Layer = "layer",
        /// Divide by the root mean square, then a learned scale; no mean, no shift (Zhang and
        /// Sennrich).
        Rms = "rms",
    }
}

impl NormKind {
    pub fn is_layer(&self) -> bool {
        *self == NormKind::Layer
    }

    /// Whether the page's widget (`static/widget/model.js`) runs this value: a widget
    /// naming a run with a value it does not run is a `widget-model` error.
    pub fn in_widget(self) -> bool {
        match self {
            NormKind::Layer | NormKind::Rms => true,
        }
    }
}

crate::choice! {
    /// The MLP's nonlinearity (`model.activation`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Activation {
        /// The Gaussian error linear unit, `x·Φ(x)` (the chapter's).
        #[default]
        Gelu = "gelu",
        /// `max(x, 0)`.
        Relu = "relu",
    }
}

impl Activation {
    pub fn is_gelu(&self) -> bool {
        *self == Activation::Gelu
    }

    /// Whether the page's widget (`static/widget/model.js`) runs this value: a widget
    /// naming a run with a value it does not run is a `widget-model` error.
    pub fn in_widget(self) -> bool {
        match self {
            Activation::Gelu | Activation::Relu => true,
        }
    }
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
            position_encoding: PositionEncoding::Learned,
            norm: NormPlacement::Pre,
            norm_kind: NormKind::Layer,
            activation: Activation::Gelu,
        }
    }

    pub fn d_head(&self) -> i64 {
        self.d_model / self.n_heads
    }

    /// What of this model differs from the chapter's block in words, or `None` when
    /// nothing does: the block diagram draws learned positions, pre-norm blocks with
    /// layer norms and GELU, with every attention switch.
    pub fn differs_from_chapter(&self) -> Option<String> {
        let mut what = Vec::new();
        if self.position_encoding != PositionEncoding::Learned {
            what.push(format!(
                "position_encoding = \"{}\"",
                self.position_encoding.name()
            ));
        }
        if self.norm != NormPlacement::Pre {
            what.push(format!("norm = \"{}\"", self.norm.name()));
        }
        if self.norm_kind != NormKind::Layer {
            what.push(format!("norm_kind = \"{}\"", self.norm_kind.name()));
        }
        if self.activation != Activation::Gelu {
            what.push(format!("activation = \"{}\"", self.activation.name()));
        }
        (!what.is_empty()).then(|| what.join(", "))
    }

    /// The choices of this model that the page's widget does not run, in words, or `None`.
    pub fn widget_cannot_run(&self) -> Option<String> {
        let what: Vec<String> = [
            (!self.position_encoding.in_widget())
                .then(|| format!("position_encoding = \"{}\"", self.position_encoding.name())),
            (!self.norm.in_widget()).then(|| format!("norm = \"{}\"", self.norm.name())),
            (!self.norm_kind.in_widget())
                .then(|| format!("norm_kind = \"{}\"", self.norm_kind.name())),
            (!self.activation.in_widget())
                .then(|| format!("activation = \"{}\"", self.activation.name())),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!what.is_empty()).then(|| what.join(", "))
    }
}
