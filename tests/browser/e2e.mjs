#!/usr/bin/env node
// End-to-end test of the built site, as a reader would use it: headless Chromium
// against the site served on loopback under a sub-path (like GitHub Pages /repo/).
//
//   node tests/browser/e2e.mjs SITE_DIR [--figures N] [--models a,b,c] [--page chapter-1.html]
//                              [--artifacts DIR] [--chromium PATH]
//
// SITE_DIR is what `revtx-book build` wrote (index.html, chapter-*.html, runs.html,
// static/, search-index.json). It is served by a small static server started here on
// 127.0.0.1 at http://127.0.0.1:PORT/revtx-book/; anything outside that prefix is a
// 404, so a root-relative link or asset shows up as a failed request.
//
// --figures N  the chapter page must have exactly N `figure.plot` figures
//              (default: at least 1).
// --models L   the chapter page must have the reader's widget, and its manifest exactly
//              these models (comma-separated run ids, in order). Without it a widget that
//              is there is still tested.
// --page P     the chapter page to check in depth (default: the first chapter-*.html).
//
// Each check prints `ok - name` or `not ok - name: reason`, and the run ends with the
// line `browser: N passed, N failed` (plus `, N skipped` when the checks could not run).
// Every check requires the count it should find: the chapter's quoted figures are counted
// against the site's claims.json, and a check that finds nothing to check fails.
//
// Exit status 1 on any failure. When Chromium (or the npm packages) is missing, every
// check is skipped: locally the exit status is then 0 and the skip is loud; under CI
// (CI set to anything but "", "0" or "false"; CI runs the README's test command with
// CI=true) a test that cannot run is a failure, with the reason. tests/browser/setup.sh
// installs both.
//
// Screenshots of the chapter page (desktop 1280x900, phone 390x844, light and dark)
// go to tests/artifacts/ (or --artifacts DIR).

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { testWidget } from "./widget.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const require = createRequire(import.meta.url);

const PREFIX = "/revtx-book/";
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const SKIP_MARKER = path.join(REPO, "tests", "artifacts", "browser-skipped.txt");
const TOTAL_TIMEOUT_MS = 420_000; // the widget's checks (widget.mjs) take 35–50 s, more on busy cores
const CHECK_TIMEOUT_MS = 60_000;

const CHECKS = [
  "every page loads under the sub-path",
  "math is typeset with the KaTeX fonts",
  "figures are visible and non-empty",
  "table of contents navigates (desktop)",
  "table of contents navigates (phone panel)",
  "theme switch changes data-theme and the background",
  "search finds a section and opens it",
  "quoted figure shows its tooltip on hover",
  "phone layout has no sideways scrolling",
  "phone: every equation, table and figure is fully visible or scrolls in its own box",
  "phone: a heading reached by its anchor is not under the sticky header",
  "axe: no serious/critical violations (light theme)",
  "axe: no serious/critical violations (dark theme)",
  "internal links and anchors resolve",
  "screenshots written",
  "no failed or off-machine requests, no console errors",
  "widget: the trained models run in the page (tests/browser/widget.mjs)",
  "runs table fits the column or scrolls in its own box (1280 and 390 px)",
];

/** Whether this is CI: CI set to anything but "", "0" or "false" (CI=true, CI=1, ...). */
function underCi(env = process.env) {
  const v = (env.CI ?? "").trim().toLowerCase();
  return v !== "" && v !== "0" && v !== "false";
}

/* ---------------------------------------------------------------- CLI */

function usage(msg) {
  if (msg) console.error(`e2e.mjs: ${msg}`);
  console.error(
    "usage: node tests/browser/e2e.mjs SITE_DIR [--figures N] [--models a,b] [--page FILE] [--artifacts DIR] [--chromium PATH]"
  );
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    site: null,
    figures: null,
    models: null,
    page: null,
    artifacts: path.join(REPO, "tests", "artifacts"),
    chromium: process.env.CHROMIUM || "/usr/bin/chromium",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === "-h" || a === "--help") usage();
    else if (a.startsWith("--figures")) {
      const n = Number(val());
      if (!Number.isInteger(n) || n < 0) usage("--figures needs a whole number");
      o.figures = n;
    } else if (a.startsWith("--models")) {
      o.models = val().split(",").map((m) => m.trim()).filter(Boolean);
      if (!o.models.length) usage("--models needs at least one run id");
    } else if (a.startsWith("--page")) o.page = val();
    else if (a.startsWith("--artifacts")) o.artifacts = path.resolve(val());
    else if (a.startsWith("--chromium")) o.chromium = val();
    else if (a.startsWith("-")) usage(`unknown option ${a}`);
    else if (o.site === null) o.site = path.resolve(a);
    else usage(`unexpected argument ${a}`);
  }
  if (o.site === null) usage("SITE_DIR is required");
  return o;
}

const opts = parseArgs(process.argv.slice(2));

/* ------------------------------------------------------------ reporting */

let passed = 0;
let failed = 0;
let finished = false;

function finish(skipped = 0) {
  if (finished) return;
  finished = true;
  console.log(`browser: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
}

function note(text) {
  for (const line of String(text).split("\n")) console.log(`#   ${line}`);
}

function oneLine(s) {
  return String(s).replace(/\s+/g, " ").trim();
}

function withTimeout(promise, ms, what) {
  let t;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      t = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}

/* Runs one check. fn returns an optional note (string or list of lines) on success
 * and throws on failure; an Error's `details` are printed under the line. */
async function check(name, fn) {
  try {
    const info = await withTimeout(Promise.resolve().then(fn), CHECK_TIMEOUT_MS, name);
    passed++;
    console.log(`ok - ${name}`);
    if (info) note([].concat(info).join("\n"));
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${oneLine(e && e.message ? e.message : e)}`);
    if (e && e.details) note([].concat(e.details).join("\n"));
  }
}

function fail(message, details) {
  const e = new Error(message);
  if (details) e.details = details;
  throw e;
}

function skipAll(reason) {
  if (underCi()) {
    // In CI a browser test that cannot run must not pass for one that did.
    console.log(`not ok - run: the browser test cannot run: ${reason}`);
    failed = CHECKS.length;
    finish();
    process.exit(1);
  }
  console.log(`# SKIPPED (not a pass): ${reason}`);
  for (const name of CHECKS) console.log(`skip - ${name}`);
  finish(CHECKS.length);
  process.exit(0);
}

/* ----------------------------------------------------------- the server */

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".csv": "text/csv; charset=utf-8",
  ".xml": "application/xml",
  ".map": "application/json; charset=utf-8",
};

/* Serves `root` at PREFIX, as a static host would: a folder serves its index.html,
 * the bare prefix without a slash redirects, everything else is a 404. Requests
 * that the test makes itself (header x-e2e-probe) are kept out of the log. */
function startServer(root) {
  const log = [];
  const server = http.createServer((req, res) => {
    const probe = req.headers["x-e2e-probe"] === "1";
    const done = (status, headers, body) => {
      if (!probe) log.push({ method: req.method, url: req.url, status });
      res.writeHead(status, { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", ...headers });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") return done(405, { Allow: "GET, HEAD" }, "");
    let p;
    try {
      p = decodeURIComponent(new URL(req.url, "http://127.0.0.1").pathname);
    } catch {
      return done(400, {}, "bad request");
    }
    if (p === "/" || p === PREFIX.slice(0, -1)) return done(301, { Location: PREFIX }, "");
    if (!p.startsWith(PREFIX)) return done(404, { "Content-Type": "text/plain" }, `not under ${PREFIX}`);
    let file = path.join(root, p.slice(PREFIX.length));
    if (file !== root && !file.startsWith(root + path.sep)) return done(403, {}, "forbidden");
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) {
        if (!p.endsWith("/")) return done(301, { Location: p + "/" }, "");
        file = path.join(file, "index.html");
      }
      fs.readFile(file, (err2, data) => {
        if (err2) return done(404, { "Content-Type": "text/plain" }, "not found");
        const type = TYPES[path.extname(file).toLowerCase()] || "application/octet-stream";
        done(200, { "Content-Type": type, "Content-Length": data.length }, data);
      });
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve({ server, log, port: server.address().port }));
  });
}

/* --------------------------------------------------------------- setup */

function htmlPages(dir) {
  const out = [];
  const walk = (d, rel) => {
    for (const ent of fs.readdirSync(d, { withFileTypes: true })) {
      if (ent.name.startsWith(".")) continue;
      const r = rel ? `${rel}/${ent.name}` : ent.name;
      if (ent.isDirectory()) {
        if (r !== "static") walk(path.join(d, ent.name), r);
      } else if (ent.name.endsWith(".html")) out.push(r);
    }
  };
  walk(dir, "");
  const num = (s) => Number((s.match(/\d+/) || ["0"])[0]);
  return out.sort((a, b) => (a === "index.html" ? -1 : b === "index.html" ? 1 : num(a) - num(b) || a.localeCompare(b)));
}

if (!fs.existsSync(opts.chromium)) {
  let why = `chromium not installed (${opts.chromium} is missing; tests/browser/setup.sh installs it)`;
  if (fs.existsSync(SKIP_MARKER)) why += `; setup said: ${oneLine(fs.readFileSync(SKIP_MARKER, "utf8"))}`;
  skipAll(why);
}

let chromium;
let axeSource;
try {
  ({ chromium } = await import("playwright-core"));
  axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
} catch (e) {
  let why = `npm packages missing (${oneLine(e.message).slice(0, 120)}); tests/browser/setup.sh installs them (npm ci in tests/browser)`;
  if (fs.existsSync(SKIP_MARKER)) why += `; setup said: ${oneLine(fs.readFileSync(SKIP_MARKER, "utf8"))}`;
  skipAll(why);
}

if (!fs.existsSync(path.join(opts.site, "index.html"))) {
  console.log(`not ok - site: ${opts.site}/index.html does not exist (build the site first: make site)`);
  failed++;
  finish();
  process.exit(1);
}

const pages = htmlPages(opts.site);
const chapterPage = opts.page || pages.find((p) => /^chapter-[^/]*\.html$/.test(p)) || pages.find((p) => p !== "index.html");
if (!chapterPage || !pages.includes(chapterPage)) {
  console.log(`not ok - site: no chapter page${opts.page ? ` ${opts.page}` : ""} in ${opts.site}`);
  failed++;
  finish();
  process.exit(1);
}

const { server, log: serverLog, port } = await startServer(fs.realpathSync(opts.site));
const ORIGIN = `http://127.0.0.1:${port}`;
const BASE = ORIGIN + PREFIX;
const CHAPTER = BASE + chapterPage;

/** How many claims the site's claims.json records for `page` (chapter-1.html holds those
 * of book/chapter-1.md), or null when it records none or cannot be read. */
function claimsFor(page) {
  let all;
  try {
    all = JSON.parse(fs.readFileSync(path.join(opts.site, "claims.json"), "utf8"));
  } catch {
    return null;
  }
  const stem = page.replace(/\.html$/, "");
  const n = all.filter((c) => path.basename(String(c.file)).replace(/\.md$/, "") === stem).length;
  return n || null;
}
console.log(`# serving ${opts.site} at ${BASE}; chapter page ${chapterPage}; pages: ${pages.join(", ")}`);

let browser;
const watchdog = setTimeout(async () => {
  console.log(`not ok - run: gave up after ${TOTAL_TIMEOUT_MS / 1000} s`);
  failed++;
  finish();
  try {
    await browser?.close();
  } catch {}
  process.exit(1);
}, TOTAL_TIMEOUT_MS);

/* Everything the pages ask for and say, over the whole run. */
const events = { requests: [], failures: [], badStatus: [], offMachine: [], console: [], pageErrors: [] };

function isOurs(u) {
  return u.startsWith(ORIGIN + "/");
}

function isNetwork(u) {
  return /^(https?|wss?|ftp):/i.test(u);
}

try {
  browser = await chromium.launch({
    executablePath: opts.chromium,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
    timeout: 60_000,
  });
} catch (e) {
  console.log(`not ok - launch chromium: ${oneLine(e.message).slice(0, 400)}`);
  failed++;
  finish();
  server.close();
  process.exit(1);
}
console.log(`# ${opts.chromium}: Chromium ${browser.version()}, playwright-core ${require("playwright-core/package.json").version}, axe-core ${require("axe-core/package.json").version}`);

async function newContext(extra = {}) {
  const ctx = await browser.newContext({
    viewport: DESKTOP,
    colorScheme: "light",
    reducedMotion: "no-preference",
    serviceWorkers: "block",
    ...extra,
  });
  // Nothing may leave the machine: requests elsewhere are recorded and never sent.
  await ctx.route(
    (url) => isNetwork(url.href) && !isOurs(url.href),
    (route) => {
      events.offMachine.push(route.request().url());
      return route.abort("blockedbyclient");
    }
  );
  ctx.on("request", (r) => events.requests.push(r.url()));
  ctx.on("requestfailed", (r) => {
    if (!events.offMachine.includes(r.url()))
      events.failures.push(`${r.url()} (${r.failure()?.errorText || "failed"})`);
  });
  ctx.on("response", (r) => {
    if (r.status() >= 400) events.badStatus.push(`${r.status()} ${r.url()}`);
  });
  ctx.on("console", (m) => {
    if (m.type() === "error") {
      const loc = m.location();
      events.console.push(`${m.text()}${loc && loc.url ? ` (${loc.url}:${loc.lineNumber})` : ""}`);
    }
  });
  ctx.on("weberror", (e) => events.pageErrors.push(String(e.error()?.stack || e.error())));
  return ctx;
}

/* Loads a page and waits until it is settled: load event, fonts, two frames. */
async function open(ctx, url) {
  const page = await ctx.newPage();
  await gotoReady(page, url);
  return page;
}

async function gotoReady(page, url) {
  const resp = await page.goto(url, { waitUntil: "load", timeout: 30_000 });
  if (!resp) fail(`no response for ${url}`);
  if (resp.status() !== 200) fail(`${url} answered ${resp.status()}`);
  await settled(page);
  return resp;
}

async function settled(page) {
  await page.evaluate(
    () =>
      new Promise((resolve) =>
        document.fonts.ready.then(() => requestAnimationFrame(() => requestAnimationFrame(resolve)))
      )
  );
}

/* Waits until the page stops scrolling. Smooth scrolling takes a few hundred ms, and a
   navigation to an anchor may start it only after the page has rested for a while, so
   "settled" means no movement for 600 ms (or 8 s in all). */
async function scrollSettled(page) {
  await page.evaluate(
    () =>
      new Promise((resolve) => {
        let last = -1;
        let since = performance.now();
        const t0 = since;
        const tick = () => {
          const y = window.scrollY;
          const now = performance.now();
          if (y !== last) since = now;
          last = y;
          if (now - since >= 600 || now - t0 > 8000) resolve();
          else requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      })
  );
}

/* Where a heading is relative to the sticky header, after navigating to it. */
async function headingPlacement(page, id) {
  return page.evaluate((id) => {
    const h = document.getElementById(id);
    if (!h) return null;
    const header = document.querySelector(".site-header");
    const hb = header ? Math.max(0, header.getBoundingClientRect().bottom) : 0;
    const top = h.getBoundingClientRect().top;
    const se = document.scrollingElement;
    const atBottom = window.scrollY >= se.scrollHeight - window.innerHeight - 2;
    return { top: Math.round(top), headerBottom: Math.round(hb), atBottom, scrollY: Math.round(window.scrollY), vh: window.innerHeight };
  }, id);
}

function nearTop(pl) {
  // Below the sticky header (not hidden by it) and within 64 px of it; or, when the
  // page cannot scroll further, anywhere below the header on screen.
  if (!pl) return false;
  if (pl.top < pl.headerBottom - 2) return false;
  return pl.top <= pl.headerBottom + 64 || (pl.atBottom && pl.top < pl.vh - 20);
}

async function runAxe(page) {
  await page.addScriptTag({ content: axeSource });
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({
        target: n.target.join(" "),
        summary: (n.failureSummary || "").split("\n").slice(0, 3).join(" / "),
      })),
    }));
  });
}

function axeReport(violations) {
  const lines = [];
  for (const v of violations) {
    lines.push(`[${v.impact}] ${v.id}: ${v.help} (${v.nodes.length} node${v.nodes.length === 1 ? "" : "s"})`);
    for (const n of v.nodes.slice(0, 5)) lines.push(`    ${n.target} — ${n.summary}`);
    if (v.nodes.length > 5) lines.push(`    … and ${v.nodes.length - 5} more`);
  }
  return lines;
}

async function axeCheck(ctx) {
  const page = await open(ctx, CHAPTER);
  const violations = await runAxe(page);
  await page.close();
  const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  if (bad.length) fail(`${bad.length} serious/critical: ${bad.map((v) => v.id).join(", ")}`, axeReport(violations));
  return violations.length ? ["minor/moderate only:", ...axeReport(violations)] : "no violations";
}

/* -------------------------------------------------------------- checks */

const pageInfo = new Map(); // page path -> {ids, links}

try {
  const ctx = await newContext();

  await check(CHECKS[0], async () => {
    const problems = [];
    for (const p of pages) {
      const page = await ctx.newPage();
      try {
        await gotoReady(page, BASE + p);
        const info = await page.evaluate(() => ({
          title: document.title,
          h1: (document.querySelector("h1") || {}).textContent || "",
          ids: Array.from(document.querySelectorAll("[id]"), (e) => e.id),
          links: Array.from(document.querySelectorAll("a[href], link[href], script[src], img[src], source[src], use[href]"), (e) => {
            const raw = e.getAttribute("href") ?? e.getAttribute("src");
            let abs = "";
            try {
              abs = new URL(raw, document.baseURI).href;
            } catch {}
            return { tag: e.tagName.toLowerCase(), raw, abs };
          }),
          styled: getComputedStyle(document.body).marginTop === "0px",
        }));
        pageInfo.set(p, info);
        if (!info.title.trim()) problems.push(`${p}: empty <title>`);
        if (!info.h1.trim()) problems.push(`${p}: no <h1>`);
        if (!info.styled) problems.push(`${p}: static/style.css not applied`);
      } catch (e) {
        problems.push(`${p}: ${oneLine(e.message)}`);
      } finally {
        await page.close();
      }
    }
    if (problems.length) fail(problems[0], problems);
    return `${pages.length} pages at ${BASE}`;
  });

  const page = await open(ctx, CHAPTER);

  await check(CHECKS[1], async () => {
    const m = await page.evaluate(async () => {
      await document.fonts.ready;
      const ks = Array.from(document.querySelectorAll(".katex"));
      const visible = ks.filter((k) => {
        const r = k.getBoundingClientRect();
        return r.width > 0 && r.height > 0;
      });
      // With katex.min.css applied, the MathML copy is clipped away to 1px.
      const mathml = document.querySelector(".katex .katex-mathml");
      const mr = mathml ? mathml.getBoundingClientRect() : null;
      const faces = Array.from(document.fonts).filter((f) => f.family.replace(/["']/g, "").startsWith("KaTeX_"));
      return {
        count: ks.length,
        display: document.querySelectorAll(".katex-display").length,
        visible: visible.length,
        errors: document.querySelectorAll(".katex-error, .math-error").length,
        mathmlHidden: !mr || (mr.width <= 1.5 && mr.height <= 1.5),
        loaded: faces.filter((f) => f.status === "loaded").map((f) => `${f.family.replace(/["']/g, "")} ${f.weight} ${f.style}`),
        errored: faces.filter((f) => f.status === "error").map((f) => f.family.replace(/["']/g, "")),
        mainOk: document.fonts.check("12px KaTeX_Main"),
        family: ks[0] ? getComputedStyle(ks[0]).fontFamily : "",
      };
    });
    if (!m.count) fail("no .katex elements on the page");
    if (!m.visible) fail(`${m.count} .katex elements, none with a non-zero box`);
    if (m.errors) fail(`${m.errors} formulas failed to render (.katex-error / .math-error)`);
    if (!m.mathmlHidden) fail("the MathML copy is visible: katex.min.css is not applied");
    if (!/KaTeX_Main/.test(m.family)) fail(`.katex font-family is "${m.family}", not KaTeX_Main: katex.min.css not applied`);
    if (m.errored.length) fail(`KaTeX fonts failed to load: ${[...new Set(m.errored)].join(", ")}`);
    if (!m.loaded.length) fail("no KaTeX_ font face loaded (document.fonts)");
    if (!m.mainOk) fail("document.fonts.check('12px KaTeX_Main') is false");
    return `${m.count} formulas (${m.display} display); fonts loaded: ${m.loaded.join(", ")}`;
  });

  await check(CHECKS[2], async () => {
    const figs = await page.evaluate(() =>
      Array.from(document.querySelectorAll("figure.plot"), (f, i) => {
        f.scrollIntoView({ block: "center", behavior: "instant" });
        const svg = f.querySelector("svg");
        const name = f.id || `figure ${i + 1}`;
        if (!svg) return { name, error: "no <svg>" };
        const r = svg.getBoundingClientRect();
        const cs = getComputedStyle(svg);
        const shapes = Array.from(svg.querySelectorAll("path, polyline, polygon, line, circle, ellipse, rect, text"));
        const drawn = shapes.filter((el) => {
          const s = getComputedStyle(el);
          if (s.display === "none" || s.visibility === "hidden") return false;
          if (el.tagName === "text") return el.textContent.trim() !== "";
          try {
            const b = el.getBBox();
            return b.width > 0 || b.height > 0;
          } catch {
            return false;
          }
        });
        const lines = drawn.filter((el) => /^(path|polyline|line|polygon)$/.test(el.tagName));
        // A heatmap is drawn as filled cells rather than lines.
        const cells = drawn.filter((el) => el.tagName === "rect");
        // Is the middle of the plot really the plot (not covered by something)?
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return {
          name,
          w: Math.round(r.width),
          h: Math.round(r.height),
          hidden: cs.display === "none" || cs.visibility === "hidden" || Number(cs.opacity) === 0,
          overflowRight: Math.round(r.right - document.documentElement.clientWidth),
          drawn: drawn.length,
          lines: lines.length,
          cells: cells.length,
          texts: drawn.filter((el) => el.tagName === "text").length,
          covered: !(hit && (hit === svg || svg.contains(hit) || f.contains(hit))),
          caption: !!f.querySelector("figcaption"),
        };
      })
    );
    await page.evaluate(() => window.scrollTo({ top: 0, behavior: "instant" }));
    const problems = [];
    if (opts.figures === null ? figs.length < 1 : figs.length !== opts.figures)
      problems.push(`found ${figs.length} figure.plot, expected ${opts.figures === null ? "at least 1" : opts.figures}`);
    for (const f of figs) {
      if (f.error) problems.push(`${f.name}: ${f.error}`);
      else {
        if (f.w < 50 || f.h < 50) problems.push(`${f.name}: svg box is ${f.w}x${f.h}`);
        if (f.hidden) problems.push(`${f.name}: svg is hidden`);
        if (f.drawn < 3 || (f.lines < 1 && f.cells < 10))
          problems.push(`${f.name}: only ${f.drawn} drawn elements (${f.lines} lines/paths, ${f.cells} cells)`);
        if (f.overflowRight > 1) problems.push(`${f.name}: sticks out ${f.overflowRight}px past the window`);
        if (f.covered) problems.push(`${f.name}: its centre is covered by another element`);
      }
    }
    if (problems.length) fail(problems[0], problems);
    return figs.map((f) => `${f.name}: ${f.w}x${f.h}px, ${f.drawn} drawn elements (${f.lines} lines/paths, ${f.cells} cells, ${f.texts} labels)${f.caption ? ", captioned" : ""}`);
  });

  await check(CHECKS[3], async () => {
    const ids = await page.$$eval("nav#toc a[data-toc-id]", (as) =>
      as.map((a) => a.getAttribute("data-toc-id")).filter((id) => document.getElementById(id))
    );
    if (!ids.length) fail("no TOC link (nav#toc a[data-toc-id]) with a target on the page");
    const missing = await page.$$eval("nav#toc a[data-toc-id]", (as) =>
      as.map((a) => a.getAttribute("data-toc-id")).filter((id) => !document.getElementById(id))
    );
    if (missing.length) fail(`TOC links to missing ids: ${missing.join(", ")}`);
    // The last section is the furthest away; the middle one tests a normal jump too.
    const targets = [...new Set([ids[Math.floor(ids.length / 2)], ids[ids.length - 1]])];
    const out = [];
    for (const id of targets) {
      await page.evaluate(() => window.scrollTo({ top: 0, behavior: "instant" }));
      await scrollSettled(page);
      await page.locator(`nav#toc a[data-toc-id="${id}"]`).click();
      await page.waitForFunction((id) => decodeURIComponent(location.hash) === "#" + id, id, { timeout: 5000 });
      await scrollSettled(page);
      const pl = await headingPlacement(page, id);
      if (!nearTop(pl)) fail(`#${id} is at y=${pl && pl.top}px after the click (header ends at ${pl && pl.headerBottom}px)`);
      const active = await page.evaluate(
        (id) => document.querySelector(`nav#toc a[data-toc-id="${id}"]`).classList.contains("is-active"),
        id
      );
      if (!active) fail(`the TOC entry for #${id} is not marked active after the jump`);
      out.push(`#${id} at y=${pl.top}px (header ends at ${pl.headerBottom}px${pl.atBottom ? ", page end" : ""})`);
    }
    return `${ids.length} TOC sections; ${out.join("; ")}`;
  });

  await check(CHECKS[5], async () => {
    const state = (p) =>
      p.evaluate(() => ({
        theme: document.documentElement.getAttribute("data-theme"),
        bg: getComputedStyle(document.body).backgroundColor,
        fg: getComputedStyle(document.body).color,
        pressed: document.getElementById("theme-toggle")?.getAttribute("aria-pressed"),
      }));
    const out = [];
    // A reader whose system is light, then one whose system is dark.
    for (const scheme of ["light", "dark"]) {
      const c = await newContext({ colorScheme: scheme });
      const p = await open(c, CHAPTER);
      const before = await state(p);
      const toggle = p.locator("#theme-toggle");
      if (!(await toggle.isVisible())) fail("#theme-toggle is not visible");
      await toggle.click();
      await p.waitForFunction((t) => document.documentElement.getAttribute("data-theme") !== t, before.theme, { timeout: 3000 });
      const after = await state(p);
      const want = scheme === "light" ? "dark" : "light";
      if (after.theme !== want) fail(`system ${scheme}: data-theme became ${after.theme}, expected ${want}`);
      if (after.bg === before.bg) fail(`system ${scheme}: body background stayed ${after.bg}`);
      if (after.fg === before.fg) fail(`system ${scheme}: body text colour stayed ${after.fg}`);
      if (after.pressed === before.pressed) fail(`system ${scheme}: aria-pressed stayed ${after.pressed}`);
      // The choice is remembered across pages.
      await gotoReady(p, BASE + "index.html");
      const kept = await state(p);
      if (kept.theme !== want || kept.bg !== after.bg) fail(`system ${scheme}: the choice was not kept on the next page (${kept.theme}, ${kept.bg})`);
      out.push(`system ${scheme}: ${before.theme ?? "(none)"} ${before.bg} -> ${after.theme} ${after.bg}, kept on index.html`);
      await c.close();
    }
    return out;
  });

  await check(CHECKS[6], async () => {
    const c = await newContext();
    const p = await open(c, CHAPTER);
    // A word that must be found: from the first section heading (or the title).
    const word = await p.evaluate(() => {
      const src = [
        ...Array.from(document.querySelectorAll("nav#toc a[data-toc-id]"), (a) => a.textContent),
        document.querySelector("h1")?.textContent || "",
      ];
      for (const s of src) {
        const w = s.match(/[A-Za-z]{4,}/);
        if (w) return w[0];
      }
      return null;
    });
    if (!word) fail("no word to search for in the headings");
    await p.locator("#search-input").click();
    await p.keyboard.type(word, { delay: 20 });
    const first = p.locator('#search-results a[role="option"]').first();
    try {
      await first.waitFor({ state: "visible", timeout: 5000 });
    } catch {
      const msg = await p.locator("#search-results").innerText().catch(() => "");
      fail(`no result for "${word}"${msg ? ` (list says: ${oneLine(msg)})` : ""}`);
    }
    const n = await p.locator('#search-results a[role="option"]').count();
    const href = await first.evaluate((a) => a.href);
    if (!href.startsWith(BASE)) fail(`first result links to ${href}, outside ${BASE}`);
    await p.keyboard.press("ArrowDown");
    await Promise.all([p.waitForURL(href, { timeout: 10_000 }), p.keyboard.press("Enter")]);
    await settled(p);
    const hash = new URL(href).hash.slice(1);
    if (hash && !(await p.evaluate((id) => !!document.getElementById(decodeURIComponent(id)), hash)))
      fail(`${href}: no element #${hash}`);
    await c.close();
    return `"${word}": ${n} result${n === 1 ? "" : "s"}; Enter opened ${href.slice(BASE.length - 1)}`;
  });

  await check(CHECKS[7], async () => {
    // As many `.claim` elements as the build recorded claims for this chapter.
    const want = claimsFor(chapterPage);
    const n = await page.locator(".claim").count();
    if (want === null) fail(`claims.json records no claims for ${chapterPage}`);
    if (n !== want) fail(`${n} quoted figures (.claim) on the page; claims.json records ${want}`);
    const claim = page.locator(".claim").first();
    await claim.scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy({ top: -200, behavior: "instant" }));
    await claim.locator(".claim-value").hover();
    const tip = claim.locator(".claim-tip");
    await page.waitForFunction(
      (el) => {
        const s = getComputedStyle(el);
        return s.visibility === "visible" && Number(s.opacity) > 0.99;
      },
      await tip.elementHandle(),
      { timeout: 3000 }
    );
    const box = await tip.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { l: r.left, r: r.right, t: r.top, b: r.bottom, vw: document.documentElement.clientWidth, vh: window.innerHeight, text: el.textContent };
    });
    if (box.l < 0 || box.r > box.vw || box.t < 0 || box.b > box.vh)
      fail(`the tooltip is clipped by the window: ${Math.round(box.l)},${Math.round(box.t)}-${Math.round(box.r)},${Math.round(box.b)} in ${box.vw}x${box.vh}`);
    await page.keyboard.press("Escape");
    await page.waitForFunction((el) => getComputedStyle(el).visibility === "hidden", await tip.elementHandle(), { timeout: 3000 });
    await page.mouse.move(0, DESKTOP.height - 1);
    return `${n} quoted figures; the first shows "${oneLine(box.text).slice(0, 80)}" inside the window, Escape hides it`;
  });

  await check(CHECKS[11], () => axeCheck(ctx));
  await check(CHECKS[12], async () => {
    const c = await newContext({ colorScheme: "dark" });
    try {
      return await axeCheck(c);
    } finally {
      await c.close();
    }
  });

  /* Phone: the TOC is a panel behind the toggle; the page must not scroll sideways. */
  const phone = await newContext({ viewport: PHONE, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const ppage = await open(phone, CHAPTER);

  await check(CHECKS[4], async () => {
    const toc = ppage.locator("nav#toc");
    const toggle = ppage.locator("#toc-toggle");
    if (!(await toggle.isVisible())) fail("#toc-toggle is not visible at 390px");
    if (await toc.isVisible()) fail("the TOC is shown before the toggle is pressed");
    await toggle.click();
    await toc.waitFor({ state: "visible", timeout: 3000 });
    if ((await toggle.getAttribute("aria-expanded")) !== "true") fail("aria-expanded is not true with the panel open");
    const ids = await ppage.$$eval("nav#toc a[data-toc-id]", (as) => as.map((a) => a.getAttribute("data-toc-id")));
    if (!ids.length) fail("no TOC section links");
    const id = ids[ids.length - 1];
    await ppage.locator(`nav#toc a[data-toc-id="${id}"]`).click();
    await ppage.waitForFunction((id) => decodeURIComponent(location.hash) === "#" + id, id, { timeout: 5000 });
    await toc.waitFor({ state: "hidden", timeout: 3000 });
    await scrollSettled(ppage);
    const pl = await headingPlacement(ppage, id);
    if (!nearTop(pl)) fail(`#${id} is at y=${pl && pl.top}px after the tap (header ends at ${pl && pl.headerBottom}px)`);
    await ppage.evaluate(() => window.scrollTo({ top: 0, behavior: "instant" }));
    return `panel opens, closes on a tap; #${id} at y=${pl.top}px`;
  });

  await check(CHECKS[8], async () => {
    const o = await ppage.evaluate(() => {
      const vw = document.documentElement.clientWidth;
      const wide = [];
      const listed = new Set();
      for (const el of document.querySelectorAll("body *")) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.right <= vw + 1) continue;
        // Report the outermost element only.
        if (listed.has(el.parentElement)) {
          listed.add(el);
          continue;
        }
        // Elements inside a scroll box (tables, code, display math) may be wider.
        let p = el.parentElement;
        let inside = false;
        while (p && p !== document.body) {
          const s = getComputedStyle(p);
          if (/(auto|scroll|hidden|clip)/.test(s.overflowX) || s.position === "fixed") {
            inside = true;
            break;
          }
          p = p.parentElement;
        }
        const s = getComputedStyle(el);
        // Hidden elements still widen the page (a hidden tooltip, say), so they count.
        if (!inside && s.position !== "fixed") {
          listed.add(el);
          const cls = typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/).join(".") : "";
          wide.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${cls} right=${Math.round(r.right)}px${s.visibility === "hidden" ? " (hidden)" : ""}`);
        }
      }
      return { vw, sw: document.documentElement.scrollWidth, wide: wide.slice(0, 8) };
    });
    if (o.sw > o.vw + 1) fail(`the page is ${o.sw}px wide in a ${o.vw}px window`, o.wide);
    if (o.wide.length) fail(`elements stick out past the ${o.vw}px window`, o.wide);
    return `${o.vw}px wide, nothing sticks out`;
  });

  await check(CHECKS[9], async () => {
    // Content wider than the column must scroll inside its own box, never be cut off by
    // an ancestor that hides overflow (KaTeX's advice: overflow-x: auto on display math).
    const o = await ppage.evaluate(() => {
      const vw = document.documentElement.clientWidth;
      const boxes = document.querySelectorAll(".math-display, .katex-display, figure, table, pre, svg");
      const bad = [];
      let scrolling = 0;
      for (const el of boxes) {
        const r = el.getBoundingClientRect();
        if (r.width === 0 || el.closest("nav, header, .claim-tip")) continue;
        const name = `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\s+/)[0] : ""}`;
        let p = el;
        let ok = r.right <= vw + 1 && r.left >= -1;
        while (p && p !== document.body) {
          const s = getComputedStyle(p);
          const pr = p.getBoundingClientRect();
          const overflows = p.scrollWidth > p.clientWidth + 1;
          if (/(auto|scroll)/.test(s.overflowX)) {
            // A scroll box: fine if the box itself fits the window.
            ok = pr.right <= vw + 1 && pr.left >= -1;
            if (overflows) scrolling++;
            break;
          }
          if (/(hidden|clip)/.test(s.overflowX) && (overflows || r.right > pr.right + 1 || r.left < pr.left - 1)) {
            ok = false;
            bad.push(`${name} is clipped by ${p.tagName.toLowerCase()}${p.className ? "." + String(p.className).split(/\s+/)[0] : ""} (${Math.round(r.width)}px in ${Math.round(pr.width)}px, overflow-x: ${s.overflowX})`);
            break;
          }
          p = p.parentElement;
        }
        if (!ok && !bad.some((b) => b.startsWith(name))) bad.push(`${name} reaches x=${Math.round(r.right)}px in a ${vw}px window`);
      }
      return { vw, n: boxes.length, bad: bad.slice(0, 12), scrolling };
    });
    if (o.bad.length) fail(`${o.bad.length} cut off at ${o.vw}px: ${o.bad[0]}`, o.bad);
    const least = Math.max(1, opts.figures ?? 1);
    if (o.n < least) fail(`${o.n} equations, tables and figures on the page; expected at least ${least}`);
    return `${o.n} boxes at ${o.vw}px: all visible; ${o.scrolling} scroll inside their own box`;
  });

  await check(CHECKS[10], async () => {
    // Following a link to a section (not the TOC's scripted scroll) must not leave the
    // heading under the sticky header.
    const ids = await ppage.$$eval("main h2[id], main h3[id]", (hs) => hs.map((h) => h.id));
    if (!ids.length) fail("no headings with ids");
    const picks = [...new Set([ids[0], ids[Math.floor(ids.length / 2)], ids[ids.length - 1]])];
    const placed = [];
    for (const id of picks) {
      await ppage.goto(`${CHAPTER}#${encodeURIComponent(id)}`, { waitUntil: "load" });
      await scrollSettled(ppage);
      const pl = await headingPlacement(ppage, id);
      if (!nearTop(pl)) fail(`#${id} is at y=${pl && pl.top}px, under the header that ends at ${pl && pl.headerBottom}px`);
      placed.push(`#${id} at y=${pl.top}px (header ends ${pl.headerBottom}px)`);
    }
    await ppage.evaluate(() => window.scrollTo({ top: 0, behavior: "instant" }));
    return placed;
  });

  await check(CHECKS[13], async () => {
    const problems = [];
    const seen = new Map(); // url without hash -> status
    let n = 0;
    for (const [p, info] of pageInfo) {
      for (const l of info.links) {
        const u = l.abs;
        if (!u || !isNetwork(u)) continue; // data:, mailto:, javascript:
        if (!u.startsWith(ORIGIN)) continue; // links to the web are not requests
        n++;
        const url = new URL(u);
        if (!url.pathname.startsWith(PREFIX)) {
          problems.push(`${p}: ${l.tag} "${l.raw}" escapes the sub-path (${url.pathname})`);
          continue;
        }
        const bare = url.origin + url.pathname;
        if (!seen.has(bare)) {
          const r = await fetch(bare, { headers: { "x-e2e-probe": "1" }, redirect: "follow" });
          seen.set(bare, r.status);
        }
        if (seen.get(bare) !== 200) {
          problems.push(`${p}: ${l.tag} "${l.raw}" -> ${seen.get(bare)}`);
          continue;
        }
        if (url.hash && l.tag === "a") {
          const id = decodeURIComponent(url.hash.slice(1));
          const target = decodeURIComponent(url.pathname.slice(PREFIX.length)) || "index.html";
          const tinfo = pageInfo.get(target.endsWith("/") ? target + "index.html" : target);
          if (tinfo && !tinfo.ids.includes(id)) problems.push(`${p}: "${l.raw}" -> no #${id} in ${target}`);
        }
      }
    }
    if (problems.length) fail(`${problems.length} broken: ${problems[0]}`, problems.slice(0, 20));
    const anchors = [...pageInfo.values()].flatMap((i) => i.links).filter((l) => l.tag === "a" && l.abs && l.abs.startsWith(ORIGIN) && l.abs.includes("#")).length;
    if (n < pageInfo.size || !anchors) fail(`only ${n} links and assets on ${pageInfo.size} pages, ${anchors} to anchors: nothing much was checked`);
    return `${n} links and assets on ${pageInfo.size} pages, ${seen.size} distinct targets`;
  });

  await check(CHECKS[14], async () => {
    fs.mkdirSync(opts.artifacts, { recursive: true });
    const shots = [];
    const shot = async (p, name, fullPage = true) => {
      const file = path.join(opts.artifacts, name);
      await p.screenshot({ path: file, fullPage, animations: "disabled", timeout: 30_000 });
      shots.push(path.relative(process.cwd(), file));
    };
    await page.evaluate(() => window.scrollTo({ top: 0, behavior: "instant" }));
    await settled(page);
    await shot(page, "chapter-desktop.png");
    const dark = await newContext({ colorScheme: "dark" });
    const dpage = await open(dark, CHAPTER);
    await shot(dpage, "chapter-desktop-dark.png");
    await dark.close();
    await settled(ppage);
    await shot(ppage, "chapter-phone.png");
    await ppage.locator("#toc-toggle").click();
    await ppage.locator("nav#toc").waitFor({ state: "visible", timeout: 3000 });
    await shot(ppage, "chapter-phone-toc.png", false);
    return shots.join(", ");
  });

  // The reader's widget: widget.mjs reports its own checks (parity, keyboard, axe, phone,
  // timing) through `check`; before the request audit below, which then covers them too.
  if (fs.readFileSync(path.join(opts.site, chapterPage), "utf8").includes('class="reverse-widget"')) {
    const wpage = await ctx.newPage();
    try {
      await testWidget(wpage, { baseUrl: BASE, chapterUrl: CHAPTER, log: note, check, axeSource, models: opts.models });
    } catch (e) {
      await check(CHECKS[16], () => fail(`the widget test stopped: ${oneLine(e && e.message ? e.message : e)}`));
    } finally {
      await wpage.close();
    }
  } else {
    await check(CHECKS[16], () => {
      if (opts.models) fail(`${chapterPage} has no widget; --models asks for ${opts.models.join(", ")}`);
      return `${chapterPage} has no widget, and --models asks for none`;
    });
  }

  await check(CHECKS[17], async () => {
    // Every runs table either fits the text column or scrolls inside its own box, which
    // itself fits the column; its last column must be reachable, never cut off.
    const out = [];
    for (const [name, c] of [["1280 px", ctx], ["390 px", phone]]) {
      const p = await open(c, BASE + "runs.html");
      const o = await p.evaluate(() => {
        const vw = document.documentElement.clientWidth;
        const col = document.querySelector(".content");
        const cr = col ? col.getBoundingClientRect() : { left: 0, right: vw };
        const tables = [...document.querySelectorAll(".content table")];
        const bad = [];
        let scrolling = 0;
        for (const t of tables) {
          const r = t.getBoundingClientRect();
          const box = t.parentElement.closest(".table-wrap");
          const scrolls = box && /(auto|scroll)/.test(getComputedStyle(box).overflowX);
          const outer = scrolls ? box.getBoundingClientRect() : r;
          if (outer.right > Math.min(vw, cr.right) + 1 || outer.left < cr.left - 1)
            bad.push(`table ${tables.indexOf(t) + 1} reaches x=${Math.round(outer.right)}px; the column ends at ${Math.round(cr.right)}px`);
          else if (!scrolls && r.right > outer.right + 1) bad.push(`table ${tables.indexOf(t) + 1} is cut off`);
          if (scrolls && box.scrollWidth > box.clientWidth + 1) scrolling++;
        }
        return { n: tables.length, bad, scrolling, page: document.documentElement.scrollWidth, vw };
      });
      await p.close();
      if (!o.n) fail(`runs.html at ${name} has no tables`);
      if (o.page > o.vw + 1) fail(`runs.html is ${o.page}px wide in a ${o.vw}px window`);
      if (o.bad.length) fail(`runs.html at ${name}: ${o.bad[0]}`, o.bad.slice(0, 10));
      out.push(`${name}: ${o.n} tables fit, ${o.scrolling} scroll in their own box`);
    }
    return out.join("; ");
  });

  await phone.close();
  await ctx.close();

  await check(CHECKS[15], async () => {
    const problems = [];
    const offServer = serverLog.filter((r) => r.status >= 400).map((r) => `server: ${r.status} ${r.method} ${r.url}`);
    const foreign = events.requests.filter((u) => isNetwork(u) && !isOurs(u));
    for (const u of new Set([...events.offMachine, ...foreign])) problems.push(`off-machine request: ${u}`);
    for (const f of new Set(events.failures)) problems.push(`failed: ${f}`);
    for (const b of new Set(events.badStatus)) problems.push(`status ${b}`);
    for (const s of new Set(offServer)) if (!problems.some((x) => x.includes(s.split(" ").pop()))) problems.push(s);
    for (const c of new Set(events.console)) problems.push(`console error: ${c}`);
    for (const e of new Set(events.pageErrors)) problems.push(`uncaught: ${oneLine(e).slice(0, 300)}`);
    if (problems.length) fail(`${problems.length} problem${problems.length === 1 ? "" : "s"}: ${problems[0]}`, problems.slice(0, 30));
    const local = events.requests.filter(isOurs).length;
    return `${local} requests, all to ${ORIGIN}${PREFIX}, all answered 2xx/3xx; ${serverLog.length} served`;
  });
} catch (e) {
  // Something outside a check went wrong (a page that would not open, …).
  failed++;
  console.log(`not ok - run: ${oneLine(e && e.stack ? e.stack : e).slice(0, 600)}`);
} finally {
  clearTimeout(watchdog);
  try {
    await browser.close();
  } catch {}
  server.close();
}

finish();
process.exit(failed ? 1 : 0);
