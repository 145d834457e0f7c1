//! The engine's named experiments: the reference and one change from it each (or a probe),
//! as `run --list` shows them and a run block's `base` names them.

use super::{RunConfig, RunKind};
use crate::config::SoftmaxAxis;
use crate::task::Targets;

/// A named experiment: one change from the reference (or a probe).
pub struct Preset {
    pub name: &'static str,
    /// One line, as `run --list` shows it.
    pub about: &'static str,
    /// The change, applied to the reference config.
    pub apply: fn(&mut RunConfig),
}

/// Every preset, in the order `run --list` shows them.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "reference",
        about: "the chapter's model: 2 blocks, width 64, 2 heads, 1,500 steps",
        apply: |_| {},
    },
    Preset {
        name: "noscale",
        about: "fault: scores not divided by sqrt(d_k)",
        apply: |c| c.model.attn.scale = false,
    },
    Preset {
        name: "softmax-queries",
        about: "fault: softmax over the query axis, mask kept",
        apply: |c| c.model.attn.softmax = SoftmaxAxis::Queries,
    },
    Preset {
        name: "nomask",
        about: "fault: no causal mask, 300 steps",
        apply: |c| {
            c.model.attn.causal = false;
            c.train.steps = 300;
        },
    },
    Preset {
        name: "allpos",
        about: "fault: loss on every position, input letters included",
        apply: |c| c.data.targets = Targets::AllPositions,
    },
    Preset {
        name: "lengths-3-12",
        about: "trained on lengths 3-12 for 3,000 steps, tested on 500 strings of 9-12",
        apply: |c| {
            c.data.max_len = 12;
            c.train.steps = 3000;
            c.eval.long_size = 500;
        },
    },
    Preset {
        name: "ex1-wide",
        about: "exercise 1: width 256, scaled",
        apply: |c| widen(c, 256),
    },
    Preset {
        name: "ex1-wide-noscale",
        about: "exercise 1: width 256, unscaled",
        apply: |c| {
            widen(c, 256);
            c.model.attn.scale = false;
        },
    },
    Preset {
        name: "ex4-small",
        about: "exercise 4: 1 block, 1 head, 1,500 steps",
        apply: shrink,
    },
    Preset {
        name: "ex4-small-long",
        about: "exercise 4: 1 block, 1 head, 5,000 steps",
        apply: |c| {
            shrink(c);
            c.train.steps = 5000;
        },
    },
    Preset {
        name: "ex5-offsets",
        about: "exercise 5: training sequences start at a random offset, so every position row is trained",
        apply: |c| c.data.random_offset = true,
    },
    Preset {
        name: "worked-example",
        about: "section 1.2's worked example through the attention function",
        apply: |c| c.kind = RunKind::WorkedExample,
    },
    Preset {
        name: "dot-variance",
        about: "section 1.4: sample variance of q.k at widths 32 and 256",
        apply: |c| c.kind = RunKind::DotVariance,
    },
];

fn widen(c: &mut RunConfig, d: i64) {
    c.model.d_model = d;
    c.model.d_mlp = 4 * d;
}

fn shrink(c: &mut RunConfig) {
    c.model.n_layers = 1;
    c.model.n_heads = 1;
}
