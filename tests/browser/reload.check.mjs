// Live reload, run in a page: `revtx-book serve` on a book made by `init`, its chapter open
// in Chromium, then the chapter edited on disk. The page must not reload while nothing
// changes, must reload once the rebuild is done and show the edit, and must then stay.
//
//   BIN=target/release/revtx-book node --test tests/browser/reload.check.mjs
//
// Its name does not match `*.test.mjs`, so `node --test tests/browser/` leaves it out; the
// Makefile runs it once.

import { test } from "node:test";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { CHECK_TIMEOUT_MS, fail, opts, skipReason } from "./harness.mjs";

const BIN = path.resolve(process.env.BIN || "target/release/revtx-book");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A port nothing listens on now. */
const freePort = () => new Promise((resolve, reject) => {
  const s = net.createServer();
  s.once("error", reject);
  s.listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});

/** Waits until `ok()` holds, checking every 100 ms, for at most `ms`. */
async function until(ok, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await sleep(100);
  }
  fail(`timed out after ${ms} ms waiting for ${what}`);
}

test("serve: an edit reloads the page once, and only once", { timeout: 4 * CHECK_TIMEOUT_MS, skip: skipReason || false }, async () => {
  if (!fs.existsSync(BIN)) fail(`${BIN} is missing: build it first (make build)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "revtx-reload-"));
  const root = path.join(dir, "book-project");
  execFileSync(BIN, ["init", root], { stdio: "pipe" });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/`;
  const server = spawn(BIN, ["serve", "--root", root, "--port", String(port), "--quiet"], { stdio: ["ignore", "pipe", "pipe"] });
  let said = "";
  server.stdout.on("data", (d) => { said += d; });
  server.stderr.on("data", (d) => { said += d; });
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: opts.chromium, args: ["--no-sandbox"] });
  try {
    await until(async () => {
      try {
        return (await fetch(base + "__revtx/version")).ok && (await fetch(base + "chapter-1.html")).ok;
      } catch {
        return false;
      }
    }, 3 * CHECK_TIMEOUT_MS, `the server's first build (${said.slice(-400)})`);
    const page = await browser.newPage();
    let loads = 0;
    page.on("load", () => { loads += 1; });
    await page.goto(base + "chapter-1.html");
    await until(() => loads === 1, 10_000, "the first load");
    // Five polls with nothing changed: no reload.
    await sleep(2_000);
    if (loads !== 1) fail(`the page loaded ${loads} times while nothing changed`);
    const chapter = path.join(root, "book", "chapter-1.md");
    fs.appendFileSync(chapter, "\nThis sentence came with the edit.\n");
    await until(() => loads >= 2, 2 * CHECK_TIMEOUT_MS, `a reload after the edit (server said: ${said.slice(-400)})`);
    await page.waitForLoadState("load");
    const text = await page.evaluate(() => document.body.innerText);
    if (!text.includes("This sentence came with the edit.")) fail("the reloaded page does not show the edit");
    // And then it stays: no second reload without a second edit.
    await sleep(3_000);
    if (loads !== 2) fail(`the page loaded ${loads} times after one edit, not 2`);
  } finally {
    await browser.close();
    server.kill("SIGINT");
    await new Promise((r) => (server.exitCode !== null ? r() : server.once("exit", r)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
