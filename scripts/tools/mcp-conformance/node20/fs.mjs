// `fs` as Node 20 has it, plus the globSync of Node 22 for what the suite asks of it: paths
// relative to `cwd` (default: the working directory) matching a pattern of `**/`, `*` and `?`
// (the suite globs its result folders for '**/checks.json').
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

function patternToRegExp(pattern) {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      i++;
      if (pattern[i + 1] === '/') {
        i++;
        source += '(?:.*/)?'; // `**/`: any folders, none included
      } else {
        source += '.*';
      }
    } else if (c === '*') {
      source += '[^/]*';
    } else if (c === '?') {
      source += '[^/]';
    } else {
      source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}

export function globSync(pattern, options = {}) {
  const cwd = options.cwd ?? process.cwd();
  const matches = patternToRegExp(pattern);
  return fs
    .readdirSync(cwd, { recursive: true })
    .map((entry) => entry.split(path.sep).join('/'))
    .filter((entry) => matches.test(entry));
}
