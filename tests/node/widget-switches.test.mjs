// The widget's model against the engine for every combination of the attention switches
// (scale, causal mask, softmax axis), not only those the chapter exports: builds
// tests/fixtures/switches (eight tiny runs, 30 steps each, and a widget of all eight) with
// target/release/revtx-book into a temporary directory, then compares as compare.mjs does.
// About 20 s on 2 cores, most of it training.

import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildFixture, compareEveryModel, runIds, switches } from "./compare.mjs";

const REPO = join(import.meta.dirname, "..", "..");
// The run ids, in the widget's order, as the chapter declares them.
const IDS = runIds(readFileSync(join(REPO, "tests/fixtures/switches/book/chapter.md"), "utf8"));

let root;
let site;

before(() => {
  ({ root, site } = buildFixture("switches"));
});

after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

test("the widget exports all eight combinations of the switches", () => {
  assert.equal(IDS.length, 8, `runs in the fixture: ${IDS.join(", ")}`);
  assert.deepEqual(site.manifest.models.map((m) => m.id), IDS);
  const all = new Set(site.manifest.models.map(switches));
  assert.equal(all.size, 8, [...all].join("; "));
});

compareEveryModel(() => site, IDS);
