// The widget with a head switched off against the engine's intervening runs, for every head
// of every model a built site's widgets export. A scratch book declares each widget model's
// run again (its whole configuration written out, at its seed) with an intervening run
// beside it (`from`, `ablate = "each-head"`), and is built reading the site's run cache:
// the trained runs are found there, so nothing trains, and revtx-intervene zeroes each head
// in turn. The page's model (static/widget/model.js), with the same head switched off,
// must decode the sampled strings exactly as the engine did.
//
//   node --test tests/node/     (after `revtx-book build`; SITE=dir and CACHE=dir for others)

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { buildModel, unpack, unshuffle } from "../../static/widget/weights.js";
import { greedy } from "../../static/widget/model.js";
import { exported } from "./compare.mjs";

const REPO = join(import.meta.dirname, "..", "..");
const SITE = process.env.SITE ?? join(REPO, "site");
const CACHE = process.env.CACHE ?? join(REPO, ".revtx-cache");
// Every STEP-th string of each set, for each head: every head of every model is held to
// the engine on the same strings, at a fifth of the cost of all of them.
const STEP = { test: 5, long: 10 };

/** A TOML value for a JSON one (numbers, strings, booleans, arrays of them). */
function toml(v) {
  if (Array.isArray(v)) return `[${v.map(toml).join(", ")}]`;
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

/** The lines of a run block that set every key of `config` (tables as `[a.b]`). */
function tables(config) {
  const out = [];
  const walk = (obj, path) => {
    const flat = Object.entries(obj).filter(([, v]) => v === null || typeof v !== "object" || Array.isArray(v));
    const nested = Object.entries(obj).filter(([, v]) => v !== null && typeof v === "object" && !Array.isArray(v));
    if (path && flat.length) out.push(`[${path}]`);
    for (const [k, v] of flat) if (v !== null) out.push(`${k} = ${toml(v)}`);
    for (const [k, v] of nested) walk(v, path ? `${path}.${k}` : k);
  };
  for (const part of ["model", "data", "train", "eval"]) walk(config[part], part);
  return out;
}

/** Builds the scratch book of every widget model and its each-head ablation; returns
 * each model's trained result and ablation result, by model id. */
function engineAblations(manifest) {
  const root = mkdtempSync(join(tmpdir(), "revtx-widget-ablation-"));
  const blocks = [];
  for (const m of manifest.models) {
    const trained = JSON.parse(readFileSync(join(SITE, "runs", `${m.run}-s${m.seed}.json`), "utf8"));
    blocks.push(
      ["```run " + m.id, `kind = ${toml(trained.config.kind)}`, `seed = ${m.seed}`, ...tables(trained.config), "```"].join("\n"),
      ["```run " + m.id + "_off", `from = "${m.id}"`, 'ablate = "each-head"', "```"].join("\n"),
    );
  }
  const book = join(root, "book");
  cpSync(join(REPO, "book/numerics.json"), join(book, "numerics.json"));
  writeFileSync(join(book, "book.toml"), 'title = "Ablations"\nauthor = "Tests"\nchapters = ["chapter.md"]\n');
  writeFileSync(join(book, "chapter.md"), `# Widget models, heads switched off\n\n${blocks.join("\n\n")}\n`);
  for (const d of ["templates", "static"]) cpSync(join(REPO, d), join(root, d), { recursive: true });
  const bin = process.env.REVTX_BOOK ?? join(REPO, "target/release/revtx-book");
  const own = join(root, ".revtx-cache");
  execFileSync(bin, ["build", "--quiet", "--no-pdf", "--root", root, "--out", join(root, "site"), "--cache", own, "--cache", CACHE], {
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 600_000,
  });
  // Nothing trained: the scratch book's own cache holds the interventions and no weights.
  const runs = join(own, "runs");
  const trainedHere = readdirSync(runs).filter((k) => existsSync(join(runs, k, "weights.safetensors")));
  assert.deepEqual(trainedHere, [], "the scratch book trained a model: its run differs from the site's");
  const out = new Map();
  for (const m of manifest.models) {
    const read = (id) => JSON.parse(readFileSync(join(root, "site", "runs", `${id}-s${m.seed}.json`), "utf8"));
    out.set(m.id, { trained: read(m.id), off: read(`${m.id}_off`) });
  }
  return out;
}

async function load(dir, entry) {
  const bytes = readFileSync(join(dir, entry.file));
  const planes = await unpack(new Response(bytes), 4 * entry.floats);
  return buildModel(entry, unshuffle(planes, entry.floats));
}

const site = exported(SITE);
let engine = null;

test("the engine's ablations of every widget model are built, training nothing", () => {
  engine = engineAblations(site.manifest);
  assert.equal(engine.size, site.manifest.models.length);
});

for (const m of site.manifest.models) {
  test(`${m.id}: with each head switched off, the page decodes as the engine`, async () => {
    assert.ok(engine, "the scratch book was not built");
    const { trained, off } = engine.get(m.id);
    const model = await load(site.dir, m);
    const { n_layers: L, n_heads: H } = m.config;
    const targets = off.ablated.targets;
    assert.equal(Object.keys(targets).length, L * H, `${m.id}: ${Object.keys(targets)}`);
    // The untouched model is the site's: its decodes are the trained run's.
    assert.deepEqual(off.ablated.baseline.test.outputs, trained.train.test.outputs);
    let compared = 0;
    let moved = 0;
    for (let b = 0; b < L; b++) {
      for (let h = 0; h < H; h++) {
        const target = targets[`b${b}.h${h}`];
        assert.ok(target, `${m.id}: no b${b}.h${h}`);
        const wrong = [];
        for (const set of ["test", "long"]) {
          const inputs = trained.train[set].inputs;
          for (let k = 0; k < inputs.length; k += STEP[set]) {
            const got = greedy(model, inputs[k], new Set([`${b}.${h}`])).output;
            const want = target[set].outputs[k];
            if (got !== want) wrong.push(`${inputs[k]}: engine ${want}, page ${got}`);
            moved += want !== trained.train[set].outputs[k];
            compared++;
          }
        }
        assert.deepEqual(wrong, [], `${m.id} b${b}.h${h}: ${wrong.length} differ`);
      }
    }
    // Switching heads off must change some answers, or the comparison could not tell a
    // head from another, nor the page's switch from no switch.
    assert.ok(moved > 0, `${m.id}: no head switched off changed any sampled answer`);
    assert.ok(compared >= L * H * 100, `${m.id}: compared ${compared} strings`);
  });
}
