/* revtx-book widget: Drawing: output letters, notes and attention heatmaps (canvas). */


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
export function drawLetters(list, result) {
  const want = result.want;
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

export function verdictText(result) {
  const { want, task } = result;
  if (result.correct) return `Right: ${result.input} ${task.done} is ${want}.`;
  let wrong = 0;
  for (let i = 0; i < want.length; i++) wrong += result.output[i] === want[i] ? 0 : 1;
  return `Wrong at ${wrong} of ${want.length} positions: ${task.what} is ${want}.`;
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
export function drawHeatmaps(root, result, untrainedFrom) {
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
export function firstUntrained(entry) {
  if (entry.first_untrained === null) return entry.config.positions;
  if (Number.isInteger(entry.first_untrained)) return entry.first_untrained;
  return 2 * Math.max(...entry.train_lengths);
}

/** What a model without a learned table knows of positions (the engine's
 * `PositionEncoding`), for the note on lengths. */
const POSITION_WORDS = {
  sinusoidal: "it adds a fixed pattern of sines and cosines to each position, the same at any length.",
  rope: "it turns each head's queries and keys by an angle that grows with the position, so scores depend on how far apart two tokens are.",
  alibi: "each head subtracts from every score a penalty that grows with the distance between query and key.",
  none: "nothing tells it where a token is, except what the causal mask lets each position see.",
};

/** A note on lengths outside training, or "" when the length is inside. */
export function lengthNote(entry, n) {
  const lo = Math.min(...entry.train_lengths);
  const hi = Math.max(...entry.train_lengths);
  if (n > 0 && n < lo) {
    return `This model trained on ${lo} to ${hi} letters; ${n} is shorter than anything it saw.`;
  }
  if (n <= hi) return "";
  const kind = entry.config.position_encoding ?? "learned";
  if (kind !== "learned") {
    return (
      `This model trained on ${lo} to ${hi} letters, so ${n} is longer than anything it saw. ` +
      `It has no table of trained positions: ${POSITION_WORDS[kind]}`
    );
  }
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


export function part(root, name) {
  return root.querySelector(`[data-rw="${name}"]`);
}
