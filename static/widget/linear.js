/* revtx-book widget: Linear layers: a small WebAssembly kernel, and the same sum in JavaScript. */

import { f32 } from "./float32.js";

/* 4. Linear layers ----------------------------------------------------------------
 *
 * y = x Wᵀ + b: x (rows, in) → (rows, out), W stored (out, in). Each output's products
 * are exact in float64 (two float32 factors), are summed in float64 in increasing index
 * order and rounded once to float32: within about one ulp of the engine's fused
 * multiply-add chain (see the header), and it is what both kernels below compute.
 *
 * The linear layers are 96% of the arithmetic, so they run in a tiny WebAssembly
 * function, assembled here from its opcodes: it is fast from its first call, where
 * JavaScript would first be interpreted until the JIT has compiled it. Where
 * WebAssembly is missing or refused, `linearJs` computes the same bits.
 */

const WASM = {
  i32: 0x7f, f64: 0x7c, void: 0x40, func: 0x60,
  block: 0x02, loop: 0x03, br: 0x0c, brIf: 0x0d, end: 0x0b,
  get: 0x20, set: 0x21, f32Load: 0x2a, f32Store: 0x38, i32Const: 0x41, f64Const: 0x44,
  i32GeU: 0x4f, i32Add: 0x6a, i32Mul: 0x6c, i32Shl: 0x74,
  f64Add: 0xa0, f64Mul: 0xa2, f32Demote: 0xb6, f64Promote: 0xbb,
};

function uleb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

const wasmVector = (items) => [...uleb(items.length), ...items.flat()];
const wasmName = (text) => wasmVector(Array.from(text, (c) => c.charCodeAt(0)));
const wasmSection = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];

/** The body of `linear(x, w, b, y, rows, in, out)` (addresses in bytes):
 *
 *   for (r = 0; r < rows; r++)
 *     for (o = 0; o < out; o++) {
 *       acc = 0.0; xp = x + 4·r·in; wp = w + 4·o·in;
 *       for (i = 0; i < in; i++) { acc += f64(*xp) · f64(*wp); xp += 4; wp += 4; }
 *       y[r·out + o] = f32(acc + f64(b[o]));
 *     }
 */
function linearBody() {
  const W = WASM;
  const [x, w, b, y, rows, inDim, outDim, r, o, i, xp, wp, acc] = Array.from({ length: 13 }, (_, k) => k);
  const forLoop = (k, n, body) => [
    W.i32Const, 0, W.set, k,
    W.block, W.void, W.loop, W.void,
    W.get, k, W.get, n, W.i32GeU, W.brIf, 1, // leave when k >= n
    ...body,
    W.get, k, W.i32Const, 1, W.i32Add, W.set, k, W.br, 0,
    W.end, W.end,
  ];
  const address = (base, index, stride) => [
    W.get, base, W.get, index, ...(stride === null ? [] : [W.get, stride, W.i32Mul]),
    W.i32Const, 2, W.i32Shl, W.i32Add, // base + 4·index·stride
  ];
  const step = (ptr) => [W.get, ptr, W.i32Const, 4, W.i32Add, W.set, ptr];
  const load = (ptr) => [W.get, ptr, W.f32Load, 2, 0, W.f64Promote];
  const dot = [
    W.get, acc, ...load(xp), ...load(wp), W.f64Mul, W.f64Add, W.set, acc,
    ...step(xp), ...step(wp),
  ];
  const output = [
    W.f64Const, 0, 0, 0, 0, 0, 0, 0, 0, W.set, acc,
    ...address(x, r, inDim), W.set, xp,
    ...address(w, o, inDim), W.set, wp,
    ...forLoop(i, inDim, dot),
    W.get, y, W.get, r, W.get, outDim, W.i32Mul, W.get, o, W.i32Add, W.i32Const, 2, W.i32Shl, W.i32Add,
    W.get, acc, ...address(b, o, null), W.f32Load, 2, 0, W.f64Promote, W.f64Add, W.f32Demote,
    W.f32Store, 2, 0,
  ];
  const locals = wasmVector([[...uleb(5), W.i32], [...uleb(1), W.f64]]); // r o i xp wp; acc
  return [...locals, ...forLoop(r, rows, forLoop(o, outDim, output)), W.end];
}

/** A module importing its memory as m.memory and exporting `linear`. */
function linearModuleBytes() {
  const W = WASM;
  const body = linearBody();
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
    // type 0: seven i32 parameters, no result
    ...wasmSection(1, wasmVector([[W.func, ...wasmVector(Array(7).fill(W.i32)), 0]])),
    // import m.memory, at least one page
    ...wasmSection(2, wasmVector([[...wasmName("m"), ...wasmName("memory"), 0x02, 0x00, 0x01]])),
    ...wasmSection(3, wasmVector([[0]])), // one function of type 0
    ...wasmSection(7, wasmVector([[...wasmName("linear"), 0x00, 0]])), // export it
    ...wasmSection(10, wasmVector([[...uleb(body.length), ...body]])), // its code
  ]);
}

let linearModule; // compiled once: a WebAssembly.Module, or null where refused

/** A kernel with room for `floats` weights and one input and one output of the widest
 * layer, or null without WebAssembly. */
export function wasmKernel(floats, cfg) {
  if (linearModule === undefined) {
    try {
      linearModule = new WebAssembly.Module(linearModuleBytes());
    } catch (e) {
      linearModule = null;
    }
  }
  if (!linearModule) return null;
  const widest = Math.max(3 * cfg.d_model, cfg.d_mlp, cfg.vocab) * cfg.positions;
  const bytes = 4 * (floats + 2 * widest);
  const memory = new WebAssembly.Memory({ initial: Math.ceil(bytes / 65536) });
  const instance = new WebAssembly.Instance(linearModule, { m: { memory } });
  return {
    heap: new Float32Array(memory.buffer), // never grown, so the views stay valid
    run: instance.exports.linear,
    xAt: 4 * floats,
    yAt: 4 * (floats + widest),
  };
}

export function linear(model, x, rows, p) {
  const k = model.kernel;
  if (!k) return linearJs(x, rows, p);
  k.heap.set(x.subarray(0, rows * p.inDim), k.xAt / 4);
  k.run(k.xAt, p.wAt, p.bAt, k.yAt, rows, p.inDim, p.outDim);
  return k.heap.slice(k.yAt / 4, k.yAt / 4 + rows * p.outDim);
}

/** The same in JavaScript, for browsers without WebAssembly: the same sums in the same
 * order, so the same bits. Four outputs share each load of x. */
function linearJs(x, rows, p) {
  const { w, b, inDim, outDim } = p;
  const y = new Float32Array(rows * outDim);
  const whole = outDim - (outDim % 4);
  for (let r = 0; r < rows; r++) {
    const xr = r * inDim;
    const yr = r * outDim;
    for (let o = 0; o < whole; o += 4) {
      const w0 = o * inDim;
      const w1 = w0 + inDim;
      const w2 = w1 + inDim;
      const w3 = w2 + inDim;
      let a0 = 0;
      let a1 = 0;
      let a2 = 0;
      let a3 = 0;
      for (let i = 0; i < inDim; i++) {
        const xi = x[xr + i];
        a0 += xi * w[w0 + i];
        a1 += xi * w[w1 + i];
        a2 += xi * w[w2 + i];
        a3 += xi * w[w3 + i];
      }
      y[yr + o] = a0 + b[o]; // the stores round to float32
      y[yr + o + 1] = a1 + b[o + 1];
      y[yr + o + 2] = a2 + b[o + 2];
      y[yr + o + 3] = a3 + b[o + 3];
    }
    for (let o = whole; o < outDim; o++) {
      let acc = 0;
      for (let i = 0; i < inDim; i++) acc += x[xr + i] * w[o * inDim + i];
      y[yr + o] = acc + b[o];
    }
  }
  return y;
}
