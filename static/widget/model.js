/* revtx-book widget: The model and greedy decoding: a port of the engine's model (embeddings → blocks →
 * norm → head) and of `greedy` in its eval.rs. Plain computation, no DOM: the Node test
 * (tests/browser/widget-model.test.mjs) runs it against the engine's decodes. */

import { f32, gelu } from "./float32.js";
import { linear } from "./linear.js";
import { SEP, lettersToIds, tokenChar } from "./tokens.js";

/* 5. The model ------------------------------------------------------------------
 *
 * Its choices first. The engine's `ModelConfig` leaves each choice out of a config at
 * the chapter's value; these are those values. */
export function choicesOf(cfg) {
  return {
    positions: cfg.position_encoding ?? "learned",
    norm: cfg.norm ?? "pre",
    normKind: cfg.norm_kind ?? "layer",
    activation: cfg.activation ?? "gelu",
  };
}

/** The frequency of pair i of a width-d sinusoid: 10000^(-2i/d) (position.rs). */
function frequency(i, d) {
  return Math.pow(10000, (-2 * i) / d);
}

/** Vaswani et al.'s table, (rows, d): sin(p·ωᵢ) in column 2i, cos(p·ωᵢ) in 2i + 1. */
export function sinusoidalTable(rows, d) {
  const t = new Float32Array(rows * d);
  for (let p = 0; p < rows; p++) {
    for (let c = 0; c < d; c++) {
      const a = p * frequency(c >> 1, d);
      t[p * d + c] = c % 2 === 0 ? Math.sin(a) : Math.cos(a);
    }
  }
  return t;
}

/** Rotary positions' tables, (rows, d_k) each: cos and sin of p·ωᵢ in columns i and
 * i + d_k/2 (the "rotate half" layout of position.rs). */
export function ropeTables(rows, dk) {
  const half = dk / 2;
  const cos = new Float32Array(rows * dk);
  const sin = new Float32Array(rows * dk);
  for (let p = 0; p < rows; p++) {
    for (let c = 0; c < dk; c++) {
      const a = p * frequency(c % half, dk);
      cos[p * dk + c] = Math.cos(a);
      sin[p * dk + c] = Math.sin(a);
    }
  }
  return { cos, sin };
}

/** ALiBi's slope of head h (from 1) of H: 2^(-8h/H). */
export function alibiSlope(h, H) {
  return Math.pow(2, (-8 * h) / H);
}

/* Activations are row-major Float32Arrays, one row per token. `forward` computes rows
 * `state.t` .. ids.length-1 and keeps each block's keys and values (and the attention
 * rows) in `state`, so that a causal model with the softmax over keys can append one
 * token at a time: every row then depends only on itself and earlier rows, and the
 * numbers are the same as recomputing the whole sequence. The two faults that break
 * that property (no mask, softmax over queries) are recomputed from row 0 each time.
 */

/** Whether earlier rows stay valid when a token is appended. */
function canExtend(cfg) {
  return cfg.attn.causal && cfg.attn.softmax === "keys";
}

/** A fresh state; `off` names the heads switched off, as `"block.head"` (`"0.1"`). */
function newState(model, off = null) {
  const { positions: P, d_model: d, n_heads: H } = model.cfg;
  return {
    t: 0, // rows computed so far
    off: off && off.size ? off : null,
    keys: model.blocks.map(() => new Float32Array(P * d)), // (positions, d_model) per block
    values: model.blocks.map(() => new Float32Array(P * d)),
    // weights[block][head]: (positions, positions), row = query, column = key
    weights: model.blocks.map(() => Array.from({ length: H }, () => new Float32Array(P * P))),
  };
}

/** LayerNorm over each row of x (rows, d): biased variance, eps 1e-5, then
 * (x·rstd − mean·rstd)·γ + β. */
function layerNorm(x, rows, d, p) {
  const y = new Float32Array(rows * d);
  for (let r = 0; r < rows; r++) {
    const o = r * d;
    let mean = 0;
    for (let i = 0; i < d; i++) mean += x[o + i];
    mean /= d;
    let variance = 0;
    for (let i = 0; i < d; i++) variance += (x[o + i] - mean) * (x[o + i] - mean);
    variance /= d;
    const rstd = f32(1 / Math.sqrt(f32(f32(variance) + 1e-5)));
    const shift = f32(-f32(mean) * rstd);
    for (let i = 0; i < d; i++) {
      const z = f32(f32(x[o + i] * rstd) + shift);
      y[o + i] = f32(z * p.w[i]) + p.b[i];
    }
  }
  return y;
}

function addInPlace(h, a) {
  for (let i = 0; i < h.length; i++) h[i] = h[i] + a[i];
  return h;
}

/** RMSNorm over each row of x (rows, d): x / √(mean(x²) + 1e-5) · γ (norm.rs). */
function rmsNorm(x, rows, d, p) {
  const y = new Float32Array(rows * d);
  for (let r = 0; r < rows; r++) {
    const o = r * d;
    let sum = 0;
    for (let i = 0; i < d; i++) sum = f32(sum + f32(x[o + i] * x[o + i]));
    const root = f32(Math.sqrt(f32(f32(sum / d) + 1e-5)));
    for (let i = 0; i < d; i++) y[o + i] = f32(f32(x[o + i] / root) * p.w[i]);
  }
  return y;
}

/** The norm of the model's kind. */
function norm(model, x, rows, p) {
  const d = model.cfg.d_model;
  return model.choices.normKind === "rms" ? rmsNorm(x, rows, d, p) : layerNorm(x, rows, d, p);
}

/** Turns the query and key of every head of the new rows of qkv (n, 3d) by their
 * positions from..from+n-1: x·cos + rotate_half(x)·sin, each product and the sum
 * rounded to float32 (position.rs). */
function rotate(model, qkv, n, from) {
  const { d_model: d, n_heads: H } = model.cfg;
  const dk = d / H;
  const half = dk / 2;
  const { cos, sin } = model.rope;
  const x = new Float32Array(dk);
  for (let r = 0; r < n; r++) {
    const p = (from + r) * dk;
    for (let part = 0; part < 2; part++) {
      for (let h = 0; h < H; h++) {
        const o = r * 3 * d + part * d + h * dk;
        x.set(qkv.subarray(o, o + dk));
        for (let c = 0; c < dk; c++) {
          const turned = c < half ? -x[c + half] : x[c - half];
          qkv[o + c] = f32(f32(x[c] * cos[p + c]) + f32(turned * sin[p + c]));
        }
      }
    }
  }
}

/** Scores q·k of the new query rows against keys 0..t-1, for one head, into the rows
 * `from`..t-1 of w (positions × positions); keys after the query are -∞ under the mask.
 * Under ALiBi, each score then loses slope·|i - j|. */
function scores(q, keys, w, head, from, t, cfg, slope) {
  const { d_model: d, n_heads: H, positions: P } = cfg;
  const dk = d / H;
  const off = head * dk;
  const divisor = f32(Math.sqrt(dk));
  const { causal, scale } = cfg.attn;
  for (let i = from; i < t; i++) {
    const qi = (i - from) * 3 * d + off; // q sits in the first d columns of qkv
    const visible = causal ? i + 1 : t; // keys 0 .. visible-1
    for (let j = 0; j < visible; j++) {
      const kj = j * d + off;
      let acc = 0;
      for (let c = 0; c < dk; c++) acc = f32(acc + f32(q[qi + c] * keys[kj + c]));
      const s = scale ? f32(acc / divisor) : acc;
      w[i * P + j] = slope === 0 ? s : f32(s + f32(-slope * Math.abs(i - j)));
    }
    for (let j = visible; j < t; j++) w[i * P + j] = -Infinity; // key after query: masked
  }
}

/** Softmax of each row i in from..t-1 over its keys (the correct axis). */
function softmaxOverKeys(w, from, t, P) {
  for (let i = from; i < t; i++) {
    const row = i * P;
    let max = -Infinity;
    for (let j = 0; j < t; j++) max = Math.max(max, w[row + j]);
    let sum = 0;
    for (let j = 0; j < t; j++) {
      const e = f32(Math.exp(f32(w[row + j] - max))); // exp(-∞) = 0 for masked keys
      w[row + j] = e;
      sum = f32(sum + e);
    }
    const inv = f32(1 / sum);
    for (let j = 0; j < t; j++) w[row + j] = w[row + j] * inv;
  }
}

/** Softmax of each column j over the queries 0..t-1 (the fault: each key's weights
 * sum to one, so later queries change earlier rows). Masked entries stay 0. */
function softmaxOverQueries(w, t, P) {
  for (let j = 0; j < t; j++) {
    let max = -Infinity;
    for (let i = 0; i < t; i++) max = Math.max(max, w[i * P + j]);
    let sum = 0;
    for (let i = 0; i < t; i++) {
      const e = f32(Math.exp(f32(w[i * P + j] - max)));
      w[i * P + j] = e;
      sum = f32(sum + e);
    }
    for (let i = 0; i < t; i++) w[i * P + j] = w[i * P + j] / sum;
  }
}

/** y[:, head] = weights @ v for the new rows, summing over keys in increasing order.
 * Masked keys (weight exactly 0) are skipped: adding ±0 never changes a sum, so the
 * bits are those of the engine's full sum. */
function mixValues(w, values, y, head, from, t, cfg) {
  const { d_model: d, n_heads: H, positions: P } = cfg;
  const dk = d / H;
  const off = head * dk;
  for (let i = from; i < t; i++) {
    const yi = (i - from) * d + off;
    const visible = cfg.attn.causal ? i + 1 : t;
    for (let c = 0; c < dk; c++) {
      let acc = 0;
      for (let j = 0; j < visible; j++) acc = f32(acc + f32(w[i * P + j] * values[j * d + off + c]));
      y[yi + c] = acc;
    }
  }
}

/** Multi-head attention for the new rows: x (n, d) → (n, d); caches k, v, weights. */
export function attention(model, block, x, n, from, state, l) {
  const cfg = model.cfg;
  const { d_model: d, n_heads: H, positions: P } = cfg;
  const t = from + n;
  const qkv = linear(model, x, n, block.qkv); // (n, 3d): q | k | v, each d wide
  if (model.rope) rotate(model, qkv, n, from);
  const keys = state.keys[l];
  const values = state.values[l];
  for (let r = 0; r < n; r++) {
    keys.set(qkv.subarray(r * 3 * d + d, r * 3 * d + 2 * d), (from + r) * d);
    values.set(qkv.subarray(r * 3 * d + 2 * d, r * 3 * d + 3 * d), (from + r) * d);
  }
  const y = new Float32Array(n * d); // heads side by side: head h in columns h·d_k ..
  for (let h = 0; h < H; h++) {
    const w = state.weights[l][h];
    const slope = model.choices.positions === "alibi" ? alibiSlope(h + 1, H) : 0;
    scores(qkv, keys, w, h, from, t, cfg, slope);
    if (cfg.attn.softmax === "queries") softmaxOverQueries(w, t, P);
    else softmaxOverKeys(w, from, t, P);
    // A head switched off still attends (its weights are drawn), but its output stays
    // zero: what the engine's intervention computes with the head's values set to zero.
    if (state.off?.has(`${l}.${h}`)) continue;
    mixValues(w, values, y, h, from, t, cfg);
  }
  return linear(model, y, n, block.out);
}

/** The position-wise MLP: d → d_mlp → d with GELU or ReLU. */
function mlp(model, block, x, n) {
  const u = linear(model, x, n, block.up); // (n, d_mlp)
  if (model.choices.activation === "relu") {
    for (let i = 0; i < u.length; i++) u[i] = u[i] > 0 ? u[i] : 0;
  } else {
    for (let i = 0; i < u.length; i++) u[i] = gelu(u[i]);
  }
  return linear(model, u, n, block.down); // (n, d)
}

/** Runs rows state.t .. ids.length-1 and returns their logits (rows, vocab). */
export function forward(model, ids, state) {
  const cfg = model.cfg;
  const d = cfg.d_model;
  const from = state.t;
  const t = ids.length;
  const n = t - from;
  if (t > cfg.positions) throw new Error(`${t} tokens, but the model has ${cfg.positions} positions`);
  if (from > 0 && !canExtend(cfg)) throw new Error("this model must recompute every row");
  // Token embeddings, and the position table's rows where there is a table: h (n, d).
  let h = new Float32Array(n * d);
  for (let r = 0; r < n; r++) {
    const tok = ids[from + r] * d;
    const pos = (from + r) * d;
    for (let c = 0; c < d; c++) {
      h[r * d + c] = model.pos ? model.tok[tok + c] + model.pos[pos + c] : model.tok[tok + c];
    }
  }
  model.blocks.forEach((block, l) => {
    const attend = (x) => attention(model, block, x, n, from, state, l);
    if (model.choices.norm === "pre") {
      // h + attn(ln1(h)), then h + mlp(ln2(h)).
      h = addInPlace(h, attend(norm(model, h, n, block.ln1)));
      h = addInPlace(h, mlp(model, block, norm(model, h, n, block.ln2), n));
    } else if (model.choices.norm === "post") {
      // ln1(h + attn(h)), then ln2(h + mlp(h)).
      h = norm(model, addInPlace(h, attend(h)), n, block.ln1);
      h = norm(model, addInPlace(h, mlp(model, block, h, n)), n, block.ln2);
    } else {
      h = addInPlace(h, attend(h));
      h = addInPlace(h, mlp(model, block, h, n));
    }
  });
  state.t = t;
  // The final norm (pre-norm models only) and the untied head: (n, vocab).
  return linear(model, model.lnF ? norm(model, h, n, model.lnF) : h, n, model.head);
}

/** weights[block][head][query][key] of the first t rows, as plain numbers. */
function weightsOf(model, state, t) {
  const P = model.cfg.positions;
  return state.weights.map((heads) =>
    heads.map((w) => Array.from({ length: t }, (_, i) => Array.from(w.subarray(i * P, i * P + t))))
  );
}

/** The attention of one full pass over `ids`, with the heads `off` switched off. */
export function attentionOf(model, ids, off = null) {
  const state = newState(model, off);
  forward(model, ids, state);
  return weightsOf(model, state, ids.length);
}


/* 6. Greedy decoding -------------------------------------------------------------- */

/** Index of the largest of the last row's logits; ties go to the first, as libtorch's
 * argmax documents ("the indices of the first maximal value"). */
function argmaxLastRow(logits, vocab) {
  const o = logits.length - vocab;
  let best = 0;
  for (let v = 1; v < vocab; v++) if (logits[o + v] > logits[o + best]) best = v;
  return best;
}

/** Letters and the separator in, then the argmax appended once per letter, as the
 * engine's `greedy`. Returns the output and the attention of one pass over
 * input | output (the last output token's row included). `off`: a Set of the heads
 * switched off, `"block.head"`, as an intervening run's `ablate` zeroes them. */
export function greedy(model, text, off = null) {
  const letters = lettersToIds(text);
  const n = letters.length;
  if (2 * n + 1 > model.cfg.positions) {
    const most = (model.cfg.positions - 1) >> 1;
    throw new Error(`at most ${most} letters fit in ${model.cfg.positions} positions`);
  }
  const ids = letters.concat([SEP]);
  const extend = canExtend(model.cfg);
  let state = newState(model, off);
  for (let step = 0; step < n; step++) {
    if (!extend) state = newState(model, off);
    ids.push(argmaxLastRow(forward(model, ids, state), model.cfg.vocab));
  }
  if (!extend) state = newState(model, off);
  forward(model, ids, state); // the rows of the last output token, for the heatmaps
  const output = ids.slice(n + 1).map(tokenChar).join("");
  return {
    input: text,
    output,
    correct: output === model.task.answer(text),
    want: model.task.answer(text),
    task: model.task,
    tokens: ids.map(tokenChar),
    weights: weightsOf(model, state, ids.length),
  };
}
