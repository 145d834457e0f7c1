//! Activation patching: strings run clean and with one letter corrupted, then corrupted
//! again with one component's output at one position taken from the clean run, for every
//! component and position up to where the answer letter is written (see
//! `revtx_spec::experiments::intervene::Patch` and `revtx_spec::result::Patched`).
//!
//! The strings and their corruptions are drawn by the engine's generator; the logits are
//! the engine's (`open`, checked against `Transformer::forward` bit for bit); the logit
//! differences and their means are summed in `f64`, string by string, in order.

use crate::open::{Open, Site};
use anyhow::{ensure, Context, Result};
use revtx_engine::data::{self, Alphabet, Letters};
use revtx_engine::experiments::intervene::{Corruption, Patch};
use revtx_engine::model::Transformer;
use revtx_engine::result::Patched;
use revtx_engine::rng::Rng;
use std::collections::{BTreeMap, HashMap};
use tch::{Kind, Tensor};

/// A component of the map: where its output is formed, and which slice of it is its own
/// (a head's `d_head` columns of the heads side by side; all of it otherwise).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Component {
    pub site: Site,
    pub columns: Option<(i64, i64)>,
}

/// The component a map (or a target's part) names: `resid.b<k>`, `b<k>.h<h>`, `b<k>.attn`
/// or `b<k>.mlp`.
pub(crate) fn component(name: &str, d_head: i64) -> Option<Component> {
    if let Some(b) = name.strip_prefix("resid.b") {
        let b = b.parse().ok()?;
        return Some(Component {
            site: Site::Resid(b),
            columns: None,
        });
    }
    let (b, part) = name.strip_prefix('b')?.split_once('.')?;
    let b: usize = b.parse().ok()?;
    if part == "mlp" || part == "attn" {
        return Some(Component {
            site: if part == "mlp" {
                Site::Mlp(b)
            } else {
                Site::Attn(b)
            },
            columns: None,
        });
    }
    let h: i64 = part.strip_prefix('h')?.parse().ok()?;
    Some(Component {
        site: Site::Heads(b),
        columns: Some((h * d_head, d_head)),
    })
}

/// The clean strings and their corrupted copies: `n` strings of `length` letters, drawn
/// from `Rng::new(seed)`, each followed by the draw that moves its letter at `letter` up
/// by 1 to `letters − 1` places (round the alphabet), so the corrupted letter always
/// differs.
///
/// For a place corruption the letters stay: the corrupted string is the clean one, and the
/// draw instead moves the letter after `letter` off `letter`'s own when the two are the
/// same, so that swapping their places always changes which letter sits where.
pub fn pairs(alphabet: Alphabet, p: &Patch) -> Vec<(Letters, Letters)> {
    let mut rng = Rng::new(p.seed);
    (0..p.strings)
        .map(|_| {
            let mut clean = data::draw(&mut rng, alphabet, p.length);
            let step = rng.range(1, alphabet.letters - 1);
            let moved = ((clean[p.letter] as usize + step) % alphabet.letters) as u8;
            match p.corrupt {
                Corruption::Letter => {
                    let mut corrupt = clean.clone();
                    corrupt[p.letter] = moved;
                    (clean, corrupt)
                }
                Corruption::Place => {
                    if clean[p.letter + 1] == clean[p.letter] {
                        clean[p.letter + 1] = moved;
                    }
                    (clean.clone(), clean)
                }
            }
        })
        .collect()
}

/// The place of each of `tokens` positions in the corrupted run: its own, or for a place
/// corruption, `letter`'s and the next letter's swapped.
fn places(p: &Patch, tokens: i64) -> Option<Tensor> {
    (p.corrupt == Corruption::Place).then(|| {
        let mut at: Vec<i64> = (0..tokens).collect();
        at.swap(p.letter, p.letter + 1);
        Tensor::from_slice(&at)
    })
}

/// Strings of one length as the model reads them at evaluation: their letters, the
/// separator, their true answer (teacher-forced), as `(strings, tokens)`.
pub(crate) fn batch(alphabet: Alphabet, strings: &[&Letters]) -> Tensor {
    let n = alphabet
        .task
        .sequence_len(alphabet.task.size(strings[0].len()));
    let mut rows = Vec::with_capacity(strings.len() * n);
    for s in strings {
        rows.extend(data::encode(s, alphabet, n, data::Targets::Answer, 0).0);
    }
    Tensor::from_slice(&rows).view([strings.len() as i64, n as i64])
}

/// Per string, `logit(clean letter) − logit(corrupted letter)` at `query`, and whether the
/// top letter there is the clean one and the corrupted one.
fn differences(logits: &Tensor, query: usize, want: &[(usize, usize)]) -> Vec<(f64, bool, bool)> {
    let row = logits
        .select(1, query as i64)
        .to_kind(Kind::Float)
        .contiguous(); // (strings, vocab)
    let vocab = usize::try_from(row.size()[1]).expect("a vocabulary size");
    let flat = Vec::<f32>::try_from(row.view([-1])).expect("float logits");
    want.iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            let l = &flat[i * vocab..(i + 1) * vocab];
            let top = (0..vocab).fold(0, |best, k| if l[k] > l[best] { k } else { best });
            (f64::from(l[a]) - f64::from(l[b]), top == a, top == b)
        })
        .collect()
}

fn mean(xs: &[(f64, bool, bool)]) -> f64 {
    xs.iter().map(|x| x.0).sum::<f64>() / xs.len() as f64
}

/// Per string, the clean answer letter and the one the corruption would put in its place:
/// the corrupted letter, or (places swapped) the letter read where the clean one was.
fn wanted(pairs: &[(Letters, Letters)], p: &Patch) -> Vec<(usize, usize)> {
    pairs
        .iter()
        .map(|(c, k)| match p.corrupt {
            Corruption::Letter => (usize::from(c[p.letter]), usize::from(k[p.letter])),
            Corruption::Place => (usize::from(c[p.letter]), usize::from(c[p.letter + 1])),
        })
        .collect()
}

/// Both runs held to the engine, bit for bit: the clean one, and the corrupted one, or for
/// a place corruption (which the engine has no run like) the table's path with every
/// place in order.
fn held_to_engine(
    model: &Transformer,
    open: &Open,
    clean: &Tensor,
    corrupt: &Tensor,
    places: Option<&Tensor>,
    (clean_logits, corrupt_logits): (&Tensor, &Tensor),
) -> Result<()> {
    let tokens = corrupt.size()[1];
    let ordered = places.map(|_| {
        let in_order = Tensor::arange(tokens, (Kind::Int64, corrupt.device()));
        open.forward_at(clean, Some(&in_order), &mut |_, t| t)
    });
    let checks = match &ordered {
        None => vec![
            ("clean", clean, clean_logits),
            ("corrupted", corrupt, corrupt_logits),
        ],
        Some(o) => vec![("clean", clean, clean_logits), ("in-order", clean, o)],
    };
    for (what, idx, mine) in checks {
        ensure!(
            model.forward(idx).0.equal(mine),
            "the open model's {what} logits are not the engine's, bit for bit"
        );
    }
    Ok(())
}

/// The patching map of `model` (its weights `vars`), as `p` asks.
pub fn run<S: std::hash::BuildHasher>(
    model: &Transformer,
    vars: &HashMap<String, Tensor, S>,
    cfg: &revtx_engine::experiments::RunConfig,
    p: &Patch,
) -> Result<Patched> {
    let alphabet = cfg.data.alphabet();
    let task = alphabet.task;
    let query = Patch::query(task, p.length, p.letter).with_context(|| {
        format!(
            "patching needs a copying or reversal task, not `{}`",
            task.name()
        )
    })?;
    ensure!(
        p.letter < p.length && p.strings > 0,
        "`patch` names no letter of its strings"
    );
    ensure!(
        p.corrupt == Corruption::Letter || p.letter + 1 < p.length,
        "a place corruption swaps `patch.letter` with the letter after it, and there is none"
    );
    let open = Open::new(model, vars, &cfg.model)?;
    let pairs = pairs(alphabet, p);
    let clean = batch(alphabet, &pairs.iter().map(|x| &x.0).collect::<Vec<_>>());
    let corrupt = batch(alphabet, &pairs.iter().map(|x| &x.1).collect::<Vec<_>>());
    let want = wanted(&pairs, p);
    let places = places(p, corrupt.size()[1]);

    tch::no_grad(|| {
        // The clean run, every component's output kept; then both runs held to the engine.
        let mut kept: Vec<(Site, Tensor)> = Vec::new();
        let clean_logits = open.forward(&clean, &mut |site, t| {
            kept.push((site, t.shallow_clone()));
            t
        });
        let corrupt_logits = open.forward_at(&corrupt, places.as_ref(), &mut |_, t| t);
        held_to_engine(
            model,
            &open,
            &clean,
            &corrupt,
            places.as_ref(),
            (&clean_logits, &corrupt_logits),
        )?;
        let (c, k) = (
            differences(&clean_logits, query, &want),
            differences(&corrupt_logits, query, &want),
        );
        let (clean_ld, corrupt_ld) = (mean(&c), mean(&k));
        let gap = clean_ld - corrupt_ld;
        let components = Patch::components(&cfg.model);
        let mut restored = BTreeMap::new();
        for name in &components {
            let comp = component(name, cfg.model.d_head())
                .with_context(|| format!("`{name}` is not a component"))?;
            let source = kept
                .iter()
                .find(|(s, _)| *s == comp.site)
                .map(|(_, t)| t)
                .with_context(|| format!("the model formed no `{name}`"))?;
            let mut row = Vec::with_capacity(query + 1);
            for pos in 0..=query as i64 {
                let logits = open.forward_at(&corrupt, places.as_ref(), &mut |site, t| {
                    if site != comp.site {
                        return t;
                    }
                    let patched = t.copy();
                    let (from, to) = match comp.columns {
                        Some((first, width)) => (
                            source.narrow(1, pos, 1).narrow(2, first, width),
                            patched.narrow(1, pos, 1).narrow(2, first, width),
                        ),
                        None => (source.narrow(1, pos, 1), patched.narrow(1, pos, 1)),
                    };
                    let mut to = to;
                    to.copy_(&from);
                    patched
                });
                let ld = mean(&differences(&logits, query, &want));
                row.push((ld - corrupt_ld) / gap);
            }
            restored.insert(name.clone(), row);
        }
        let tokens = clean
            .get(0)
            .iter::<i64>()
            .expect("token ids")
            .map(|t| alphabet.char(t).to_string())
            .take(query + 1)
            .collect();
        Ok(Patched {
            corrupted: p.letter, // the prompt is the string's letters, from position 0
            query,
            tokens,
            clean: clean_ld,
            corrupt: corrupt_ld,
            clean_right: c.iter().filter(|x| x.1).count(),
            corrupt_flipped: k.iter().filter(|x| x.2).count(),
            strings: p.strings,
            components,
            restored,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use revtx_engine::experiments::RunConfig;
    use revtx_engine::model;

    /// What patching must give whatever the weights: the stream entering the first block
    /// differs only at the corrupted letter, so patching it there restores the clean margin
    /// exactly (1) and anywhere else changes nothing (0); before the corrupted letter no
    /// component differs, so nothing there moves the answer (causal attention).
    #[test]
    #[allow(clippy::float_cmp, reason = "exact values are what the test holds")]
    fn patching_the_embeddings_restores_exactly_at_the_corrupted_letter() {
        let cfg = RunConfig::reference();
        let (vs, m) = model::init(&cfg.model, 5);
        let p = Patch {
            length: 6,
            letter: 2,
            strings: 12,
            seed: 3,
            corrupt: Corruption::Letter,
        };
        let got = run(&m, &vs.variables(), &cfg, &p).unwrap();
        assert_eq!(
            got.query,
            6 + 3,
            "reversal: the third letter is the fourth answer letter"
        );
        assert_eq!(got.corrupted, 2);
        let embeddings = &got.restored["resid.b0"];
        assert_eq!(embeddings.len(), got.query + 1);
        for (pos, &r) in embeddings.iter().enumerate() {
            let want = if pos == 2 { 1.0 } else { 0.0 };
            assert!(r == want, "resid.b0 at {pos}: {r}"); // -0 == 0: a negative gap divides 0
        }
        for (name, row) in &got.restored {
            assert!(
                row[..2].iter().all(|&r| r == 0.0),
                "{name} before the corrupted letter"
            );
        }
        // An untrained model still moves the letter somewhere after it.
        let after: f64 = got.restored["resid.b1"][2..].iter().map(|r| r.abs()).sum();
        assert!(after > 0.0);
        assert_eq!(got.components.len(), 2 * 4);
    }

    /// The corrupted letter always differs from the clean one, and only there.
    #[test]
    fn corruptions_change_exactly_one_letter() {
        let cfg = RunConfig::reference();
        let p = Patch {
            length: 7,
            letter: 0,
            strings: 200,
            seed: 1,
            corrupt: Corruption::Letter,
        };
        for (c, k) in pairs(cfg.data.alphabet(), &p) {
            assert_ne!(c[0], k[0]);
            assert_eq!(c[1..], k[1..]);
        }
    }

    /// A place corruption keeps every letter, always swaps two different ones, and (on any
    /// model) moves nothing before the first of them: every component there restores
    /// exactly 0. The swap changes the margin, so the gap is not empty.
    #[test]
    #[allow(clippy::float_cmp, reason = "exact values are what the test holds")]
    fn a_place_corruption_swaps_two_different_letters() {
        let cfg = RunConfig::reference();
        let p = Patch {
            length: 7,
            letter: 2,
            strings: 200,
            seed: 4,
            corrupt: Corruption::Place,
        };
        for (c, k) in pairs(cfg.data.alphabet(), &p) {
            assert_eq!(c, k);
            assert_ne!(c[2], c[3]);
        }
        let (vs, m) = model::init(&cfg.model, 5);
        let got = run(&m, &vs.variables(), &cfg, &Patch { strings: 12, ..p }).unwrap();
        assert_ne!(got.clean, got.corrupt);
        for (name, row) in &got.restored {
            assert!(row[..2].iter().all(|&r| r == 0.0), "{name} before the swap");
        }
        assert!(got.restored["resid.b0"][2..4].iter().any(|&r| r != 0.0));
    }
}
