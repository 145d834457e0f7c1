// The browser test of a book with more than one chapter: the fixture textbook
// (tests/fixtures/textbook/, two chapters and an appendix), built by `make textbook` and
// run as
//
//   SITE=target/textbook/site node --test tests/browser/textbook.check.mjs
//
// Its name does not match `*.test.mjs`, so `node --test tests/browser/` (the real book's
// checks) leaves it out. What it checks: the previous/next links walk the book in order;
// a reference shows a preview of its target on hover and on keyboard focus, across pages;
// footnotes sit in the margin at 1280 px and open in place at 390 px; an answer is shut
// until opened; citations link to their entries; axe finds nothing serious or critical on
// any page, in either theme.

import { test } from "node:test";
import { browserSuite, CHECK_TIMEOUT_MS, checked, DESKTOP, fail, oneLine, PHONE } from "./harness.mjs";

/** The book's pages in reading order, as book.toml places them. */
const ORDER = ["chapter-1.html", "chapter-2.html", "appendix-a.html"];

await browserSuite(async ({ BASE, pages, newContext, open, runAxe, settled }) => {
  const ctx = await newContext();

  test("textbook: previous and next walk the book in order", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const missing = ORDER.filter((p) => !pages.includes(p));
    if (missing.length) fail(`pages missing from the site: ${missing.join(", ")}`, [`pages: ${pages.join(", ")}`]);
    const page = await open(ctx, BASE + ORDER[0]);
    const seen = [ORDER[0]];
    try {
      for (let k = 1; k < ORDER.length; k++) {
        const next = page.locator("nav.page-nav a[rel=next]");
        if ((await next.count()) !== 1) fail(`${seen.at(-1)} has ${await next.count()} next links, want 1`);
        await Promise.all([page.waitForURL(BASE + ORDER[k]), next.click()]);
        await settled(page);
        seen.push(page.url().slice(BASE.length));
      }
      // After the appendix comes the page of runs, which closes every book.
      const last = await page.locator("nav.page-nav a[rel=next]").getAttribute("href");
      if (!last || !last.endsWith("runs.html")) fail(`the appendix's next link is ${last}, want runs.html`);
      const prev = page.locator("nav.page-nav a[rel=prev]");
      await Promise.all([page.waitForURL(BASE + ORDER[1]), prev.click()]);
      // The sidebar lists every chapter with its sections, on every page.
      const sidebar = await page.evaluate(() =>
        Array.from(document.querySelectorAll(".toc .toc-sections a"), (a) => a.textContent.trim())
      );
      for (const want of ["1.1 A tiny run", "2.1 Reading a run from another chapter", "A.1 Where the numbers come from"]) {
        if (!sidebar.includes(want)) fail(`the sidebar of ${ORDER[1]} lacks "${want}"`, [`it has: ${sidebar.join(" | ")}`]);
      }
    } finally {
      await page.close();
    }
    return `${seen.join(" → ")}, and back; the sidebar lists all three`;
  }));

  /** The tip of the reference to `href` on `page`: whether it shows, what it says, and
   * whether it lies inside the window. */
  async function tipOf(page, href) {
    return page.evaluate((href) => {
      const a = document.querySelector(`.xref-box > a.xref[href="${href}"]`);
      const tip = a && a.parentElement.querySelector(".xref-tip");
      if (!tip) return null;
      const s = getComputedStyle(tip);
      const r = tip.getBoundingClientRect();
      return {
        shown: s.visibility === "visible" && Number(s.opacity) > 0.9,
        text: tip.textContent,
        inside: r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight,
      };
    }, href);
  }

  test("textbook: a reference previews its target on hover and keyboard focus, across pages", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const page = await open(ctx, BASE + "chapter-2.html");
    const href = "chapter-1.html#fig-tiny-loss";
    try {
      const link = page.locator(`.xref-box > a.xref[href="${href}"]`).first();
      if ((await link.count()) !== 1) fail(`chapter-2.html has no reference to ${href}`);
      const before = await tipOf(page, href);
      if (!before || before.shown) fail(`the preview shows before anything points at it: ${JSON.stringify(before)}`);
      if (!/Figure 1\.1/.test(before.text) || !/training loss/.test(before.text)) {
        fail(`the preview of ${href} does not hold Figure 1.1's caption: "${oneLine(before.text)}"`);
      }
      await link.hover();
      await page.waitForTimeout(250);
      const hovered = await tipOf(page, href);
      if (!hovered.shown || !hovered.inside) fail(`on hover the preview is ${JSON.stringify(hovered)}`);
      await page.mouse.move(0, 0);
      await page.waitForTimeout(250);
      // Keyboard: Tab until the reference has focus.
      await page.evaluate(() => document.activeElement && document.activeElement.blur());
      let tabs = 0;
      for (; tabs < 80; tabs++) {
        await page.keyboard.press("Tab");
        const at = await page.evaluate(() => document.activeElement && document.activeElement.getAttribute("href"));
        if (at === href) break;
      }
      if (tabs === 80) fail(`80 Tabs never reached the reference to ${href}`);
      await page.waitForTimeout(250);
      const focused = await tipOf(page, href);
      if (!focused.shown || !focused.inside) fail(`on focus the preview is ${JSON.stringify(focused)}`);
      await page.keyboard.press("Escape");
      await page.waitForTimeout(250);
      const dismissed = await tipOf(page, href);
      if (dismissed.shown) fail("Escape does not hide the preview");
      return `"${oneLine(focused.text).slice(0, 70)}…" on hover and after ${tabs + 1} Tabs; Escape hides it`;
    } finally {
      await page.close();
    }
  }));

  test("textbook: footnotes in the margin at 1280 px, opened in place at 390 px", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const notes = [];
    const geometry = (page) =>
      page.evaluate(() =>
        Array.from(document.querySelectorAll(".footnote"), (f) => {
          const note = f.querySelector(".fn-note");
          const p = f.closest("p");
          const r = note.getBoundingClientRect();
          return {
            id: note.id,
            shown: getComputedStyle(note).display !== "none" && r.width > 0,
            left: r.left,
            right: r.right,
            textRight: p.getBoundingClientRect().right,
            expanded: f.querySelector(".fn-ref").getAttribute("aria-expanded"),
            claims: note.querySelectorAll(".claim").length,
          };
        })
      );
    let total = 0;
    for (const p of ORDER) {
      const page = await open(ctx, BASE + p);
      try {
        const g = await geometry(page);
        total += g.length;
        for (const n of g) {
          if (!n.shown) fail(`${p}#${n.id}: a footnote is hidden at 1280 px`);
          if (n.left < n.textRight) fail(`${p}#${n.id}: the note (left ${n.left}) overlaps the text (right ${n.textRight})`);
          if (n.right > DESKTOP.width) fail(`${p}#${n.id}: the note runs off the window (right ${n.right})`);
          if (n.expanded !== "true") fail(`${p}#${n.id}: aria-expanded is ${n.expanded} while the note shows`);
        }
        notes.push(`${p}: ${g.length}`);
      } finally {
        await page.close();
      }
    }
    if (total < 3) fail(`${total} footnotes in the book; the fixture has 3`);
    const phone = await newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    try {
      const page = await open(phone, BASE + "chapter-1.html");
      let g = await geometry(page);
      if (g.length !== 1) fail(`chapter-1.html has ${g.length} footnotes at 390 px, want 1`);
      if (g[0].shown) fail("at 390 px the note shows before it is opened");
      if (g[0].claims !== 1) fail(`the note holds ${g[0].claims} checked figures, want 1`);
      await page.locator(".fn-ref").first().focus();
      await page.keyboard.press("Enter");
      g = await geometry(page);
      if (!g[0].shown || g[0].expanded !== "true") fail(`Enter does not open the note: ${JSON.stringify(g[0])}`);
      if (g[0].left < 0 || g[0].right > PHONE.width) fail(`the open note does not fit the window: ${JSON.stringify(g[0])}`);
      await page.keyboard.press("Enter");
      g = await geometry(page);
      if (g[0].shown || g[0].expanded !== "false") fail(`Enter again does not shut the note: ${JSON.stringify(g[0])}`);
    } finally {
      await phone.close();
    }
    return `${notes.join(", ")} in the margin at 1280 px; at 390 px Enter opens and shuts the note in place`;
  }));

  test("textbook: an answer is shut until the reader opens it", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const page = await open(ctx, BASE + "chapter-1.html");
    try {
      const answers = page.locator("details.answer");
      if ((await answers.count()) !== 1) fail(`chapter-1.html has ${await answers.count()} answers, want 1`);
      const state = () =>
        page.evaluate(() => {
          const d = document.querySelector("details.answer");
          const body = d.querySelector(".answer-body");
          return { open: d.open, visible: body.checkVisibility(), claims: body.querySelectorAll(".claim").length, refs: body.querySelectorAll("a.xref").length };
        });
      const shut = await state();
      if (shut.open || shut.visible) fail(`the answer shows before it is opened: ${JSON.stringify(shut)}`);
      await page.locator("details.answer > summary").focus();
      await page.keyboard.press("Enter");
      const opened = await state();
      if (!opened.open || !opened.visible) fail(`Enter on the summary does not open it: ${JSON.stringify(opened)}`);
      if (opened.claims < 1 || opened.refs < 1) fail(`the answer holds ${opened.claims} claims and ${opened.refs} references`);
      return `shut, opened with Enter; it holds ${opened.claims} checked figure(s) and ${opened.refs} reference(s)`;
    } finally {
      await page.close();
    }
  }));

  test("textbook: citations link to their entries in the chapter's reference list", { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const found = [];
    for (const p of ORDER) {
      const page = await open(ctx, BASE + p);
      try {
        const r = await page.evaluate(() => {
          const cites = Array.from(document.querySelectorAll(".citation a.citation"), (a) => a.getAttribute("href"));
          const entries = Array.from(document.querySelectorAll(".reference-list > li"), (li) => li.id);
          const dangling = cites.filter((h) => !document.getElementById(h.slice(1)));
          const links = document.querySelectorAll(".reference-list a[href^='http']").length;
          return { cites, entries, dangling, links };
        });
        if (!r.cites.length) fail(`${p} has no citation`);
        if (r.dangling.length) fail(`${p}: citations point nowhere: ${r.dangling.join(", ")}`);
        const uncited = r.entries.filter((id) => !r.cites.includes(`#${id}`));
        if (uncited.length) fail(`${p} lists works it does not cite: ${uncited.join(", ")}`);
        if (r.links !== r.entries.length) fail(`${p}: ${r.links} of ${r.entries.length} entries link to a DOI or URL`);
        found.push(`${p}: ${r.cites.length} → ${r.entries.length}`);
      } finally {
        await page.close();
      }
    }
    return found.join("; ");
  }));

  for (const scheme of ["light", "dark"]) {
    test(`textbook: axe finds nothing serious or critical on any page (${scheme} theme)`, { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
      const c = await newContext({ colorScheme: scheme });
      const lines = [];
      try {
        for (const p of ["index.html", ...ORDER]) {
          const page = await open(c, BASE + p);
          // Open the answers, so that their contents are checked too.
          await page.evaluate(() => document.querySelectorAll("details").forEach((d) => (d.open = true)));
          const violations = await runAxe(page);
          await page.close();
          const bad = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
          if (bad.length) fail(`${p}: ${bad.map((v) => `${v.id} (${v.nodes.map((n) => n.target).join(", ")})`).join("; ")}`);
          lines.push(`${p}: ${violations.length ? violations.map((v) => `${v.impact} ${v.id}`).join(", ") : "none"}`);
        }
      } finally {
        await c.close();
      }
      return lines;
    }));
  }
});
