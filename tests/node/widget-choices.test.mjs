// The widget's model against the engine for every value of every choice of the model
// (positions, norm placement and kind, activation) and every task the widget runs, one
// at a time beside the chapter's, and two models that combine several: builds
// tests/fixtures/choices (thirteen tiny runs, 30 steps each, and a widget of all of
// them), then compares as compare.mjs does.

import { before, after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildFixture, choices, compareEveryModel, runIds } from "./compare.mjs";
import { choicesOf } from "../../static/widget/model.js";

const REPO = join(import.meta.dirname, "..", "..");
const IDS = runIds(readFileSync(join(REPO, "tests/fixtures/choices/book/chapter.md"), "utf8"));

// Every value the engine offers (revtx-spec's enums) that the widget runs.
const VALUES = {
  positions: ["learned", "sinusoidal", "rope", "alibi", "none"],
  norm: ["pre", "post", "none"],
  normKind: ["layer", "rms"],
  activation: ["gelu", "relu"],
};
const TASKS = ["reverse", "copy", "sort"];

let root;
let site;

before(() => {
  ({ root, site } = buildFixture("choices"));
});

after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

test("the widget exports a model with every value of every choice, and every task", () => {
  assert.equal(IDS.length, 13, `runs in the fixture: ${IDS.join(", ")}`);
  const models = site.manifest.models;
  assert.deepEqual(models.map((m) => m.id), IDS);
  for (const [choice, values] of Object.entries(VALUES)) {
    const seen = new Set(models.map((m) => choicesOf(m.config)[choice]));
    assert.deepEqual([...seen].sort(), [...values].sort(), choice);
  }
  assert.deepEqual([...new Set(models.map((m) => m.task))].sort(), [...TASKS].sort());
  assert.equal(new Set(models.map(choices)).size, IDS.length, "each model its own combination");
});

compareEveryModel(() => site, IDS);
