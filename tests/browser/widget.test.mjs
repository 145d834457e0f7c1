// The reader's widget, through tests/browser/widget.mjs.
// Part of the browser test of the built site (tests/browser/harness.mjs says how it runs).

import { test } from "node:test";
import fs from "node:fs";
import path from "node:path";
import { browserSuite, CHECK_TIMEOUT_MS, checked, CHECKS, fail, note, opts } from "./harness.mjs";
import { testWidget } from "./widget.mjs";

await browserSuite(async ({ BASE, CHAPTER, chapterPage, newContext, axeSource }) => {
  const ctx = await newContext();
  const hasWidget = fs.readFileSync(path.join(opts.site, chapterPage), "utf8").includes('class="reverse-widget"');
  if (hasWidget) {
    // widget.mjs reports its own checks (parity, keyboard, axe, phone, timing) through
    // `check`, each a subtest here.
    test(CHECKS[16], { timeout: 420_000 }, async (t) => {
      const wpage = await ctx.newPage();
      const check = (name, fn) => t.test(name, { timeout: CHECK_TIMEOUT_MS }, checked(fn));
      try {
        await testWidget(wpage, { baseUrl: BASE, chapterUrl: CHAPTER, log: note, check, axeSource: axeSource, models: opts.models });
      } finally {
        await wpage.close();
      }
    });
  } else {
    test(CHECKS[16], checked(() => {
      if (opts.models) fail(`${chapterPage} has no widget; MODELS asks for ${opts.models.join(", ")}`);
      return `${chapterPage} has no widget, and MODELS asks for none`;
    }));
  }
});
