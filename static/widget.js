/* revtx-book: the chapter's live reversal widget (issue 13).
 *
 * Owns every `.reverse-widget[data-models]` element on the page (markup from
 * templates/widget.html, styles in static/widget.css). The reader types letters a–j,
 * picks a trained model, and sees the model's greedy answer letter by letter and the
 * attention of every block and head, all computed here, in the page, from the weights
 * that `build` exports to models/ (manifest.json plus one <id>.bin per model).
 *
 * Sections:
 *   1. Tokens                  ids 0–9 are a–j, 10 is `|`, 11 is `.`
 *   2. Float32 arithmetic      f32 rounding, erf, the engine's GELU
 *   3. Weights                 manifest, gzip + byte-plane shuffled float32 files
 *   4. Linear layers           a small WebAssembly kernel, and the same in JavaScript
 *   5. The model               a port of the engine's model/ (embeddings → blocks → norm → head)
 *   6. Greedy decoding         as the engine's eval.rs `greedy`
 *   7. Drawing                 output letters, notes, attention heatmaps (canvas)
 *   8. The widget              lazy loading, events, live region
 *   9. window.revtxWidget      a small API for the browser test
 *
 * Numerics: activations live in Float32Array and every arithmetic step is rounded to
 * float32 (Math.fround, or a store into a Float32Array). The engine computes the chapter's
 * runs with kernels of its own (crates/revtx-engine/src/model/kernels/); this port follows
 * the same mathematics to about one float32 ulp per operation, not bit for bit:
 *   - linear layers: the engine chains fused multiply-adds over k in increasing order
 *     (gemm.cpp); here each output sums its exact products in float64 and rounds once;
 *   - attention: the engine sums each q·k in eight lanes that meet in a fixed tree
 *     (attention.h); here the products are added in increasing k, each rounded first. The
 *     weighted sum of the values adds rows in increasing order, each product rounded, in
 *     both; the division by √d_k is one float32 division in both;
 *   - softmax: the engine's own exponential (Cody–Waite reduction and a degree-5
 *     polynomial, lanes.h) summed in eight lanes; here Math.exp (float64) rounded to
 *     float32, summed in order;
 *   - GELU: the engine's erfc approximation (absolute error under 2.2e-8, gelu.cpp); here
 *     the exact erf form with erf in float64 (to about 3e-15), rounded;
 *   - LayerNorm: the engine sums in eight lanes, in two passes (layer_norm.cpp); here mean
 *     and variance are computed in float64 and rounded once.
 * The browser test checks that the reference model's decodes agree with the engine's on
 * every test string and that the attention weights agree within 1e-5.
 */
(function () {
  "use strict";

  /* 1. Tokens ---------------------------------------------------------------- */

  const LETTERS = "abcdefghij";
  const SEP = 10;
  const PAD = 11;

  function tokenChar(id) {
    if (id >= 0 && id < LETTERS.length) return LETTERS[id];
    return id === SEP ? "|" : id === PAD ? "." : "?";
  }

  /** Letter ids of a string of a–j (other characters are an error). */
  function lettersToIds(text) {
    const ids = [];
    for (const ch of text) {
      const id = LETTERS.indexOf(ch);
      if (id < 0) throw new Error(`"${ch}" is not one of the letters a–j`);
      ids.push(id);
    }
    return ids;
  }

  function reversed(text) {
    return Array.from(text).reverse().join("");
  }

  /* 2. Float32 arithmetic ------------------------------------------------------ */

  const f32 = Math.fround;
  const SQRT1_2_F32 = f32(Math.SQRT1_2);
  const TWO_OVER_SQRT_PI = 2 / Math.sqrt(Math.PI);

  /** erf in float64, slowly but to about 3e-15: its Maclaurin series near zero,
   * the continued fraction of erfc further out. Used only to build `erfTable`. */
  function erfSeries(x) {
    const a = Math.abs(x);
    if (a < 2.5) {
      // erf x = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
      const x2 = x * x;
      let term = x; // (-1)^n x^(2n+1) / n!
      let sum = x;
      for (let n = 1; n < 80; n++) {
        term *= -x2 / n;
        const next = term / (2 * n + 1);
        sum += next;
        if (Math.abs(next) <= 1e-17 * Math.abs(sum)) break;
      }
      return TWO_OVER_SQRT_PI * sum;
    }
    // erfc a = exp(-a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + 2/(a + …))))),
    // evaluated from the tail inwards.
    let frac = a;
    for (let k = 80; k >= 1; k--) frac = a + k / 2 / frac;
    const erfc = Math.exp(-a * a) / (Math.sqrt(Math.PI) * frac);
    return Math.sign(x) * (1 - erfc);
  }

  // erf by Taylor series around the nearest point of a grid of step 1/16 on [0, 6]:
  // erf(x₀ + h) = erf x₀ + Σₙ cₙ hⁿ, cₙ = (2/√π) e^(−x₀²) (−1)ⁿ⁻¹ Hₙ₋₁(x₀) / n!
  // (Hₙ the Hermite polynomials, Hₙ₊₁ = 2x Hₙ − 2n Hₙ₋₁). With |h| ≤ 1/32 twelve terms
  // leave a remainder far below 1e-16, so this is as accurate as erfSeries and costs
  // twelve multiply-adds. The table is built with the first model.
  const ERF_STEPS = 16;
  const ERF_LIMIT = 6; // erfc(6) ≈ 2e-17: erf is ±1 in float64 beyond
  const ERF_TERMS = 12;
  let erfTable = null; // per grid point: erf x₀, then c₁ .. c₁₂; built by buildModel

  function buildErfTable() {
    const points = ERF_LIMIT * ERF_STEPS + 1;
    const table = new Float64Array(points * (ERF_TERMS + 1));
    for (let k = 0; k < points; k++) {
      const x0 = k / ERF_STEPS;
      const row = k * (ERF_TERMS + 1);
      table[row] = erfSeries(x0);
      const scale = TWO_OVER_SQRT_PI * Math.exp(-x0 * x0);
      let hPrev = 0; // H₋₁, unused
      let h = 1; // H₀
      let factorial = 1;
      for (let n = 1; n <= ERF_TERMS; n++) {
        factorial *= n;
        table[row + n] = (scale * (n % 2 === 1 ? h : -h)) / factorial; // uses Hₙ₋₁
        const next = 2 * x0 * h - 2 * (n - 1) * hPrev; // Hₙ
        hPrev = h;
        h = next;
      }
    }
    return table;
  }

  function erf(x) {
    const a = Math.abs(x);
    if (!(a < ERF_LIMIT)) return a === a ? Math.sign(x) : NaN;
    const k = Math.round(a * ERF_STEPS);
    const h = a - k / ERF_STEPS;
    const row = k * (ERF_TERMS + 1);
    let poly = 0;
    for (let n = ERF_TERMS; n >= 1; n--) poly = (poly + erfTable[row + n]) * h;
    const value = erfTable[row] + poly;
    return x < 0 ? -value : value;
  }

  /** GELU, exact erf form: (x · 0.5) · (1 + erf(x · √½)), each step rounded to float32. */
  function gelu(x) {
    const half = f32(x * 0.5);
    const e = f32(erf(f32(x * SQRT1_2_F32)));
    return f32(half * f32(1 + e));
  }

  /* 3. Weights ------------------------------------------------------------------ */

  const manifests = new Map(); // manifest URL -> Promise<manifest>
  const models = new Map(); // manifest URL + "#" + id -> Promise<model>

  function loadManifest(url) {
    if (!manifests.has(url)) {
      const p = fetch(url)
        .then((r) => {
          if (!r.ok) throw new Error(`${r.status} for ${url}`);
          return r.json();
        })
        .then((m) => {
          if (m.format !== 1) throw new Error(`unknown manifest format ${m.format}`);
          return m;
        });
      p.catch(() => manifests.delete(url)); // a later try may succeed
      manifests.set(url, p);
    }
    return manifests.get(url);
  }

  function modelEntry(manifest, id) {
    const entry = manifest.models.find((m) => m.id === id);
    if (!entry) throw new Error(`no model "${id}" in the manifest`);
    return entry;
  }

  /** The shuffled bytes of a model file: gunzipped, unless the body already has the
   * unpacked length (a server that sent the file with Content-Encoding: gzip, which the
   * browser has undone for us). */
  async function unpack(response, length) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (bytes.length === length) return bytes;
    if (typeof DecompressionStream !== "function") {
      throw new Error("this browser has no DecompressionStream to unpack the weights");
    }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

  /** Undoes the byte-plane shuffle: plane p holds byte p of every float (little-endian). */
  function unshuffle(planes, floats) {
    if (planes.length !== floats * 4) {
      throw new Error(`weights hold ${planes.length} bytes, expected ${floats * 4}`);
    }
    const bytes = new Uint8Array(floats * 4);
    for (let p = 0; p < 4; p++) {
      const plane = planes.subarray(p * floats, (p + 1) * floats);
      for (let i = 0; i < floats; i++) bytes[4 * i + p] = plane[i];
    }
    if (LITTLE_ENDIAN) return new Float32Array(bytes.buffer);
    const view = new DataView(bytes.buffer);
    return Float32Array.from({ length: floats }, (_, i) => view.getFloat32(4 * i, true));
  }

  // Decoded once as each model loads, so that the JIT has compiled the JavaScript parts
  // of the forward pass before the reader's first decode (a cold first decode spends
  // most of its time in the interpreter and takes several times longer).
  const WARM_UP = "abcdef";

  function loadModel(manifestUrl, id) {
    const key = `${manifestUrl}#${id}`;
    if (!models.has(key)) {
      const p = loadManifest(manifestUrl).then(async (manifest) => {
        const entry = modelEntry(manifest, id);
        const url = new URL(entry.file, manifestUrl).href;
        const r = await fetch(url);
        if (!r.ok) throw new Error(`${r.status} for ${url}`);
        const model = buildModel(entry, unshuffle(await unpack(r, 4 * entry.floats), entry.floats));
        greedy(model, WARM_UP);
        return model;
      });
      p.catch(() => models.delete(key));
      models.set(key, p);
    }
    return models.get(key);
  }

  /** Named views into the weights, checked against the shapes the config implies. The
   * values are copied into the WebAssembly kernel's memory when there is one, so the
   * linear layers can read them there. */
  function buildModel(entry, values) {
    const cfg = entry.config;
    erfTable ??= buildErfTable();
    const kernel = wasmKernel(values.length, cfg);
    if (kernel) {
      kernel.heap.set(values, 0);
      values = kernel.heap.subarray(0, values.length);
    }
    const byName = new Map();
    for (const t of entry.tensors) {
      const size = t.shape.reduce((a, b) => a * b, 1);
      if (t.offset + size > values.length) throw new Error(`tensor ${t.name} runs past the file`);
      const data = values.subarray(t.offset, t.offset + size);
      byName.set(t.name, { shape: t.shape, offset: t.offset, data });
    }
    const tensor = (name, shape) => {
      const t = byName.get(name);
      if (!t) throw new Error(`weights lack ${name}`);
      if (t.shape.join("×") !== shape.join("×")) {
        throw new Error(`${name} is ${t.shape.join("×")}, expected ${shape.join("×")}`);
      }
      return t;
    };
    const d = cfg.d_model;
    const linear = (name, inDim, outDim) => {
      const w = tensor(`${name}.weight`, [outDim, inDim]); // (out, in), row-major
      const b = tensor(`${name}.bias`, [outDim]);
      return { w: w.data, b: b.data, wAt: 4 * w.offset, bAt: 4 * b.offset, inDim, outDim };
    };
    const norm = (name) => ({ w: tensor(`${name}.weight`, [d]).data, b: tensor(`${name}.bias`, [d]).data });
    const blocks = [];
    for (let i = 0; i < cfg.n_layers; i++) {
      const p = `blocks.${i}`;
      blocks.push({
        ln1: norm(`${p}.ln1`),
        qkv: linear(`${p}.attn.qkv`, d, 3 * d),
        out: linear(`${p}.attn.out`, d, d),
        ln2: norm(`${p}.ln2`),
        up: linear(`${p}.mlp.up`, d, cfg.d_mlp),
        down: linear(`${p}.mlp.down`, cfg.d_mlp, d),
      });
    }
    return {
      entry,
      cfg,
      kernel,
      tok: tensor("tok.weight", [cfg.vocab, d]).data,
      pos: tensor("pos.weight", [cfg.positions, d]).data,
      blocks,
      lnF: norm("ln_f"),
      head: linear("head", d, cfg.vocab),
    };
  }

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
  function wasmKernel(floats, cfg) {
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

  function linear(model, x, rows, p) {
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

  /* 5. The model ------------------------------------------------------------------
   *
   * Activations are row-major Float32Arrays, one row per token. `forward` computes rows
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

  function newState(model) {
    const { positions: P, d_model: d, n_heads: H } = model.cfg;
    return {
      t: 0, // rows computed so far
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

  /** Scores q·k of the new query rows against keys 0..t-1, for one head, into the rows
   * `from`..t-1 of w (positions × positions); keys after the query are -∞ under the mask. */
  function scores(q, keys, w, head, from, t, cfg) {
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
        w[i * P + j] = scale ? acc / divisor : acc;
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
  function attention(model, block, x, n, from, state, l) {
    const cfg = model.cfg;
    const { d_model: d, n_heads: H, positions: P } = cfg;
    const t = from + n;
    const qkv = linear(model, x, n, block.qkv); // (n, 3d): q | k | v, each d wide
    const keys = state.keys[l];
    const values = state.values[l];
    for (let r = 0; r < n; r++) {
      keys.set(qkv.subarray(r * 3 * d + d, r * 3 * d + 2 * d), (from + r) * d);
      values.set(qkv.subarray(r * 3 * d + 2 * d, r * 3 * d + 3 * d), (from + r) * d);
    }
    const y = new Float32Array(n * d); // heads side by side: head h in columns h·d_k ..
    for (let h = 0; h < H; h++) {
      const w = state.weights[l][h];
      scores(qkv, keys, w, h, from, t, cfg);
      if (cfg.attn.softmax === "queries") softmaxOverQueries(w, t, P);
      else softmaxOverKeys(w, from, t, P);
      mixValues(w, values, y, h, from, t, cfg);
    }
    return linear(model, y, n, block.out);
  }

  /** The position-wise MLP: d → d_mlp → d with GELU. */
  function mlp(model, block, x, n) {
    const u = linear(model, x, n, block.up); // (n, d_mlp)
    for (let i = 0; i < u.length; i++) u[i] = gelu(u[i]);
    return linear(model, u, n, block.down); // (n, d)
  }

  /** Runs rows state.t .. ids.length-1 and returns their logits (rows, vocab). */
  function forward(model, ids, state) {
    const cfg = model.cfg;
    const d = cfg.d_model;
    const from = state.t;
    const t = ids.length;
    const n = t - from;
    if (t > cfg.positions) throw new Error(`${t} tokens, but the model has ${cfg.positions} positions`);
    if (from > 0 && !canExtend(cfg)) throw new Error("this model must recompute every row");
    // Token and position embeddings: h (n, d).
    let h = new Float32Array(n * d);
    for (let r = 0; r < n; r++) {
      const tok = ids[from + r] * d;
      const pos = (from + r) * d;
      for (let c = 0; c < d; c++) h[r * d + c] = model.tok[tok + c] + model.pos[pos + c];
    }
    // Pre-norm blocks: h + attn(ln1(h)), then h + mlp(ln2(h)).
    model.blocks.forEach((block, l) => {
      h = addInPlace(h, attention(model, block, layerNorm(h, n, d, block.ln1), n, from, state, l));
      h = addInPlace(h, mlp(model, block, layerNorm(h, n, d, block.ln2), n));
    });
    state.t = t;
    // Final norm and the untied head: (n, vocab).
    return linear(model, layerNorm(h, n, d, model.lnF), n, model.head);
  }

  /** weights[block][head][query][key] of the first t rows, as plain numbers. */
  function weightsOf(model, state, t) {
    const P = model.cfg.positions;
    return state.weights.map((heads) =>
      heads.map((w) => Array.from({ length: t }, (_, i) => Array.from(w.subarray(i * P, i * P + t))))
    );
  }

  /** The attention of one full pass over `ids`. */
  function attentionOf(model, ids) {
    const state = newState(model);
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
   * input | output (the last output token's row included). */
  function greedy(model, text) {
    const letters = lettersToIds(text);
    const n = letters.length;
    if (2 * n + 1 > model.cfg.positions) {
      const most = (model.cfg.positions - 1) >> 1;
      throw new Error(`at most ${most} letters fit in ${model.cfg.positions} positions`);
    }
    const ids = letters.concat([SEP]);
    const extend = canExtend(model.cfg);
    let state = newState(model);
    for (let step = 0; step < n; step++) {
      if (!extend) state = newState(model);
      ids.push(argmaxLastRow(forward(model, ids, state), model.cfg.vocab));
    }
    if (!extend) state = newState(model);
    forward(model, ids, state); // the rows of the last output token, for the heatmaps
    const output = ids.slice(n + 1).map(tokenChar).join("");
    return {
      input: text,
      output,
      correct: output === reversed(text),
      tokens: ids.map(tokenChar),
      weights: weightsOf(model, state, ids.length),
    };
  }

  /* 7. Drawing ---------------------------------------------------------------------- */

  function el(tag, attrs = {}, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /** Fill opacity of a cell, as in the chapter's figure (src/book/figures/attention.rs). */
  function heatOpacity(w) {
    return 0.05 + 0.95 * Math.pow(Math.min(1, Math.max(0, w)), 0.75);
  }

  /** The output letter by letter, each marked right or wrong in symbol and in words. */
  function drawLetters(list, result) {
    const want = reversed(result.input);
    list.replaceChildren();
    Array.from(result.output).forEach((ch, i) => {
      const ok = ch === want[i];
      const li = el("li", { class: ok ? "rw-letter is-right" : "rw-letter is-wrong" });
      li.append(el("span", { class: "rw-char" }, ch));
      li.append(el("span", { class: "rw-mark", "aria-hidden": "true" }, ok ? "✓" : "✗"));
      li.append(el("span", { class: "visually-hidden" }, ok ? " right" : ` wrong, expected ${want[i]}`));
      list.append(li);
    });
  }

  function verdictText(result) {
    const want = reversed(result.input);
    if (result.correct) return `Right: ${result.input} reversed is ${want}.`;
    let wrong = 0;
    for (let i = 0; i < want.length; i++) wrong += result.output[i] === want[i] ? 0 : 1;
    return `Wrong at ${wrong} of ${want.length} positions: the reversal is ${want}.`;
  }

  const CELL = 12; // px per heatmap cell
  const AXIS = 14; // px for the token labels left of and under a heatmap

  /** The theme's colours and font at drawing time, taken from the legend's swatches
   * and the heatmap box as computed styles: a canvas cannot use CSS variables, and
   * computed colours come back resolved (rgb()), whatever the stylesheet wrote
   * (light-dark(), var(), a system colour). Redrawn after a theme change. */
  function heatmapStyle(root) {
    const css = (name) => getComputedStyle(part(root, name));
    const maps = css("maps");
    return {
      heat: css("ramp-full").backgroundColor,
      untrained: css("dash").borderTopColor,
      text: maps.color,
      font: `9px ${maps.fontFamily}`,
    };
  }

  /** One heatmap on a canvas, drawn like the chapter's figure: rows are queries, columns
   * keys, a cell's weight sets its opacity, masked cells stay blank; a dashed line marks
   * where the untrained positions begin, when they are in view. */
  function drawHeatmap(canvas, tokens, matrix, untrainedFrom, style) {
    const n = tokens.length;
    const side = n * CELL;
    const [x0, y0] = [AXIS, 1]; // top-left corner of the grid
    const width = x0 + side + 2;
    const height = y0 + side + AXIS;
    const ratio = window.devicePixelRatio || 1;
    const ctx = canvas.getContext("2d");
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio); // resizing also clears
      canvas.height = Math.round(height * ratio);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    } else {
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, canvas.width, canvas.height);
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = style.heat;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const w = matrix[i][j];
        if (!(w > 0)) continue; // masked (exactly zero) and non-finite cells stay blank
        ctx.globalAlpha = heatOpacity(w);
        ctx.fillRect(x0 + j * CELL, y0 + i * CELL, CELL, CELL);
      }
    }
    ctx.globalAlpha = 0.3;
    ctx.strokeStyle = style.text;
    ctx.lineWidth = 1;
    ctx.strokeRect(x0 + 0.5, y0 + 0.5, side - 1, side - 1);
    ctx.globalAlpha = 1;
    if (untrainedFrom < n) {
      const at = untrainedFrom * CELL;
      ctx.strokeStyle = style.untrained;
      ctx.lineWidth = 1.5;
      ctx.setLineDash([3, 2]);
      ctx.beginPath();
      ctx.moveTo(x0 + at, y0);
      ctx.lineTo(x0 + at, y0 + side);
      ctx.moveTo(x0, y0 + at);
      ctx.lineTo(x0 + side, y0 + at);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    ctx.fillStyle = style.text;
    ctx.font = style.font;
    tokens.forEach((tok, i) => {
      const mid = i * CELL + CELL / 2;
      ctx.textAlign = "right";
      ctx.textBaseline = "middle";
      ctx.fillText(tok, x0 - 3, y0 + mid);
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      ctx.fillText(tok, x0 + mid, y0 + side + 3);
    });
  }

  /** Words for one panel: for each row that predicts an output letter, its heaviest key. */
  function heatmapLabel(title, tokens, matrix) {
    const sep = tokens.indexOf("|");
    const rows = [];
    for (let i = Math.max(sep, 0); i < tokens.length - 1; i++) {
      let best = 0;
      for (let j = 1; j < tokens.length; j++) if (matrix[i][j] > matrix[i][best]) best = j;
      rows.push(`${tokens[i]} at ${i} looks at ${tokens[best]} at ${best} (${matrix[i][best].toFixed(2)})`);
    }
    return (
      `Attention weights, ${title}, over ${tokens.join(" ")}. ` +
      `Heaviest key of each row that predicts a letter: ${rows.join("; ")}.`
    );
  }

  /** One panel per block and head, reused from one input to the next. */
  function drawHeatmaps(root, result, untrainedFrom) {
    const box = part(root, "maps");
    const style = heatmapStyle(root);
    const panels = result.weights.flatMap((heads, l) =>
      heads.map((matrix, h) => ({ title: `block ${l + 1}, head ${h + 1}`, matrix }))
    );
    while (box.children.length > panels.length) box.lastElementChild.remove();
    panels.forEach(({ title, matrix }, k) => {
      if (!box.children[k]) {
        const panel = el("div", { class: "rw-map" });
        panel.append(el("p", { class: "rw-map-title", "aria-hidden": "true" }));
        panel.append(el("canvas", { class: "rw-canvas", role: "img" }));
        box.append(panel);
      }
      const [caption, canvas] = box.children[k].children;
      caption.textContent = title;
      canvas.setAttribute("aria-label", heatmapLabel(title, result.tokens, matrix));
      drawHeatmap(canvas, result.tokens, matrix, untrainedFrom, style);
    });
  }

  /** The first position row that never received a gradient: the manifest's
   * `first_untrained` (null: every row trained), or where the manifest does not say,
   * 2 × the longest training length (the last letter of the longest reversal has no
   * target, and under the causal mask nothing scored depends on later rows). */
  function firstUntrained(entry) {
    if (entry.first_untrained === null) return entry.config.positions;
    if (Number.isInteger(entry.first_untrained)) return entry.first_untrained;
    return 2 * Math.max(...entry.train_lengths);
  }

  /** A note on lengths outside training, or "" when the length is inside. */
  function lengthNote(entry, n) {
    const lo = Math.min(...entry.train_lengths);
    const hi = Math.max(...entry.train_lengths);
    if (n > 0 && n < lo) {
      return `This model trained on ${lo} to ${hi} letters; ${n} is shorter than anything it saw.`;
    }
    if (n <= hi) return "";
    const first = firstUntrained(entry);
    const last = entry.config.positions - 1;
    const reads = 2 * n - 1; // the last position the model reads while it writes the answer
    const intro = `This model trained on ${lo} to ${hi} letters, so ${n} is longer than anything it saw.`;
    if (first > last) {
      return (
        `${intro} Every row of its position table received some gradient in training, but ` +
        `from position ${2 * hi + 1} on they only ever held padding; reversing ${n} letters ` +
        `puts letters at positions up to ${reads}.`
      );
    }
    const used =
      reads >= first
        ? ` Reversing ${n} letters reads positions 0 to ${reads}, so rows ${first} to ${reads} are among them ` +
          `(right of and below the dashed lines in the heatmaps).`
        : "";
    return (
      `${intro} Rows ${first} to ${last} of its position table never received a gradient: ` +
      `nothing the loss scored depended on them, so they still hold their random starting ` +
      `values, shrunk a little by weight decay.${used} What the model writes from there on ` +
      `comes from positions it knows nothing about.`
    );
  }

  /* 8. The widget -------------------------------------------------------------------- */

  function part(root, name) {
    return root.querySelector(`[data-rw="${name}"]`);
  }

  function setStatus(w, text, failed = false) {
    const status = part(w.root, "status");
    status.textContent = text;
    status.hidden = !text;
    w.root.classList.toggle("rw-failed", failed);
  }

  function selectedModel(w) {
    const checked = w.root.querySelector('input[type="radio"][data-rw-model]:checked');
    return checked ? checked.value : null;
  }

  /** Keeps only a–j in the text box (lower-casing A–J) and says when it dropped something. */
  function cleanInput(w) {
    const input = part(w.root, "input");
    const raw = input.value;
    const lower = raw.toLowerCase();
    const clean = lower.replace(/[^a-j]/g, "");
    if (clean !== raw) {
      const caret = Math.max(0, (input.selectionStart ?? clean.length) - (raw.length - clean.length));
      input.value = clean;
      input.setSelectionRange(caret, caret);
    }
    part(w.root, "hint").textContent = clean === lower ? "" : "Only the letters a to j are used.";
    return clean;
  }

  /** Decodes the current text with the chosen model and redraws everything. */
  async function update(w) {
    const text = cleanInput(w);
    const id = selectedModel(w);
    const ticket = ++w.ticket;
    if (!id) return;
    try {
      if (!w.loaded.has(id)) setStatus(w, "Loading the model’s weights…");
      const model = await loadModel(w.manifestUrl, id);
      w.loaded.add(id);
      if (ticket !== w.ticket) return; // a newer update has started
      setStatus(w, "");
      render(w, model, text);
    } catch (e) {
      if (ticket === w.ticket) setStatus(w, failure(e), true);
    }
  }

  function failure(e) {
    return (
      `The trained models could not be loaded or run (${e.message}). ` +
      "The rest of the chapter works without them."
    );
  }

  function render(w, model, text) {
    const entry = model.entry;
    const note = part(w.root, "note");
    note.textContent = lengthNote(entry, text.length);
    note.hidden = !note.textContent;
    const result = text ? greedy(model, text) : null;
    part(w.root, "result").hidden = !result;
    if (!result) {
      announce(w, "");
      return;
    }
    drawLetters(part(w.root, "letters"), result);
    part(w.root, "verdict").textContent = verdictText(result);
    part(w.root, "verdict").className = `rw-verdict ${result.correct ? "is-right" : "is-wrong"}`;
    w.shown = { result, untrainedFrom: firstUntrained(entry) };
    redraw(w);
    announce(w, `${entry.label}: ${Array.from(result.output).join(" ")}. ${verdictText(result)}`);
  }

  /** Draws the heatmaps of the current result again (also after a theme change). */
  function redraw(w) {
    if (w.shown) drawHeatmaps(w.root, w.shown.result, w.shown.untrainedFrom);
  }

  /** Calls `callback` when the page's theme may have changed: the reader's toggle
   * (html[data-theme]) or the system's colour scheme. */
  function onThemeChange(callback) {
    new MutationObserver(callback).observe(document.documentElement, {
      attributes: true,
      attributeFilter: ["data-theme", "class"],
    });
    window.matchMedia?.("(prefers-color-scheme: dark)").addEventListener?.("change", callback);
  }

  /** Polite live-region message, after typing pauses, so each keystroke is not read out. */
  function announce(w, text) {
    clearTimeout(w.announceTimer);
    w.announceTimer = setTimeout(() => {
      part(w.root, "live").textContent = text;
    }, 500);
  }

  function activate(w) {
    if (w.active) return;
    w.active = true;
    w.observer?.disconnect();
    w.stopWatching?.();
    setStatus(w, "Loading the trained models…");
    loadManifest(w.manifestUrl)
      .then((manifest) => {
        const input = part(w.root, "input");
        // 2n + 1 tokens must fit the positions: 12 letters for 25.
        input.maxLength = Math.min(...manifest.models.map((m) => (m.config.positions - 1) >> 1));
        if (!input.value && document.activeElement !== input) {
          input.value = manifest.models[0]?.attention?.input || ""; // fgcabe, as the figure
        }
        return update(w);
      })
      .catch((e) => setStatus(w, failure(e), true));
  }

  function setUp(root) {
    const w = {
      root,
      manifestUrl: new URL(root.dataset.models, document.baseURI).href,
      active: false,
      ticket: 0,
      loaded: new Set(),
      announceTimer: 0,
      observer: null,
      stopWatching: null, // ends the wait for the page to rest near the box
      shown: null, // {result, untrainedFrom} on the screen now
    };
    root.classList.add("rw-ready");
    setStatus(w, ""); // the note for readers without JavaScript
    part(root, "form").addEventListener("submit", (e) => e.preventDefault());
    const wake = () => (w.active ? update(w) : activate(w));
    part(root, "input").addEventListener("input", wake);
    root.addEventListener("change", (e) => {
      if (e.target.matches("input[data-rw-model]")) wake();
    });
    root.addEventListener("focusin", () => activate(w));
    if ("IntersectionObserver" in window) {
      // Wake only once the page rests with the box near the viewport: a reader (or a smooth
      // scroll to an anchor) passing by neither downloads the models nor has the page grow
      // under a scroll whose target was computed before the box filled in.
      const margin = 400;
      const near = () => {
        const r = root.getBoundingClientRect();
        return r.bottom > -margin && r.top < window.innerHeight + margin;
      };
      let quiet = 0;
      const whenStill = () => {
        clearTimeout(quiet);
        quiet = setTimeout(() => near() && activate(w), 250);
      };
      w.stopWatching = () => {
        clearTimeout(quiet);
        window.removeEventListener("scroll", whenStill);
      };
      w.observer = new IntersectionObserver(
        (entries) => {
          if (entries.some((e) => e.isIntersecting)) {
            whenStill();
            window.addEventListener("scroll", whenStill, { passive: true });
          } else {
            w.stopWatching();
          }
        },
        { rootMargin: `${margin}px 0px` }
      );
      w.observer.observe(root);
    } else {
      activate(w);
    }
    return w;
  }

  /* 9. window.revtxWidget --------------------------------------------------------------
   * load(id) → Promise; decode(id, text) → {output, correct, tokens, weights};
   * attention(id, tokenIds) → weights[block][head][query][key]; manifest() → Promise.
   * They use the first widget's manifest, and decode/attention need load(id) first. */

  const ready = new Map(); // model id -> model, for the synchronous calls

  function firstManifestUrl() {
    const root = document.querySelector(".reverse-widget[data-models]");
    if (!root) throw new Error("no .reverse-widget[data-models] on this page");
    return new URL(root.dataset.models, document.baseURI).href;
  }

  function loaded(id) {
    const model = ready.get(id);
    if (!model) throw new Error(`model "${id}" is not loaded: call revtxWidget.load("${id}") first`);
    return model;
  }

  window.revtxWidget = {
    manifest: () => loadManifest(firstManifestUrl()),
    load: (id) =>
      loadModel(firstManifestUrl(), id).then((model) => {
        ready.set(id, model);
      }),
    decode: (id, text) => greedy(loaded(id), text),
    attention: (id, tokenIds) => attentionOf(loaded(id), tokenIds),
  };

  function boot() {
    const widgets = Array.from(document.querySelectorAll(".reverse-widget[data-models]"), setUp);
    if (widgets.length) onThemeChange(() => widgets.forEach(redraw));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
  else boot();
})();
