// The widget's model (static/widget/model.js and the modules it imports) under Node, with
// no browser: every exported model of the built site decodes every test and long string
// exactly as the engine did (site/models/decodes.json), and its attention for the
// manifest's input agrees with the engine's within 1e-5. The models cover each attention
// switch flipped alone (scale, softmax axis, causal mask), so each branch of the port is
// compared with the engine's own kernels.
//
//   node --test tests/node/          (after `revtx-book build`; SITE=dir for another site)

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { buildModel, unpack, unshuffle } from "../../static/widget/weights.js";
import { attentionOf, greedy } from "../../static/widget/model.js";
import { LETTERS, PAD, SEP } from "../../static/widget/tokens.js";

const SITE = process.env.SITE ?? "site";
const MODELS = join(SITE, "models");
const manifest = JSON.parse(readFileSync(join(MODELS, "manifest.json"), "utf8"));
const decodes = JSON.parse(readFileSync(join(MODELS, "decodes.json"), "utf8"));
const TOLERANCE = 1e-5;

async function load(entry) {
  const bytes = readFileSync(join(MODELS, entry.file));
  const planes = await unpack(new Response(bytes), 4 * entry.floats);
  return buildModel(entry, unshuffle(planes, entry.floats));
}

test("the site exports models to compare", () => {
  assert.ok(manifest.models.length >= 1, "no model in the manifest");
  const switches = new Set(
    manifest.models.map((m) => JSON.stringify(m.config.attn)),
  );
  assert.equal(switches.size, manifest.models.length, "two models with one set of switches");
});

for (const entry of manifest.models) {
  test(`${entry.id}: every string decodes as the engine decoded it`, async () => {
    const model = await load(entry);
    const sets = decodes[entry.id];
    assert.ok(sets, `decodes.json has no ${entry.id}`);
    let compared = 0;
    for (const name of ["test", "long"]) {
      const { inputs, outputs } = sets[name];
      assert.ok(inputs.length > 0 && inputs.length === outputs.length, `${name} strings`);
      const wrong = [];
      inputs.forEach((input, k) => {
        const got = greedy(model, input).output;
        if (got !== outputs[k]) wrong.push(`${input}: engine ${outputs[k]}, here ${got}`);
      });
      assert.deepEqual(wrong, [], `${entry.id} ${name}: ${wrong.length} differ`);
      compared += inputs.length;
    }
    assert.ok(compared >= 2, `${entry.id}: compared ${compared} strings`);
  });

  test(`${entry.id}: attention agrees with the engine's within ${TOLERANCE}`, async () => {
    const model = await load(entry);
    const engine = sets(entry);
    const ids = engine.tokens.map((c) => (c === "|" ? SEP : c === "." ? PAD : LETTERS.indexOf(c)));
    assert.ok(!ids.includes(-1), `tokens ${engine.tokens.join(" ")}`);
    const ours = attentionOf(model, ids);
    let worst = 0;
    let cells = 0;
    engine.weights.forEach((block, b) =>
      block.forEach((head, h) =>
        head.forEach((row, q) =>
          row.forEach((w, k) => {
            worst = Math.max(worst, Math.abs(w - ours[b][h][q][k]));
            cells++;
          }),
        ),
      ),
    );
    assert.ok(cells > 0, "the engine's attention has no cells");
    assert.ok(worst <= TOLERANCE, `${entry.id}: largest difference ${worst} over ${cells} cells`);
  });
}

/** The engine's attention for the manifest's input: decodes.json's, else the manifest's. */
function sets(entry) {
  return decodes[entry.id]?.attention ?? entry.attention;
}
