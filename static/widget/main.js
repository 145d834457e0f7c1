/* revtx-book: the chapter's live reversal widget.
 *
 * Owns every `.reverse-widget[data-models]` element on the page (markup from
 * templates/widget.html, styles in static/widget.css). The reader types letters a–j,
 * picks a trained model, and sees the model's greedy answer letter by letter and the
 * attention of every block and head, all computed here, in the page, from the weights
 * that `build` exports to models/ (manifest.json plus one <id>.bin per model).
 *
 * Modules (ES modules, no dependencies, no build step; this one is the entry point):
 *   tokens.js    ids 0–9 are a–j, 10 is `|`, 11 is `.`
 *   float32.js   f32 rounding, erf, GELU
 *   weights.js   manifest, gzip + byte-plane shuffled float32 files
 *   linear.js    linear layers: a small WebAssembly kernel, and the same in JavaScript
 *   model.js     a port of the engine's model (embeddings → blocks → norm → head) and
 *                greedy decoding, as its eval.rs `greedy`; no DOM
 *   draw.js      output letters, notes, attention heatmaps (canvas)
 *   main.js      lazy loading, events, live region, and window.revtxWidget, a small
 *                API for the browser test
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

import { drawHeatmaps, drawLetters, firstUntrained, lengthNote, part, verdictText } from "./draw.js";
import { attentionOf, greedy } from "./model.js";
import { loadManifest, loadModel } from "./weights.js";

/* 8. The widget -------------------------------------------------------------------- */


function setStatus(w, text, failed = false) {
  const status = part(w.root, "status");
  status.textContent = text;
  status.hidden = !text;
  w.root.classList.toggle("rw-failed", failed);
}

/** The heads switched off: a Set of `"block.head"`, for the model shown. */
function headsOff(w) {
  const boxes = w.root.querySelectorAll("input[data-rw-head]:checked");
  return new Set(Array.from(boxes, (b) => b.value));
}

/** One checkbox per head of `model` (block by block), built again when the shape of the
 * model changes; a head switched off stays off across models of one shape. */
function headBoxes(w, model) {
  const { n_layers: L, n_heads: H } = model.cfg;
  const shape = `${L}x${H}`;
  const fieldset = part(w.root, "heads");
  fieldset.hidden = false;
  if (w.headShape === shape) return;
  w.headShape = shape;
  const list = part(w.root, "head-list");
  list.replaceChildren();
  for (let b = 0; b < L; b++) {
    for (let h = 0; h < H; h++) {
      const label = document.createElement("label");
      label.className = "rw-head";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = `${b}.${h}`;
      box.dataset.rwHead = "";
      box.setAttribute("aria-describedby", `${w.root.id}-heads-help`);
      const text = document.createElement("span");
      text.textContent = `block ${b}, head ${h}`;
      label.append(box, text);
      list.append(label);
    }
  }
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
    headBoxes(w, model);
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
  const off = headsOff(w);
  const result = text ? greedy(model, text, off) : null;
  part(w.root, "result").hidden = !result;
  if (!result) {
    announce(w, "");
    return;
  }
  drawLetters(part(w.root, "letters"), result);
  const switched = off.size
    ? ` (with ${Array.from(off, (k) => `block ${k.split(".")[0]} head ${k.split(".")[1]}`).join(", ")} switched off)`
    : "";
  part(w.root, "verdict").textContent = verdictText(result) + switched;
  part(w.root, "verdict").className = `rw-verdict ${result.correct ? "is-right" : "is-wrong"}`;
  w.shown = { result, untrainedFrom: firstUntrained(entry) };
  redraw(w);
  announce(w, `${entry.label}: ${Array.from(result.output).join(" ")}. ${verdictText(result)}${switched}`);
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
    headShape: null, // "blocks x heads" of the head checkboxes built
  };
  root.classList.add("rw-ready");
  setStatus(w, ""); // the note for readers without JavaScript
  part(root, "form").addEventListener("submit", (e) => e.preventDefault());
  const wake = () => (w.active ? update(w) : activate(w));
  part(root, "input").addEventListener("input", wake);
  root.addEventListener("change", (e) => {
    if (e.target.matches("input[data-rw-model], input[data-rw-head]")) wake();
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
 * load(id) → Promise; decode(id, text, off) → {output, correct, tokens, weights};
 * attention(id, tokenIds, off) → weights[block][head][query][key]; manifest() → Promise.
 * `off` lists the heads switched off as "block.head" ("0.1"); leave it out for none.
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
  decode: (id, text, off = []) => greedy(loaded(id), text, new Set(off)),
  attention: (id, tokenIds, off = []) => attentionOf(loaded(id), tokenIds, new Set(off)),
};

function boot() {
  const widgets = Array.from(document.querySelectorAll(".reverse-widget[data-models]"), setUp);
  if (widgets.length) onThemeChange(() => widgets.forEach(redraw));
}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
