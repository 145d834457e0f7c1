// The widget's model against the engine for every combination of the attention switches
// (scale, causal mask, softmax axis), not only those the chapter exports: builds
// tests/fixtures/switches (eight tiny runs, 30 steps each, and a widget of all eight) with
// target/release/revtx-book into a temporary directory, then compares as compare.mjs does.
// About 20 s on 2 cores, most of it training.

import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compareEveryModel, exported, switches } from "./compare.mjs";

const REPO = join(import.meta.dirname, "..", "..");
const CHAPTER = readFileSync(join(REPO, "tests/fixtures/switches/book/chapter.md"), "utf8");
// The run ids, in the widget's order, as the chapter declares them.
const IDS = [...CHAPTER.matchAll(/^```run (\S+)$/gm)].map((m) => m[1]);

let root;
let site;

before(() => {
  root = mkdtempSync(join(tmpdir(), "revtx-switches-"));
  cpSync(join(REPO, "tests/fixtures/switches/book"), join(root, "book"), { recursive: true });
  // The book's numerics record, so that the gate lets this machine train.
  cpSync(join(REPO, "book/numerics.json"), join(root, "book/numerics.json"));
  for (const d of ["templates", "static"]) cpSync(join(REPO, d), join(root, d), { recursive: true });
  const bin = process.env.REVTX_BOOK ?? join(REPO, "target/release/revtx-book");
  execFileSync(bin, ["build", "--quiet", "--root", root, "--out", join(root, "site")], {
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 600_000,
  });
  site = exported(join(root, "site"));
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
