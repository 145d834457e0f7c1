// The widget's model against the engine, for the models the chapter's widget exports
// (see compare.mjs): each flips one attention switch of the reference.
//
//   node --test tests/node/          (after `revtx-book build`; SITE=dir for another site)

import { test } from "node:test";
import assert from "node:assert/strict";
import { compareEveryModel, exported, switches } from "./compare.mjs";

const site = exported(process.env.SITE ?? "site");

test("the site exports models, each with its own switches", () => {
  assert.ok(site.manifest.models.length >= 1, "no model in the manifest");
  const all = new Set(site.manifest.models.map(switches));
  assert.equal(all.size, site.manifest.models.length, "two models with one set of switches");
});

compareEveryModel(() => site, site.manifest.models.map((m) => m.id));
