// Browser checks of the reversal widget (static/widget/, templates/widget.html),
// called from widget.test.mjs:
//
//   import { testWidget } from "./widget.mjs";
//   await testWidget(page, { baseUrl: BASE, chapterUrl: CHAPTER, log: note, check, axeSource });
//
// page        a Playwright page (navigated here to the chapter page, resized and
//             throttled along the way, and left on the chapter page unthrottled)
// baseUrl     the site root as served (e.g. http://127.0.0.1:PORT/revtx-book/)
// chapterUrl  the page with the widget (default: chapter-1.html under baseUrl)
// log         prints a note line (harness.mjs `note`)
// check       `check(name, fn)`, a node:test subtest: fn throws to fail, returns a note to pass
// axeSource   optional axe.min.js source: when given, the loaded widget (heatmaps
//             drawn) is checked in both themes for serious/critical violations
// models      optional run ids: the page's widget must list exactly these, in this order
//             (without it, at least the reference model), and the site's manifest (every
//             widget's models) must hold them; the first is the one timed. Parity and
//             attention are checked for the page's models
//
// It checks that the models load lazily; that every model decodes the chapter's 500
// test and 200 long strings in the page exactly like the engine (models/decodes.json);
// that the in-page attention
// for the manifest's input (fgcabe) matches the engine's within 1e-5 for every model;
// that the widget works from the keyboard, switches a head off and on again, and fits a
// 390 px screen; and that a first
// decode takes under 50 ms with the CPU throttled 4×. The engine's attention is read
// from decodes.json's `<id>.attention` when it is there, else from the manifest.
// Measured on 2 busy cores: about 35 s in all, of which softq and nomask parity take
// 10–14 s each (those models recompute every row at every step).

const ATTENTION_TOLERANCE = 1e-5;
const FIRST_DECODE_BUDGET_MS = 50;
const THROTTLE = 4;
const DEFAULT_MODEL = "reference";
const WIDGET = ".reverse-widget[data-models]";
const LETTERS = '.reverse-widget [data-rw="letters"] .rw-char';

function fail(message, details) {
  const e = new Error(message);
  if (details) e.details = details;
  throw e;
}

/* ------------------------------------------------------------- loading */

/** Opens the chapter, scrolls the widget into view and waits until it has drawn.
 * `lazy`: whether nothing was fetched before (null when the widget starts so close to
 * the top that it may load at once). */
async function openWidget(page, chapterUrl) {
  await page.goto(chapterUrl, { waitUntil: "load", timeout: 30_000 });
  const widget = page.locator(WIDGET).first();
  if ((await widget.count()) === 0) fail(`no ${WIDGET} on the chapter page`);
  const start = await page.evaluate((sel) => {
    const top = document.querySelector(sel).getBoundingClientRect().top;
    const fetched = performance.getEntriesByType("resource").filter((r) => /\/models\//.test(r.name));
    return { far: top > window.innerHeight + 800, fetched: fetched.length };
  }, WIDGET);
  await widget.scrollIntoViewIfNeeded();
  await page.waitForFunction(
    (sel) => {
      const w = document.querySelector(sel);
      return !w.querySelector('[data-rw="result"]').hidden || w.classList.contains("rw-failed");
    },
    WIDGET,
    { timeout: 20_000 }
  );
  const failed = await page.evaluate((sel) => {
    const w = document.querySelector(sel);
    return w.classList.contains("rw-failed") && w.querySelector('[data-rw="status"]').textContent.trim();
  }, WIDGET);
  if (failed) fail(`the widget could not load its models: ${failed}`);
  return { lazy: start.far ? start.fetched === 0 : null };
}

/** The manifest and the engine's decodes, fetched in the page beside the widget's manifest. */
function fetchReferenceData(page) {
  return page.evaluate(async (sel) => {
    const url = new URL(document.querySelector(sel).dataset.models, document.baseURI);
    const get = async (u) => {
      const r = await fetch(u);
      if (!r.ok) throw new Error(`${r.status} for ${u}`);
      return r.json();
    };
    return { manifest: await get(url), decodes: await get(new URL("decodes.json", url)) };
  }, WIDGET);
}

/* -------------------------------------------------------------- parity */

/** Decodes every string of both sets in the page: agreement, first misses, time. */
function parityOf(page, id, sets) {
  return page.evaluate(
    async ({ id, sets }) => {
      await window.revtxWidget.load(id);
      const out = {};
      for (const [name, { inputs, outputs }] of Object.entries(sets)) {
        let agree = 0;
        const misses = [];
        const t0 = performance.now();
        inputs.forEach((s, i) => {
          const got = window.revtxWidget.decode(id, s).output;
          if (got === outputs[i]) agree++;
          else if (misses.length < 5) misses.push(`${s}: page ${got}, engine ${outputs[i]}`);
        });
        out[name] = { agree, total: inputs.length, misses, ms: (performance.now() - t0) / inputs.length };
      }
      return out;
    },
    { id, sets }
  );
}

/** Largest |page − engine| over the attention of the engine's input. */
function attentionDiff(page, id, engine) {
  return page.evaluate(
    async ({ id, tokens, weights }) => {
      await window.revtxWidget.load(id);
      const ids = tokens.map((c) => (c === "|" ? 10 : c === "." ? 11 : "abcdefghij".indexOf(c)));
      const mine = window.revtxWidget.attention(id, ids);
      let max = 0;
      weights.forEach((layer, l) =>
        layer.forEach((head, h) =>
          head.forEach((row, q) => row.forEach((v, k) => (max = Math.max(max, Math.abs(v - mine[l][h][q][k])))))
        )
      );
      return max;
    },
    { id, tokens: engine.tokens, weights: engine.weights }
  );
}

/* ------------------------------------------------------------ keyboard */

/** What the in-page model answers for `text`, for comparison with what is shown. */
function answerOf(page, id, text, off = []) {
  return page.evaluate(
    async ({ id, text, off }) => {
      await window.revtxWidget.load(id);
      return window.revtxWidget.decode(id, text, off).output;
    },
    { id, text, off }
  );
}

/** A head switched off in the page: one checkbox per head of the shown model, and
 * checking block 0's head 0 shows what the model answers without it (the numbers are
 * tests/node/widget-ablation.test.mjs's, against the engine), says so in the verdict,
 * and unchecking it gives the answer back. */
async function headsCheck(page) {
  const input = page.locator('.reverse-widget [data-rw="input"]').first();
  await input.fill("fgcabedh");
  const id = await checkedModel(page);
  const whole = await answerOf(page, id, "fgcabedh");
  await waitForShown(page, whole, `fgcabedh with ${id}`);
  const { blocks, heads } = await page.evaluate(async (id) => {
    const m = (await window.revtxWidget.manifest()).models.find((m) => m.id === id);
    return { blocks: m.config.n_layers, heads: m.config.n_heads };
  }, id);
  const boxes = page.locator(".reverse-widget input[data-rw-head]");
  const count = await boxes.count();
  if (count !== blocks * heads) fail(`${count} head switches for ${id}, which has ${blocks} blocks of ${heads} heads`);
  const box = page.locator('.reverse-widget input[data-rw-head][value="0.0"]');
  await box.check();
  const without = await answerOf(page, id, "fgcabedh", ["0.0"]);
  await waitForShown(page, without, `fgcabedh with ${id}'s block 0 head 0 switched off`);
  const verdict = await page.locator('.reverse-widget [data-rw="verdict"]').textContent();
  if (!/block 0 head 0 switched off/.test(verdict)) fail(`the verdict does not say the head is off: ${verdict}`);
  await box.uncheck();
  await waitForShown(page, whole, `fgcabedh with ${id}'s heads all on again`);
  return `${count} head switches; fgcabedh → ${whole}, without block 0 head 0 → ${without}`;
}

function checkedModel(page) {
  return page.evaluate(() => document.querySelector(".reverse-widget input[data-rw-model]:checked").value);
}

function shownLetters(page) {
  return page.evaluate((sel) => Array.from(document.querySelectorAll(sel), (e) => e.textContent).join(""), LETTERS);
}

async function waitForShown(page, want, what) {
  try {
    await page.waitForFunction(
      ({ sel, want }) => Array.from(document.querySelectorAll(sel), (e) => e.textContent).join("") === want,
      { sel: LETTERS, want },
      { timeout: 10_000 }
    );
  } catch {
    fail(`${what}: the widget shows "${await shownLetters(page)}", expected "${want}"`);
  }
}

/** Types (a letter outside a–j is dropped with a hint), Tabs to the model picker, moves
 * the choice with the arrow keys, and types past the training lengths. */
async function keyboardCheck(page) {
  const input = page.locator('.reverse-widget [data-rw="input"]').first();
  await input.focus();
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.press("Backspace");
  await page.keyboard.type("hgfx", { delay: 20 });
  if ((await input.inputValue()) !== "hgf") fail(`typing "hgfx" left "${await input.inputValue()}" in the box`);
  const hint = await page.locator('.reverse-widget [data-rw="hint"]').textContent();
  if (!/a to j/.test(hint)) fail(`no hint after typing a letter outside a–j (hint: "${hint}")`);
  await page.keyboard.type("edcba", { delay: 20 });
  const first = await checkedModel(page);
  const firstOut = await answerOf(page, first, "hgfedcba");
  await waitForShown(page, firstOut, `after typing hgfedcba with ${first}`);

  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => document.activeElement?.matches("input[data-rw-model]") ?? false);
  if (!focused) fail("Tab from the text box does not reach the model picker");
  await page.keyboard.press("ArrowDown");
  const next = await checkedModel(page);
  if (next === first) fail(`ArrowDown left the model at ${first}`);
  const nextOut = await answerOf(page, next, "hgfedcba");
  await waitForShown(page, nextOut, `after ArrowDown to ${next}`);
  const label = await page.evaluate(
    async (id) => (await window.revtxWidget.manifest()).models.find((m) => m.id === id).label,
    next
  );
  await page
    .waitForFunction(
      (label) => document.querySelector('.reverse-widget [data-rw="live"]').textContent.startsWith(label),
      label,
      { timeout: 5_000 }
    )
    .catch(() => fail("the live region did not announce the new model's answer"));
  await page.keyboard.press("ArrowUp");

  await input.focus();
  await page.keyboard.press("End");
  await page.keyboard.type("abcd", { delay: 20 }); // 12 letters: past the training lengths
  const note = page.locator('.reverse-widget [data-rw="note"]');
  await note.waitFor({ state: "visible", timeout: 5_000 }).catch(() => fail("no note for a 12-letter input"));
  const text = await note.textContent();
  if (!/longer than anything it saw/.test(text) || !/position/.test(text)) fail(`the long-input note says: ${text}`);
  return [`typed hgfedcba: ${first} → ${firstOut}; ArrowDown → ${next} → ${nextOut}`, `12 letters: ${text.slice(0, 110)}…`];
}

/* ------------------------------------------------- phone, speed, axe */

/** The widest case (12 letters, 25 tokens) at 390 px: no sideways scrolling of the page. */
async function phoneCheck(page, chapterUrl) {
  await page.setViewportSize({ width: 390, height: 844 });
  await openWidget(page, chapterUrl);
  await page.locator('.reverse-widget [data-rw="input"]').first().fill("abcdefghijab");
  await page.locator(".reverse-widget input[data-rw-model]").last().check();
  await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 12, LETTERS, { timeout: 15_000 });
  const m = await page.evaluate((sel) => {
    const box = document.querySelector('.reverse-widget [data-rw="maps"]');
    return {
      page: document.scrollingElement.scrollWidth,
      view: window.innerWidth,
      right: Math.round(document.querySelector(sel).getBoundingClientRect().right),
      box: box.clientWidth,
      inner: box.scrollWidth,
    };
  }, WIDGET);
  if (m.page > m.view) fail(`the page scrolls sideways at 390 px: ${m.page} px wide`);
  if (m.right > m.view) fail(`the widget's right edge is at ${m.right} px`);
  return `page ${m.page} px; heatmap box ${m.box} px showing ${m.inner} px`;
}

/** Time of the first decode on a freshly loaded page (the model loaded, untimed), with
 * the CPU throttled: one try per page load, up to `tries`, stopping at the first under
 * budget (a busy machine only ever adds time). */
async function firstDecodeTimes(page, chapterUrl, id, tries = 3) {
  const runs = [];
  for (let k = 0; k < tries; k++) {
    await page.goto(chapterUrl, { waitUntil: "load", timeout: 30_000 });
    await page.evaluate((id) => window.revtxWidget.load(id), id);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: THROTTLE });
    try {
      runs.push(
        await page.evaluate((id) => {
          const t0 = performance.now();
          const r = window.revtxWidget.decode(id, "fgcabeda");
          return { ms: performance.now() - t0, output: r.output };
        }, id)
      );
    } finally {
      await cdp.send("Emulation.setCPUThrottlingRate", { rate: 1 });
      await cdp.detach();
    }
    if (runs[runs.length - 1].ms < FIRST_DECODE_BUDGET_MS) break;
  }
  return runs;
}

async function axeWidget(page, axeSource, theme) {
  await page.evaluate((t) => document.documentElement.setAttribute("data-theme", t), theme);
  await page.addScriptTag({ content: axeSource });
  return page.evaluate(async (sel) => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document.querySelector(sel), { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }));
  }, WIDGET);
}

/* ---------------------------------------------------------------- entry */

export async function testWidget(page, { baseUrl, chapterUrl, log = console.log, check, axeSource, models = null } = {}) {
  const url = chapterUrl || new URL("chapter-1.html", baseUrl).href;
  let data = null;

  await check("widget: loads its models when scrolled into view", async () => {
    const { lazy } = await openWidget(page, url);
    if (lazy === false) fail("the model files were fetched before the widget came near the viewport");
    data = await fetchReferenceData(page);
    const sizes = data.manifest.models.map((m) => `${m.id} ${m.bytes} B`);
    const total = data.manifest.models.reduce((a, m) => a + m.bytes, 0);
    return [
      `${data.manifest.models.length} models: ${sizes.join(", ")}; ${total} B in all`,
      lazy === null ? "the widget starts near the top: lazy loading not checked" : "nothing fetched before scrolling",
    ];
  });
  if (!data) return;

  // The manifest holds every widget's models, site-wide; this page's widget lists its own.
  const ids = data.manifest.models.map((m) => m.id);
  const onPage = await page.$$eval(`${WIDGET} input[data-rw-model]`, (els) => els.map((e) => e.value));
  const timed = models ? models[0] : DEFAULT_MODEL;
  await check(`widget: the page's widget lists ${models ? models.join(", ") : `the ${DEFAULT_MODEL} model`}`, () => {
    if (models && onPage.join(",") !== models.join(",")) fail(`the widget lists [${onPage.join(", ")}], expected [${models.join(", ")}]`);
    if (!onPage.includes(timed)) fail(`no ${timed} in the widget [${onPage.join(", ")}]`);
    const missing = onPage.filter((id) => !ids.includes(id));
    if (missing.length) fail(`the manifest [${ids.join(", ")}] lacks ${missing.join(", ")}`);
    return `${onPage.length} models on the page, ${ids.length} in the manifest`;
  });
  const pageModels = data.manifest.models.filter((m) => onPage.includes(m.id));
  for (const entry of pageModels) {
    await check(`widget: ${entry.id} decodes like the engine (every string)`, async () => {
      const sets = data.decodes[entry.id];
      if (!sets) fail(`decodes.json has no ${entry.id}`);
      for (const name of ["test", "long"])
        if (!sets[name] || !sets[name].inputs.length || sets[name].inputs.length !== sets[name].outputs.length)
          fail(`decodes.json has no ${name} strings for ${entry.id} (or inputs and outputs differ in number)`);
      const r = await parityOf(page, entry.id, { test: sets.test, long: sets.long });
      const ms = ((r.test.ms * r.test.total + r.long.ms * r.long.total) / (r.test.total + r.long.total)).toFixed(1);
      log(`widget parity ${entry.id}: test ${r.test.agree}/${r.test.total}, long ${r.long.agree}/${r.long.total} (${ms} ms a decode)`);
      const misses = r.test.misses.concat(r.long.misses).map((m) => `    ${m}`);
      const bad = r.test.total - r.test.agree + r.long.total - r.long.agree;
      if (bad > 0) fail(`${entry.id} disagrees with the engine on ${bad} strings`, misses);
      return misses.length ? ["first disagreements:", ...misses] : null;
    });
  }

  await check(`widget: attention for the engine's input within ${ATTENTION_TOLERANCE}`, async () => {
    const bad = [];
    for (const entry of pageModels) {
      const engine = data.decodes[entry.id]?.attention ?? entry.attention;
      const cells = (engine?.weights ?? []).flat(3).length;
      const n = engine?.tokens?.length ?? 0;
      if (!n || !cells || cells % (n * n) !== 0) {
        bad.push(`${entry.id} has ${cells} attention weights for ${n} tokens`);
        continue;
      }
      const diff = await attentionDiff(page, entry.id, engine);
      log(`widget attention ${entry.id} (${engine.input}): max |page − engine| ${diff.toExponential(2)}`);
      if (!(diff < ATTENTION_TOLERANCE)) bad.push(`${entry.id} ${diff.toExponential(2)}`);
    }
    if (bad.length) fail(`attention differs by ${ATTENTION_TOLERANCE} or more: ${bad.join(", ")}`);
  });

  await check("widget: keyboard (type, Tab to the model picker, arrow keys)", () => keyboardCheck(page));
  await check("widget: a head switched off changes the answer, and on again gives it back", () => headsCheck(page));

  if (axeSource) {
    await check("widget: axe, no serious/critical violations (light and dark)", async () => {
      const found = [];
      for (const theme of ["light", "dark"]) {
        for (const v of await axeWidget(page, axeSource, theme)) found.push({ theme, ...v });
      }
      await page.evaluate(() => document.documentElement.removeAttribute("data-theme"));
      const lines = found.map((v) => `[${v.theme}] [${v.impact}] ${v.id}: ${v.nodes.slice(0, 3).join(", ")}`);
      const bad = found.filter((v) => v.impact === "serious" || v.impact === "critical");
      if (bad.length) fail(`${bad.length} serious/critical: ${bad.map((v) => v.id).join(", ")}`, lines);
      return lines.length ? ["minor/moderate only:", ...lines] : "no violations";
    });
  }

  await check("widget: fits a 390 px screen (heatmaps scroll in their own box)", async () => {
    const viewport = page.viewportSize();
    try {
      return await phoneCheck(page, url);
    } finally {
      if (viewport) await page.setViewportSize(viewport);
    }
  });

  await check(`widget: first decode under ${FIRST_DECODE_BUDGET_MS} ms at ${THROTTLE}× CPU throttling`, async () => {
    const runs = await firstDecodeTimes(page, url, timed);
    const times = runs.map((r) => `${r.ms.toFixed(1)} ms`).join(", ");
    const line = `widget first decode (${timed}, fgcabeda → ${runs[0].output}) at ${THROTTLE}× throttling: ${times}`;
    if (!(Math.min(...runs.map((r) => r.ms)) < FIRST_DECODE_BUDGET_MS)) fail(line);
    return line;
  });
}
