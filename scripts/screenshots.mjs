// Takes the README's two screenshots from a built site served on 127.0.0.1: the chapter at
// its section on seeds, a checked figure's tooltip open, and the widget reversing a string.
//   python3 -m http.server 8765 --directory site &   node scripts/screenshots.mjs 8765
// Writes docs/chapter.png and docs/widget.png.
import { createRequire } from "node:module";
const require = createRequire(new URL("../tests/browser/package.json", import.meta.url));
const { chromium } = require("playwright-core");
const port = process.argv[2] || "8765";
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
await page.goto(`http://127.0.0.1:${port}/chapter-1.html#sec-seeds`);
await page.waitForTimeout(800);
// A checked figure's tooltip: where the number came from.
await page.locator("#sec-seeds ~ p .claim").first().hover();
await page.waitForTimeout(300);
await page.screenshot({ path: "docs/chapter.png" });
const input = page.locator("#reverse-input");
await input.scrollIntoViewIfNeeded();
await input.fill("gbdace");
await page.waitForTimeout(1500);
await page.locator("#reverse").screenshot({ path: "docs/widget.png" });
await browser.close();
