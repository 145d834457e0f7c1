// The chapter at 390 px (and the screenshots): contents panel, no sideways scrolling,
// boxes that fit or scroll, anchors below the sticky header, answers; the runs table at
// both widths.
// Part of the browser test of the built site (tests/browser/harness.mjs says how it runs).

import { test } from "node:test";
import fs from "node:fs";
import path from "node:path";
import { browserSuite, CHECK_TIMEOUT_MS, checked, CHECKS, fail, opts, PHONE } from "./harness.mjs";

await browserSuite(async ({ BASE, CHAPTER, newContext, open, settled, scrollSettled, headingPlacement, nearTop, answersCheck }) => {
  const ctx = await newContext();
  const page = await open(ctx, CHAPTER);
  const phone = await newContext({ viewport: PHONE, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const ppage = await open(phone, CHAPTER);

  test(CHECKS[19], { timeout: CHECK_TIMEOUT_MS }, checked(() => answersCheck(phone, PHONE.width)));

  test(CHECKS[4], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[8], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[9], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[10], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[14], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[17], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));
});
