//! Evaluation of a trained model: greedy decoding, exact-match accuracy by length, and
//! the attention weights of one named input.

use crate::data::{self, Alphabet, Letters};
use crate::model::Transformer;
use crate::result::{AttentionMap, AttnStats, Eval, LengthEval, Strongest};
use std::collections::{BTreeMap, HashSet};
use tch::{Kind, Tensor};

/// Greedy decoding: the prompt and the separator in, then the argmax appended, once per
/// token of the answer. Problems are batched by size. Returns the generated tokens of each.
pub fn greedy(model: &Transformer, alphabet: Alphabet, strings: &[Letters]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new(); strings.len()];
    let mut lengths: Vec<usize> = strings.iter().map(|s| s.len()).collect();
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
            let (logits, _) = model.forward(&x); // (count, tokens, vocab)
            let next = logits.select(1, -1).argmax(-1, true); // (count, 1)
            x = Tensor::cat(&[x, next], 1);
        }
        let gen = x.narrow(1, p as i64 + 1, a as i64).contiguous();
        let gen: Vec<i64> = Vec::<i64>::try_from(gen.view([-1])).unwrap();
        for (row, &i) in ids.iter().enumerate() {
            out[i] = gen[row * a..(row + 1) * a].to_vec();
        }
    }
    out
}

/// Exact match of greedy answers to the task's, by size, with the unseen-problem count.
pub fn exact_match(
    model: &Transformer,
    alphabet: Alphabet,
    set: &[Letters],
    seen: &HashSet<Letters>,
) -> Eval {
    let outs = greedy(model, alphabet, set);
    let mut by_len: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let (mut unseen, mut unseen_correct, mut misses) = (0, 0, Vec::new());
    for (s, o) in set.iter().zip(&outs) {
        let want: Vec<i64> = alphabet.answer(s).iter().map(|&c| c as i64).collect();
        let ok = *o == want;
        let e = by_len.entry(alphabet.task.size(s.len())).or_default();
        e.0 += ok as usize;
        e.1 += 1;
        if !seen.contains(s) {
            unseen += 1;
            unseen_correct += ok as usize;
        }
        if !ok && misses.len() < 8 {
            misses.push(format!(
                "{} → {}",
                alphabet.problem_text(s),
                alphabet.text(o)
            ));
        }
    }
    let correct = by_len.values().map(|v| v.0).sum();
    let total = set.len();
    Eval {
        correct,
        total,
        accuracy: correct as f64 / total.max(1) as f64,
        by_length: by_len
            .into_iter()
            .map(|(len, (c, n))| LengthEval {
                len,
                correct: c,
                total: n,
                accuracy: c as f64 / n as f64,
            })
            .collect(),
        unseen,
        unseen_correct,
        misses,
        inputs: set.iter().map(|s| alphabet.problem_text(s)).collect(),
        outputs: outs.iter().map(|o| alphabet.text(o)).collect(),
    }
}

/// The weights of every layer and head for `input` followed by its true answer.
///
/// # Panics
/// If `input` is not a problem of the task (the compiler checks it before anything runs).
pub fn attention_map(model: &Transformer, alphabet: Alphabet, input: &str) -> AttentionMap {
    let s = alphabet
        .parse(input)
        .expect("eval.attention_input is checked at plan time");
    let size = alphabet.task.size(s.len());
    let (p, total) = (
        alphabet.task.prompt_len(size),
        alphabet.task.sequence_len(size),
    );
    let (x, _) = data::encode(&s, alphabet, total, data::Targets::Answer, 0);
    let tokens: Vec<i64> = x[..total].to_vec();
    let (_, ws) = model.forward(&Tensor::from_slice(&tokens).view([1, -1]));
    let names: Vec<String> = tokens
        .iter()
        .map(|&t| alphabet.char(t).to_string())
        .collect();
    let weights: Vec<Vec<Vec<Vec<f64>>>> = ws
        .iter()
        .map(|w| {
            let w = w.squeeze_dim(0).to_kind(Kind::Double); // (heads, tokens, tokens)
            let (h, t, _) = w.size3().unwrap();
            let flat = Vec::<f64>::try_from(w.contiguous().view([-1])).unwrap();
            (0..h as usize)
                .map(|hi| {
                    (0..t as usize)
                        .map(|q| flat[(hi * t as usize + q) * t as usize..][..t as usize].to_vec())
                        .collect()
                })
                .collect()
        })
        .collect();
    let strongest: Vec<Vec<Vec<Strongest>>> = weights
        .iter()
        .map(|layer| {
            layer
                .iter()
                .map(|head| {
                    (p..total - 1)
                        .map(|q| {
                            let (key, &weight) = head[q]
                                .iter()
                                .enumerate()
                                .max_by(|a, b| a.1.total_cmp(b.1))
                                .unwrap();
                            Strongest {
                                query: q,
                                query_token: names[q].clone(),
                                key,
                                key_token: names[key].clone(),
                                weight,
                            }
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let last: Vec<f64> = strongest
        .last()
        .map(|heads| heads.iter().flatten().map(|s| s.weight).collect())
        .unwrap_or_default();
    AttentionMap {
        input: input.to_string(),
        tokens: names,
        weights,
        strongest,
        last_layer_min: last.iter().copied().fold(f64::INFINITY, f64::min),
        last_layer_max: last.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

/// How peaked attention is on `strings`, each teacher-forced with its answer: per layer,
/// the spread of the raw scores and the mean largest weight and entropy of the rows.
/// Only real tokens count, and only rows that see at least two keys.
pub fn attention_stats(
    model: &Transformer,
    alphabet: Alphabet,
    strings: &[Letters],
    causal: bool,
) -> AttnStats {
    let lens: Vec<i64> = strings
        .iter()
        .map(|s| alphabet.task.sequence_len(alphabet.task.size(s.len())) as i64)
        .collect();
    let width = lens.iter().copied().max().unwrap_or(1);
    let rows: Vec<i64> = strings
        .iter()
        .flat_map(|s| {
            data::encode(s, alphabet, width as usize, data::Targets::Answer, 0).0[..width as usize]
                .to_vec()
        })
        .collect();
    let x = Tensor::from_slice(&rows).view([strings.len() as i64, width]);
    let (scores, weights) = model.raw_scores(&x); // per layer: (batch, heads, t, t) each
                                                  // Which (query, key) pairs are real and visible: (batch, 1, t, t).
    let pos = Tensor::arange(width, (Kind::Int64, tch::Device::Cpu));
    let len = Tensor::from_slice(&lens).view([-1, 1, 1, 1]);
    let (qi, kj) = (pos.view([1, 1, -1, 1]), pos.view([1, 1, 1, -1]));
    let mut visible = qi.lt_tensor(&len).logical_and(&kj.lt_tensor(&len));
    if causal {
        visible = visible.logical_and(&kj.le_tensor(&qi));
    }
    let keys = visible.sum_dim_intlist([-1i64].as_slice(), true, Kind::Int64); // (batch, 1, t, 1)
    let row_ok = keys.ge(2);
    let f = |t: Tensor| t.double_value(&[]);
    let mut out = AttnStats {
        score_sd: vec![],
        max_weight: vec![],
        entropy: vec![],
        uniform_entropy: 0.0,
    };
    for (s, w) in scores.iter().zip(&weights) {
        let heads = s.size()[1];
        let vis = visible.expand_as(s);
        let sel = s.to_kind(Kind::Double).masked_select(&vis);
        out.score_sd.push(f(sel.std(true)));
        let rows = row_ok.expand([-1, heads, -1, 1], false).squeeze_dim(-1); // (batch, heads, t)
        let w = w.to_kind(Kind::Double);
        let max = w.amax([-1i64].as_slice(), false).masked_select(&rows);
        let plogp = (&w * ln(&w.clamp_min(1e-300))).masked_fill(&vis.logical_not(), 0.0);
        let ent = -plogp.sum_dim_intlist([-1i64].as_slice(), false, Kind::Double);
        out.max_weight.push(f(max.mean(Kind::Double)));
        out.entropy
            .push(f(ent.masked_select(&rows).mean(Kind::Double)));
        if out.uniform_entropy == 0.0 {
            let k = keys
                .to_kind(Kind::Double)
                .expand([-1, heads, -1, 1], false)
                .squeeze_dim(-1);
            out.uniform_entropy = f(ln(&k).masked_select(&rows).mean(Kind::Double));
        }
    }
    out
}

/// The natural logarithm of a float64 tensor, taken in Rust (see `in_rust`).
fn ln(t: &Tensor) -> Tensor {
    Tensor::from_slice(&in_rust(t, f64::ln)).view(t.size().as_slice())
}

/// `f` of every element of a float64 tensor, flattened. libtorch's `log` and `sqrt` go
/// through MKL, whose last bit varies by CPU; Rust's do not.
pub fn in_rust(t: &Tensor, f: fn(f64) -> f64) -> Vec<f64> {
    let v = Vec::<f64>::try_from(&t.contiguous().view([-1]))
        .expect("a float64 CPU tensor converts to a Vec<f64>");
    v.into_iter().map(f).collect()
}
