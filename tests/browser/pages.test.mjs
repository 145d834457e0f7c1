// Every page: it loads under the sub-path, and its links and anchors resolve.
// Part of the browser test of the built site (tests/browser/harness.mjs says how it runs).

import { test } from "node:test";
import { browserSuite, CHECK_TIMEOUT_MS, checked, CHECKS, fail, oneLine, PREFIX } from "./harness.mjs";

await browserSuite(async ({ BASE, ORIGIN, pages, pageInfo, isNetwork, newContext, gotoReady, claimsTotal }) => {
  const ctx = await newContext();

  test(CHECKS[0], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
          claims: document.querySelectorAll(".claim").length,
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
    // Every claim the build recorded shows on some page: a chapter or appendix whose
    // quoted figures went missing from its page is caught here.
    const shown = [...pageInfo.values()].reduce((n, i) => n + i.claims, 0);
    const want = claimsTotal();
    if (want === null) fail("the site has no readable claims.json");
    if (shown !== want) fail(`${shown} quoted figures (.claim) on the site's pages; claims.json records ${want}`);
    const per = [...pageInfo].filter(([, i]) => i.claims).map(([p, i]) => `${p} ${i.claims}`).join(", ");
    return `${pages.length} pages at ${BASE}; ${shown} quoted figures, as claims.json records (${per})`;
  }));

  test(CHECKS[13], { timeout: CHECK_TIMEOUT_MS }, checked(async () => {
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
  }));
});
