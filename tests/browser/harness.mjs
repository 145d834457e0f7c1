// The browser test of the built site, as a reader would use it: headless Chromium against
// the site served on loopback under a sub-path (like GitHub Pages /repo/). This module is
// the harness; each `*.test.mjs` beside it is one concern, run by node:test:
//
//   SITE=site FIGURES=5 MODELS=reference,noscale node --test --test-concurrency=1 tests/browser/
//
// SITE       what `revtx-book build` wrote (default: site). It is served by a small static
//            server on 127.0.0.1 at http://127.0.0.1:PORT/revtx-book/; anything outside
//            that prefix is a 404, so a root-relative link or asset fails a check.
// FIGURES    the chapter page must have exactly this many `figure.plot` figures
//            (default: at least 1).
// ANSWERS    the chapter page must have exactly this many answers (`details.answer`), each
//            shut until opened (default: at least 1).
// MODELS     the chapter page must have the reader's widget, and its manifest exactly
//            these models (comma-separated run ids, in order).
// LISTINGS   the chapter page must have exactly this many listings with tabs (a listing and
//            its twins in other languages); tabs.test.mjs checks them (default: at least 0).
// NOTEBOOK   `1`: the chapter page must link its notebook (`chapter-N.ipynb`) under its title.
// PAGE       the chapter page to check in depth (default: the first chapter-*.html).
// PAGES      pages the site must have (comma-separated, e.g. chapter-1.html,appendix-a.html);
//            every page of the site is loaded, link-checked, counted for its quoted figures
//            and run through axe, and a page named here that is missing fails the start.
// AXE        `all` (the default): axe runs on every page of the site, in both themes;
//            `chapter`: on the chapter page only, for a second pass over one site whose
//            first pass ran axe everywhere (make test runs one pass per chapter).
// ARTIFACTS  where screenshots go (default: tests/artifacts/); CHROMIUM: the browser.
//
// Every check requires the count it should find: the chapter's quoted figures are counted
// against the site's claims.json, and a check that finds nothing to check fails. Each test
// file ends with an audit of its own requests and console.
//
// When Chromium (or the npm packages) is missing every file skips its checks, loudly;
// under CI (CI set to anything but "", "0" or "false") a test that cannot run fails, with
// the reason. tests/browser/setup.sh installs both.

import { after, test } from "node:test";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const require = createRequire(import.meta.url);

export const PREFIX = "/revtx-book/";
export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };
const SKIP_MARKER = path.join(REPO, "tests", "artifacts", "browser-skipped.txt");
export const CHECK_TIMEOUT_MS = 60_000;

export const CHECKS = [
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
  "answers are shut until opened, from the keyboard and by a link (1280 px)",
  "answers are shut until opened, from the keyboard and by a link (390 px)",
];


/** Whether this is CI: CI set to anything but "", "0" or "false" (CI=true, CI=1, ...). */
function underCi(env = process.env) {
  const v = (env.CI ?? "").trim().toLowerCase();
  return v !== "" && v !== "0" && v !== "false";
}

/** The options, from the environment (see the header). */
export const opts = (() => {
  const env = process.env;
  const o = {
    site: path.resolve(env.SITE || "site"),
    figures: null,
    answers: null,
    models: null,
    page: env.PAGE || null,
    required: (env.PAGES || "").split(",").map((p) => p.trim()).filter(Boolean),
    artifacts: path.resolve(env.ARTIFACTS || path.join(REPO, "tests", "artifacts")),
    chromium: env.CHROMIUM || "/usr/bin/chromium",
    axe: env.AXE || "all",
  };
  if (!["all", "chapter"].includes(o.axe)) throw new Error(`AXE=${env.AXE}: want all or chapter`);
  if (env.FIGURES) {
    const n = Number(env.FIGURES);
    if (!Number.isInteger(n) || n < 0) throw new Error(`FIGURES=${env.FIGURES}: want a whole number`);
    o.figures = n;
  }
  if (env.ANSWERS) {
    const n = Number(env.ANSWERS);
    if (!Number.isInteger(n) || n < 1) throw new Error(`ANSWERS=${env.ANSWERS}: want a whole number, at least 1`);
    o.answers = n;
  }
  o.listings = null;
  if (env.LISTINGS) {
    const n = Number(env.LISTINGS);
    if (!Number.isInteger(n) || n < 0) throw new Error(`LISTINGS=${env.LISTINGS}: want a whole number`);
    o.listings = n;
  }
  o.notebook = env.NOTEBOOK === "1";
  if (env.MODELS) {
    o.models = env.MODELS.split(",").map((m) => m.trim()).filter(Boolean);
    if (!o.models.length) throw new Error("MODELS needs at least one run id");
  }
  return o;
})();

export function note(text) {
  for (const line of String(text).split("\n")) console.log(`#   ${line}`);
}

export function oneLine(s) {
  return String(s).replace(/\s+/g, " ").trim();
}

/** Fails the check: `details` (a line or a list of them) go under the message. */
export function fail(message, details) {
  throw new Error(details ? `${message}\n${[].concat(details).join("\n")}` : message);
}

/** A check as a node:test function: `fn` throws to fail and may return a note (a string
 * or a list of lines), printed as the test's diagnostics. */
export function checked(fn) {
  return async (t) => {
    let info;
    try {
      info = await fn();
    } catch (e) {
      // widget.mjs's failures carry their details beside the message.
      if (e && e.details) e.message += `\n${[].concat(e.details).join("\n")}`;
      throw e;
    }
    if (info) for (const line of [].concat(info).join("\n").split("\n")) t.diagnostic(line);
  };
}

/** Why the checks cannot run here (no Chromium, no npm packages), or null. That is an
 * error, since a browser test that cannot run must not pass for one that did, unless the
 * user asked to skip by name (SKIP_BROWSER=1), and never under CI. */
export const skipReason = await (async () => {
  let why = null;
  if (!fs.existsSync(opts.chromium)) {
    why = `chromium not installed (${opts.chromium} is missing; tests/browser/setup.sh installs it)`;
  } else {
    try {
      await import("playwright-core");
      require.resolve("axe-core/axe.min.js");
    } catch (e) {
      why = `npm packages missing (${oneLine(e.message).slice(0, 120)}); tests/browser/setup.sh installs them (npm ci in tests/browser)`;
    }
  }
  if (why && fs.existsSync(SKIP_MARKER)) why += `; setup said: ${oneLine(fs.readFileSync(SKIP_MARKER, "utf8"))}`;
  if (why && underCi()) throw new Error(`the browser test cannot run: ${why}`);
  if (why && process.env.SKIP_BROWSER !== "1") {
    throw new Error(`the browser test cannot run: ${why}; to skip it by name: SKIP_BROWSER=1`);
  }
  if (why) console.log(`# SKIPPED (not a pass, SKIP_BROWSER=1): ${why}`);
  return why;
})();

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


/** Serves the site and launches Chromium: what a test file's checks use. */
export async function start() {
  if (!fs.existsSync(path.join(opts.site, "index.html"))) {
    throw new Error(`${opts.site}/index.html does not exist (build the site first: make site)`);
  }
  const { chromium } = await import("playwright-core");
  const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  const pages = htmlPages(opts.site);
  const chapterPage = opts.page || pages.find((p) => /^chapter-[^/]*\.html$/.test(p)) || pages.find((p) => p !== "index.html");
  if (!chapterPage || !pages.includes(chapterPage)) {
    throw new Error(`no chapter page${opts.page ? ` ${opts.page}` : ""} in ${opts.site}`);
  }
  const missing = opts.required.filter((p) => !pages.includes(p));
  if (missing.length) throw new Error(`PAGES names ${missing.join(", ")}, not in ${opts.site} (it has ${pages.join(", ")})`);
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

  /** How many claims the site's claims.json records in all, over every page; null when it
   * cannot be read. */
  function claimsTotal() {
    try {
      return JSON.parse(fs.readFileSync(path.join(opts.site, "claims.json"), "utf8")).length;
    } catch {
      return null;
    }
  }
  console.log(`# serving ${opts.site} at ${BASE}; chapter page ${chapterPage}; pages: ${pages.join(", ")}`);

  /* Everything the pages ask for and say, over this file's checks. */
  const events = { requests: [], failures: [], badStatus: [], offMachine: [], console: [], pageErrors: [] };

  function isOurs(u) {
    return u.startsWith(ORIGIN + "/");
  }

  function isNetwork(u) {
    return /^(https?|wss?|ftp):/i.test(u);
  }

  let browser;
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
    server.close();
    throw new Error(`launch chromium: ${oneLine(e.message).slice(0, 400)}`);
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

  /** axe on every page of the site, the chapter page first. */
  async function axeCheck(ctx) {
    const all = opts.axe === "chapter" ? [chapterPage] : [chapterPage, ...pages.filter((p) => p !== chapterPage)];
    const minor = [];
    for (const p of all) {
      const page = await open(ctx, BASE + p);
      const violations = await runAxe(page);
      await page.close();
      const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
      if (bad.length) fail(`${p}: ${bad.length} serious/critical: ${bad.map((v) => v.id).join(", ")}`, axeReport(violations));
      if (violations.length) minor.push(`${p}:`, ...axeReport(violations));
    }
    const pagesSaid = `${all.length} ${all.length === 1 ? "page" : "pages"} (${all.join(", ")}${opts.axe === "chapter" ? "; AXE=chapter: the other pages are another pass's" : ""})`;
    return minor.length ? [`${pagesSaid}; minor/moderate only:`, ...minor] : `${pagesSaid}: no violations`;
  }

  /** The chapter's answers in a context of some width: all shut at first; Enter on a
   * summary opens it (its body visible and inside the window) and Enter again shuts it;
   * a link to an element inside a shut answer opens that answer. */
  async function answersCheck(ctx, width) {
    const page = await open(ctx, CHAPTER);
    try {
      const state = () =>
        page.evaluate(() =>
          Array.from(document.querySelectorAll("details.answer"), (d) => {
            const body = d.querySelector(".answer-body");
            const r = body.getBoundingClientRect();
            return { id: d.id, open: d.open, visible: body.checkVisibility(), left: r.left, right: r.right, inner: body.querySelector("[id^='tab-'], [id^='fig-'], [id^='eq-']")?.id || null };
          })
        );
      const first = await state();
      const want = opts.answers;
      if (want !== null ? first.length !== want : first.length < 1) {
        fail(`${first.length} answers on ${chapterPage}, want ${want ?? "at least 1"}`);
      }
      const shown = first.filter((a) => a.open || a.visible);
      if (shown.length) fail(`${shown.length} answers show before they are opened: ${shown.map((a) => a.id).join(", ")}`);
      for (let k = 0; k < first.length; k++) {
        const summary = page.locator("details.answer > summary").nth(k);
        await summary.focus();
        await page.keyboard.press("Enter");
        const a = (await state())[k];
        if (!a.open || !a.visible) fail(`Enter on answer ${a.id}'s summary does not open it`);
        if (a.left < 0 || a.right > width + 1) fail(`answer ${a.id} does not fit the ${width}px window (${Math.round(a.left)}..${Math.round(a.right)})`);
        await page.keyboard.press("Enter");
        const b = (await state())[k];
        if (b.open || b.visible) fail(`Enter again does not shut answer ${a.id}`);
      }
      // A link into a shut answer opens it.
      const target = first.find((a) => a.inner);
      let linked = "no answer holds an element with an id";
      if (target) {
        await page.evaluate((id) => {
          location.hash = id;
        }, target.inner);
        await page.waitForTimeout(300);
        const after = (await state()).find((a) => a.id === target.id);
        if (!after.open) fail(`a link to #${target.inner} leaves answer ${target.id} shut`);
        linked = `#${target.inner} opens ${target.id}`;
      }
      return `${first.length} answers shut; Enter opens and shuts each; ${linked}`;
    } finally {
      await page.close();
    }
  }

  const pageInfo = new Map(); // page path -> {ids, links}, filled by the pages check

  /** The requests and console of this file's checks: none failed, none left the machine. */
  function audit() {
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
  }

  async function close() {
    try {
      await browser.close();
    } catch {}
    server.close();
  }

  return {
    BASE, CHAPTER, ORIGIN, chapterPage, pages, pageInfo, axeSource, events, isNetwork, isOurs,
    newContext, open, gotoReady, settled, scrollSettled, headingPlacement, nearTop, runAxe, axeCheck, answersCheck, claimsFor, claimsTotal,
    audit, close,
  };
}

/** One test file's checks: `body` gets what `start` returns and declares its tests; the
 * file then ends with the audit of its requests and console. Where the checks cannot run
 * (see `skipReason`), one skipped test says why. */
export async function browserSuite(body) {
  if (skipReason) {
    test("browser checks", { skip: skipReason }, () => {});
    return;
  }
  const h = await start();
  after(() => h.close());
  await body(h);
  test(CHECKS[15], checked(() => h.audit()));
}
