// What both Node tests of the widget's model check, for the models a built site exports
// (SITE/models): every model decodes every test and long string exactly as the engine
// did (models/decodes.json), and its attention for the manifest's input agrees with the
// engine's within 1e-5. The model is static/widget/model.js and what it imports: plain
// computation, no DOM.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { buildModel, unpack, unshuffle } from "../../static/widget/weights.js";
import { attentionOf, greedy } from "../../static/widget/model.js";
import { LETTERS, PAD, SEP } from "../../static/widget/tokens.js";

const TOLERANCE = 1e-5;

/** The exported models of the site at `site`, read from disk. */
export function exported(site) {
  const models = join(site, "models");
  return {
    dir: models,
    manifest: JSON.parse(readFileSync(join(models, "manifest.json"), "utf8")),
    decodes: JSON.parse(readFileSync(join(models, "decodes.json"), "utf8")),
  };
}

const REPO = join(import.meta.dirname, "..", "..");

/** The run ids a fixture chapter declares, in order. */
export function runIds(chapter) {
  return [...chapter.matchAll(/^```run (\S+)$/gm)].map((m) => m[1]);
}

/** Builds the fixture book `tests/fixtures/<name>/book` with target/release/revtx-book
 * (or $REVTX_BOOK) into a new temporary folder; returns the folder and its site's
 * exported models. */
export function buildFixture(name) {
  const root = mkdtempSync(join(tmpdir(), `revtx-${name}-`));
  cpSync(join(REPO, `tests/fixtures/${name}/book`), join(root, "book"), { recursive: true });
  // The book's numerics record, so that the gate lets this machine train.
  cpSync(join(REPO, "book/numerics.json"), join(root, "book/numerics.json"));
  for (const d of ["templates", "static"]) cpSync(join(REPO, d), join(root, d), { recursive: true });
  const bin = process.env.REVTX_BOOK ?? join(REPO, "target/release/revtx-book");
  execFileSync(bin, ["build", "--quiet", "--root", root, "--out", join(root, "site")], {
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 600_000,
  });
  return { root, site: exported(join(root, "site")) };
}

/** The model's choices and task, as one string: `position_encoding=rope task=sort`. */
export function choices(entry) {
  const c = entry.config;
  const keys = ["position_encoding", "norm", "norm_kind", "activation"];
  return keys
    .map((k) => `${k}=${c[k] ?? "default"}`)
    .concat([`task=${entry.task ?? "reverse"}`])
    .join(" ");
}

async function load(dir, entry) {
  const bytes = readFileSync(join(dir, entry.file));
  const planes = await unpack(new Response(bytes), 4 * entry.floats);
  return buildModel(entry, unshuffle(planes, entry.floats));
}

/** The switches of each model, as one string: `scale=true causal=false softmax=keys`. */
export function switches(entry) {
  const a = entry.config.attn;
  return Object.keys(a)
    .sort()
    .map((k) => `${k}=${a[k]}`)
    .join(" ");
}

/** Declares the two tests of each model of `getSite()` (called when the tests run). */
export function compareEveryModel(getSite, ids) {
  for (const id of ids) {
    test(`${id}: every string decodes as the engine decoded it`, async () => {
      const { dir, manifest, decodes } = getSite();
      const entry = manifest.models.find((m) => m.id === id);
      assert.ok(entry, `no model ${id} in the manifest`);
      const model = await load(dir, entry);
      const sets = decodes[id];
      assert.ok(sets, `decodes.json has no ${id}`);
      let compared = 0;
      for (const name of ["test", "long"]) {
        const { inputs, outputs } = sets[name];
        assert.ok(inputs.length > 0 && inputs.length === outputs.length, `${name} strings`);
        const wrong = [];
        inputs.forEach((input, k) => {
          const got = greedy(model, input).output;
          if (got !== outputs[k]) wrong.push(`${input}: engine ${outputs[k]}, here ${got}`);
        });
        assert.deepEqual(wrong, [], `${id} (${switches(entry)}; ${choices(entry)}) ${name}: ${wrong.length} differ`);
        compared += inputs.length;
      }
      assert.ok(compared >= 2, `${id}: compared ${compared} strings`);
    });

    test(`${id}: attention agrees with the engine's within ${TOLERANCE}`, async () => {
      const { dir, manifest, decodes } = getSite();
      const entry = manifest.models.find((m) => m.id === id);
      const model = await load(dir, entry);
      const engine = decodes[id]?.attention ?? entry.attention;
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
      assert.ok(
        worst <= TOLERANCE,
        `${id} (${switches(entry)}; ${choices(entry)}): largest difference ${worst} over ${cells} cells`,
      );
    });
  }
}
