//! The fused attention kernel against the readable function and, bit for bit, against
//! its order of operations written out one float at a time.

mod common;

use common::*;
use revtx_engine::config::{AttnOptions, SoftmaxAxis};
use tch::Kind;
use tch::Tensor;

/// The fused kernel against `attention` run head by head in libtorch operations, for
/// every combination of the switches: output, weights, and the gradient of qkv.
#[test]
fn fused_attention_matches_the_readable_function() {
    let _g = revtx_engine::model::TORCH_RNG.lock().unwrap();
    book_mode();
    tch::manual_seed(3);
    let (b, t, d, h) = (3, 11, 24, 2); // d_k = 12: a whole register and a tail
    for o in every_switch() {
        let [qkv, g, y, w, dqkv] = fused_attention((b, t, d, h), o);
        let parts = qkv.split(d, -1);
        let heads = |z: &Tensor| z.view([b, t, h, d / h]).transpose(1, 2); // (b, h, t, d_k)
        let (ry, rw) = revtx_engine::model::attention(
            &heads(&parts[0]),
            &heads(&parts[1]),
            &heads(&parts[2]),
            o,
        );
        let ry = ry.transpose(1, 2).reshape([b, t, d]); // (b, t, d)
        let theirs = Tensor::run_backward(&[(&ry * &g).sum(Kind::Float)], &[&qkv], false, false);
        assert!(close(&y, &ry), "output, switches {o:?}");
        assert!(close(&w, &rw), "weights, switches {o:?}");
        assert!(close(&dqkv, &theirs[0]), "gradient, switches {o:?}");
        if o.causal {
            assert_eq!(w.triu(1).abs().sum(Kind::Float).double_value(&[]), 0.0);
        }
    }
}

/// The fused attention's order of operations, written out one float at a time (see
/// `kernels/attention.h`): the kernel must give these bits, whatever it does to go faster.
mod attention_order {
    /// Eight lanes' sum: ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)).
    fn tree(lane: &[f32; 8]) -> f32 {
        ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]))
    }

    /// `a · b`: lane l sums coordinates l, l + 8, ... in order, the eight lanes meet in
    /// the tree ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)), then the tail one by one.
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        let whole = a.len() / 8 * 8;
        let mut lane = [0f32; 8];
        for p in 0..whole {
            lane[p % 8] += a[p] * b[p];
        }
        let mut s = tree(&lane);
        for p in whole..a.len() {
            s += a[p] * b[p];
        }
        s
    }

    /// e^x: Cody-Waite reduction by ln 2, a degree-5 polynomial, zero below -87.
    pub fn exp(x: f32) -> f32 {
        if x < -87.0 {
            return 0.0;
        }
        let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
        let mut r = x - n * 0.693_359_4;
        r -= n * -2.121_944_4e-4;
        let z = r * r;
        let mut p = 1.987_569_1e-4f32;
        for c in [
            1.398_199_9e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            0.166_666_65,
            0.5,
        ] {
            p = p * r + c;
        }
        let y = p * z + r + 1.0;
        y * f32::from_bits(((n as i32 + 127) << 23) as u32)
    }

    /// Softmax of a row: the maximum, the exponentials, their sum in eight lanes (lane
    /// l adds entries l, l + 8, ...) meeting in `dot`'s tree, one division each.
    pub fn softmax_row(x: &mut [f32]) {
        let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut lane = [0f32; 8];
        for (p, v) in x.iter_mut().enumerate() {
            *v = exp(*v - m);
            lane[p % 8] += *v;
        }
        let sum = tree(&lane);
        for v in x.iter_mut() {
            *v /= sum;
        }
    }

    /// Softmax over queries (the fault): the sum in increasing order.
    pub fn softmax_plain(x: &mut [f32]) {
        let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for v in x.iter_mut() {
            *v = exp(*v - m);
        }
        let sum = x.iter().fold(0f32, |s, v| s + v);
        for v in x.iter_mut() {
            *v /= sum;
        }
    }

    /// `sum over r in rows of coef(r) * row(r)`, in increasing r from zero.
    pub fn weighted(
        rows: impl Iterator<Item = usize>,
        coef: impl Fn(usize) -> f32,
        row: impl Fn(usize) -> Vec<f32>,
        n: usize,
    ) -> Vec<f32> {
        let mut out = vec![0f32; n];
        for r in rows {
            let (c, x) = (coef(r), row(r));
            for (o, v) in out.iter_mut().zip(&x) {
                *o += c * v;
            }
        }
        out
    }
}

/// Output, weights and the gradient of qkv of one (b, t, 3d) input, one head at a time
/// in `attention_order`'s operations: the kernel's documented order, float by float.
fn attention_in_order(
    qkv: &[f32],
    dy: &[f32],
    (b, t, d, h): (usize, usize, usize, usize),
    o: AttnOptions,
) -> [Vec<f32>; 3] {
    use attention_order::*;
    let (dk, rs) = (d / h, 3 * d);
    let root = (dk as f32).sqrt();
    let seen = |i: usize| if o.causal { i + 1 } else { t };
    let first = |j: usize| if o.causal { j } else { 0 };
    let over_queries = o.softmax == SoftmaxAxis::Queries;
    let (mut y, mut w) = (vec![0f32; b * t * d], vec![0f32; b * h * t * t]);
    let mut dqkv = vec![0f32; b * t * rs];
    for z in 0..b {
        for hh in 0..h {
            // row r of q (part 0), k (1), v (2) or dy (3) of this head
            let row = |part: usize, r: usize| -> Vec<f32> {
                let at = match part {
                    3 => (z * t + r) * d + hh * dk,
                    _ => (z * t + r) * rs + part * d + hh * dk,
                };
                (if part == 3 { dy } else { qkv })[at..at + dk].to_vec()
            };
            let mut wz = vec![0f32; t * t]; // (queries, keys)
            for i in 0..t {
                for j in 0..seen(i) {
                    let s = dot(&row(0, i), &row(1, j));
                    wz[i * t + j] = if o.scale { s / root } else { s };
                }
                if !over_queries {
                    softmax_row(&mut wz[i * t..i * t + seen(i)]);
                }
            }
            if over_queries {
                for j in 0..t {
                    let mut col: Vec<f32> = (first(j)..t).map(|i| wz[i * t + j]).collect();
                    softmax_plain(&mut col);
                    for (i, v) in (first(j)..t).zip(col) {
                        wz[i * t + j] = v;
                    }
                }
            }
            for i in 0..t {
                let yi = weighted(0..seen(i), |r| wz[i * t + r], |r| row(2, r), dk);
                let at = (z * t + i) * d + hh * dk;
                y[at..at + dk].copy_from_slice(&yi);
            }
            // The backward: dv, then dw, through the softmax and the scale, dq and dk.
            let mut put = |part: usize, r: usize, v: Vec<f32>| {
                let at = (z * t + r) * rs + part * d + hh * dk;
                dqkv[at..at + dk].copy_from_slice(&v);
            };
            for j in 0..t {
                put(
                    2,
                    j,
                    weighted(first(j)..t, |i| wz[i * t + j], |i| row(3, i), dk),
                );
            }
            let mut ds = vec![0f32; t * t];
            for i in 0..t {
                for j in 0..seen(i) {
                    ds[i * t + j] = dot(&row(3, i), &row(2, j));
                }
            }
            // Each softmax group's sum of w dw: a query's row, or a key's column (the fault).
            let group_sum = |u: usize| {
                if over_queries {
                    (first(u)..t).fold(0f32, |r, i| r + wz[i * t + u] * ds[i * t + u])
                } else {
                    (0..seen(u)).fold(0f32, |r, j| r + wz[u * t + j] * ds[u * t + j])
                }
            };
            let rsum: Vec<f32> = (0..t).map(group_sum).collect();
            for i in 0..t {
                for j in 0..seen(i) {
                    let r = rsum[if over_queries { j } else { i }];
                    ds[i * t + j] = wz[i * t + j] * (ds[i * t + j] - r);
                    if o.scale {
                        ds[i * t + j] /= root;
                    }
                }
            }
            for i in 0..t {
                put(
                    0,
                    i,
                    weighted(0..seen(i), |j| ds[i * t + j], |j| row(1, j), dk),
                );
            }
            for j in 0..t {
                put(
                    1,
                    j,
                    weighted(first(j)..t, |i| ds[i * t + j], |i| row(0, i), dk),
                );
            }
            w[(z * h + hh) * t * t..][..t * t].copy_from_slice(&wz);
        }
    }
    [y, w, dqkv]
}

/// The fused attention computes `attention_in_order` bit for bit: output, weights and
/// the gradient, for every combination of the switches. Shapes: the chapter's head
/// width (32) over an odd number of tokens, a width with a tail of four (12), and fewer
/// tokens than a group of eight keys.
#[test]
fn fused_attention_computes_its_documented_order_bit_for_bit() {
    let _g = revtx_engine::model::TORCH_RNG.lock().unwrap();
    book_mode();
    tch::manual_seed(7);
    for (b, t, d, h) in [(2, 13, 64, 2), (2, 11, 24, 2), (1, 5, 16, 2)] {
        for o in every_switch() {
            let [qkv, g, y, w, dqkv] = fused_attention((b, t, d, h), o);
            let shape = (b as usize, t as usize, d as usize, h as usize);
            let want = attention_in_order(&floats(&qkv), &floats(&g), shape, o);
            let at = format!("{shape:?}, switches {o:?}");
            same_bits(&y, &want[0], &format!("output, {at}"));
            same_bits(&w, &want[1], &format!("weights, {at}"));
            same_bits(&dqkv, &want[2], &format!("gradient, {at}"));
        }
    }
}
