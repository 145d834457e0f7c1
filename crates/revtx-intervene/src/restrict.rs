//! Ablation at some positions only (`b0.h1@input`, `b0.h1@answer`): the part's output set
//! to zero at those positions and left alone at the others, in greedy decodes run on the
//! opened model (`open`), step for step as `revtx_engine::eval::greedy` runs them.
//!
//! A weight edit cannot do this, since a head's value weights serve every position, so the
//! output is zeroed where it is formed, by a hook. `scored` first decodes every string with
//! no part switched off and requires the engine's own decodes, token for token.

use crate::open::Open;
use crate::patch::{component, Component};
use anyhow::{bail, Context, Result};
use revtx_engine::data::{Alphabet, Letters};
use revtx_engine::experiments::intervene::{Part, Target};
use revtx_engine::result::Scored;
use tch::Tensor;

/// Where each of a target's parts has its output formed, and which columns of it are the
/// part's own (`patch::component`).
fn sites(target: &Target, d_head: i64) -> Result<Vec<Component>> {
    target
        .parts
        .iter()
        .map(|&part| match part {
            Part::Pos => bail!("`pos` is switched off at every position or not at all"),
            _ => component(&part.to_string(), d_head)
                .with_context(|| format!("`{part}` has no output to zero")),
        })
        .collect()
}

/// `revtx_engine::eval::greedy` on the opened model, with `target` (if any) zeroed at its
/// positions of each step's sequence.
fn greedy(
    open: &Open,
    alphabet: Alphabet,
    strings: &[Letters],
    target: Option<(&Target, i64)>,
) -> Result<Vec<Vec<i64>>> {
    let sites = match target {
        Some((t, d_head)) => sites(t, d_head)?,
        None => Vec::new(),
    };
    let mut out = vec![Vec::new(); strings.len()];
    let mut lengths: Vec<usize> = strings.iter().map(Vec::len).collect();
    lengths.sort_unstable();
    lengths.dedup();
    for n in lengths {
        let ids: Vec<usize> = (0..strings.len())
            .filter(|&i| strings[i].len() == n)
            .collect();
        let flat: Vec<i64> = ids
            .iter()
            .flat_map(|&i| {
                alphabet
                    .prompt(&strings[i])
                    .into_iter()
                    .chain([alphabet.sep()])
            })
            .collect();
        let size = alphabet.task.size(n);
        let (p, a) = (
            alphabet.task.prompt_len(size),
            alphabet.task.answer_len(size),
        );
        let mut x = Tensor::from_slice(&flat).view([ids.len() as i64, p as i64 + 1]);
        for _ in 0..a {
            let tokens = usize::try_from(x.size()[1]).expect("a sequence length");
            let logits = open.forward(&x, &mut |site, y| {
                let mine: Vec<_> = sites.iter().filter(|c| c.site == site).collect();
                if mine.is_empty() {
                    return y;
                }
                let at = target.expect("sites come from a target").0.at;
                let span = at.positions(p, tokens);
                let y = y.copy();
                for c in mine {
                    let rows = y.narrow(1, span.start as i64, span.len() as i64);
                    let mut cells = match c.columns {
                        Some((first, width)) => rows.narrow(2, first, width),
                        None => rows,
                    };
                    let _ = cells.zero_();
                }
                y
            });
            let next = logits.select(1, -1).argmax(-1, true);
            x = Tensor::cat(&[x, next], 1);
        }
        let gen = x.narrow(1, p as i64 + 1, a as i64).contiguous();
        let gen: Vec<i64> = Vec::<i64>::try_from(gen.view([-1])).expect("token ids");
        for (row, &i) in ids.iter().enumerate() {
            out[i] = gen[row * a..(row + 1) * a].to_vec();
        }
    }
    Ok(out)
}

/// The opened model's decodes, checked once against the engine's (`baseline`, the untouched
/// model's scores on the same sets) before any target is evaluated.
pub struct Checked<'o, 'm> {
    open: &'o Open<'m>,
    d_head: i64,
}

impl<'o, 'm> Checked<'o, 'm> {
    /// Fails unless the opened model, with nothing switched off, decodes `test` and `long`
    /// exactly as the engine did (`baseline`).
    pub fn new(
        open: &'o Open<'m>,
        d_head: i64,
        alphabet: Alphabet,
        sets: [(&str, &[Letters]); 2],
        baseline: &Scored,
    ) -> Result<Self> {
        for ((name, set), engine) in sets.into_iter().zip([&baseline.test, &baseline.long]) {
            let mine = crate::score(alphabet, set, &greedy(open, alphabet, set, None)?);
            if let Some(k) = (0..set.len()).find(|&k| mine.outputs[k] != engine.outputs[k]) {
                bail!(
                    "the opened model decodes {name} string {k} as {:?}, and the engine as {:?}",
                    mine.outputs[k],
                    engine.outputs[k]
                );
            }
        }
        Ok(Checked { open, d_head })
    }

    /// The model scored on both sets with `target` zeroed at its positions.
    pub fn scored(
        &self,
        alphabet: Alphabet,
        target: &Target,
        test: &[Letters],
        long: &[Letters],
    ) -> Result<Scored> {
        let t = Some((target, self.d_head));
        tch::no_grad(|| {
            Ok(Scored {
                test: crate::score(alphabet, test, &greedy(self.open, alphabet, test, t)?),
                long: crate::score(alphabet, long, &greedy(self.open, alphabet, long, t)?),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use revtx_engine::experiments::intervene::At;
    use revtx_engine::experiments::RunConfig;
    use revtx_engine::model;

    /// Zeroed at every position by the hook, a part gives the decodes its weight edit gives
    /// (`switch_off`), token for token; and at no position, the untouched model's.
    #[test]
    fn zero_everywhere_is_the_weight_edit() {
        let cfg = RunConfig::reference();
        let (vs, model) = model::init(&cfg.model, 5);
        let alphabet = cfg.data.alphabet();
        let (test, _) = crate::eval_sets(&cfg);
        let test = &test[..40];
        let vars = vs.variables();
        let open = Open::new(&model, &vars, &cfg.model).unwrap();
        let dh = cfg.model.d_head();
        tch::no_grad(|| {
            let untouched = revtx_engine::eval::greedy(&model, alphabet, test);
            assert_eq!(greedy(&open, alphabet, test, None).unwrap(), untouched);
            for s in ["b0.h1", "b1.h0+b0.mlp", "b1.attn"] {
                let t = Target::parse(s).unwrap();
                let edited = crate::switch_off(&vs, &cfg, &t, crate::Replace::Zero, || {
                    revtx_engine::eval::greedy(&model, alphabet, test)
                })
                .unwrap();
                let hooked = greedy(&open, alphabet, test, Some((&t, dh))).unwrap();
                assert_eq!(hooked, edited, "{s}");
                assert_ne!(
                    hooked, untouched,
                    "{s} changes some decode of an untrained model"
                );
            }
        });
    }

    /// The last block's MLP reaches the logits only at its own position. So zeroed at the
    /// input's letters it changes no decode, and zeroed at the answer's positions it
    /// changes the decodes exactly as zeroing it everywhere does. A place one position off
    /// (the separator counted as input) fails both.
    #[test]
    fn places_zero_their_own_positions() {
        let cfg = RunConfig::reference();
        let (vs, model) = model::init(&cfg.model, 5);
        let alphabet = cfg.data.alphabet();
        let (test, _) = crate::eval_sets(&cfg);
        let test = &test[..40];
        let vars = vs.variables();
        let open = Open::new(&model, &vars, &cfg.model).unwrap();
        let dh = cfg.model.d_head();
        let last = cfg.model.n_layers - 1;
        let decode = |s: &str| {
            let t = Target::parse(s).unwrap();
            tch::no_grad(|| greedy(&open, alphabet, test, Some((&t, dh))).unwrap())
        };
        let untouched = tch::no_grad(|| greedy(&open, alphabet, test, None).unwrap());
        let everywhere = decode(&format!("b{last}.mlp"));
        assert_ne!(everywhere, untouched);
        assert_eq!(decode(&format!("b{last}.mlp@input")), untouched);
        assert_eq!(decode(&format!("b{last}.mlp@answer")), everywhere);
        assert_eq!(Target::parse("b0.h0@input").unwrap().at, At::Input);
    }
}
