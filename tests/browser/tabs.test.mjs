// Listings with twins in other languages (tabs), and the chapter's notebook link.
// Part of the browser test of the built site (tests/browser/harness.mjs says how it runs):
// LISTINGS is how many tabbed listings the chapter page must have, NOTEBOOK=1 that it links
// its notebook. The tabs must work from the keyboard (arrows, Home, End), keep one tab in
// the Tab order, show exactly the selected panel, follow the reader's choice in every
// listing, remember it on the chapter's other pages, and pass axe in the chosen state.

import { test } from "node:test";
import { browserSuite, CHECK_TIMEOUT_MS, checked, fail, opts } from "./harness.mjs";

await browserSuite(async ({ BASE, CHAPTER, chapterPage, pages, newContext, open, runAxe }) => {
  const ctx = await newContext();
  const page = await open(ctx, CHAPTER);

  /** Each tabbed listing: its tabs' labels, which is selected, which are focusable, which
   * panels show. */
  const state = (p) => p.evaluate(() =>
    Array.from(document.querySelectorAll("figure.listing-tabs")).map((f) => {
      const tabs = Array.from(f.querySelectorAll('[role="tab"]'));
      return {
        id: f.id,
        listVisible: !f.querySelector('[role="tablist"]').hidden,
        labels: tabs.map((t) => t.dataset.label),
        selected: tabs.filter((t) => t.getAttribute("aria-selected") === "true").map((t) => t.dataset.label),
        tabbable: tabs.filter((t) => t.tabIndex === 0).map((t) => t.dataset.label),
        shown: Array.from(f.querySelectorAll('[role="tabpanel"]'))
          .filter((p) => !p.hidden && p.getBoundingClientRect().height > 0)
          .map((p) => p.dataset.label),
        code: Array.from(f.querySelectorAll('[role="tabpanel"]')).map((p) => (p.querySelector("pre")?.textContent || "").trim().length),
      };
    }));

  test("listings: one tab per language, the first selected, every panel with code", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const s = await state(page);
    if (opts.listings !== null && s.length !== opts.listings) {
      fail(`${chapterPage} has ${s.length} tabbed listings; LISTINGS asks for ${opts.listings}`);
    }
    if (opts.listings === null && !s.length) return `${chapterPage} has no tabbed listing (LISTINGS not set)`;
    if (!s.length) return `${chapterPage} has no tabbed listing, as LISTINGS=0 asks`;
    for (const l of s) {
      if (!l.listVisible) fail(`${l.id}: its tab list is still hidden (static/tabs.js did not run)`);
      if (l.labels.length < 2) fail(`${l.id}: ${l.labels.length} tab`);
      if (l.selected.length !== 1 || l.tabbable.length !== 1 || l.selected[0] !== l.tabbable[0]) {
        fail(`${l.id}: selected ${l.selected}, in the Tab order ${l.tabbable}: want one, the same`);
      }
      if (l.selected[0] !== l.labels[0]) fail(`${l.id}: "${l.selected[0]}" is selected on a first visit, not the first tab "${l.labels[0]}"`);
      if (l.shown.length !== 1 || l.shown[0] !== l.selected[0]) fail(`${l.id}: panels shown ${l.shown}, selected ${l.selected}`);
      if (l.code.some((n) => n === 0)) fail(`${l.id}: a panel without code`);
    }
    return `${s.length} listings, tabs ${s.map((l) => l.labels.join("|")).join(", ")}`;
  }));

  test("listings: arrows, Home and End choose a tab, and every listing follows", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const before = await state(page);
    if (!before.length) return "no tabbed listing to try";
    const first = before[0];
    const tab = (k) => page.locator(`#${first.id} [role="tab"]`).nth(k);
    await tab(0).focus();
    await page.keyboard.press("ArrowRight");
    let s = await state(page);
    const second = first.labels[1];
    const focused = await page.evaluate(() => document.activeElement?.dataset?.label || "");
    if (focused !== second) fail(`ArrowRight focused "${focused}", not "${second}"`);
    for (const l of s) {
      if (l.labels.includes(second) && (l.selected[0] !== second || l.shown[0] !== second)) {
        fail(`${l.id} did not follow the choice of "${second}": selected ${l.selected}, shown ${l.shown}`);
      }
    }
    await page.keyboard.press("Home");
    s = await state(page);
    if (s[0].selected[0] !== first.labels[0]) fail(`Home selected ${s[0].selected}`);
    await page.keyboard.press("End");
    s = await state(page);
    if (s[0].selected[0] !== first.labels.at(-1)) fail(`End selected ${s[0].selected}`);
    await page.keyboard.press("ArrowRight");
    s = await state(page);
    if (s[0].selected[0] !== first.labels[0]) fail(`ArrowRight from the last tab selected ${s[0].selected}, not the first`);
    await page.keyboard.press("ArrowLeft");
    s = await state(page);
    if (s[0].selected[0] !== first.labels.at(-1)) fail(`ArrowLeft from the first tab selected ${s[0].selected}, not the last`);
    return `ArrowRight, Home, End and wrapping both ways move the selection; ${s.length} listings follow`;
  }));

  test("listings: the choice is remembered on the next page, and axe passes in it", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const s = await state(page);
    if (!s.length) return "no tabbed listing to try";
    const chosen = s[0].labels.at(-1);
    await page.locator(`#${s[0].id} [role="tab"][data-label="${chosen}"]`).click();
    // Another chapter's page: the choice is the reader's, not one page's.
    const others = [];
    for (const other of pages.filter((p) => p !== chapterPage)) {
      const elsewhere = await open(ctx, BASE + other);
      const listings = (await state(elsewhere)).filter((l) => l.labels.includes(chosen));
      await elsewhere.close();
      const wrong = listings.filter((l) => l.selected[0] !== chosen || l.shown[0] !== chosen);
      if (wrong.length) fail(`on ${other}, ${wrong.map((l) => l.id).join(", ")} show ${wrong[0].selected}, not "${chosen}"`);
      if (listings.length) others.push(`${other} (${listings.length})`);
    }
    if (!others.length) fail(`no other page of ${pages.join(", ")} has a listing with a "${chosen}" tab to remember it on`);
    const next = await open(ctx, CHAPTER);
    const again = await state(next);
    const wrong = again.filter((l) => l.labels.includes(chosen) && l.selected[0] !== chosen);
    if (wrong.length) fail(`on the next page, ${wrong.map((l) => l.id).join(", ")} show ${wrong[0].selected}, not "${chosen}"`);
    const violations = (await runAxe(next)).filter((v) => ["serious", "critical"].includes(v.impact));
    await next.close();
    if (violations.length) fail(`axe with "${chosen}" chosen: ${violations.map((v) => `${v.id} (${v.nodes.map((n) => n.target).join(", ")})`).join("; ")}`);
    return `"${chosen}" shows in all ${again.length} listings on the page again and on ${others.join(", ")}; axe: no serious or critical violation`;
  }));

  test("notebook: the chapter links its notebook, and it is one", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const href = await page.evaluate(() => document.querySelector("a.notebook-link")?.getAttribute("href") || "");
    if (!href) {
      if (opts.notebook) fail(`${chapterPage} has no notebook link; NOTEBOOK=1 asks for one`);
      return `${chapterPage} has no notebook link, and NOTEBOOK asks for none`;
    }
    const res = await page.request.get(new URL(href, CHAPTER).href);
    if (res.status() !== 200) fail(`${href}: HTTP ${res.status()}`);
    const nb = JSON.parse(await res.text());
    if (nb.nbformat !== 4 || !Array.isArray(nb.cells) || !nb.cells.some((c) => c.cell_type === "code")) {
      fail(`${href} is not an nbformat 4 notebook with code cells`);
    }
    return `${href}: nbformat ${nb.nbformat}.${nb.nbformat_minor}, ${nb.cells.length} cells`;
  }));
});
