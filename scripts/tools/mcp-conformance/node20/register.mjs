// Lets the MCP conformance suite run on Node 20 (Debian's), run as `node --import <this file>`.
// The suite's build imports `globSync` from `fs`, which Node adds only in 22: an ES module that
// names a missing export fails to load at all. On a Node that has it, this does nothing;
// otherwise the suite's imports of `fs` resolve to fs.mjs, which is `fs` plus a globSync.
import fs from 'node:fs';
import { register } from 'node:module';

if (!('globSync' in fs)) {
  register('./hooks.mjs', import.meta.url);
}
