//! Mean ablation's reference values: each part's output averaged over a stated batch, the
//! trained run's own test strings, teacher-forced (the prompt, the separator and the true
//! answer, no padding), at every position of every string.
//!
//! The activations are the engine's (`open`); each mean is summed in `f64`, feature by
//! feature, string length by string length in increasing order, then string by string and
//! position by position, and rounded once to `f32`: the same bits on every machine.

use crate::open::{Open, Site};
use anyhow::{Context, Result};
use revtx_engine::data::{Alphabet, Letters};
use revtx_engine::experiments::intervene::Part;
use revtx_engine::model::{ModelConfig, Transformer};
use std::collections::{BTreeMap, HashMap};
use tch::{Kind, Tensor};

/// Each part's mean output, as the vector a switched-off part gives instead: a head's
/// `d_head` values, a sublayer's `d_model` output, the position table's mean row.
#[derive(Debug, Default)]
pub struct Means(pub BTreeMap<Part, Tensor>);

/// Running sums of one part's output, feature by feature.
struct Sum {
    total: Vec<f64>,
    count: u64,
}

impl Sum {
    fn new(width: usize) -> Self {
        Sum {
            total: vec![0.0; width],
            count: 0,
        }
    }

    /// Adds every row of `t: (batch, tokens, width)`, in order.
    fn add(&mut self, t: &Tensor) {
        let width = self.total.len();
        let flat = Vec::<f32>::try_from(t.to_kind(Kind::Float).contiguous().view([-1]))
            .expect("float activations");
        for row in flat.chunks_exact(width) {
            for (s, &x) in self.total.iter_mut().zip(row) {
                *s += f64::from(x);
            }
            self.count += 1;
        }
    }

    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_precision_loss,
        reason = "a mean rounded once to the model's f32; counts far below 2^52"
    )]
    fn mean(&self) -> Tensor {
        let m: Vec<f32> = self
            .total
            .iter()
            .map(|s| (s / self.count as f64) as f32)
            .collect();
        Tensor::from_slice(&m)
    }
}

/// The strings of `set`, grouped by length (shortest first), in their order within a group.
fn by_length(set: &[Letters]) -> BTreeMap<usize, Vec<&Letters>> {
    let mut groups: BTreeMap<usize, Vec<&Letters>> = BTreeMap::new();
    for s in set {
        groups.entry(s.len()).or_default().push(s);
    }
    groups
}

/// The mean output of each of `parts` over `set`.
pub fn means<S: std::hash::BuildHasher>(
    model: &Transformer,
    vars: &HashMap<String, Tensor, S>,
    cfg: &ModelConfig,
    alphabet: Alphabet,
    set: &[Letters],
    parts: &[Part],
) -> Result<Means> {
    let open = Open::new(model, vars, cfg)?;
    let (d, dh) = (cfg.d_model, cfg.d_head());
    let width = |p: Part| {
        usize::try_from(if matches!(p, Part::Head { .. }) {
            dh
        } else {
            d
        })
    };
    let mut sums: BTreeMap<Part, Sum> = BTreeMap::new();
    for &p in parts {
        sums.insert(p, Sum::new(width(p).context("a model width")?));
    }
    let table = vars.get("pos.weight").map(Tensor::shallow_clone);
    for group in by_length(set).values() {
        let idx = crate::patch::batch(alphabet, group);
        let n = idx.size()[1];
        tch::no_grad(|| {
            let _logits = open.forward(&idx, &mut |site, t| {
                for (&p, sum) in &mut sums {
                    match (p, site) {
                        (Part::Head { block, head }, Site::Heads(b)) if b as i64 == block => {
                            sum.add(&t.narrow(2, head * dh, dh));
                        }
                        (Part::Attn { block }, Site::Attn(b))
                        | (Part::Mlp { block }, Site::Mlp(b))
                            if b as i64 == block =>
                        {
                            sum.add(&t);
                        }
                        _ => {}
                    }
                }
                t
            });
        });
        if let (Some(sum), Some(table)) = (sums.get_mut(&Part::Pos), &table) {
            // The table's rows as they are added: position k of every string.
            let used = table.narrow(0, 0, n).unsqueeze(0);
            for _ in 0..group.len() {
                sum.add(&used);
            }
        }
    }
    Ok(Means(
        sums.into_iter().map(|(p, s)| (p, s.mean())).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{switch_off, Replace};
    use revtx_engine::data;
    use revtx_engine::experiments::intervene::Target;
    use revtx_engine::experiments::RunConfig;
    use revtx_engine::model;

    /// Switched off by its mean, a sublayer adds exactly its mean at every position, and a
    /// head gives its mean at every position to the rounding of its attention weights' sum;
    /// the means are of the untouched model, over the strings given.
    #[test]
    fn a_part_switched_off_by_its_mean_gives_its_mean_everywhere() {
        let cfg = RunConfig::reference();
        let (vs, m) = model::init(&cfg.model, 4);
        let alphabet = cfg.data.alphabet();
        let set: Vec<Letters> = ["abcd", "jihgf", "aa", "cafebd"]
            .iter()
            .map(|s| alphabet.parse(s).unwrap())
            .collect();
        let (head, attn, mlp) = (
            Part::Head { block: 0, head: 1 },
            Part::Attn { block: 1 },
            Part::Mlp { block: 0 },
        );
        let means = means(
            &m,
            &vs.variables(),
            &cfg.model,
            alphabet,
            &set,
            &[head, attn, mlp, Part::Pos],
        )
        .unwrap();
        assert_eq!(means.0.len(), 4);
        let dh = cfg.model.d_head();
        let idx =
            Tensor::from_slice(&data::encode(&set[3], alphabet, 13, data::Targets::Answer, 0).0)
                .view([1, 13]);
        let target = Target::all(vec![head, attn, mlp]);
        switch_off(&vs, &cfg, &target, Replace::Mean(&means), || {
            let open = Open::new(&m, &vs.variables(), &cfg.model).unwrap();
            let _ = open.forward(&idx, &mut |site, t| {
                let (want, got) = match site {
                    Site::Heads(0) => (&means.0[&head], t.narrow(2, dh, dh)),
                    Site::Attn(1) => (&means.0[&attn], t.shallow_clone()),
                    Site::Mlp(0) => (&means.0[&mlp], t.shallow_clone()),
                    _ => return t,
                };
                let diff = (got - want.view([1, 1, -1])).abs().max().double_value(&[]);
                if site == Site::Heads(0) {
                    assert!(diff < 1e-6, "{site:?} differs from its mean by {diff}");
                } else {
                    assert!(diff == 0.0, "{site:?} differs from its mean by {diff}");
                }
                t
            });
        })
        .unwrap();
        // The table's mean row is the mean of the rows the strings' positions use.
        let table = &vs.variables()["pos.weight"];
        let lens: Vec<i64> = set.iter().map(|s| 2 * s.len() as i64 + 1).collect();
        let rows: i64 = lens.iter().sum();
        let sum = lens.iter().fold(
            Tensor::zeros([cfg.model.d_model], (Kind::Double, tch::Device::Cpu)),
            |acc, &n| {
                acc + table.narrow(0, 0, n).to_kind(Kind::Double).sum_dim_intlist(
                    [0i64].as_slice(),
                    false,
                    Kind::Double,
                )
            },
        );
        let want = (sum / rows as f64).to_kind(Kind::Float);
        assert!(means.0[&Part::Pos].allclose(&want, 1e-6, 1e-7, false));
    }
}
