// The widget's model against the engine, for every model the chapters' widgets export
// (see compare.mjs): chapter 1's flip the reference's attention switches one at a time,
// chapter 2's change how positions enter and what the task is.
//
//   node --test tests/node/          (after `revtx-book build`; SITE=dir for another site)

import { test } from "node:test";
import assert from "node:assert/strict";
import { compareEveryModel, exported, switches } from "./compare.mjs";

const site = exported(process.env.SITE ?? "site");

test("the site exports models, each a different trained run", () => {
  assert.ok(site.manifest.models.length >= 1, "no model in the manifest");
  const keys = new Set(site.manifest.models.map((m) => m.key));
  assert.equal(keys.size, site.manifest.models.length, "two models from one cache entry");
  // Models that differ in nothing but their attention switches must differ in those.
  const rest = (m) => JSON.stringify({ ...m.config, attn: null, task: m.task, seed: m.seed });
  const groups = new Map();
  for (const m of site.manifest.models) groups.set(rest(m), [...(groups.get(rest(m)) ?? []), m]);
  for (const [, models] of groups) {
    const all = new Set(models.map(switches));
    assert.equal(all.size, models.length, `two models with one set of switches: ${models.map((m) => m.id).join(", ")}`);
  }
});

compareEveryModel(() => site, site.manifest.models.map((m) => m.id));
