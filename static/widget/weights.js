/* revtx-book widget: Weights: the manifest, and each model's gzip + byte-plane shuffled float32 file,
 * loaded once and built into named views (`buildModel`). */

import { prepareErf } from "./float32.js";
import { wasmKernel } from "./linear.js";
import { choicesOf, greedy, ropeTables, sinusoidalTable } from "./model.js";
import { taskOf } from "./tokens.js";

/* 3. Weights ------------------------------------------------------------------ */

const manifests = new Map(); // manifest URL -> Promise<manifest>
export const models = new Map(); // manifest URL + "#" + id -> Promise<model>

export function loadManifest(url) {
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
export async function unpack(response, length) {
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
export function unshuffle(planes, floats) {
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

export function loadModel(manifestUrl, id) {
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
export function buildModel(entry, values) {
  const cfg = entry.config;
  prepareErf();
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
  const choices = choicesOf(cfg);
  // A layer norm has a scale and a shift, an RMS norm a scale only; a block without
  // norms has neither, and only a pre-norm model has a final norm.
  const norm = (name) =>
    choices.norm === "none"
      ? null
      : choices.normKind === "rms"
        ? { w: tensor(`${name}.weight`, [d]).data }
        : { w: tensor(`${name}.weight`, [d]).data, b: tensor(`${name}.bias`, [d]).data };
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
  const positions = {
    learned: () => tensor("pos.weight", [cfg.positions, d]).data,
    sinusoidal: () => sinusoidalTable(cfg.positions, d),
  }[choices.positions];
  return {
    entry,
    cfg,
    choices,
    task: taskOf(entry),
    kernel,
    tok: tensor("tok.weight", [cfg.vocab, d]).data,
    pos: positions ? positions() : null, // added to the tokens; rope and alibi act in attention
    rope: choices.positions === "rope" ? ropeTables(cfg.positions, d / cfg.n_heads) : null,
    blocks,
    lnF: choices.norm === "pre" ? norm("ln_f") : null,
    head: linear("head", d, cfg.vocab),
  };
}
