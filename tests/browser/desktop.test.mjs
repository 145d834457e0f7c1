// The chapter at 1280 px: math, figures, contents, theme, search, tooltips, answers, axe.
// Part of the browser test of the built site (tests/browser/harness.mjs says how it runs).

import { test } from "node:test";
import { browserSuite, CHECK_TIMEOUT_MS, checked, CHECKS, DESKTOP, fail, oneLine, opts } from "./harness.mjs";

await browserSuite(async ({ BASE, CHAPTER, chapterPage, pages, newContext, open, gotoReady, settled, scrollSettled, headingPlacement, nearTop, axeCheck, answersCheck, claimsFor }) => {
  const ctx = await newContext();
  const page = await open(ctx, CHAPTER);

  test(CHECKS[1], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[2], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[3], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[5], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[6], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[7], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));

  test(CHECKS[18], { timeout: CHECK_TIMEOUT_MS }, checked(() => answersCheck(ctx, DESKTOP.width)));

  test(CHECKS[11], checked(() => axeCheck(ctx)));

  test(CHECKS[12], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
    const c = await newContext({ colorScheme: "dark" });
    try {
      return await axeCheck(c);
    } finally {
      await c.close();
    }
  }));
});
